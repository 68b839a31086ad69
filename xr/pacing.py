"""A headless session's own frame clock: absolute deadlines and a sleep that aims at them.

A headless session (XR_MND_headless) has no xrWaitFrame to block on: the spec leaves the pacing to
the app. Each frame's deadline is the previous one plus the period (never "now + period", which
drifts by every wake-up's lateness), so the rate holds to the clock's accuracy.

The sleep ends a margin before the deadline, sized from the measured wake-up lateness: a
percentile tracker keeps the last LATE_WINDOW oversleeps. By default (`spin=False`) the margin is
their median and nothing is spun: the wake-ups land around the deadline, as many a little early as
a little late, and the thread burns no CPU waiting (the app's whole CPU goal is 2 % of a core, and
on this VM a sleep and its wake-up alone cost ~55 us of it per frame). With `spin=True` the margin
is their LATE_QUANTILE (plus a little) and the rest is spun, so most frames start on the deadline
itself, at the cost of the spin; the spin is bounded by a share of the period (SPIN_SHARE): a
wake-up later than that is the scheduler preempting us on a busy machine, which a spin cannot undo.
Either margin stays within MAX_LEAD_SHARE of the period. On Linux the pacing thread's timer slack
is set to 1 ns (PR_SET_TIMERSLACK; the default, 50 us, is added to every sleep), which on this VM
halves the median oversleep. A frame that came late runs at once and the next ones catch up with
the grid (the rate holds); a loop more than MAX_LAG periods behind (a real stall) starts again from
now rather than bursting through the frames it missed.
"""

from __future__ import annotations

import sys
import threading
import time

_get_ident = threading.get_ident

DEFAULT_RATE_HZ = 90.0
# CLOCK_MONOTONIC on Linux; on Windows time.monotonic_ns ticks every 15.6 ms before Python 3.13, the
# performance counter (QueryPerformanceCounter) does not.
CLOCK_NS = time.perf_counter_ns if sys.platform == "win32" else time.monotonic_ns
MIN_MARGIN_NS = 10_000  # spin=True: the spin starts at least this before the deadline (a clock read or two)
SPIN_SHARE = 0.01  # spin=True: nor earlier than this share of the period (111 us at 90 Hz)
MAX_LEAD_SHARE = 0.1  # spin=False: the sleep ends at most this share of the period early (1.1 ms at 90 Hz)
LATE_QUANTILE = 0.75  # spin=True: the oversleep the margin covers: 3 frames in 4 wake before their deadline
LATE_WINDOW = 128  # oversleeps tracked (about 1.4 s at 90 Hz)
_RESORT = 16  # the quantile is recomputed every this many samples
_SLACK_NS = 10_000  # margin over the quantile
MAX_LAG = 3  # periods behind the grid that are caught up; more: start again from now
PR_SET_TIMERSLACK = 29  # linux/prctl.h
TIMER_SLACK_NS = 1


def set_timer_slack(ns: int = TIMER_SLACK_NS) -> bool:
    """The calling thread's timer slack (Linux only): True when set. Elsewhere, or where prctl is
    refused, sleeps keep the system's slack and the margin tracks what they do."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return (
            libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(ns), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
            == 0
        )
    except (OSError, AttributeError):
        return False


class Pacer:
    """wait() returns at each frame's deadline (spin=False: about it, the median wake-up on it); the
    first call returns at once."""

    def __init__(
        self,
        rate_hz: float = DEFAULT_RATE_HZ,
        *,
        clock=None,
        sleep=time.sleep,
        timer_slack: bool = True,
        spin: bool = False,
    ) -> None:
        if not rate_hz > 0:
            raise ValueError(f"rate must be positive, not {rate_hz!r}")
        self.rate_hz = rate_hz
        self.period_ns = round(1e9 / rate_hz)
        self._clock, self._sleep = clock or CLOCK_NS, sleep
        self._next: int | None = None
        self._late: list[int] = []  # the last LATE_WINDOW oversleeps (ns), a ring
        self._at = 0  # the ring's next slot
        self._fresh = 0  # samples since the quantile was last computed
        self.spin = spin
        self._quantile = LATE_QUANTILE if spin else 0.5
        self.margin_ns = MIN_MARGIN_NS if spin else 0
        self._slack = timer_slack  # set the waiting thread's timer slack (once per thread)
        self._slack_thread: int | None = None
        self.timer_slack_set = False

    @property
    def max_margin_ns(self) -> int:
        if not self.spin:
            return int(self.period_ns * MAX_LEAD_SHARE)
        return max(MIN_MARGIN_NS, int(self.period_ns * SPIN_SHARE))

    def set_rate(self, rate_hz: float) -> None:
        """Pace at `rate_hz` from the next frame on (the display changed its refresh rate)."""
        if not rate_hz > 0:
            raise ValueError(f"rate must be positive, not {rate_hz!r}")
        period = round(1e9 / rate_hz)
        if self._next is not None:
            self._next += period - self.period_ns  # the next deadline one new period after the last
        self.rate_hz, self.period_ns = rate_hz, period
        self.margin_ns = min(self.margin_ns, self.max_margin_ns)

    def lateness_quantile(self) -> int | None:
        """The tracked oversleeps' quantile the margin is (ns; LATE_QUANTILE with spin, else the
        median), None before any."""
        late = sorted(self._late)
        return late[min(len(late) - 1, int(len(late) * self._quantile))] if late else None

    def _learn(self, over: int) -> None:
        late = self._late
        if len(late) < LATE_WINDOW:
            late.append(over)
        else:
            late[self._at] = over
            self._at = (self._at + 1) % LATE_WINDOW
        self._fresh += 1
        if self._fresh >= _RESORT or len(late) < _RESORT:
            self._relearn()

    def _relearn(self) -> None:
        """The margin from the tracked oversleeps' quantile (every _RESORT samples)."""
        self._fresh = 0
        q = self.lateness_quantile()
        if q is not None:  # (it is: a lateness was just recorded)
            if self.spin:
                self.margin_ns = min(self.max_margin_ns, max(MIN_MARGIN_NS, q + _SLACK_NS))
            else:
                self.margin_ns = min(self.max_margin_ns, max(0, q))

    def wait(self) -> int:
        """Block until this frame's deadline (spin=False: until about it); returns the deadline
        (monotonic ns).

        Right after the sleep every Python call costs microseconds of a cold cache (issue 26: on
        this VM ~8 us each), so the common path is written out here: one clock read before and one
        after the sleep, the oversleep stored in the ring, the quantile sorted every _RESORT frames."""
        if self._slack:
            ident = _get_ident()
            if ident != self._slack_thread:
                self._slack_thread = ident
                self.timer_slack_set = set_timer_slack()
        clock = self._clock
        now = clock()
        deadline = self._next
        if deadline is None or now - deadline > MAX_LAG * self.period_ns:
            deadline = now
        target = deadline - self.margin_ns
        if target > now:
            self._sleep((target - now) * 1e-9)
            over = clock() - target
            late = self._late  # _learn, written out
            if len(late) < LATE_WINDOW:
                late.append(over)
            else:
                at = self._at
                late[at] = over
                self._at = at + 1 if at + 1 < LATE_WINDOW else 0
            fresh = self._fresh + 1
            self._fresh = fresh
            if fresh >= _RESORT or len(late) < _RESORT:
                self._relearn()
        if self.spin:
            while clock() < deadline:
                pass
        self._next = deadline + self.period_ns
        return deadline


def native_pacer(helper, rate_hz: float, *, spin: bool = False, timer_slack: bool = True):
    """The frame helper's Pacer (xr/_fastframe.c, Linux): this module's Pacer in C, on its constants
    (the same deadlines, oversleep ring, quantile, margins and timer slack, on CLOCK_MONOTONIC), whose
    sleep is one clock_nanosleep to the absolute time without the GIL, and which the helper's
    `paced(pacer, offset)` runs with the headless step in one call: no Python between the wake-up
    and the runtime's calls. None when the helper has none (elsewhere, an older build): Pacer then."""
    native = getattr(helper, "Pacer", None)
    if native is None or CLOCK_NS is not time.monotonic_ns:
        return None
    constants = (MIN_MARGIN_NS, SPIN_SHARE, MAX_LEAD_SHARE, LATE_QUANTILE, LATE_WINDOW, _RESORT, _SLACK_NS, MAX_LAG)
    return native(rate_hz, spin, timer_slack, (*constants, TIMER_SLACK_NS))
