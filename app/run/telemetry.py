"""Telemetry: send rates, bytes/s, frame cost, motion-to-wire latency, sent-vs-seen series.

Fixed-size numpy rings, so a long run keeps constant memory and the HUD/plots read slices
without copying Python lists. Times are seconds on the loop's one clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:
    np: Any = None  # numpy, imported by the first Ring: start-up does not wait for it (issue 26 item 6)


class Ring:
    """The last `size` values of one or more columns (a float64 ring).

    Values are appended to a flat Python list and written into the array in batches (one
    conversion and slice assignment per BATCH rows, or when read): a numpy row write per frame
    costs more than the frame's own bookkeeping, and a flat list of floats converts several
    times faster than a list of row tuples. Readers (HUD, status, summary) see every value added.
    A one-column ring's `append` is the list's own (a C call, no Python frame: the frame loop's
    per-frame figures); whoever appends that way calls `flush()` now and then (the loop: every
    FLUSH_EVERY frames), else the list grows until the next read.
    """

    BATCH = 256

    def __init__(self, size: int, columns: int = 1) -> None:
        global np
        if np is None:
            import numpy as np
        self.data = np.zeros((size, columns))
        self.size, self.columns, self.n, self.i = size, columns, 0, 0
        self._pending: list[float] = []  # the same list for the ring's life (`append` is bound to it)
        self._flush_at = self.BATCH * columns
        self._flushed = 0
        self.append = self._pending.append  # one value, one-column rings only

    def add(self, *values: float) -> None:
        """One row: exactly `columns` values."""
        pending = self._pending
        pending += values
        if len(pending) >= self._flush_at:
            self.flush()

    def flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        rows = np.array(pending, dtype=np.float64).reshape(-1, self.columns)
        pending.clear()
        block = rows[-self.size :]
        k = len(block)
        first = min(k, self.size - self.i)
        self.data[self.i : self.i + first] = block[:first]
        self.data[: k - first] = block[first:]
        self.i = (self.i + k) % self.size
        self.n = min(self.n + len(rows), self.size)
        self._flushed += len(rows)

    @property
    def added(self) -> int:
        """Rows added since the start (the ring keeps the last `size`)."""
        return self._flushed + len(self._pending) // self.columns

    def values(self) -> np.ndarray:
        """Oldest first."""
        self.flush()
        if self.n < self.size:
            return self.data[: self.n]
        return np.roll(self.data, -self.i, axis=0)

    def since(self, t0: float, column: int = 0) -> np.ndarray:
        """The rows whose `column` (a time, non-decreasing as added) is ≥ t0, oldest first, as a new
        array: only those rows are copied (`values()` rolls the whole ring)."""
        self.flush()
        data, i = self.data, self.i
        if self.n < self.size:
            newer = data[: self.n]
            return newer[int(np.searchsorted(newer[:, column], t0, side="left")) :].copy()
        older, newer = data[i:], data[:i]  # full: the oldest row is at i
        if len(older) and older[-1, column] >= t0:
            start = int(np.searchsorted(older[:, column], t0, side="left"))
            return np.concatenate((older[start:], newer))
        return newer[int(np.searchsorted(newer[:, column], t0, side="left")) :].copy()

    def percentile(self, q: float, column: int = 0) -> float | None:
        self.flush()
        if self.n == 0:
            return None
        return float(np.percentile(self.data[: self.n, column], q))


class RateMeter:
    """Messages and bytes per second over the last `window` seconds.

    The last `size` sends in two preallocated lists: a send stores two numbers (no array, no
    batch to flush), and a reader walks back over the last second's entries only."""

    def __init__(self, window: float = 1.0, size: int = 1024) -> None:
        self.window = window
        self.size = size
        self._times = [0.0] * size
        self._bytes = [0] * size
        self._i = 0  # where the next send goes
        self.total_messages = 0
        self.total_bytes = 0

    def add(self, now: float, nbytes: int) -> None:
        i = self._i
        self._times[i] = now
        self._bytes[i] = nbytes
        self._i = i + 1 if i + 1 < self.size else 0
        self.total_messages += 1
        self.total_bytes += nbytes

    @property
    def last_time(self) -> float | None:
        """When the last message went out (None before the first)."""
        if not self.total_messages:
            return None
        return self._times[self._i - 1 if self._i else self.size - 1]

    def rates(self, now: float) -> tuple[float, float]:
        """(messages/s, bytes/s)."""
        since = now - self.window
        times, sizes = self._times, self._bytes
        n = total = 0
        i = self._i
        for _ in range(min(self.total_messages, self.size)):
            i = i - 1 if i else self.size - 1
            if times[i] <= since:
                break
            n += 1
            total += sizes[i]
        return n / self.window, total / self.window


@dataclass(frozen=True, slots=True)
class SinkStatus:
    """What the HUD, the console status line and --json show for one sink."""

    name: str
    state: str  # "offline", "connecting", "connected", "in game", "error", ...
    send_hz: float = 0.0
    bytes_per_s: float = 0.0
    packed: str = ""  # latest packed values (buttons hex, body size, record bytes)
    error_deg: float | None = None  # angle error sent vs seen (far side's view), degrees
    detail: str = ""  # one line of extra state (tracking lost, server name, ...)
    drops: dict | None = None  # messages from the server dropped undecoded, reason → count
    ping_ms: float | None = None  # Q3: the client's ping; NetSync: our pose's round trip through the room broadcast
    values: dict | None = None  # `packed` as numbers (--json): buttons, roll_short, body_bytes, flags ...
    label: str = "ping"  # what ping_ms is called on the status line
    live: bool = False  # streaming to a server that has let us in (the line shows rates first)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "state": self.state,
            "send_hz": round(self.send_hz, 2),
            "bytes_per_s": round(self.bytes_per_s, 1),
            "packed": self.packed,
            "error_deg": None if self.error_deg is None else round(self.error_deg, 3),
            "detail": self.detail,
            "drops": dict(self.drops or {}),
            "ping_ms": None if self.ping_ms is None else round(self.ping_ms, 1),
            "values": dict(self.values or {}),
        }


class Telemetry:
    """Loop-wide figures: per-frame cost, motion-to-wire latency (the far sides' series are
    app/sinks/farside.py's)."""

    def __init__(self, history: int = 4096) -> None:
        self.frame_cost = Ring(history)  # seconds of work per frame (excluding the XR wait)
        self.latency = Ring(history)  # pose located → bytes handed to a socket, seconds
        self.tracking_lost_frames = 0
        # frame(cost) and wire(latency), once per frame: the rings' list appends (C calls, no Python
        # frame); the loop calls flush() every FLUSH_EVERY frames
        self.frame = self.frame_cost.append
        self.wire = self.latency.append

    def flush(self) -> None:
        """Write what frame() and wire() appended into the rings (readers do it too)."""
        self.frame_cost.flush()
        self.latency.flush()

    @property
    def frames(self) -> int:
        return self.frame_cost.added

    def summary(self) -> dict:
        ms = lambda v: None if v is None else round(v * 1000.0, 3)  # noqa: E731
        return {
            "frames": self.frames,
            "tracking_lost_frames": self.tracking_lost_frames,
            "frame_cost_ms": {"median": ms(self.frame_cost.percentile(50)), "p99": ms(self.frame_cost.percentile(99))},
            "latency_ms": {"median": ms(self.latency.percentile(50)), "p99": ms(self.latency.percentile(99))},
        }
