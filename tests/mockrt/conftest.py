"""Fixtures for the mock runtime's own tests: the built runtime, a reset MockControl, sessions.

Headless sessions here follow the spec (XR_MND_headless): no frame calls; time comes from the
runtime (XR_KHR_convert_timespec_time) or from the control API's clock. Frame-loop rules are
tested in a GL session (scenario.py, in a subprocess under Xvfb).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
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
    mock: object = None
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

    def now(self) -> int:
        """The runtime's XrTime for CLOCK_MONOTONIC now, as a headless app gets it."""
        import time as _time

        import xr

        convert = ctypes.cast(
            xr.get_instance_proc_addr(self.inst, "xrConvertTimespecTimeToTimeKHR"),
            xr.PFN_xrConvertTimespecTimeToTimeKHR,
        )
        ns = _time.clock_gettime_ns(_time.CLOCK_MONOTONIC)
        out = xr.Time()
        rc = convert(self.inst, ctypes.byref(xr.timespec(ns // 1_000_000_000, ns % 1_000_000_000)), ctypes.byref(out))
        assert rc == 0, rc
        return out.value

    def at(self, frame: float) -> int:
        """XrTime of motion frame `frame` (90 Hz) counted from this session's begin."""
        return self.mock.at(frame)

    def goto(self, frame: float) -> int:
        """Stop the runtime clock at motion frame `frame`; returns that XrTime."""
        t = self.at(frame)
        self.mock.set_clock(t)
        return t

    def locate(self, space, time: int | None = None):
        """`space` located in the base space at `time` (default: the runtime's now)."""
        import xr

        return xr.locate_space(space, self.stage, time or self.now())

    def path(self, s: str) -> int:
        import xr

        return xr.string_to_path(self.inst, s)


def create_instance(api_version=None, extensions=None):
    import xr

    info = xr.ApplicationInfo(application_name="mockrt-test")
    if api_version is not None:
        info.api_version = api_version
    exts = (
        [xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME]
        if extensions is None
        else extensions
    )
    return xr.create_instance(xr.InstanceCreateInfo(application_info=info, enabled_extension_names=exts))


@contextlib.contextmanager
def headless(mock=None, begin: bool = True, api_version=None, setup=None, base=None, focus: bool = False):
    """Instance + headless session + a base space (STAGE) and VIEW; `setup(h)` runs before begin.

    focus=True: the runtime focuses the begun session (the control API's "focus"; real runtimes
    leave a headless session READY), its SYNCHRONIZED, VISIBLE, FOCUSED events drained.
    Everything is destroyed on exit, also when the test fails.
    """
    import xr

    inst = create_instance(api_version)
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        session = xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
        stage = xr.create_reference_space(
            session, xr.ReferenceSpaceCreateInfo(reference_space_type=base or xr.ReferenceSpaceType.STAGE)
        )
        view = xr.create_reference_space(
            session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.VIEW)
        )
        h = Headless(inst, sid, session, stage, view, mock)
        if setup is not None:
            setup(h)
        if begin:
            early = h.events()
            assert early[:2] == [xr.SessionState.IDLE, xr.SessionState.READY]
            h.backlog = early[2:]
            xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
            if focus:
                mock.focus()
                got = h.events()
                assert got[-3:] == [xr.SessionState.SYNCHRONIZED, xr.SessionState.VISIBLE, xr.SessionState.FOCUSED]
                h.backlog = got[:-3]
        yield h
    finally:
        xr.destroy_instance(inst)


@pytest.fixture
def session(mock):
    """Factory of headless sessions (context managers) for tests holding the `mock` fixture."""
    return functools.partial(headless, mock)
