"""The headless pacer in C (xr/_fastframe.c's Pacer, pacing.native_pacer): the same state as
pacing.Pacer read for read, its own sleep on the real clock, and the session's frame as one call
(FrameCalls.paced) with the helper; pacing.Pacer and the ctypes calls without it."""

from __future__ import annotations

import statistics

import pytest

from headcast.xr import pacing
from headcast.xr.session import XRSession


class FakeClock:
    """A monotonic ns clock whose sleeps overshoot by `late` ns; each read advances `tick` ns (as
    test_headless.py's)."""

    def __init__(self, late: int = 150_000, tick: int = 1_000) -> None:
        self.t, self.late, self.tick, self.sleeps = 10**12, late, tick, []

    def __call__(self) -> int:
        self.t += self.tick
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += round(seconds * 1e9) + self.late


def native_helper():
    from headcast.xr import fastframe

    fastframe.build()
    helper = fastframe.load()
    assert helper is not None
    if not hasattr(helper, "Pacer"):
        pytest.skip("the C pacer is Linux's (clock_nanosleep, PR_SET_TIMERSLACK): elsewhere Pacer paces")
    return helper


class RecordingClock(FakeClock):
    """FakeClock noting each wait's first read and, when it slept, the read after the sleep."""

    def __init__(self, seed: int) -> None:
        import random

        super().__init__()
        self.rng, self.reads, self.slept = random.Random(seed), [], False

    def __call__(self) -> int:
        t = super().__call__()
        self.reads.append(t)
        return t

    def sleep(self, seconds: float) -> None:
        r = self.rng.random()  # mostly 20-120 us late, now and then preempted, early or on time
        self.late = 4_000_000 if r < 0.05 else 0 if r < 0.1 else self.rng.randrange(20_000, 120_000)
        super().sleep(seconds)


@pytest.mark.parametrize("spin", [False, True])
def test_the_c_pacer_keeps_the_python_pacers_state_read_for_read(spin):
    """pacing.native_pacer (the C Pacer FrameCalls.paced() runs) given the Python Pacer's clock reads
    (advance(now, woke)): the same deadline, margin and oversleep quantile after every frame, through
    stalls, late frames and rate changes."""
    helper = native_helper()
    clock = RecordingClock(seed=26 + spin)
    py = pacing.Pacer(90, clock=clock, sleep=clock.sleep, timer_slack=False, spin=spin)
    c = pacing.native_pacer(helper, 90, spin=spin, timer_slack=False)
    assert (c.rate_hz, c.period_ns, c.margin_ns, c.max_margin_ns, c.spin) == (
        py.rate_hz,
        py.period_ns,
        py.margin_ns,
        py.max_margin_ns,
        py.spin,
    )
    assert c.lateness_quantile() is None
    for i in range(700):
        if i in (300, 500):
            py.set_rate(60.0 if i == 300 else 72.5)
            c.set_rate(py.rate_hz)
        if i % 97 == 0:
            clock.t += 50_000_000  # a stall: both start again from now
        elif i % 31 == 0:
            clock.t += 15_000_000  # a late frame: both catch up with the grid
        clock.reads.clear()
        deadline = py.wait()
        woke = clock.reads[1] if len(clock.reads) > 1 else clock.reads[0]
        assert c.advance(clock.reads[0], woke) == deadline, i
        assert (c.margin_ns, c.lateness_quantile(), c.period_ns) == (
            py.margin_ns,
            py.lateness_quantile(),
            py.period_ns,
        ), i
    assert c.margin_ns > (10_000 if spin else 0)  # it learnt from the oversleeps


def test_the_c_pacer_refuses_what_the_python_one_refuses():
    helper = native_helper()
    for rate in (0, -90.0, float("nan")):
        with pytest.raises(ValueError):
            pacing.native_pacer(helper, rate)
    c = pacing.native_pacer(helper, 90)
    with pytest.raises(ValueError):
        c.set_rate(0.0)
    assert c.rate_hz == 90.0


def test_the_c_pacer_paces_on_the_real_clock_and_sets_the_timer_slack():
    """Its own sleep (clock_nanosleep to the absolute time, the GIL released): absolute deadlines a
    period apart, wake-ups near them, and the waiting thread's slack set as pacing.Pacer sets it."""
    import ctypes
    import threading
    import time

    helper = native_helper()
    got = {}

    def run():
        pacer = pacing.native_pacer(helper, 200)
        deadlines, woke = [], []
        for _ in range(40):
            deadlines.append(pacer.wait())
            woke.append(time.monotonic_ns())
        got["deadlines"], got["woke"], got["pacer"] = deadlines, woke, pacer
        got["slack"] = ctypes.CDLL(None).prctl(30, 0, 0, 0, 0)  # PR_GET_TIMERSLACK, this thread's

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    pacer, deadlines = got["pacer"], got["deadlines"]
    assert pacer.timer_slack_set and got["slack"] == pacing.TIMER_SLACK_NS
    period = pacer.period_ns
    assert period == 5_000_000
    gaps = [b - a for a, b in zip(deadlines, deadlines[1:])]
    assert sum(g == period for g in gaps) >= len(gaps) - 3  # the grid (a stall > 3 periods restarts it)
    late = sorted(w - d for w, d in zip(got["woke"], deadlines))
    assert late[len(late) // 2] < 2_000_000  # woke about the deadline (a loaded machine's median)
    assert pacer.woke_ns >= deadlines[-1] - pacer.margin_ns


def test_a_native_headless_session_runs_the_c_pacer_and_the_step_in_one_call(ctl, frame_path):
    """With the frame helper the session's pacer is the C one and each frame is FrameCalls.paced();
    without it, pacing.Pacer and the ctypes calls (the fallback, tested above and by every test here)."""
    with XRSession(rate_hz=500) as xs:
        frames = [xs.next_frame() for _ in range(30)]
        pacer = xs._pacer
        if frame_path == "native" and hasattr(native_helper(), "Pacer"):
            assert type(pacer).__module__ == "headcast.xr._fastframe" and xs._ff_paced is not None
        else:
            assert isinstance(pacer, pacing.Pacer) and not xs.native
        gaps = [(b.time_ns - a.time_ns) / 1e6 for a, b in zip(frames, frames[1:])]
    assert [f.seq for f in frames] == list(range(30)) and all(f.head.valid for f in frames)
    assert statistics.median(gaps) == pytest.approx(2.0, rel=0.25)
