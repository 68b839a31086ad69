"""The session state machine of the mock runtime in its three behaviour profiles (headless sessions;
the frame loop of a GL session is in test_mockrt_subprocess.py)."""

from __future__ import annotations

import ctypes

import pytest
import xr

from headcast.xr import mockrt

S = xr.SessionState


def test_monado_headless_session_stays_ready_and_frame_calls_do_nothing(mock, session):
    """Monado 21: a headless session is never SYNCHRONIZED/VISIBLE/FOCUSED; xrWaitFrame returns at
    once, sets no predicted display time and is no wait, so xrBeginFrame after it is out of order."""
    assert mock.runtime_profile == "monado"
    with session() as h:
        assert h.events() == [] and mock.session_state == S.READY.value
        fs = xr.wait_frame(h.session)
        assert (fs.predicted_display_time, fs.predicted_display_period, fs.should_render) == (0, 0, False)
        assert mock.frames_waited == 0 and mock.frame_index == -1
        with pytest.raises(xr.CallOrderInvalidError):
            xr.begin_frame(h.session)
        with pytest.raises(xr.CallOrderInvalidError):
            xr.end_frame(
                h.session, xr.FrameEndInfo(display_time=h.now(), environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE)
            )
        assert h.locate(h.view).location_flags == mockrt.TRACKED  # the head is there all the same
        xr.request_exit_session(h.session)
        assert h.events() == [S.SYNCHRONIZED, S.STOPPING]
        xr.end_session(h.session)
        assert h.events() == [S.IDLE, S.EXITING]
        with pytest.raises(xr.SessionNotRunningError):
            xr.wait_frame(h.session)


def test_strict_refuses_frame_calls_in_a_headless_session(mock, session):
    mock.set_runtime_profile("strict")
    with session() as h:
        assert h.events() == []
        with pytest.raises(xr.ValidationFailureError):
            xr.wait_frame(h.session)
        with pytest.raises(xr.ValidationFailureError):
            xr.begin_frame(h.session)
        with pytest.raises(xr.ValidationFailureError):
            xr.end_frame(
                h.session, xr.FrameEndInfo(display_time=h.now(), environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE)
            )
        # poses are known around the runtime's now only
        now = h.now()
        assert h.locate(h.view, now).location_flags == mockrt.TRACKED
        assert h.locate(h.view, now + 2_000_000_000).location_flags == 0
        assert h.locate(h.view, now - 3_000_000_000).location_flags == 0


def instance(*extensions: str):
    return xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="t"), enabled_extension_names=list(extensions)
        )
    )


def test_steamvr_offers_no_headless_session(mock):
    """A runtime without XR_MND_headless: asking for it fails, and so does a session without a
    graphics binding (XR_ERROR_GRAPHICS_DEVICE_INVALID, the code the spec gives xrCreateSession)."""
    mock.set_runtime_profile("steamvr")
    with pytest.raises(xr.ExtensionNotPresentError):
        instance(xr.MND_HEADLESS_EXTENSION_NAME)
    inst = instance(xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME)
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        with pytest.raises(xr.GraphicsDeviceInvalidError):
            xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
    finally:
        xr.destroy_instance(inst)


@pytest.mark.parametrize("profile, headless", [("monado", True), ("steamvr", False), ("strict", True)])
def test_extension_lists_per_profile(mock, monkeypatch, profile, headless):
    monkeypatch.setenv("HEADCAST_MOCK_PROFILE_RUNTIME", profile)
    names = {e.extension_name for e in xr.enumerate_instance_extension_properties()}
    assert {b"XR_KHR_opengl_enable", b"XR_KHR_convert_timespec_time"} <= names
    assert (b"XR_MND_headless" in names) == headless


def test_a_bad_profile_name_fails_instance_creation(mock, monkeypatch, capfd):
    monkeypatch.setenv("HEADCAST_MOCK_PROFILE_RUNTIME", "oculus")
    with pytest.raises(xr.RuntimeFailureError):
        instance()
    assert (
        "HEADCAST_MOCK_PROFILE_RUNTIME=oculus: not one of monado, monado25, steamvr, steamvr-windows, meta-pc, strict"
    ) in capfd.readouterr().err
    with pytest.raises(mockrt.MockControlError, match="unknown runtime profile"):
        mock.set_runtime_profile("oculus")


def test_the_runtime_may_focus_a_headless_session(mock, session):
    with session(focus=True) as h:
        assert mock.session_state == S.FOCUSED.value
        mock.unfocus()
        assert h.events() == [S.VISIBLE]
        mock.focus()
        assert h.events() == [S.FOCUSED]
        mock.request_exit()
        assert h.events() == [S.VISIBLE, S.SYNCHRONIZED, S.STOPPING]
        xr.end_session(h.session)
        assert h.events() == [S.IDLE, S.EXITING]


def test_runtime_requested_exit(mock, session):
    with session() as h:
        mock.request_exit()
        assert h.events() == [S.SYNCHRONIZED, S.STOPPING]
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


def test_session_loss(mock, session):
    with session() as h:
        mock.lose_session()
        assert h.events() == [S.LOSS_PENDING]
        assert mock.session_state == S.LOSS_PENDING.value
        with pytest.raises(xr.SessionLossPending):
            xr.wait_frame(h.session)
        with pytest.raises(xr.SessionLossPending):  # a qualified success, not an error
            xr.locate_space(h.view, h.stage, h.now())
        with pytest.raises(xr.SessionLossPending):
            xr.end_session(h.session)
        xr.destroy_session(h.session)
        assert mock.session_state == 0


def test_unpolled_events_are_reported_lost(mock, session):
    with session(focus=True) as h:
        for _ in range(40):  # 80 state changes, the queue holds 64
            mock.unfocus()
            mock.focus()
        ev = xr.poll_event(h.inst)
        assert xr.StructureType(ev.type) == xr.StructureType.EVENT_DATA_EVENTS_LOST
        lost = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataEventsLost)).contents
        assert lost.lost_event_count == 80 - 64
        assert len(h.events()) == 64


def test_headless_focus_on_request(mock, session, monkeypatch):
    """HEADCAST_MOCK_HEADLESS_FOCUS=1: the runtime focuses a headless session at begin (the spec
    allows it; the imitated runtimes do not), so a mock run gets the motion's inputs."""
    monkeypatch.setenv("HEADCAST_MOCK_HEADLESS_FOCUS", "1")
    with session() as h:
        assert h.events() == [S.SYNCHRONIZED, S.VISIBLE, S.FOCUSED]
        with pytest.raises(xr.CallOrderInvalidError):  # still no frame loop in a headless session
            xr.wait_frame(h.session)
            xr.begin_frame(h.session)
