"""What the swarm's players send: a shipped motion (or a recorded trace) sampled once, through the
app's own rig and mappings, into each protocol's per-frame input.

A motion file (assets/motions/README.md) is read here in Python — the mock runtime's C parser
lives in a shared library that plays one session per process, and a swarm needs the motion as
data. The subset read is what the motions use: head and hand poses (`pos`, `ypr`, `quat`,
`pose`), `flags`, the sticks, triggers, squeezes and the `a` button (jump), with the runtime's
defaults for anything a file does not name; `rate`, `timebase` and `interpolate` are honoured,
`!` session commands are skipped. A line it cannot read is a `MotionError` naming file and line.

The frames (90 per second) go through `Rig` once per spot (a player's place in the room) and then
through `q3_intent`, `pose_frame` and `game_pose`: a swarm sends exactly what `headcast run`
would send for that motion. Each player reads the tables at its own time offset and speed, so the
per-frame work of a player is an index, not a pose computation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from headcast.app.run.rig import Origin, Rig, RigSettings
from headcast.app.sinks.netsync.mapping import pose_frame, xrorigin_delta
from headcast.app.sinks.q3.mapping import Q3Intent, q3_intent
from headcast.app.sinks.sauer.mapping import DEFAULT_SPAWN, SauerWorld, anchor_at, game_pose
from headcast.netcode.netsync.model import PoseFrame
from headcast.netcode.pose import q_mul
from headcast.netcode.sauer.client import Pose as SauerPose
from headcast.xr.frame import Controls, Pose, TrackingFrame

RATE = 90.0  # frames per second of the sampled tables (the mock runtime's frame rate)
MIN_PERIOD = 1.0  # a motion shorter than this (or a still one) is held for a second
MAX_FRAMES = 90 * 600  # ten minutes of frames: a longer motion or trace is cut (memory)
POSES = {
    "/user/head": "head",
    "/user/hand/left/input/aim/pose": "left_aim",
    "/user/hand/left/input/grip/pose": "left_grip",
    "/user/hand/right/input/aim/pose": "right_aim",
    "/user/hand/right/input/grip/pose": "right_grip",
}
# The mock runtime's resting devices (mockxr.c devices_default): head at 1.6 m, hands in front.
DEFAULT_POS = {
    "head": (0.0, 1.6, 0.0),
    "left_aim": (-0.2, 1.3, -0.3),
    "left_grip": (-0.2, 1.3, -0.25),
    "right_aim": (0.2, 1.3, -0.3),
    "right_grip": (0.2, 1.3, -0.25),
}
FLAG_PATHS = {
    "/user/head": ("head",),
    "/user/hand/left": ("left_aim", "left_grip"),
    "/user/hand/right": ("right_aim", "right_grip"),
}
# input path → (Controls field, dimensions, interpolated)
INPUTS = {
    "/user/hand/left/input/thumbstick": ("move", 2, True),
    "/user/hand/right/input/thumbstick": ("turn", 2, True),
    "/user/hand/left/input/trigger/value": ("trigger_left", 1, True),
    "/user/hand/right/input/trigger/value": ("trigger_right", 1, True),
    "/user/hand/left/input/squeeze/value": ("squeeze_left", 1, True),
    "/user/hand/right/input/squeeze/value": ("squeeze_right", 1, True),
    "/user/hand/right/input/a/click": ("jump", 1, False),
}
IGNORED_INPUTS = (
    "/input/b/click",
    "/input/x/click",
    "/input/y/click",
    "/input/menu/click",
    "/input/system/click",
    "/input/thumbstick/click",
    "/input/trackpad",
    "/input/select/click",
    "/input/trigger/click",
    "/input/a/click",
)
ALL_FLAGS = 0xF


class MotionError(ValueError):
    """A motion file or trace the swarm cannot play (file and line named)."""


@dataclass
class _Track:
    times: list[float]
    values: list[tuple[float, ...]]
    lerp: bool  # interpolate (else step)
    slerp: bool = False


def _ypr_quat(yaw: float, pitch: float, roll: float) -> tuple[float, float, float, float]:
    """mockxr.c quat_from_ypr: yaw about +Y, then pitch about +X, then roll about +Z."""
    d = math.pi / 360.0
    qy = (0.0, math.sin(yaw * d), 0.0, math.cos(yaw * d))
    qp = (math.sin(pitch * d), 0.0, 0.0, math.cos(pitch * d))
    qr = (0.0, 0.0, math.sin(roll * d), math.cos(roll * d))
    return q_mul(q_mul(qy, qp), qr)


def _slerp(a, b, f):
    dot = sum(x * y for x, y in zip(a, b))
    if dot < 0:
        b, dot = tuple(-x for x in b), -dot
    if dot > 0.9995:
        wa, wb = 1 - f, f
    else:
        th = math.acos(min(1.0, dot))
        s = math.sin(th)
        wa, wb = math.sin((1 - f) * th) / s, math.sin(f * th) / s
    q = tuple(wa * x + wb * y for x, y in zip(a, b))
    n = math.sqrt(sum(x * x for x in q))
    return tuple(x / n for x in q)


def _flags(text: str) -> int:
    words = {"all": ALL_FLAGS, "none": 0}
    if text in words:
        return words[text]
    try:
        return int(text, 0) & ALL_FLAGS
    except ValueError:
        bits = {"ov": 1, "pv": 2, "ot": 4, "pt": 8}
        parts = text.split(",")
        if not all(p in bits for p in parts):
            raise ValueError(f"flags {text!r}: all, none, a number or a comma list of ov,pv,ot,pt") from None
        return sum(bits[p] for p in parts)


def _numbers(tokens: Sequence[str], n: int) -> tuple[float, ...]:
    if len(tokens) != n:
        raise ValueError(f"{n} values expected, {len(tokens)} given")
    out = tuple(float.fromhex(t) if t.lower().lstrip("+-").startswith("0x") else float(t) for t in tokens)
    if not all(math.isfinite(v) for v in out):
        raise ValueError("a value is not finite")
    return out


def parse_motion(path: str | Path) -> tuple[dict[tuple[str, str], _Track], float]:
    """The tracks of a motion file, keyed by (target, channel), and its length in seconds."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise MotionError(f"{path}: {e}") from None
    rate, frames, interpolate = RATE, False, True
    tracks: dict[tuple[str, str], _Track] = {}
    end = 0.0

    def add(key, t, value, lerp, slerp=False):
        track = tracks.setdefault(key, _Track([], [], lerp and interpolate, slerp and interpolate))
        if track.times and t < track.times[-1]:
            raise ValueError("keyframes out of time order")
        track.times.append(t)
        track.values.append(value)

    for lineno, raw in enumerate(text.splitlines(), 1):
        tok = raw.split("#", 1)[0].split()
        if not tok:
            continue
        try:
            if tok[0] in ("rate", "timebase", "interpolate", "loop"):
                if len(tok) != 2:
                    raise ValueError(f"{tok[0]} takes one value")
                if tok[0] == "rate":
                    rate = float(tok[1])
                    if not 1.0 <= rate <= 10000.0:
                        raise ValueError("rate must be 1..10000")
                elif tok[0] == "timebase":
                    if tok[1] not in ("seconds", "frames"):
                        raise ValueError("timebase is seconds or frames")
                    frames = tok[1] == "frames"
                elif tok[0] == "interpolate":
                    interpolate = tok[1] == "on"
                continue
            (t,) = _numbers(tok[:1], 1)
            t = t / rate if frames else t
            if t < 0 or t > 1e7:
                raise ValueError("time out of range")
            if len(tok) < 2:
                raise ValueError("missing target")
            target = tok[1]
            end = max(end, t)
            if target.startswith("!"):
                continue  # a session event: the swarm's players have no session
            if len(tok) >= 3 and tok[2] == "flags":
                if target not in FLAG_PATHS or len(tok) != 4:
                    raise ValueError("flags need /user/head, /user/hand/left or /user/hand/right and one value")
                for pose in FLAG_PATHS[target]:
                    add((pose, "flags"), t, (_flags(tok[3]),), False)
            elif target in POSES:
                pose = POSES[target]
                if len(tok) < 3:
                    raise ValueError("pose channel missing (pos, ypr, quat or pose)")
                ch, vals = tok[2], tok[3:]
                if ch == "pos":
                    add((pose, "pos"), t, _numbers(vals, 3), True)
                elif ch == "ypr":
                    add((pose, "ori"), t, _ypr_quat(*_numbers(vals, 3)), True, True)
                elif ch in ("quat", "pose"):
                    v = _numbers(vals, 4 if ch == "quat" else 7)
                    q = v[-4:]
                    n = math.sqrt(sum(x * x for x in q))
                    if not n > 1e-6:
                        raise ValueError("zero quaternion")
                    if ch == "pose":
                        add((pose, "pos"), t, v[:3], True)
                    add((pose, "ori"), t, tuple(x / n for x in q), True, True)
                else:
                    raise ValueError("unknown pose channel (pos, ypr, quat, pose, flags)")
            elif target in INPUTS:
                name, dims, lerp = INPUTS[target]
                add((name, "input"), t, _numbers(tok[2:], dims), lerp)
            elif target.endswith(IGNORED_INPUTS) and target.startswith("/user/hand/"):
                continue  # an input no action of the swarm's players reads
            else:
                raise ValueError(f"unknown path {target!r}")
        except ValueError as e:
            raise MotionError(f"{path}:{lineno}: {e}") from None
    return tracks, end


def _sample(track: _Track | None, t: float, default: tuple) -> tuple:
    """The track at `t`; `default` before its first keyframe (a track takes effect there)."""
    if track is None:
        return default
    times = track.times
    if t < times[0]:
        return default
    if t == times[0]:
        return track.values[0]
    if t >= times[-1]:
        return track.values[-1]
    lo, hi = 0, len(times) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    a, b = track.values[lo], track.values[hi]
    if not track.lerp or times[hi] == times[lo]:
        return a
    f = (t - times[lo]) / (times[hi] - times[lo])
    if track.slerp:
        return _slerp(a, b, f)
    return tuple(x + (y - x) * f for x, y in zip(a, b))


def motion_frames(path: str | Path) -> list[TrackingFrame]:
    """The motion as tracking frames at RATE per second, over its length (at least MIN_PERIOD)."""
    tracks, end = parse_motion(path)
    n = min(MAX_FRAMES, max(int(RATE * MIN_PERIOD), int(round(end * RATE)) + 1))
    out = []
    for i in range(n):
        t = i / RATE
        poses: dict[str, Pose] = {}
        for name, pos in DEFAULT_POS.items():
            p = _sample(tracks.get((name, "pos")), t, pos)
            q = _sample(tracks.get((name, "ori")), t, (0.0, 0.0, 0.0, 1.0))
            fl = int(_sample(tracks.get((name, "flags")), t, (ALL_FLAGS,))[0])
            poses[name] = Pose(tuple(p), tuple(q), bool(fl & 2), bool(fl & 1), bool(fl & 8), bool(fl & 4))
        inp = lambda name, rest=(0.0,): _sample(tracks.get((name, "input")), t, rest)  # noqa: E731
        c = Controls(
            move=tuple(inp("move", (0.0, 0.0))),
            turn=tuple(inp("turn", (0.0, 0.0))),
            trigger_left=inp("trigger_left")[0],
            trigger_right=inp("trigger_right")[0],
            squeeze_left=inp("squeeze_left")[0],
            squeeze_right=inp("squeeze_right")[0],
            jump=inp("jump")[0] >= 0.5,
        )
        out.append(
            TrackingFrame(
                i,
                int(t * 1e9),
                poses["head"],
                poses["left_aim"],
                poses["left_grip"],
                poses["right_aim"],
                poses["right_grip"],
                controls=c,
                focused=True,
            )
        )
    return out


def trace_frames(path: str | Path) -> list[TrackingFrame]:
    """A recorded trace's frames (a trace cut short plays up to its last whole frame)."""
    from headcast.xr.trace import TraceEndsEarly, TraceError, iter_trace

    frames: list[TrackingFrame] = []
    try:
        for f in iter_trace(path):
            frames.append(f)
            if len(frames) >= MAX_FRAMES:
                break
    except TraceEndsEarly:
        pass
    except (TraceError, OSError) as e:
        text = str(e)  # a TraceError names the file already
        raise MotionError(text if text.startswith(str(path)) else f"{path}: {text}") from None
    if len(frames) < 2:
        raise MotionError(f"{path}: fewer than two frames")
    return frames


@dataclass(frozen=True)
class Spot:
    """A player's place in the room: its rig's start (metres, degrees)."""

    x: float
    z: float
    yaw: float


def spots(n: int, radius: float = 3.0) -> list[Spot]:
    """`n` places on a circle facing its centre: players spread over the room, not stacked."""
    out = []
    for i in range(n):
        a = 2 * math.pi * i / max(1, n)
        # Facing the centre: Quake-sense yaw 0 faces -Z; a point at (sin a, -cos a)·r faces +... back in.
        out.append(Spot(radius * math.sin(a), -radius * math.cos(a), math.degrees(-a) % 360.0 - 180.0))
    return out


class Script:
    """The motion's frames, and per spot the per-frame input of each protocol (built when first
    asked for): `q3(spot)` Q3Intents, `netsync(spot)` PoseFrames, `sauer(spot)` Sauerbraten poses
    (None while the head is not tracked)."""

    def __init__(self, frames: list[TrackingFrame], rig: RigSettings = RigSettings()) -> None:
        if len(frames) < 2:
            raise MotionError("a motion needs at least two frames")
        self.frames = frames
        self.rig = rig
        t0 = frames[0].time_ns
        self.times = [(f.time_ns - t0) / 1e9 for f in frames]
        step = (self.times[-1] / (len(frames) - 1)) if self.times[-1] > 0 else 1.0 / RATE
        self.period = self.times[-1] + step  # the loop's length: the last frame holds one step
        self.rate = (len(frames) - 1) / self.times[-1] if self.times[-1] > 0 else RATE
        self._states: dict[Spot, list] = {}
        self._q3: dict[Spot, list[Q3Intent]] = {}
        self._netsync: dict[Spot, list[PoseFrame]] = {}
        self._sauer: dict[Spot, list[SauerPose | None]] = {}

    @classmethod
    def load(cls, motion: str | Path | None = None, trace: str | Path | None = None) -> "Script":
        if trace is not None:
            return cls(trace_frames(trace))
        if motion is None:
            raise ValueError("Script.load: a motion or a trace")
        return cls(motion_frames(motion))

    def __len__(self) -> int:
        return len(self.frames)

    def index(self, t: float) -> int:
        """The frame shown at `t` seconds into the (looping) motion."""
        i = int((t % self.period) * self.rate)
        return i if i < len(self.frames) else len(self.frames) - 1

    def _rig_states(self, spot: Spot) -> list:
        states = self._states.get(spot)
        if states is None:
            rig = Rig(self.rig, Origin(spot.x, spot.z, spot.yaw))
            states, prev = [], self.times[0]
            for f, t in zip(self.frames, self.times):
                states.append(rig.update(f, max(0.0, t - prev)))
                prev = t
            self._states[spot] = states
        return states

    def q3(self, spot: Spot) -> list[Q3Intent]:
        out = self._q3.get(spot)
        if out is None:
            speed = self.rig.move_speed
            out = self._q3[spot] = [q3_intent(s, s.frame.controls, True, speed) for s in self._rig_states(spot)]
        return out

    def netsync(self, spot: Spot) -> list[PoseFrame]:
        out = self._netsync.get(spot)
        if out is None:
            out = self._netsync[spot] = [
                pose_frame(s, delta=xrorigin_delta(s.start, s.origin)) for s in self._rig_states(spot)
            ]
        return out

    def sauer(self, spot: Spot) -> list[SauerPose | None]:
        """Eye positions around the default spawn: each spot's player stands at its own place
        (the game's server takes the client's word for where it is)."""
        out = self._sauer.get(spot)
        if out is None:
            world = SauerWorld(
                spawn=(DEFAULT_SPAWN[0] + spot.x * 8.0, DEFAULT_SPAWN[1] - spot.z * 8.0, DEFAULT_SPAWN[2])
            )
            anchor, out = None, []
            for s in self._rig_states(spot):
                if anchor is None:
                    anchor = anchor_at(s, world)
                g = game_pose(s, world, anchor) if anchor is not None else None
                out.append(None if g is None else g.pose)
            self._sauer[spot] = out
        return out
