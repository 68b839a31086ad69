"""The shipped motion files, streamed through a headless session, give the poses they script."""

from __future__ import annotations

import math

import pytest

from headcast.xr.mockrt import motion_path
from headcast.xr.session import XRSession

pytestmark = pytest.mark.usefixtures("frame_path")  # native helper and ctypes path alike

FPS = 90


def axis_quat(axis: str, deg: float) -> tuple[float, float, float, float]:
    """Rotation about +X/+Y/+Z by `deg` (OpenXR: yaw +Y turns left, pitch +X looks up, roll +Z right side up)."""
    s, c = math.sin(math.radians(deg) / 2), math.cos(math.radians(deg) / 2)
    return {"x": (s, 0.0, 0.0, c), "y": (0.0, s, 0.0, c), "z": (0.0, 0.0, s, c)}[axis]


def stream(ctl, monkeypatch, name: str, n: int) -> list:
    """n frames of a headless session located at the motion's frame times (the step clock), the
    session given focus by the runtime (hands need it; the mock leaves it READY, as Monado does)."""
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion_path(name)))
    ctl.step_clock()
    with XRSession() as xs:
        ctl.focus()
        return [xs.next_frame() for _ in range(n)]


def close_quat(a, b, tol=2e-6) -> bool:
    # q and -q are the same rotation
    return all(abs(x - y) <= tol for x, y in zip(a, b)) or all(abs(x + y) <= tol for x, y in zip(a, b))


# look_around.motion keyframes (seconds, axis, degrees) that are pure single-axis rotations
LOOK_AROUND_KEYS = [
    (1.0, "y", 120),
    (2.0, "y", 0),
    (3.0, "y", -120),
    (5.0, "x", 85),
    (7.0, "x", -85),
    (9.0, "z", 70),
    (11.0, "z", -70),
    (12.0, "y", 0),
]


def test_look_around_head_follows_the_script(ctl, monkeypatch):
    frames = stream(ctl, monkeypatch, "look_around", 12 * FPS + 1)
    for t, axis, deg in LOOK_AROUND_KEYS:
        head = frames[round(t * FPS)].head
        assert head.valid and head.position == (0.0, pytest.approx(1.6, abs=1e-6), 0.0)
        assert close_quat(head.orientation, axis_quat(axis, deg)), (t, head.orientation)
    # halfway between 0 s (0°) and 1 s (120° left) the slerp is at 60°
    assert close_quat(frames[45].head.orientation, axis_quat("y", 60))


def test_tracking_loss_flags_follow_the_script(ctl, monkeypatch):
    frames = stream(ctl, monkeypatch, "tracking_loss", int(5.5 * FPS))
    at = lambda t: frames[round(t * FPS)]  # noqa: E731
    full = at(0.5).head
    assert full.valid and full.position_tracked and full.orientation_tracked
    inferred = at(1.5).head  # ov,pv,ot: position still valid but only inferred
    assert inferred.valid and inferred.orientation_tracked and not inferred.position_tracked
    lost = at(2.5).head
    assert not lost.position_valid and not lost.orientation_valid and lost.position == (0.0, 0.0, 0.0)
    assert at(3.2).head.valid and at(3.2).head.position_tracked
    assert not at(3.8).left_aim.valid and not at(3.8).left_grip.valid and at(3.8).right_aim.valid
    assert not at(4.7).right_aim.valid and at(4.7).left_aim.valid
    assert at(5.2).left_aim.valid and at(5.2).right_grip.valid
    # the head keeps turning (60° over 6 s) while tracked: at 3.2 s it is at 32°
    assert close_quat(at(3.2).head.orientation, axis_quat("y", 32))
