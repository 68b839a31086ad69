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

Crash safety: the writer appends to the named file itself, from its own thread, one write
per frame every 50 ms, and syncs it to disk once a second; the end object, written by close(),
is what marks a trace complete. A recording cut short (`kill -9`, a power loss, a full disk) is a trace without its
end object, perhaps with a torn last line or, after a power loss, a tail of zeros: the reader
gives every whole frame before that and then raises `TraceEndsEarly` ("trace ends early at
frame N"), which callers may treat as the end. Damage followed by readable frames is a
damaged file (`TraceError`), not a torn tail. The format is the one earlier versions wrote
(they wrote a hidden temporary file and renamed it on close), so their traces read as before.

`replay()` plays a trace through the mock runtime: the frames become a motion file (frame
timebase, no interpolation, hex floats) and a session on the mock gives them back, poses bit
for bit. The runtime emulates one controller, so a trace replays with the profile it was
recorded with (its first non-empty one); each hand's tracking flags come from its aim pose.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Sequence

from . import mockrt
from .actions import BINDINGS, LEFT
from .frame import Controls, Pose, TrackingFrame

FORMAT = "headcast-trace"
VERSION = 1

_ORI_VALID, _POS_VALID, _ORI_TRACKED, _POS_TRACKED = 1, 2, 4, 8
# Seconds between the writer's writes (what `kill -9` can cost at most) and between its
# fdatasync calls (what a power loss can cost at most).
FLUSH_INTERVAL = 0.05
SYNC_INTERVAL = 1.0


# The writer's portable forms: fdatasync where the system has it (Linux), else fsync (macOS,
# Windows); O_BINARY so Windows writes the lines' "\n" as is; a folder is synced where it can be
# opened as one (O_DIRECTORY: POSIX; Windows has no folder sync, NTFS journals the name).
def _datasync(fd: int) -> None:
    (getattr(os, "fdatasync", None) or os.fsync)(fd)


def _write_flags() -> int:
    return os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class TraceError(Exception):
    """A trace file that cannot be read: not a trace, a newer version, damaged or truncated."""


class TraceEndsEarly(TraceError):
    """The trace stops before its end record: the recording was cut short (killed, power lost,
    disk full). The `frames` whole frames before that point are good (iter_trace gave them)."""

    def __init__(self, path: Path, frames: int, why: str) -> None:
        super().__init__(f"{path}: trace ends early at frame {frames} ({why})")
        self.path, self.frames, self.why = path, frames, why


@dataclass(frozen=True, slots=True)
class Trace:
    meta: dict[str, Any]
    frames: tuple[TrackingFrame, ...]
    ends_early: TraceEndsEarly | None = None  # read_trace(partial=True) of a trace cut short


def _pose_row(p: Pose) -> list:
    flags = (
        (_ORI_VALID if p.orientation_valid else 0)
        | (_POS_VALID if p.position_valid else 0)
        | (_ORI_TRACKED if p.orientation_tracked else 0)
        | (_POS_TRACKED if p.position_tracked else 0)
    )
    return [*p.position, *p.orientation, flags]


def frame_row(f: TrackingFrame) -> list:
    c = f.controls
    return [
        f.seq,
        f.time_ns,
        _pose_row(f.head),
        _pose_row(f.left_aim),
        _pose_row(f.left_grip),
        _pose_row(f.right_aim),
        _pose_row(f.right_grip),
        [*c.move, *c.turn, c.trigger_left, c.trigger_right, c.squeeze_left, c.squeeze_right, c.jump, c.menu],
        f.profile_left,
        f.profile_right,
        f.focused,
    ]


class TraceWriter:
    """Appends frames to `path` as they come, so the file is readable up to its last frame
    whatever stops the process; close() marks it complete (the end record).

    write() only queues the frame (a deque append, well under a microsecond). The writer's own
    thread turns queued frames into lines and writes them, one write(2) per frame, every
    `flush_interval` seconds, and fdatasync()s the file every `sync_interval` seconds. Measured
    on this VM right after a frame's sleep, a frame's JSON line costs ~95 µs, its write(2) ~25 µs
    and a sync 0.3-8 ms: work that stays off the frame loop's thread. The thread mostly runs while
    the loop waits for the next XR frame (that call releases the GIL) and gives the GIL back at
    every write. After `kill -9` the file holds every frame up to the last flush (at most the
    last ~50 ms are lost), after a power loss every frame up to the last sync (~1 s).

    A failed write (disk full) cuts the torn line away, closes the file and stops the recording:
    the next write(), flush() or close() raises that OSError, and the file stays a readable
    trace that ends early.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        meta: dict[str, Any] | None = None,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        sync_interval: float = SYNC_INTERVAL,
    ) -> None:
        self.path = Path(path)
        self.count = 0  # frames in the file (whole lines)
        self.failed: OSError | None = None  # the error that stopped the recording, if one did
        self._size = 0  # bytes of whole lines in the file
        self._queue: deque[TrackingFrame] = deque()
        self._queued = 0
        if self.path.is_dir():
            raise IsADirectoryError(errno.EISDIR, unusable(self.path), str(self.path))
        # Written in place from the first frame: a crash must leave the frames, not a hidden
        # temporary file. 0o666: a trace gets the permissions of any new file (umask applies).
        self._fd: int | None = os.open(self.path, _write_flags(), 0o666)
        try:
            self._append(_line({"format": FORMAT, "version": VERSION, "meta": meta or {}}))
            # The file (and its name in the folder) survive a power loss from here on.
            _datasync(self._fd)
            _sync_dir(self.path.parent)
        except BaseException:
            os.close(self._fd)
            self._fd = None
            self.path.unlink(missing_ok=True)  # not even a header: nothing worth keeping
            raise
        self._flush_interval, self._sync_interval = flush_interval, sync_interval
        self._wake = threading.Event()
        self._stopping = False
        self._progress = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="headcast-trace-writer", daemon=True)
        self._thread.start()

    def write(self, frame: TrackingFrame) -> None:
        if self.failed is not None:
            raise self.failed
        if self._stopping or self._fd is None:
            raise ValueError("trace writer is closed")
        self._queue.append(frame)
        self._queued += 1

    # -- the writer's thread (and the closing thread, once the writer's has ended) --

    def _run(self) -> None:
        next_sync = time.monotonic() + self._sync_interval
        while True:
            self._wake.wait(self._flush_interval)
            self._wake.clear()
            stopping = self._stopping
            try:
                self._drain()
                if stopping:
                    return
                if time.monotonic() >= next_sync and self._fd is not None:
                    _datasync(self._fd)
                    next_sync = time.monotonic() + self._sync_interval
            except OSError as e:
                self._fail(e)
                return
            finally:
                with self._progress:
                    self._progress.notify_all()

    def _drain(self) -> None:
        queue = self._queue
        while queue:
            self._append(_line(frame_row(queue[0])))
            queue.popleft()
            self.count += 1

    def _append(self, data: bytes) -> None:
        fd = self._fd
        assert fd is not None  # the writer thread ends when the file is closed
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        self._size += len(data)

    def _fail(self, error: OSError) -> None:
        """Keep the whole lines written (cut the torn one: truncating needs no space) and stop."""
        self.failed = error
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, self._size)
        except OSError:
            pass  # the reader stops at a torn last line anyway
        os.close(fd)

    def _stop_thread(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join()

    # -- the caller's side --

    @property
    def closed(self) -> bool:
        return self._fd is None

    def flush(self, timeout: float | None = None) -> None:
        """Write every frame queued so far now (wait for it, at most `timeout` s); raises the
        recording's failure if there is one."""
        target = self._queued
        if self.failed is None and self._thread.is_alive():
            self._wake.set()
            with self._progress:
                self._progress.wait_for(
                    lambda: self.failed is not None or self.count >= target or not self._thread.is_alive(), timeout
                )
        if self.failed is not None:
            raise self.failed

    def close(self) -> Path:
        """Write what is queued, mark the trace complete (the end record), sync it and close;
        returns its path. Raises the OSError that stopped the recording, or the one that kept
        the end record out (the frames stay readable)."""
        self._stop_thread()
        if self.failed is not None:
            raise self.failed
        if self._fd is None:
            return self.path
        try:
            self._drain()
            self._append(_line({"end": self.count}))
            _datasync(self._fd)
        except OSError as e:
            self._fail(e)
            raise
        os.close(self._fd)
        self._fd = None
        return self.path

    def abort(self) -> None:
        """Stop without marking the trace complete: it keeps the frames written (and queued) so
        far and reads as a trace that ends early."""
        self._stop_thread()
        if self._fd is None:
            return
        try:
            self._drain()
        except OSError as e:
            self._fail(e)  # kept in `failed`; abort runs on the way out of another error
            return
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def unusable(path: str | os.PathLike) -> str | None:
    """Why a trace cannot be recorded at `path`, or None: checked before a run opens anything,
    so a typo does not cost a session (TraceWriter itself still reports what the system says)."""
    p = Path(path)
    if p.is_dir():
        return f"is a folder; name a file in it, e.g. {p / 'headcast.trace'}"
    folder = p.parent
    if not folder.is_dir():
        return f"the folder {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        return f"{'the file' if p.exists() else f'the folder {folder}'} is not writable"
    return None


def cut_short(path: str | os.PathLike) -> bool:
    """A trace (its header reads) whose tail lacks the end record: the recording was cut short.
    A cheap look at both ends; the reader says exactly where it ends."""
    try:
        read_meta(path)
    except TraceError:
        return False  # not a trace at all: the reader names what is wrong
    return not is_complete(path)


def _line(obj: Any) -> bytes:
    return (json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def _sync_dir(folder: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows: a folder cannot be opened to sync it
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the file's own data is synced
    finally:
        os.close(fd)


def write_trace(path: str | os.PathLike, frames: Iterable[TrackingFrame], meta: dict[str, Any] | None = None) -> Path:
    with TraceWriter(path, meta) as w:
        for f in frames:
            w.write(f)
    return w.path


def _num(v: Any, what: str) -> float:
    # bool is an int subclass; a bool where a number belongs is a damaged file.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{what} is not a number: {v!r}")
    try:
        return float(v)
    except OverflowError:  # an integer past float's range (10**400): a damaged file, not a crash
        raise ValueError(f"{what} is a number out of range ({len(str(abs(v)))} digits)") from None


def _pose(row: Any, what: str) -> Pose:
    if not isinstance(row, list) or len(row) != 8:
        raise ValueError(f"{what} is not an 8-item pose")
    vals = [_num(v, what) for v in row[:7]]
    flags = row[7]
    if isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags <= 15:
        raise ValueError(f"{what} has bad flags {flags!r}")
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"{what} has a non-finite value")
    return Pose(
        (vals[0], vals[1], vals[2]),
        (vals[3], vals[4], vals[5], vals[6]),
        bool(flags & _POS_VALID),
        bool(flags & _ORI_VALID),
        bool(flags & _POS_TRACKED),
        bool(flags & _ORI_TRACKED),
    )


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
    head, left_aim, left_grip, right_aim, right_grip = (_pose(row[2 + i], n) for i, n in enumerate(names))
    return TrackingFrame(
        seq,
        t,
        head,
        left_aim,
        left_grip,
        right_aim,
        right_grip,
        controls=_controls(row[7]),
        profile_left=row[8],
        profile_right=row[9],
        focused=row[10],
    )


def iter_trace(path: str | os.PathLike) -> Iterator[TrackingFrame]:
    """Yield the frames of a trace; raise TraceError on a bad header or a damaged line, and
    TraceEndsEarly (a TraceError) after the last whole frame of a trace cut short.

    Call `read_meta` for the header's metadata.
    """
    path = Path(path)
    with _open(path) as fh:
        _header(path, fh)
        count = 0
        lineno = 1
        while True:
            lineno += 1
            raw = fh.readline(_MAX_LINE + 1)
            if not raw:
                raise TraceEndsEarly(path, count, "no end record: the recording was cut short")
            if b"\0" in raw:
                # A power loss before the data reached the disk leaves the file's tail zeroed.
                raise TraceEndsEarly(
                    path,
                    count,
                    f"line {lineno} holds zero bytes: the recording was cut short before the disk caught up",
                )
            if not raw.endswith(b"\n"):
                if len(raw) > _MAX_LINE:
                    raise TraceError(f"{path}:{lineno}: line too long")
                raise TraceEndsEarly(path, count, f"line {lineno} is cut off: the recording was cut short")
            obj = _json(path, raw, lineno)
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


def read_trace(path: str | os.PathLike, *, partial: bool = False) -> Trace:
    """The whole trace. A trace cut short raises TraceEndsEarly, or with `partial` comes back
    with the frames it holds and `ends_early` set."""
    frames: list[TrackingFrame] = []
    try:
        frames.extend(iter_trace(path))
    except TraceEndsEarly as e:
        if not partial:
            raise
        return Trace(read_meta(path), tuple(frames), e)
    return Trace(read_meta(path), tuple(frames))


def is_complete(path: str | os.PathLike) -> bool:
    """Whether the trace ends with its end record (a cheap look at the file's tail, not a check
    of every line): False for a recording cut short, or for a file that is no trace at all."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 256))
            tail = fh.read()
    except OSError:
        return False
    if not tail.endswith(b"\n"):
        return False
    try:
        obj = json.loads(tail[:-1].rsplit(b"\n", 1)[-1])
    except ValueError:
        return False
    return isinstance(obj, dict) and set(obj) == {"end"}


# A frame line is ~350-600 bytes; a longer "line" is a damaged file, not something to buffer.
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
    return _json(path, raw, lineno)


def _json(path: Path, raw: bytes, lineno: int) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise TraceError(f"{path}:{lineno}: not JSON ({exc})") from None


WHAT_A_TRACE_IS = (
    f'a trace is what `headcast run --record FILE` writes: JSON lines after a {{"format": "{FORMAT}"}} header'
)


def what_it_is(path: Path) -> str | None:
    """What a file that is not a trace is, as the rest of a sentence "FILE is …" that says what to
    do with it (None: nothing recognisable). A look at its first 64 KiB: a motion script, a swarm
    report, other JSON, Markdown, binary data."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_MAX_LINE)
    except OSError:
        return None
    if b"\0" in head[:4096]:
        return f"binary data, not a headcast trace ({WHAT_A_TRACE_IS})"
    text = head.decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines()]
    meaningful = [ln for ln in lines if ln and not ln.startswith("#")][:50]
    motion = re.compile(r"^[-+0-9.]+\s+/user/|^(timebase|interpolate)\b")
    if meaningful and sum(bool(motion.match(ln)) for ln in meaningful) * 2 >= len(meaningful):
        return (
            f"a motion script, not a headcast trace: play it with `headcast run --mock {path}` "
            f"(a swarm plays it with --motion {path})"
        )
    if text.lstrip().startswith(("{", "[")):
        try:
            with open(path, "rb") as fh:
                obj = json.loads(fh.read(16 * 1024 * 1024))
        except (ValueError, RecursionError, OSError):
            obj = None
        if isinstance(obj, dict) and obj.get("kind") == "headcast swarm report":
            return (
                "a swarm report, not a headcast trace (`headcast swarm --report DIR` writes it; swarm.html "
                "beside it is the readable form; a trace is what `headcast run --record FILE` writes)"
            )
        if obj is not None:
            return f"JSON but not a headcast trace ({WHAT_A_TRACE_IS})"
    first = next((ln for ln in lines if ln), "")
    if path.suffix.lower() in (".md", ".markdown") or (
        first.startswith("# ") and any(ln.startswith(("## ", "```")) for ln in lines[:400])
    ):
        return f"Markdown, not a headcast trace ({WHAT_A_TRACE_IS})"
    return None


def _not_a_trace(path: Path, fallback: str) -> TraceError:
    kind = what_it_is(path)
    return TraceError(f"{fallback}, not a headcast trace ({WHAT_A_TRACE_IS})" if kind is None else f"{path} is {kind}")


def _header(path: Path, fh: BinaryIO) -> dict[str, Any]:
    try:
        obj = _next_json(path, fh, 1)
    except TraceError as e:
        fh.seek(0)
        if not re.match(rb'\{\s*"format"\s*:\s*"' + FORMAT.encode(), fh.read(64)):  # else a damaged header
            raise _not_a_trace(path, str(e)) from None
        raise
    if obj is _EOF:
        raise TraceError(f"{path}: empty file, not a headcast trace ({WHAT_A_TRACE_IS})")
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise _not_a_trace(path, f"{path}: no '{FORMAT}' header") from None
    if obj.get("version") != VERSION:
        raise TraceError(
            f"{path}: trace version {obj.get('version')!r} is not supported (this headcast reads version {VERSION})"
        )
    meta = obj.get("meta")
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: header meta is not an object")
    return meta


# -- replay through the mock runtime -------------------------------------------------------

DEFAULT_PROFILE = "/interaction_profiles/oculus/touch_controller"

_POSE_PATHS = (
    ("/user/head", "head"),
    (f"{LEFT}/input/aim/pose", "left_aim"),
    (f"{LEFT}/input/grip/pose", "left_grip"),
    ("/user/hand/right/input/aim/pose", "right_aim"),
    ("/user/hand/right/input/grip/pose", "right_grip"),
)


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
    shared: dict[str, tuple[float, float] | bool] = {"move": c.move, "turn": c.turn, "jump": c.jump, "menu": c.menu}
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
    """The mock runtime's motion file reproducing `frames` (frame i at motion frame i: replay runs it
    on the step clock)."""
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
            if focused is not None or f.focused:  # a session starts unfocused (a headless one stays READY)
                lines.append(f"{i} !{'focus' if f.focused else 'unfocus'}")
            focused = f.focused
    return "\n".join(lines) + "\n"


def _flags(p: Pose) -> int:
    return _pose_row(p)[7]


def replay(
    source: str | os.PathLike | Sequence[TrackingFrame],
    *,
    throttle: bool = False,
    mode: str = "headless",
    window: Any | None = None,
) -> Iterator[TrackingFrame]:
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
        control.step_clock()  # frame i is located at motion frame i's time, whatever the wall clock does
        control.load_motion(motion)
        control.set_profile(profile)
        control.set_throttle(throttle)
        saved = os.environ.get("XR_RUNTIME_JSON")
        os.environ["XR_RUNTIME_JSON"] = str(manifest)
        try:
            from .session import XRSession  # here: reading and replaying a trace need no pyopenxr (macOS)

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
