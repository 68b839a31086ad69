"""Headless sessions by the XR_MND_headless text, against the mock runtime imitating Monado (its
headless xrWaitFrame returns at once with no predicted time, xrBeginFrame then refuses, the session
stays READY) and the strict profile (headless frame calls refused): no frame calls, our own pacing,
poses located at the runtime's now, never waiting for FOCUSED."""

from __future__ import annotations

import statistics
import sys

import pytest

from headcast.xr import pacing, session
from headcast.xr.frame import Controls
from headcast.xr.mockrt import motion_path
from headcast.xr.session import XRSession

pytestmark = pytest.mark.usefixtures("frame_path")  # native helper and ctypes path alike


@pytest.mark.parametrize("profile", ["monado", "strict"])
def test_headless_loop_paces_itself_and_poses_follow_the_clock(ctl, monkeypatch, profile):
    ctl.set_runtime_profile(profile)
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion_path("look_around")))  # turns the head all along
    with XRSession(rate_hz=90) as xs:  # the mock's real clock: CLOCK_MONOTONIC
        assert xs.info.headless and xs.info.rate_hz == 90 and xs.info.time_source == "timespec"
        frames = [xs.next_frame() for _ in range(45)]
        assert xs.running and xs.state.name == "READY"  # begun at READY, never moved on: fine
        again = [xs.poll(f.time_ns) for f in frames[::11]]  # the motion is a function of time
    assert ctl.frames_waited == 0 and ctl.frames_ended == 0  # no xrWaitFrame/xrBeginFrame/xrEndFrame
    assert [f.seq for f in frames] == list(range(45))
    assert all(f.head.valid and not f.focused for f in frames)
    assert [f.head for f in frames[::11]] == [f.head for f in again]
    assert len({f.head.orientation for f in frames}) > 40  # the head turned from frame to frame
    gaps = [(b.time_ns - a.time_ns) / 1e6 for a, b in zip(frames, frames[1:])]
    assert min(gaps) > 0
    assert statistics.median(gaps) == pytest.approx(1000 / 90, rel=0.1)  # paced; exact figures: the bench


def test_a_session_left_in_ready_reads_controls_inactive_not_an_error(ctl):
    """xrSyncActions answers XR_SESSION_NOT_FOCUSED (a success): no controls, no hands, the head."""
    ctl.set_float("/user/hand/right/input/trigger/value", 1.0)
    with XRSession() as xs:
        rest = [xs.next_frame() for _ in range(3)]
        ctl.focus()  # a runtime may still give it focus: then the controls come
        pressed = xs.next_frame()
    assert all(f.controls == Controls() and not f.right_aim.valid and f.head.valid for f in rest)
    assert pressed.focused and pressed.controls.trigger_right == 1.0 and pressed.right_aim.valid


def test_without_a_time_conversion_frames_are_located_by_the_event_clock(ctl, monkeypatch):
    """A runtime without XR_KHR_convert_timespec_time: the session state events' XrTime anchors the
    monotonic clock (the mock's XrTime is CLOCK_MONOTONIC, so the estimate is a little late)."""
    monkeypatch.setattr(session, "_TIMESPEC_EXT", "XR_headcast_not_offered")
    with XRSession() as xs:
        assert xs.info.extensions == ("XR_MND_headless", "XR_FB_display_refresh_rate")
        assert xs.info.time_source == "events"
        frames = [xs.next_frame() for _ in range(5)]
        now = ctl.now
    assert all(f.head.valid for f in frames)
    assert 0 <= now - frames[-1].time_ns < 50_000_000
    assert all(b.time_ns > a.time_ns for a, b in zip(frames, frames[1:]))


def test_a_headless_session_that_cannot_begin_without_a_fallback_is_the_error(ctl):
    """mode "headless" asks for exactly that: the runtime's refusal is the error, no OpenGL session."""
    ctl.fail("xrBeginSession", -2, 0, 1)
    with pytest.raises(
        session.XRError, match="starting the XR session: xrBeginSession returned XR_ERROR_RUNTIME_FAILURE"
    ):
        XRSession("headless")


# -- the pacer alone, on a clock of the test's ---------------------------------------------------


class FakeClock:
    """A monotonic ns clock whose sleeps overshoot by `late` ns; each read advances `tick` ns (a spin)."""

    def __init__(self, late: int = 150_000, tick: int = 1_000) -> None:
        self.t, self.late, self.tick, self.sleeps = 10**12, late, tick, []

    def __call__(self) -> int:
        self.t += self.tick
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += round(seconds * 1e9) + self.late


def test_pacer_holds_absolute_deadlines_and_learns_the_oversleep():
    clock = FakeClock(late=50_000)
    pacer = pacing.Pacer(90, clock=clock, sleep=clock.sleep, timer_slack=False, spin=True)
    deadlines = [pacer.wait() for _ in range(200)]
    period = pacer.period_ns
    assert period == 11_111_111
    assert all(b - a == period for a, b in zip(deadlines, deadlines[1:]))  # no drift from late wake-ups
    assert clock.sleeps[0] > 0.010  # the second frame slept most of the period
    # the spin margin follows the 50 us oversleep (plus its slack)
    assert 50_000 < pacer.margin_ns <= 50_000 + 20_000
    clock.late = 5_000_000  # a preempting scheduler: the spin stays within its share of the period
    for _ in range(200):
        pacer.wait()
    assert pacer.margin_ns == pacer.max_margin_ns == round(period * pacing.SPIN_SHARE)


def test_pacer_margin_is_a_quantile_of_the_oversleep_not_its_peak():
    """One wake-up in ten preempted by 3 ms: the margin covers the usual 40 us, not the spikes."""
    clock = FakeClock(late=40_000)
    pacer = pacing.Pacer(90, clock=clock, sleep=clock.sleep, timer_slack=False, spin=True)
    for i in range(300):
        clock.late = 3_000_000 if i % 10 == 0 else 40_000
        pacer.wait()
    assert 40_000 < pacer.margin_ns <= 40_000 + 20_000
    assert 40_000 <= pacer.lateness_quantile() <= 42_000  # (the fake clock advances 1 us a read)


def test_pacer_by_default_aims_its_sleep_at_the_deadline_and_spins_not():
    """Issue 26 item 2: the default pacer sleeps to the deadline less the median oversleep and
    returns when it wakes: no clock reads in a spin, the wake-ups centred on the grid, which holds."""
    clock = FakeClock(late=60_000)
    pacer = pacing.Pacer(90, clock=clock, sleep=clock.sleep, timer_slack=False)
    assert not pacer.spin
    woke = []
    deadlines = []
    for i in range(300):
        clock.late = 3_000_000 if i % 10 == 0 else 60_000 + (i % 3) * 10_000  # 60-80 us, a preemption in ten
        deadlines.append(pacer.wait())
        woke.append(clock.t)
    period = pacer.period_ns
    assert all(b - a == period for a, b in zip(deadlines, deadlines[1:]))  # the grid holds
    assert 60_000 <= pacer.margin_ns <= 82_000  # the median oversleep, not the 3 ms spikes
    assert pacer.margin_ns <= pacer.max_margin_ns == round(period * pacing.MAX_LEAD_SHARE)
    off = sorted(w - d for w, d in zip(woke[100:], deadlines[100:]) if w - d < 1_000_000)
    assert off[0] < 0 < off[-1] and abs(off[len(off) // 2]) <= 12_000  # around the deadline, both sides
    clock.late = 0  # a wake-up right on time comes a margin early: returned at once, not spun out
    reads = clock.t
    pacer.wait()
    assert clock.t - reads - round(clock.sleeps[-1] * 1e9) <= 3 * clock.tick  # now, after the sleep


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_TIMERSLACK is Linux's")
def test_pacer_sets_the_waiting_threads_timer_slack():
    import ctypes
    import threading

    got = {}

    def run():
        pacer = pacing.Pacer(1000)
        pacer.wait()
        pacer.wait()
        got["set"] = pacer.timer_slack_set
        got["slack"] = ctypes.CDLL(None).prctl(30, 0, 0, 0, 0)  # PR_GET_TIMERSLACK, this thread's

    t = threading.Thread(target=run)  # a thread of its own: the test runner's slack stays as it was
    t.start()
    t.join(10)
    assert got == {"set": True, "slack": pacing.TIMER_SLACK_NS}


def test_pacer_restarts_from_now_after_a_stall():
    clock = FakeClock()
    pacer = pacing.Pacer(90, clock=clock, sleep=clock.sleep)
    first = pacer.wait()
    clock.t += 50_000_000  # the loop stalled for 50 ms (more than MAX_LAG periods)
    resumed = pacer.wait()
    assert resumed - first > 50_000_000  # not a burst of catch-up frames
    assert pacer.wait() - resumed == pacer.period_ns


def test_pacer_refuses_a_rate_that_is_not_positive():
    with pytest.raises(ValueError):
        pacing.Pacer(0)


def test_pacer_catches_up_after_a_late_frame():
    clock = FakeClock()
    pacer = pacing.Pacer(90, clock=clock, sleep=clock.sleep)
    first = pacer.wait()
    clock.t += 15_000_000  # one frame's work took 15 ms: 1.35 periods
    assert [pacer.wait() - first for _ in range(3)] == [pacer.period_ns * k for k in (1, 2, 3)]  # on the grid
