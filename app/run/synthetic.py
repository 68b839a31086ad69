"""An embedded scripted motion, computed in Python: frames without any OpenXR runtime.

Used when no runtime is wanted (`headcast demo --synthetic`, the loop benchmark, rig and sink
tests). The script is a list of keyframes in Quake-style degrees (pitch + = down, yaw + = left,
roll + = right side dips), linearly interpolated and turned into OpenXR STAGE poses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from headcast.netcode.pose import Quat, q_mul, quat_from_axis_angle
from headcast.xr.frame import Controls, Pose, TrackingFrame


@dataclass(frozen=True, slots=True)
class Keyframe:
    t: float  # seconds from the start
    head: tuple[float, float, float]  # pitch, yaw, roll (degrees, Quake sense)
    aim: tuple[float, float]  # right-hand aim pitch, yaw
    move: tuple[float, float] = (0.0, 0.0)
    turn_x: float = 0.0
    trigger: float = 0.0
    tracked: bool = True


# Look around, aim off to the side, walk a little, snap-turn right then left, lose tracking.
LOOK_AROUND: tuple[Keyframe, ...] = (
    Keyframe(0.0, (0, 0, 0), (0, 0)),
    Keyframe(1.0, (-30, 0, 0), (-10, 0)),  # look up
    Keyframe(2.0, (30, 0, 0), (10, 0)),  # look down
    Keyframe(3.0, (0, 45, 0), (0, 20)),  # turn left, weapon lags
    Keyframe(4.0, (0, -45, 20), (0, -30)),  # turn right, tilt the head right
    Keyframe(5.0, (10, 0, -20), (0, 0), move=(0.0, 1.0), trigger=1.0),
    Keyframe(5.5, (0, 0, 0), (0, 0), turn_x=1.0),  # snap right
    Keyframe(6.0, (0, 0, 0), (0, 0)),
    Keyframe(6.5, (0, 0, 0), (0, 0), turn_x=-1.0),  # snap left
    Keyframe(7.0, (0, 0, 0), (0, 0), tracked=False),  # headset lost for a moment
    Keyframe(7.5, (0, 0, 0), (0, 0)),
    Keyframe(8.0, (0, 0, 0), (0, 0)),
)
HEAD_HEIGHT = 1.6


def orientation(pitch: float, yaw: float, roll: float) -> Quat:
    """OpenXR orientation from Quake-sense angles: yaw about +Y, then pitch (down = about -X),
    then roll (right side down = about -Z)."""
    q_yaw = quat_from_axis_angle((0.0, 1.0, 0.0), yaw)
    q_pitch = quat_from_axis_angle((1.0, 0.0, 0.0), -pitch)
    q_roll = quat_from_axis_angle((0.0, 0.0, 1.0), -roll)
    return q_mul(q_yaw, q_mul(q_pitch, q_roll))


def _lerp(a: tuple[float, ...], b: tuple[float, ...], f: float) -> tuple[float, ...]:
    return tuple(x + (y - x) * f for x, y in zip(a, b))


def sample(script: tuple[Keyframe, ...], t: float) -> Keyframe:
    """The script at time `t` (looping); controls and tracking step, angles interpolate."""
    length = script[-1].t
    t = t % length if length > 0 else 0.0
    for a, b in zip(script, script[1:]):
        if a.t <= t < b.t:
            f = (t - a.t) / (b.t - a.t)
            pitch, yaw, roll = _lerp(a.head, b.head, f)
            aim_pitch, aim_yaw = _lerp(a.aim, b.aim, f)
            return Keyframe(t, (pitch, yaw, roll), (aim_pitch, aim_yaw), a.move, a.turn_x, a.trigger, a.tracked)
    return script[-1]


def frame_at(script: tuple[Keyframe, ...], seq: int, t: float, time_ns: int) -> TrackingFrame:
    k = sample(script, t)
    head = Pose((0.0, HEAD_HEIGHT, 0.0), orientation(*k.head), k.tracked, k.tracked, k.tracked, k.tracked)
    aim_q = orientation(k.aim[0], k.aim[1], 0.0)
    right = Pose((0.2, HEAD_HEIGHT - 0.4, -0.3), aim_q, True, True, True, True)
    left = Pose((-0.2, HEAD_HEIGHT - 0.4, -0.3), orientation(0, 0, 0), True, True, True, True)
    controls = Controls(move=k.move, turn=(k.turn_x, 0.0), trigger_right=k.trigger)
    return TrackingFrame(
        seq,
        time_ns,
        head,
        left,
        left,
        right,
        right,
        controls,
        "/interaction_profiles/oculus/touch_controller",
        "/interaction_profiles/oculus/touch_controller",
        True,
    )


class SyntheticSource:
    """Frames of a script paced at `rate` Hz on the monotonic clock (the mock runtime's role)."""

    def __init__(
        self,
        script: tuple[Keyframe, ...] = LOOK_AROUND,
        rate: float = 90.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        paced: bool = True,
    ) -> None:
        self.script, self.period, self.clock, self.sleep, self.paced = script, 1.0 / rate, clock, sleep, paced
        self.seq = 0
        self.t0 = clock()

    def next_frame(self) -> TrackingFrame:
        due = self.t0 + self.seq * self.period
        if self.paced:
            delay = due - self.clock()
            if delay > 0:
                self.sleep(delay)
        t = self.seq * self.period
        frame = frame_at(self.script, self.seq, t, int(t * 1e9))
        self.seq += 1
        return frame

    def close(self) -> None:
        pass
