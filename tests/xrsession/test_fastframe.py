"""The native frame helper (xr/fastframe.c): in use when built, and frame for frame, error for
error, the same as the pure-ctypes path it replaces."""
from __future__ import annotations

import ctypes
import dataclasses

import pytest
import xr

from headcast.xr import fastframe
from headcast.xr.errors import XRError
from headcast.xr.mockrt import motion_path
from headcast.xr.session import XRSession

RIGHT = "/user/hand/right"


@pytest.fixture
def built():
    return fastframe.build()  # what scripts/setup.sh does


def test_helper_is_in_use_when_built(ctl, built):
    assert fastframe.load().CONTEXT_SIZE == ctypes.sizeof(fastframe.FrameContext)
    with XRSession() as xs:
        assert xs.native, "the frame helper is built but the session makes its calls through ctypes"
        assert xs.next_frame().seq == 0
    with XRSession(native=False) as xs:
        assert not xs.native


def test_build_is_idempotent_and_load_needs_a_library(tmp_path):
    assert fastframe.load(tmp_path) is None
    said = []
    library = fastframe.build(tmp_path, say=said.append)
    assert library == tmp_path / fastframe.LIBRARY_NAME and library.is_file()
    fastframe.build(tmp_path, say=said.append)
    assert said[0].startswith("compiling _fastframe.c") and said[1].endswith("is up to date")


def run(ctl, monkeypatch, motion: str, n: int, native: bool, events=()) -> list:
    """n frames of a shipped motion on a fresh runtime, with mock-control calls at given frames."""
    ctl.reset()
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion_path(motion)))
    out = []
    with XRSession(native=native) as xs:
        assert xs.native is native
        for i in range(n):
            for at, call in events:
                if at == i:
                    call()
            frame = xs.next_frame()
            if xs.running:  # the frame's time is the runtime's predicted display time, ended with it
                assert frame.time_ns == xs._frame_state.predicted_display_time == xs._end_info.display_time
            out.append(frame)
        t = out[-1].time_ns
        out.append(xs.poll(t))  # poll() alone, at a time of the caller's
        assert out[-1].time_ns == t
    # Display times come from the clock (pacing is off): equal between runs only in kind.
    return [repr(dataclasses.replace(f, time_ns=0)) for f in out]  # repr: bit-exact floats, -0.0 too


@pytest.mark.parametrize("motion", ["look_around", "fire", "walk", "tracking_loss", "snap_turns"])
def test_native_frames_equal_the_ctypes_frames(ctl, monkeypatch, built, motion):
    events = [(40, ctl.unfocus), (45, ctl.focus),
              (60, lambda: ctl.set_profile("/interaction_profiles/htc/vive_controller")),
              (70, lambda: ctl.set_tracking(RIGHT, 0x3)), (80, lambda: ctl.set_tracking(RIGHT, 0xF))]
    native = run(ctl, monkeypatch, motion, 400, True, events)
    by_calls = run(ctl, monkeypatch, motion, 400, False, events)
    assert native == by_calls
    assert len(set(native)) > 300  # the motion moved: frames differ from one another


def _break_wait(xs):
    xs._wait_info._type = int(xr.StructureType.FRAME_BEGIN_INFO)


def _break_begin(xs):
    xs._begin_info._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _break_sync(xs):
    xs._sync_info._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _break_locate(xs):
    xs._locations[3]._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _break_states(xs):
    xs._get_infos[5]._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _break_end(xs):
    xs._end_info.environment_blend_mode = xr.EnvironmentBlendMode.ADDITIVE


@pytest.mark.parametrize("breaks, during", [
    (_break_wait, "waiting for a frame"), (_break_begin, "beginning a frame"),
    (_break_sync, "reading the controllers"), (_break_locate, "locating the tracked devices"),
    (_break_states, "reading the controllers"), (_break_end, "ending a frame"),
])
def test_a_failing_call_raises_the_same_error_on_both_paths(ctl, built, breaks, during):
    seen = []
    for native in (True, False):
        ctl.reset()
        with XRSession(native=native) as xs:
            assert xs.native is native
            for _ in range(3):
                xs.next_frame()
            breaks(xs)
            with pytest.raises(XRError) as failed:
                xs.next_frame()
            seen.append((type(failed.value), str(failed.value), xs._seq, xs.running))
    assert seen[0] == seen[1]
    assert seen[0][1].startswith(f"{during}: ")
    # xrEndFrame fails after the frame was read: it counts, as in the ctypes path
    assert seen[0][2] == (4 if during == "ending a frame" else 3)
