"""Record TrackingFrames to a file and read them back.

Format (JSON lines, UTF-8): a header object, one array per frame, an end object.

    {"format": "headcast-trace", "version": 1, "meta": {...}}
    [seq, time_ns, head, left_aim, left_grip, right_aim, right_grip, controls, profile_left, profile_right, focused]
    {"end": <frame count>}

A pose is [px, py, pz, qx, qy, qz, qw, flags] with the OpenXR location bits (1 orientation
valid, 2 position valid, 4 orientation tracked, 8 position tracked); controls are
[move_x, move_y, turn_x, turn_y, trigger_l, trigger_r, squeeze_l, squeeze_r, jump, menu].
JSON floats are written with repr(), which round-trips every double exactly, and the
runtime's floats are float32 values, so poses come back bit for bit.

The writer streams into a temporary file beside the target and renames it into place on
close, so a crash or an abort leaves no half-written trace; the end object lets the reader
tell a complete file from a truncated copy.

`replay()` plays a trace through the mock runtime: the frames become a motion file (frame
timebase, no interpolation, hex floats) and a session on the mock gives them back, poses bit
for bit. The runtime emulates one controller, so a trace replays with the profile it was
recorded with (its first non-empty one); each hand's tracking flags come from its aim pose.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Sequence

from . import mockrt
from .actions import BINDINGS, LEFT
from .frame import Controls, Pose, TrackingFrame
from .session import XRSession

FORMAT = "headcast-trace"
VERSION = 1

_ORI_VALID, _POS_VALID, _ORI_TRACKED, _POS_TRACKED = 1, 2, 4, 8


class TraceError(Exception):
    """A trace file that cannot be read: not a trace, a newer version, damaged or truncated."""


@dataclass(frozen=True, slots=True)
class Trace:
    meta: dict[str, Any]
    frames: tuple[TrackingFrame, ...]


def _pose_row(p: Pose) -> list:
    flags = ((_ORI_VALID if p.orientation_valid else 0) | (_POS_VALID if p.position_valid else 0)
             | (_ORI_TRACKED if p.orientation_tracked else 0) | (_POS_TRACKED if p.position_tracked else 0))
    return [*p.position, *p.orientation, flags]


def frame_row(f: TrackingFrame) -> list:
    c = f.controls
    return [f.seq, f.time_ns, _pose_row(f.head), _pose_row(f.left_aim), _pose_row(f.left_grip),
            _pose_row(f.right_aim), _pose_row(f.right_grip),
            [*c.move, *c.turn, c.trigger_left, c.trigger_right, c.squeeze_left, c.squeeze_right,
             c.jump, c.menu],
            f.profile_left, f.profile_right, f.focused]


class TraceWriter:
    """Streams frames to `path`; the file appears (atomically) only on close()."""

    def __init__(self, path: str | os.PathLike, meta: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.count = 0
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".partial")
        self._tmp = Path(tmp)
        self._file = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        try:
            self._line({"format": FORMAT, "version": VERSION, "meta": meta or {}})
        except BaseException:
            self.abort()
            raise

    def _line(self, obj: Any) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":"), allow_nan=False))
        self._file.write("\n")

    def write(self, frame: TrackingFrame) -> None:
        if self._file is None:
            raise ValueError("trace writer is closed")
        self._line(frame_row(frame))
        self.count += 1

    def close(self) -> Path:
        """Finish the file and move it into place; returns its path."""
        if self._file is None:
            return self.path
        try:
            self._line({"end": self.count})
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            # mkstemp makes the file owner-only; a trace gets the permissions of any new file.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self._tmp, 0o666 & ~umask)
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Drop everything written so far; the target path is left untouched."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_trace(path: str | os.PathLike, frames: Iterable[TrackingFrame],
                meta: dict[str, Any] | None = None) -> Path:
    with TraceWriter(path, meta) as w:
        for f in frames:
            w.write(f)
    return w.path


def _num(v: Any, what: str) -> float:
    # bool is an int subclass; a bool where a number belongs is a damaged file.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{what} is not a number: {v!r}")
    return float(v)


def _pose(row: Any, what: str) -> Pose:
    if not isinstance(row, list) or len(row) != 8:
        raise ValueError(f"{what} is not an 8-item pose")
    vals = [_num(v, what) for v in row[:7]]
    flags = row[7]
    if isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags <= 15:
        raise ValueError(f"{what} has bad flags {flags!r}")
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"{what} has a non-finite value")
    return Pose((vals[0], vals[1], vals[2]), (vals[3], vals[4], vals[5], vals[6]),
                bool(flags & _POS_VALID), bool(flags & _ORI_VALID),
                bool(flags & _POS_TRACKED), bool(flags & _ORI_TRACKED))


def _controls(row: Any) -> Controls:
    if not isinstance(row, list) or len(row) != 10:
        raise ValueError("controls is not a 10-item list")
    v = [_num(x, "controls") for x in row[:8]]
    if not all(isinstance(x, bool) for x in row[8:]):
        raise ValueError("jump/menu are not booleans")
    return Controls((v[0], v[1]), (v[2], v[3]), v[4], v[5], v[6], v[7], row[8], row[9])


def parse_frame(row: Any) -> TrackingFrame:
    """One frame row back into a TrackingFrame; ValueError says what is wrong with it."""
    if not isinstance(row, list) or len(row) != 11:
        raise ValueError("a frame is an 11-item list")
    seq, t = row[0], row[1]
    if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in (seq, t)):
        raise ValueError("seq and time_ns must be non-negative integers")
    if not isinstance(row[8], str) or not isinstance(row[9], str) or not isinstance(row[10], bool):
        raise ValueError("profiles must be strings and focused a boolean")
    names = ("head", "left_aim", "left_grip", "right_aim", "right_grip")
    poses = [_pose(row[2 + i], n) for i, n in enumerate(names)]
    return TrackingFrame(seq, t, *poses, controls=_controls(row[7]),
                         profile_left=row[8], profile_right=row[9], focused=row[10])


def iter_trace(path: str | os.PathLike) -> Iterator[TrackingFrame]:
    """Yield the frames of a trace; raise TraceError on a bad header, bad line or truncation.

    Call `read_meta` for the header's metadata.
    """
    path = Path(path)
    with _open(path) as fh:
        _header(path, fh)
        count = 0
        lineno = 1
        while True:
            lineno += 1
            obj = _next_json(path, fh, lineno)
            if obj is _EOF:
                raise TraceError(f"{path}: truncated after {count} frames (no end record)")
            if isinstance(obj, dict):
                end = obj.get("end")
                if set(obj) != {"end"} or isinstance(end, bool) or end != count:
                    raise TraceError(f"{path}:{lineno}: end record {obj!r} does not match {count} frames")
                if fh.read(1):
                    raise TraceError(f"{path}:{lineno + 1}: data after the end record")
                return
            try:
                frame = parse_frame(obj)
            except ValueError as exc:
                raise TraceError(f"{path}:{lineno}: bad frame: {exc}") from None
            count += 1
            yield frame


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    with _open(path) as fh:
        return _header(path, fh)


def read_trace(path: str | os.PathLike) -> Trace:
    return Trace(read_meta(path), tuple(iter_trace(path)))


# A frame line is ~600 bytes; a longer "line" is a damaged file, not something to buffer.
_MAX_LINE = 64 * 1024
_EOF = object()


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open trace: {exc.strerror}") from None


def _next_json(path: Path, fh: BinaryIO, lineno: int) -> Any:
    raw = fh.readline(_MAX_LINE + 1)
    if not raw:
        return _EOF
    if not raw.endswith(b"\n"):
        what = "line too long" if len(raw) > _MAX_LINE else "truncated line"
        raise TraceError(f"{path}:{lineno}: {what}")
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise TraceError(f"{path}:{lineno}: not JSON ({exc})") from None


def _header(path: Path, fh: BinaryIO) -> dict[str, Any]:
    obj = _next_json(path, fh, 1)
    if obj is _EOF:
        raise TraceError(f"{path}: empty file, not a headcast trace")
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise TraceError(f"{path}: not a headcast trace (no '{FORMAT}' header)")
    if obj.get("version") != VERSION:
        raise TraceError(f"{path}: trace version {obj.get('version')!r} is not supported "
                         f"(this headcast reads version {VERSION})")
    meta = obj.get("meta")
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: header meta is not an object")
    return meta


# -- replay through the mock runtime -------------------------------------------------------

DEFAULT_PROFILE = "/interaction_profiles/oculus/touch_controller"

_POSE_PATHS = (("/user/head", "head"), (f"{LEFT}/input/aim/pose", "left_aim"),
               (f"{LEFT}/input/grip/pose", "left_grip"), ("/user/hand/right/input/aim/pose", "right_aim"),
               ("/user/hand/right/input/grip/pose", "right_grip"))


def replay_profile(frames: Iterable[TrackingFrame]) -> str:
    """The controller profile a trace was recorded with (the mock emulates exactly one)."""
    for f in frames:
        if f.profile_right or f.profile_left:
            return f.profile_right or f.profile_left
    return DEFAULT_PROFILE


def _hex(*values: float) -> str:
    return " ".join(float(v).hex() for v in values)


def _input_values(frame: TrackingFrame, profile: str) -> dict[str, str]:
    """Physical input path -> motion-file values reproducing the frame's action states."""
    c = frame.controls
    per_hand = {"trigger": (c.trigger_left, c.trigger_right), "squeeze": (c.squeeze_left, c.squeeze_right)}
    shared = {"move": c.move, "turn": c.turn, "jump": c.jump, "menu": c.menu}
    out: dict[str, str] = {}
    seen: set[str] = set()
    for action, path in BINDINGS[profile]:
        if action in per_hand:
            out[path] = _hex(per_hand[action][0 if path.startswith(LEFT) else 1])
        elif action in shared:
            value = shared[action]
            if action in seen:  # bound on both hands: the first carries it, the rest rest
                value = (0.0, 0.0) if isinstance(value, tuple) else False
            seen.add(action)
            out[path] = _hex(*value) if isinstance(value, tuple) else _hex(float(value))
    return out


def motion_text(frames: Sequence[TrackingFrame], profile: str) -> str:
    """The mock runtime's motion file reproducing `frames` (frame i = i-th xrWaitFrame)."""
    if profile not in BINDINGS:
        raise ValueError(f"cannot replay profile {profile!r}: not one of {sorted(BINDINGS)}")
    lines = ["# replay of a headcast trace", "timebase frames", "interpolate off"]
    last: dict[str, str] = {}
    focused: bool | None = None

    def put(i: int, key: str, text: str) -> None:
        # Values persist in the runtime: write only what changed.
        if last.get(key) != text:
            last[key] = text
            lines.append(f"{i} {key} {text}")

    for i, f in enumerate(frames):
        for path, name in _POSE_PATHS:
            p: Pose = getattr(f, name)
            put(i, f"{path} pose", _hex(*p.position, *p.orientation))
        put(i, "/user/head flags", hex(_flags(f.head)))
        for hand, aim, grip in ((LEFT, f.left_aim, f.left_grip), ("/user/hand/right", f.right_aim, f.right_grip)):
            put(i, f"{hand} flags", hex(_flags(aim) or _flags(grip)))
        for path, values in _input_values(f, profile).items():
            put(i, path, values)
        if f.focused != focused:
            if focused is not None or not f.focused:  # a headless session starts focused
                lines.append(f"{i} !{'focus' if f.focused else 'unfocus'}")
            focused = f.focused
    return "\n".join(lines) + "\n"


def _flags(p: Pose) -> int:
    return _pose_row(p)[7]


def replay(source: str | os.PathLike | Sequence[TrackingFrame], *, throttle: bool = False,
           mode: str = "headless", window: Any | None = None) -> Iterator[TrackingFrame]:
    """Play a trace (file or frames) through the mock runtime; yields the session's frames.

    Builds the mock if needed and points this process's loader at it for the session's
    creation. throttle=True paces at 90 Hz like a headset; mode/window as for XRSession.
    """
    frames = list(iter_trace(source)) if isinstance(source, (str, os.PathLike)) else list(source)
    profile = replay_profile(frames)
    text = motion_text(frames, profile)
    manifest = mockrt.ensure_runtime()
    control = mockrt.MockControl(manifest)
    with tempfile.TemporaryDirectory(prefix="headcast-replay-") as tmp:
        motion = Path(tmp) / "replay.motion"
        motion.write_text(text)
        control.reset()
        control.load_motion(motion)
        control.set_profile(profile)
        control.set_throttle(throttle)
        saved = os.environ.get("XR_RUNTIME_JSON")
        os.environ["XR_RUNTIME_JSON"] = str(manifest)
        try:
            session = XRSession(mode, window=window)
        finally:
            if saved is None:
                del os.environ["XR_RUNTIME_JSON"]
            else:
                os.environ["XR_RUNTIME_JSON"] = saved
        try:
            n = 0
            while n < len(frames):
                frame = session.next_frame()
                if session.running:
                    n += 1
                    yield frame
        finally:
            session.close()
            control.reset()  # the library stays loaded through `control`: leave it clean
