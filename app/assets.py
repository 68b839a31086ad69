"""Locate shipped data files (assets/), in a source checkout, an editable install or a wheel."""

from __future__ import annotations

from pathlib import Path

import headcast.assets


def asset_path(*parts: str) -> Path:
    """The path of assets/<parts...>. `headcast.assets` is a namespace package (no __init__.py),
    so its __path__ may also hold import-hook entries that are not directories: skip those."""
    for entry in headcast.assets.__path__:
        candidate = Path(entry).joinpath(*parts)
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"asset {'/'.join(parts)} is not installed (looked in {list(headcast.assets.__path__)})")
