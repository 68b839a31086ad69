"""The session state machine and the frame loop rules of the mock runtime."""
from __future__ import annotations

import ctypes
import time

import pytest
import xr

S = xr.SessionState


def test_headless_session_focuses_at_begin_and_exits_cleanly(mock, session):
    with session() as h:
        assert h.events() == [S.SYNCHRONIZED, S.VISIBLE, S.FOCUSED]
        assert mock.session_state == S.FOCUSED.value
        h.frame()
        xr.request_exit_session(h.session)
        assert h.events() == [S.VISIBLE, S.SYNCHRONIZED, S.STOPPING]
        with pytest.raises(xr.CallOrderInvalidError):
            xr.begin_frame(h.session)  # no wait_frame before it
        xr.end_session(h.session)
        assert h.events() == [S.IDLE, S.EXITING]
        with pytest.raises(xr.SessionNotRunningError):
            xr.wait_frame(h.session)


def test_runtime_requested_exit(mock, session):
    with session() as h:
        h.events()
        h.frame()
        mock.request_exit()
        assert h.events() == [S.VISIBLE, S.SYNCHRONIZED, S.STOPPING]
        xr.end_session(h.session)
        assert h.events() == [S.IDLE, S.EXITING]


def test_end_session_needs_stopping(mock, session):
    with session() as h:
        with pytest.raises(xr.SessionNotStoppingError):
            xr.end_session(h.session)
        with pytest.raises(xr.SessionRunningError):
            xr.begin_session(h.session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
    with session(begin=False) as h:
        with pytest.raises(xr.SessionNotRunningError):
            xr.request_exit_session(h.session)


def test_focus_changes(mock, session):
    with session() as h:
        h.events()
        mock.unfocus()
        assert h.events() == [S.VISIBLE]
        fs = xr.wait_frame(h.session)
        assert fs.should_render  # VISIBLE still renders
        xr.begin_frame(h.session)
        mock.focus()
        assert h.events() == [S.FOCUSED]
    mock.unfocus()  # unfocused before begin: the session stops at VISIBLE
    with session() as h:
        assert h.events() == [S.SYNCHRONIZED, S.VISIBLE]


def test_session_loss(mock, session):
    with session() as h:
        h.events()
        h.frame()
        mock.lose_session()
        assert h.events() == [S.LOSS_PENDING]
        assert mock.session_state == S.LOSS_PENDING.value
        with pytest.raises(xr.SessionLossPending):
            xr.wait_frame(h.session)
        with pytest.raises(xr.SessionLossPending):  # a qualified success, not an error
            xr.end_session(h.session)
        xr.destroy_session(h.session)
        assert mock.session_state == 0


def test_frame_order(mock, session):
    with session() as h:
        with pytest.raises(xr.CallOrderInvalidError):
            xr.begin_frame(h.session)
        fs = xr.wait_frame(h.session)
        with pytest.raises(xr.CallOrderInvalidError):
            xr.end_frame(h.session, xr.FrameEndInfo(display_time=fs.predicted_display_time,
                                                    environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE))
        xr.begin_frame(h.session)
        fs = xr.wait_frame(h.session)
        with pytest.raises(xr.FrameDiscarded):  # begin again without end: the first frame is dropped
            xr.begin_frame(h.session)
        with pytest.raises(xr.EnvironmentBlendModeUnsupportedError):
            xr.end_frame(h.session, xr.FrameEndInfo(display_time=fs.predicted_display_time,
                                                    environment_blend_mode=xr.EnvironmentBlendMode.ADDITIVE))
        assert mock.frames_ended == 0
        xr.end_frame(h.session, xr.FrameEndInfo(display_time=fs.predicted_display_time,
                                                environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE))
        assert mock.frames_ended == 1
        assert mock.frame_index == 1


def test_display_times_are_monotonic_clock_ns_and_increase(mock, session):
    with session() as h:
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        times = [h.frame() for _ in range(5)]
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    assert all(b > a for a, b in zip(times, times[1:]))
    assert before < times[0] <= after + 12_000_000  # one 90 Hz period ahead at most


def test_frames_are_paced_at_90_hz_when_throttled(mock, session):
    mock.set_throttle(True)
    with session() as h:
        h.frame()
        start = time.monotonic()
        for _ in range(18):
            h.frame()
        elapsed = time.monotonic() - start
    assert elapsed >= 18 * 0.0111 * 0.95  # pacing sleeps at least one period per frame
    assert mock.frames_ended == 19


def test_unpolled_events_are_reported_lost(mock, session):
    with session() as h:
        for _ in range(40):  # 80 state changes, the queue holds 64
            mock.unfocus()
            mock.focus()
        ev = xr.poll_event(h.inst)
        assert xr.StructureType(ev.type) == xr.StructureType.EVENT_DATA_EVENTS_LOST
        lost = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataEventsLost)).contents
        assert lost.lost_event_count == 3 + 80 - 64  # SYNCHRONIZED, VISIBLE, FOCUSED were queued too
        assert len(h.events()) == 64
