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


def motion_path(name: str) -> Path:
    """A motion by file path, or by the name of a shipped one (assets/motions/NAME.motion)."""
    p = Path(name)
    if p.is_file():
        return p.resolve()
    try:
        return asset_path("motions", f"{name}.motion")
    except FileNotFoundError:
        known = ", ".join(shipped_motions()) or "none installed"
        raise UsageError(f"--mock {name}: no such motion file or shipped motion (shipped: {known})") from None


def activate_mock(name: str) -> Path:
    """Build the mock runtime if needed and select it for this process; returns the manifest.

    Must run before the OpenXR instance is created (the loader reads the variables then).
    """
    path = motion_path(name)
    from headcast.xr import mockrt
    try:
        manifest = mockrt.ensure_runtime()
    except Exception as e:  # build errors carry the fix (install gcc / libopenxr-dev)
        raise AppError(f"cannot build the mock OpenXR runtime: {e}") from None
    os.environ["XR_RUNTIME_JSON"] = str(manifest)
    os.environ["HEADCAST_MOCK_MOTION"] = str(path)
    os.environ.setdefault("XR_LOADER_DEBUG", "error")
    return manifest
