"""Fixtures for the mock runtime's own tests: the built runtime, a reset MockControl, sessions."""
from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass, field

import pytest

from headcast.xr import mockrt
from support import mock_control


@pytest.fixture(scope="session")
def runtime_manifest():
    return mockrt.ensure_runtime()


@pytest.fixture
def mock(runtime_manifest, monkeypatch):
    """A MockControl on the live library, reset before and after; the loader pointed at it, unpaced."""
    yield from mock_control(runtime_manifest, monkeypatch, paced=False)


@dataclass
class Headless:
    inst: object
    system: int
    session: object
    stage: object
    view: object
    backlog: list = field(default_factory=list)  # events polled before begin, past IDLE and READY

    def events(self) -> list:
        """Drain the event queue: SessionState values and "profile" for profile changes."""
        import xr

        out, self.backlog = self.backlog, []
        while True:
            try:
                ev = xr.poll_event(self.inst)
            except xr.EventUnavailable:
                return out
            kind = xr.StructureType(ev.type)
            if kind == xr.StructureType.EVENT_DATA_SESSION_STATE_CHANGED:
                sc = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataSessionStateChanged)).contents
                out.append(xr.SessionState(sc.state))
            elif kind == xr.StructureType.EVENT_DATA_INTERACTION_PROFILE_CHANGED:
                out.append("profile")

    def frame(self) -> int:
        """One wait/begin/end with no layers; returns the predicted display time."""
        import xr

        fs = xr.wait_frame(self.session)
        xr.begin_frame(self.session)
        xr.end_frame(self.session, xr.FrameEndInfo(
            display_time=fs.predicted_display_time,
            environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE, layers=[]))
        return fs.predicted_display_time

    def locate(self, space, time: int | None = None):
        """`space` located in the base space at `time` (default: now)."""
        import time as _time

        import xr

        return xr.locate_space(space, self.stage, time or _time.clock_gettime_ns(_time.CLOCK_MONOTONIC))

    def path(self, s: str) -> int:
        import xr

        return xr.string_to_path(self.inst, s)


def create_instance(api_version=None, extensions=None):
    import xr

    info = xr.ApplicationInfo(application_name="mockrt-test")
    if api_version is not None:
        info.api_version = api_version
    exts = [xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME] if extensions is None else extensions
    return xr.create_instance(xr.InstanceCreateInfo(application_info=info, enabled_extension_names=exts))


@contextlib.contextmanager
def headless(begin: bool = True, api_version=None, setup=None, base=None):
    """Instance + headless session + a base space (STAGE) and VIEW; `setup(h)` runs before begin.

    Everything is destroyed on exit, also when the test fails.
    """
    import xr

    inst = create_instance(api_version)
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        session = xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
        stage = xr.create_reference_space(session, xr.ReferenceSpaceCreateInfo(reference_space_type=base or xr.ReferenceSpaceType.STAGE))
        view = xr.create_reference_space(session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.VIEW))
        h = Headless(inst, sid, session, stage, view)
        if setup is not None:
            setup(h)
        if begin:
            early = h.events()
            assert early[:2] == [xr.SessionState.IDLE, xr.SessionState.READY]
            h.backlog = early[2:]
            xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
        yield h
    finally:
        xr.destroy_instance(inst)


@pytest.fixture
def session(mock):
    """Factory of headless sessions (context managers) for tests holding the `mock` fixture."""
    return headless
