"""The immutable per-frame tracking snapshot every consumer of XR input reads.

All poses are in OpenXR STAGE space (or LOCAL when STAGE is unsupported): right-handed,
+Y up, -Z forward, metres; quaternions are (x, y, z, w).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]

IDENTITY: Quat = (0.0, 0.0, 0.0, 1.0)
ORIGIN: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Pose:
    position: Vec3 = ORIGIN
    orientation: Quat = IDENTITY
    position_valid: bool = False
    orientation_valid: bool = False
    position_tracked: bool = False
    orientation_tracked: bool = False

    @property
    def valid(self) -> bool:
        """Both position and orientation may be used (tracked or inferred by the runtime)."""
        return self.position_valid and self.orientation_valid


INVALID_POSE = Pose()


@dataclass(frozen=True, slots=True)
class Controls:
    """Controller state after action sync; inactive actions read as rest values."""

    move: tuple[float, float] = (0.0, 0.0)  # left stick / trackpad: x right, y forward
    turn: tuple[float, float] = (0.0, 0.0)  # right stick / trackpad
    trigger_left: float = 0.0
    trigger_right: float = 0.0
    squeeze_left: float = 0.0
    squeeze_right: float = 0.0
    jump: bool = False
    menu: bool = False


@dataclass(frozen=True, slots=True)
class TrackingFrame:
    seq: int  # frame counter of this session, from 0
    time_ns: int  # XrTime the poses were located at (predicted display time)
    head: Pose = INVALID_POSE
    left_aim: Pose = INVALID_POSE
    left_grip: Pose = INVALID_POSE
    right_aim: Pose = INVALID_POSE
    right_grip: Pose = INVALID_POSE
    controls: Controls = field(default_factory=Controls)
    profile_left: str = ""  # active interaction profile path, "" when none
    profile_right: str = ""
    focused: bool = False  # session FOCUSED (actions are only live when focused)


# What a tracking frame can hold, for frames that come from a file (trace replay) rather than
# from a runtime: a stage pose is metres from the stage origin, a rotation a unit quaternion,
# a controller value -1..1 (OpenXR's range for sticks; triggers are 0..1), XrTime an int64.
MAX_STAGE_METRES = 10_000.0
UNIT_TOLERANCE = 1e-3  # |q|² - 1 of a valid orientation (the session's own tolerance)
MAX_CONTROL = 1.0 + 1e-6
MAX_XR_TIME = 2**63 - 1

_POSES = ("head", "left_aim", "left_grip", "right_aim", "right_grip")


def frame_problem(frame: TrackingFrame) -> str | None:
    """Why `frame` cannot be a real tracking frame (None: it can): a number out of its range.
    Checked on every pose, valid or not, since some consumers read a pose's numbers regardless."""
    if not (0 <= frame.time_ns <= MAX_XR_TIME and 0 <= frame.seq <= MAX_XR_TIME):
        return f"time_ns {frame.time_ns} or seq {frame.seq} is outside 0..2^63-1"
    for name in _POSES:
        pose: Pose = getattr(frame, name)
        for axis, v in zip("xyz", pose.position):
            if not abs(v) <= MAX_STAGE_METRES:  # NaN fails too
                return f"{name} position {axis} = {v:g} m is outside ±{MAX_STAGE_METRES:g} m"
        q = pose.orientation
        shown = "(" + ", ".join(f"{c:g}" for c in q) + ")"
        if not all(abs(c) <= 1.0 + UNIT_TOLERANCE for c in q):
            return f"{name} orientation {shown} is not a rotation (a component beyond ±1)"
        if pose.orientation_valid and not abs(math.fsum(c * c for c in q) - 1.0) <= UNIT_TOLERANCE:
            return f"{name} orientation {shown} is flagged valid but is not a unit quaternion"
    c = frame.controls
    for what, v in (
        ("move x", c.move[0]),
        ("move y", c.move[1]),
        ("turn x", c.turn[0]),
        ("turn y", c.turn[1]),
        ("trigger_left", c.trigger_left),
        ("trigger_right", c.trigger_right),
        ("squeeze_left", c.squeeze_left),
        ("squeeze_right", c.squeeze_right),
    ):
        if not abs(v) <= MAX_CONTROL:
            return f"controls {what} = {v:g} is outside -1..1"
    return None
