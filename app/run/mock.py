"""Mock-runtime mode: point the OpenXR loader at our mocked runtime, playing a motion file."""

from __future__ import annotations

import os
from pathlib import Path

from headcast.app.assets import asset_path
from headcast.app.errors import AppError, UsageError

MOTION_FOLDERS = ("motions", "demo")  # the mock runtime's motions, then the demo's tour


def shipped_motions() -> list[str]:
    names = []
    for folder in MOTION_FOLDERS:
        try:
            names += [p.stem for p in asset_path(folder).glob("*.motion")]
        except FileNotFoundError:
            continue
    return sorted(names)


def find_motion(name: str) -> Path | None:
    file = name if name.endswith(".motion") else f"{name}.motion"
    for folder in MOTION_FOLDERS:
        try:
            return asset_path(folder, file)
        except FileNotFoundError:
            continue
    return None


def activate_mock(name: str) -> Path:
    """Build the mock runtime if needed and select it, playing `name` (a shipped motion or a
    file), for this process; returns the manifest. Must run before the OpenXR instance exists
    (the loader reads the variables then)."""
    from headcast.xr import mockrt

    profile = os.environ.get("HEADCAST_MOCK_PROFILE_RUNTIME")
    if profile is not None and profile not in mockrt.RUNTIME_PROFILES:
        raise UsageError(
            f"HEADCAST_MOCK_PROFILE_RUNTIME={profile!r}: the mock runtime imitates "
            f"{', '.join(mockrt.RUNTIME_PROFILES)} (default monado)"
        )
    # Resolved here, not by mockrt.motion_path: its importlib.resources fallback cannot read the
    # assets namespace package of an editable install.
    motion = Path(name) if Path(name).is_file() else find_motion(name)
    if motion is None:
        known = ", ".join(shipped_motions()) or "none installed"
        raise UsageError(f"--mock {name}: no such motion file or shipped motion (shipped: {known})")
    try:
        # A motion's sticks and buttons are half of what it plays. Monado 21 (the mock's default
        # profile) leaves a headless session READY, where no input reaches the app; `--mock`
        # focuses it so the scripted input arrives. HEADCAST_MOCK_HEADLESS_FOCUS=0 in the
        # environment keeps the Monado-faithful session (head only).
        focus = os.environ.get("HEADCAST_MOCK_HEADLESS_FOCUS", "1") != "0"
        env = mockrt.runtime_env(motion.resolve(), headless_focus=focus)
        # The runtime's own parser, before the loader reads the file: a bad line is the user's
        # mistake to name, not an "internal failure" of the runtime at xrCreateInstance.
        mockrt.check_motion(motion.resolve(), Path(env["XR_RUNTIME_JSON"]))
    except mockrt.RuntimeBuildError as e:
        # What to install on this platform, or that the runtime is Linux-only (mockrt.build says which).
        raise AppError(
            f"--mock needs headcast's mock OpenXR runtime, which this install lacks and cannot build: {e}"
        ) from None
    except mockrt.MockControlError as e:
        raise UsageError(f"--mock {name}: {e}") from None
    os.environ.update(env)
    return Path(env["XR_RUNTIME_JSON"])
