"""The immutable per-frame tracking snapshot every consumer of XR input reads.

All poses are in OpenXR STAGE space (or LOCAL when STAGE is unsupported): right-handed,
+Y up, -Z forward, metres; quaternions are (x, y, z, w).
"""
from __future__ import annotations

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
    seq: int                      # frame counter of this session, from 0
    time_ns: int                  # XrTime the poses were located at (predicted display time)
    head: Pose = INVALID_POSE
    left_aim: Pose = INVALID_POSE
    left_grip: Pose = INVALID_POSE
    right_aim: Pose = INVALID_POSE
    right_grip: Pose = INVALID_POSE
    controls: Controls = field(default_factory=Controls)
    profile_left: str = ""       # active interaction profile path, "" when none
    profile_right: str = ""
    focused: bool = False         # session FOCUSED (actions are only live when focused)
