"""A headless session's own frame clock: absolute deadlines, a sleep, then a short spin.

A headless session (XR_MND_headless) has no xrWaitFrame to block on: the spec leaves the pacing to
the app. Each frame's deadline is the previous one plus the period (never "now + period", which
drifts by every wake-up's lateness), so the rate holds to the clock's accuracy. The sleep ends a
margin before the deadline and the rest is spun: on this VM a plain sleep wakes 0.15-0.2 ms late,
a spin is exact. The margin follows the recent oversleep (a decaying peak) but never exceeds
0.5 ms: a longer lateness is the scheduler preempting us on a busy machine, which a spin cannot
undo and would only make worse. A frame that came late runs at once and the next ones catch up
with the grid (the rate holds); a loop more than MAX_LAG periods behind (a real stall) starts
again from now rather than bursting through the frames it missed.
"""
from __future__ import annotations

import sys
import time

DEFAULT_RATE_HZ = 90.0
# CLOCK_MONOTONIC on Linux; on Windows time.monotonic_ns ticks every 15.6 ms before Python 3.13, the
# performance counter (QueryPerformanceCounter) does not.
CLOCK_NS = time.perf_counter_ns if sys.platform == "win32" else time.monotonic_ns
MIN_MARGIN_NS = 100_000     # the spin never starts later than this before the deadline
MAX_MARGIN_NS = 500_000     # nor earlier than this: beyond it a late wake-up is the machine's, not ours
MAX_LAG = 3                 # periods behind the grid that are caught up; more: start again from now
_SLACK_NS = 50_000          # margin over the peak oversleep
_DECAY = 1 / 64             # per frame: a spike is forgotten within a second or so at 90 Hz


class Pacer:
    """wait() returns at each frame's deadline; the first call returns at once."""

    def __init__(self, rate_hz: float = DEFAULT_RATE_HZ, *, clock=None, sleep=time.sleep) -> None:
        if not rate_hz > 0:
            raise ValueError(f"rate must be positive, not {rate_hz!r}")
        self.rate_hz = rate_hz
        self.period_ns = round(1e9 / rate_hz)
        self._clock, self._sleep = clock or CLOCK_NS, sleep
        self._next: int | None = None
        self._peak = 0  # decaying peak of the sleep's oversleep, ns
        self.margin_ns = MIN_MARGIN_NS

    def set_rate(self, rate_hz: float) -> None:
        """Pace at `rate_hz` from the next frame on (the display changed its refresh rate)."""
        if not rate_hz > 0:
            raise ValueError(f"rate must be positive, not {rate_hz!r}")
        period = round(1e9 / rate_hz)
        if self._next is not None:
            self._next += period - self.period_ns  # the next deadline one new period after the last
        self.rate_hz, self.period_ns = rate_hz, period

    def wait(self) -> int:
        """Block until this frame's deadline; returns the deadline (monotonic ns)."""
        clock = self._clock
        now = clock()
        deadline = self._next
        if deadline is None or now - deadline > MAX_LAG * self.period_ns:
            deadline = now
        target = deadline - self.margin_ns
        if target > now:
            self._sleep((target - now) / 1e9)
            over = clock() - target
            self._peak = max(over, self._peak - int(self._peak * _DECAY))
            self.margin_ns = min(MAX_MARGIN_NS, max(MIN_MARGIN_NS, self._peak + _SLACK_NS))
        while clock() < deadline:
            pass
        self._next = deadline + self.period_ns
        return deadline
