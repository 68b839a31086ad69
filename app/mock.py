"""Mock-runtime mode: point the OpenXR loader at our mocked runtime, playing a motion file."""
from __future__ import annotations

import os
from pathlib import Path

from headcast.app.assets import asset_path
from headcast.app.errors import AppError, UsageError


def shipped_motions() -> list[str]:
    try:
        folder = asset_path("motions")
    except FileNotFoundError:
        return []
    return sorted(p.stem for p in folder.glob("*.motion"))


def activate_mock(name: str) -> Path:
    """Build the mock runtime if needed and select it, playing `name` (a shipped motion or a
    file), for this process; returns the manifest. Must run before the OpenXR instance exists
    (the loader reads the variables then)."""
    from headcast.xr import mockrt
    # Resolved here, not by mockrt.motion_path: its importlib.resources fallback cannot read the
    # assets namespace package of an editable install.
    motion = Path(name)
    if not motion.is_file():
        try:
            motion = asset_path("motions", name if name.endswith(".motion") else f"{name}.motion")
        except FileNotFoundError:
            known = ", ".join(shipped_motions()) or "none installed"
            raise UsageError(f"--mock {name}: no such motion file or shipped motion (shipped: {known})") from None
    try:
        env = mockrt.runtime_env(motion.resolve())
    except mockrt.RuntimeBuildError as e:
        raise AppError(f"cannot build the mock OpenXR runtime: {e}") from None
    os.environ.update(env)
    return Path(env["XR_RUNTIME_JSON"])
