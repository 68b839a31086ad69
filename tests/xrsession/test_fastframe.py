"""The native frame helper (xr/fastframe.c): in use when built, and frame for frame, error for
error, the same as the pure-ctypes path it replaces."""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import tracemalloc

import pytest
import xr
from hypothesis import given, settings, strategies as st

from headcast.xr import fastframe, session
from headcast.xr.errors import XRError
from headcast.xr.frame import TrackingFrame
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


def test_the_native_poll_is_the_helper_itself_and_counts_as_the_session_does(ctl, built):
    """XRSession.poll is the helper's C method when in use (no Python call around it: cold, one
    costs microseconds); it keeps seq, time and focus as the session's own frames do, and a failing
    call raises the same typed error on both paths."""
    seen = []
    for native in (True, False):
        ctl.reset()
        with XRSession(native=native) as xs:
            assert isinstance(xs.poll, type(len)) is native  # a builtin method only on the native path
            ctl.focus()
            frame = xs.next_frame()
            while not xs.focused:
                frame = xs.next_frame()
            polled = xs.poll(frame.time_ns + 1000)
            after = xs.next_frame()
            assert (polled.seq, after.seq) == (frame.seq + 1, frame.seq + 2)
            assert polled.time_ns == frame.time_ns + 1000 and polled.focused and after.focused
            assert polled.profile_right == after.profile_right != ""
            ctl.fail("xrSyncActions", int(xr.Result.ERROR_RUNTIME_FAILURE))
            with pytest.raises(XRError) as failed:
                xs.poll(after.time_ns)
            ctl.fail("", 0)
            assert xs.poll(after.time_ns).seq == after.seq + 1  # the failed poll made no frame
            seen.append((type(failed.value), str(failed.value), failed.value.call, failed.value.result))
    assert seen[0] == seen[1]
    assert seen[0][1].startswith("reading the controllers: xrSyncActions returned XR_ERROR_RUNTIME_FAILURE")


def test_build_is_idempotent_and_load_needs_a_library(tmp_path):
    assert fastframe.load(tmp_path) is None
    said = []
    library = fastframe.build(tmp_path, say=said.append)
    assert library == tmp_path / fastframe.LIBRARY_NAME and library.is_file()
    fastframe.build(tmp_path, say=said.append)
    assert said[0].startswith("compiling _fastframe.c") and said[1].endswith("is up to date")


def run(ctl, monkeypatch, motion: str, n: int, native: bool, events=()) -> list:
    """n headless frames of a shipped motion on a fresh runtime (the step clock: frame i is located
    at the motion's frame i), focused by the runtime, with mock-control calls at given frames."""
    ctl.reset()
    ctl.step_clock()
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion_path(motion)))
    out = []
    with XRSession(native=native) as xs:
        assert xs.native is native and xs.info.headless
        ctl.focus()
        for i in range(n):
            for at, call in events:
                if at == i:
                    call()
            frame = xs.next_frame()
            assert frame.time_ns == ctl.at(i)  # the runtime's now, read once per frame
            out.append(frame)
        t = ctl.at(n / 2)
        out.append(xs.poll(t))  # poll() alone, at a time of the caller's
        assert out[-1].time_ns == t
        begin = ctl.begin_time
    assert ctl.frames_waited == 0  # no frame calls in a headless session
    # repr: bit-exact floats, -0.0 too; times from the session's begin (each run begins anew)
    return [repr(dataclasses.replace(f, time_ns=f.time_ns - begin)) for f in out]


@pytest.mark.parametrize("motion", ["look_around", "fire", "walk", "tracking_loss", "snap_turns"])
def test_native_frames_equal_the_ctypes_frames(ctl, monkeypatch, built, motion):
    events = [
        (40, ctl.unfocus),
        (45, ctl.focus),
        (60, lambda: ctl.set_profile("/interaction_profiles/htc/vive_controller")),
        (70, lambda: ctl.set_tracking(RIGHT, 0x3)),
        (80, lambda: ctl.set_tracking(RIGHT, 0xF)),
    ]
    native = run(ctl, monkeypatch, motion, 400, True, events)
    by_calls = run(ctl, monkeypatch, motion, 400, False, events)
    assert native == by_calls
    assert len(set(native)) > 300  # the motion moved: frames differ from one another


def _break_sync(xs, ctl):
    xs._sync_info._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _break_locate(xs, ctl):
    xs._locations[3]._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _break_states(xs, ctl):
    xs._get_infos[5]._type = int(xr.StructureType.FRAME_WAIT_INFO)


def _fail(function):
    return lambda xs, ctl: ctl.fail(function, int(xr.Result.ERROR_RUNTIME_FAILURE))


@pytest.mark.parametrize(
    "breaks, during",
    [
        (_break_sync, "reading the controllers: xrSyncActions returned XR_ERROR_VALIDATION_FAILURE"),
        (_break_locate, "locating the tracked devices: xrLocateSpace returned XR_ERROR_VALIDATION_FAILURE"),
        (_break_states, "reading the controllers: xrGetActionState* returned XR_ERROR_VALIDATION_FAILURE"),
        (_fail("xrLocateSpace"), "locating the tracked devices: xrLocateSpace returned XR_ERROR_RUNTIME_FAILURE"),
        (_fail("xrPollEvent"), "reading runtime events: xrPollEvent returned XR_ERROR_RUNTIME_FAILURE"),
    ],
)
def test_a_failing_call_raises_the_same_error_on_both_paths(ctl, built, breaks, during):
    """Headless steps; the frame calls of an OpenGL session: test_gl_and_validation.py."""
    seen = []
    for native in (True, False):
        ctl.reset()
        with XRSession(native=native) as xs:
            assert xs.native is native
            for _ in range(3):
                xs.next_frame()
            breaks(xs, ctl)
            with pytest.raises(XRError) as failed:
                xs.next_frame()
            ctl.fail("", 0)
            seen.append(
                (type(failed.value), str(failed.value), failed.value.call, failed.value.result, xs._st.seq, xs.running)
            )
    assert seen[0] == seen[1]
    assert seen[0][1].startswith(f"{during}: ")
    assert seen[0][4] == 3  # the failed step made no frame


# -- the frame builder alone: arbitrary runtime output, the Python builder as the oracle ----------

_SUCCEED = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)  # every "runtime call": XR_SUCCESS, outputs untouched


class Builder:
    """FrameCalls on a runtime whose calls do nothing: the test writes the outputs it reads."""

    def __init__(self):
        self.locations = (xr.SpaceLocation * fastframe.NLOCATE)()
        self.states = session._ActionStates()
        self.frame_state = xr.FrameState()
        entry = ctypes.cast(_SUCCEED, ctypes.c_void_p).value
        ctx = fastframe.FrameContext(*[entry] * 6, (ctypes.c_void_p * fastframe.NSTATE)(*[entry] * fastframe.NSTATE))
        ctx.frame_state = ctypes.addressof(self.frame_state)
        for i, loc in enumerate(self.locations):
            ctx.location[i] = ctypes.addressof(loc)
        for i, (name, _) in enumerate(session._ActionStates._fields_):  # the session's read order
            ctx.state[i] = ctypes.addressof(getattr(self.states, name))
        self.calls = session._frame_calls(fastframe.load(), ctx)

    def write(self, locations, states):
        for i, loc in enumerate(locations):
            session._LOCATION.pack_into(self.locations, i * ctypes.sizeof(xr.SpaceLocation), *loc)
        session._STATES.pack_into(self.states, 0, *states)

    def python_frame(self, seq, t):
        poses = [session._pose(*loc) for loc in session._LOCATION.iter_unpack(self.locations)]
        controls = session._controls(*session._STATES.unpack_from(self.states))
        return TrackingFrame(seq, t, *poses, controls, "left", "right", True)


@pytest.fixture(scope="module")
def builder():
    fastframe.build()
    return Builder()


f32 = st.floats(width=32)
flags = st.one_of(st.integers(0, 0xF), st.integers(0, 2**64 - 1))
unit = st.floats(-1, 1)


def _near_unit(q):
    *v, scale = q  # a rotation whose norm is off by up to 0.6 %: around the 1e-3 tolerance
    n = sum(x * x for x in v) ** 0.5 or 1.0
    return tuple(x / n * scale for x in v)


near_unit = st.tuples(unit, unit, unit, unit, st.floats(0.997, 1.003)).map(_near_unit)
location = st.one_of(
    st.tuples(flags, f32, f32, f32, f32, f32, f32, f32),
    st.tuples(flags, near_unit, st.tuples(f32, f32, f32)).map(lambda x: (x[0], *x[1], *x[2])),
)
bool32 = st.one_of(st.integers(0, 1), st.integers(0, 2**32 - 1))
states = st.tuples(
    f32,
    bool32,
    f32,
    bool32,
    f32,
    bool32,
    f32,
    bool32,
    f32,
    f32,
    bool32,
    f32,
    f32,
    bool32,
    bool32,
    bool32,
    bool32,
    bool32,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(location, min_size=5, max_size=5), states, st.integers(0, 2**62))
def test_native_builder_equals_the_python_builder(builder, locations, states, t):
    builder.write(locations, states)
    native = builder.calls.poll(41, t, ("left", "right"), True)
    assert repr(native) == repr(builder.python_frame(41, t))  # repr: -0.0 and NaN-free floats, exactly


def test_controls_object_kept_while_the_states_read_the_same(builder):
    rest = (0.0, 1) * 4 + (0.0, 0.0, 1, 0.0, 0.0, 1, 0, 1, 0, 1)
    builder.write([(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.6, 0.0)] * 5, rest)
    first = builder.calls.poll(0, 1, ("", ""), True).controls
    builder.write([(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.7, 0.0)] * 5, rest)  # poses move, controls rest
    assert builder.calls.poll(1, 2, ("", ""), True).controls is first
    builder.write([(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.7, 0.0)] * 5, (0.5, 1) + rest[2:])
    pulled = builder.calls.poll(2, 3, ("", ""), True).controls
    assert pulled is not first and pulled.trigger_left == 0.5


def test_pose_object_kept_while_its_location_reads_the_same(builder):
    """A space the runtime reports with the same bits (a controller at rest) keeps its Pose object;
    one that moved, or whose flags changed, gets a new one; -0.0 is not 0.0 (the bits differ)."""
    rest = (0.0, 1) * 4 + (0.0, 0.0, 1, 0.0, 0.0, 1, 0, 1, 0, 1)
    still = (0xF, 0.0, 0.0, 0.0, 1.0, 0.2, 1.3, -0.3)
    builder.write([(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.6, 0.0)] + [still] * 4, rest)
    a = builder.calls.poll(0, 1, ("", ""), True)
    builder.write([(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.7, 0.0)] + [still] * 4, rest)  # the head moved
    b = builder.calls.poll(1, 2, ("", ""), True)
    assert b.head is not a.head and b.head.position[1] == pytest.approx(1.7)
    assert all(getattr(b, n) is getattr(a, n) for n in ("left_aim", "left_grip", "right_aim", "right_grip"))
    builder.write(
        [(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.7, 0.0), (0x3, *still[1:]), (0xF, -0.0, *still[2:])] + [still] * 2,
        rest,
    )
    c = builder.calls.poll(2, 3, ("", ""), True)
    assert c.head is b.head and c.right_aim is b.right_aim
    assert c.left_aim is not b.left_aim and not c.left_aim.position_tracked and c.left_aim.position_valid
    assert c.left_grip is not b.left_grip and repr(c.left_grip) == repr(builder.python_frame(2, 3).left_grip)


# What a caller may keep of a frame: nothing, the frame, a Pose, a tuple of one, one float of it.
_KEEP = (
    lambda f: None,
    lambda f: f,
    lambda f: f.head,
    lambda f: f.head.orientation,
    lambda f: f.head.position[1],
    lambda f: f.right_grip.position,
    lambda f: f.controls,
    lambda f: f.controls.move,
    lambda f: f.controls.trigger_right,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(location, min_size=5, max_size=5), states, st.integers(0, len(_KEEP) - 1)),
        min_size=1,
        max_size=10,
    )
)
def test_what_the_caller_keeps_never_changes(builder, steps):
    """The helper refills the frame before last in place when nothing but the helper holds it (nor
    its Poses, their tuples, their floats): whatever the caller still holds — a frame, a Pose, a
    tuple, one float — keeps its value however many frames come after, and every frame equals the
    Python builder's."""
    held = []
    for k, (locations, states, keep) in enumerate(steps):
        builder.write(locations, states)
        frame = builder.calls.poll(k, k + 1, ("left", "right"), True)
        assert repr(frame) == repr(builder.python_frame(k, k + 1))
        part = _KEEP[keep](frame)
        if part is not None:
            held.append((part, repr(part)))
        del frame, part
        assert [repr(part) for part, _ in held] == [was for _, was in held]


def test_a_dropped_frame_is_refilled_not_remade(builder):
    """Once the caller drops the frame before last (the app's loop keeps only the last one), the
    next frame is that frame's object refilled, its moved head's Pose and position tuple and its
    changed Controls too — none made and freed per frame — even when the memory a freed frame would
    leave has been taken."""
    rest = (0.0, 1) * 4 + (0.0, 0.0, 1, 0.0, 0.0, 1, 0, 1, 0, 1)
    still = (0xF, 0.0, 0.0, 0.0, 1.0, 0.2, 1.3, -0.3)
    seen, taken, last = [], [], None
    for k in range(8):
        pulled = (k / 10, 1) + rest[2:8] + (k / 20, 0.5, 1) + rest[11:]  # a trigger and the stick move
        builder.write([(0xF, 0.0, 0.0, 0.0, 1.0, 0.0, 1.6 + k / 100, 0.0)] + [still] * 4, pulled)
        frame = builder.calls.poll(k, k + 1, ("", ""), True)
        assert frame.head.position[1] == pytest.approx(1.6 + k / 100) and frame.seq == k
        assert frame.controls.trigger_left == pytest.approx(k / 10) and frame.controls.move[0] == pytest.approx(k / 20)
        c = frame.controls
        seen.append((id(frame), id(frame.head), id(frame.head.position), id(c), id(c.move), id(c.trigger_left)))
        last = frame  # the frame before is dropped here ...
        del frame
        taken.append(
            [TrackingFrame(0, 0) for _ in range(20)] + [(0.5, 0.5, 0.5) for _ in range(20)]
        )  # ... and its memory
    assert last.seq == 7
    assert seen[2:] == seen[:-2]  # frame k + 2 is frame k's objects
    assert len({s[0] for s in seen[2:]}) == 2


def test_native_frames_leak_nothing(ctl, monkeypatch, built):
    """Every object the C code makes is owned by a frame (or the kept Controls): none outlive them."""
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion_path("fire")))  # inputs change: Controls rebuilt
    with XRSession() as xs:
        assert xs.native
        for _ in range(500):
            xs.next_frame(), xs.poll(5)
        gc.collect()
        tracemalloc.start()
        try:
            objects, (before, _) = len(gc.get_objects()), tracemalloc.get_traced_memory()
            for _ in range(5000):
                xs.next_frame(), xs.poll(5)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert len(gc.get_objects()) <= objects + 10
    assert grown < 4096, f"{grown} bytes more after 10,000 native frames"


def test_frames_the_caller_keeps_stay_as_made_on_the_session(ctl, monkeypatch, built):
    """On the live mock (a moving head, controls that change): frames and parts of frames the caller
    keeps read the same after hundreds more frames, while the dropped ones are refilled; every frame
    equals the ctypes path's frame for frame."""
    kept, made = {}, {}
    for native in (True, False):
        ctl.reset()
        ctl.step_clock()
        monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion_path("fire")))
        with XRSession(native=native) as xs:
            assert xs.native is native
            ctl.focus()
            begin, reprs, keep = None, [], []
            for i in range(300):
                frame = xs.next_frame()
                begin = ctl.begin_time if begin is None else begin
                reprs.append(repr(dataclasses.replace(frame, time_ns=frame.time_ns - ctl.begin_time)))
                part = _KEEP[i % len(_KEEP)](frame)
                if part is not None:
                    keep.append((part, repr(part)))
                del frame, part
        made[native], kept[native] = reprs, keep
    assert made[True] == made[False]
    assert len(set(made[True])) > 250
    assert [repr(part) for part, _ in kept[True]] == [was for _, was in kept[True]]


def test_timing_splits_a_call_into_the_runtimes_and_ours(ctl, built):
    """native_timing (the benchmarks' split of a poll's time): off, no clock is read and the figures
    stay zero; on, each headless step notes the runtime's own calls (the clock and event poll, sync,
    the five locates, the eight reads: each took some time) inside the whole C call's time."""
    with XRSession() as xs:
        assert xs.info.headless
        timings = xs.native_timing(False)
        assert timings is not None
        xs.next_frame()
        assert timings() == (0, 0, 0, 0, 0)
        xs.native_timing(True)
        for _ in range(5):
            frame = xs.next_frame()
            other, sync, locate, states, whole = timings()
            assert min(other, sync, locate, states) > 0, timings()
            assert other + sync + locate + states <= whole < 1_000_000_000, timings()
            t = frame.time_ns
            xs.poll(t)
            other, sync, locate, states, whole = timings()
            assert other == 0 and min(sync, locate, states) > 0 and sync + locate + states <= whole, timings()
        xs.native_timing(False)
        xs.next_frame()
        assert timings() == (0, 0, 0, 0, 0)
    with XRSession(native=False) as xs:
        assert xs.native_timing(True) is None
