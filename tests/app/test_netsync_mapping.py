"""The NetSync pose frame from the rig's own world transforms (mapping.pose_frame) is, float for float,
the frame built from the world Pose objects the rig hands other readers (RigState.head,
.right_grip, .left_grip through pose_to_world), whatever the poses, their validity and the origin."""

from __future__ import annotations

import math
import os
import struct

import pytest
from hypothesis import given, settings, strategies as st

from headcast.app.run.rig import Origin, Rig
from headcast.app.sinks.netsync import mapping
from headcast.app.sinks.netsync.mapping import pose_frame, unity_transform, xrorigin_delta
from headcast.netcode.netsync.codec import NATIVE_STATUS, encode_body
from headcast.netcode.netsync.model import FLAG_HEAD, FLAG_LEFT, FLAG_PHYSICAL, FLAG_RIGHT, ORIGIN, PoseFrame
from headcast.xr.frame import Pose, TrackingFrame

# The C path's tests fail without the extension, except where HEADCAST_PURE_PYTHON=1 asks for the
# pure path (as tests/netsync/test_codec_native.py): then they are skipped with that reason.
PURE_WANTED = os.environ.get("HEADCAST_PURE_PYTHON", "") not in ("", "0")
needs_c = pytest.mark.skipif(PURE_WANTED, reason="HEADCAST_PURE_PYTHON=1: the C accelerator is off by request")

_F = st.one_of(st.floats(-50.0, 50.0), st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300]))


def _pose(draw) -> Pose:
    pv, ov = draw(st.booleans()), draw(st.booleans())
    q = [draw(st.floats(-1.0, 1.0)) for _ in range(4)]
    n = math.sqrt(sum(c * c for c in q)) or 1.0
    return Pose(tuple(draw(_F) for _ in range(3)), tuple(c / n for c in q), pv, ov, pv, ov)


@st.composite
def _states(draw):
    rig = Rig()
    rig.origin = Origin(draw(_F), draw(_F), draw(st.floats(-720.0, 720.0)))
    head, right, left = _pose(draw), _pose(draw), _pose(draw)
    return rig.update(TrackingFrame(0, 0, head, right, right, left, left), 0.0)


def _reference(state) -> PoseFrame:
    """pose_frame as written before (session 13): from the world Pose objects."""
    flags = FLAG_PHYSICAL
    head = unity_transform(state.head)
    if head is not None:
        flags |= FLAG_HEAD
    right = unity_transform(state.right_grip)
    left = unity_transform(state.left_grip)
    if head is not None and right is not None:
        flags |= FLAG_RIGHT
    if head is not None and left is not None:
        flags |= FLAG_LEFT
    delta = xrorigin_delta(state.start, state.origin)
    return PoseFrame(flags, head or ORIGIN, right or ORIGIN, left or ORIGIN, (), delta, ORIGIN)


def _bits(frame: PoseFrame) -> list:
    out: list = [frame.flags]
    for t in (frame.head, frame.right, frame.left):
        out += [struct.pack("<d", c) for c in (*t[0], *t[1])]
    return out


@settings(max_examples=500, deadline=None)
@given(_states())
def test_pose_frame_is_bit_identical_to_the_world_poses(state):
    got, want = pose_frame(state), _reference(state)
    assert _bits(got) == _bits(want) and got == want
    # and so the bytes on the wire, in every protocol
    for protocol in (3, 4, 5, 6, 7, 8):
        assert encode_body(1, got, protocol) == encode_body(1, want, protocol)


def _same(got: PoseFrame, want: PoseFrame) -> None:
    assert type(got) is PoseFrame and _bits(got) == _bits(want) and got == want
    assert got.virtuals == () and got.physical is ORIGIN and got.delta == want.delta
    for t in (got.head, got.right, got.left):
        assert type(t) is type(ORIGIN) and all(type(c) is float for c in (*t[0], *t[1]))


@needs_c
@settings(max_examples=500, deadline=None)
@given(_states())
def test_the_c_frame_is_the_python_frame_bit_for_bit(state):
    """The send's fast path (_nscodec.c pose_frame, one C call from the rig's numbers) against the
    Python path it stands for (mapping._pose_frame, also the path without the extension): the same
    flags and floats, bit for bit, and so the same bytes in every protocol. It fails if they differ."""
    native = mapping.native_frame
    assert native is not None, f"the C accelerator is not in use: {NATIVE_STATUS}"
    delta = xrorigin_delta(state.start, state.origin)
    stage = state.frame
    got = native(state.trig, stage.head, stage.right_grip, stage.left_grip, delta, PoseFrame, ORIGIN)
    want = mapping._pose_frame(state, delta)
    assert got is not None and got.delta is delta is want.delta
    _same(got, want)
    _same(pose_frame(state, False, delta), want)  # what the sink calls: the C path taken
    _same(want, _reference(state))  # and the Python path is the world poses' frame
    for protocol in (3, 4, 5, 6, 7, 8):
        assert encode_body(7, got, protocol) == encode_body(7, want, protocol)


@needs_c
def test_the_c_frame_leaves_the_unusual_to_python():
    """Anything but exact floats in exact tuples (here an int coordinate, a list): None from C, and
    pose_frame's Python path builds the frame as before."""
    native = mapping.native_frame
    assert native is not None, f"the C accelerator is not in use: {NATIVE_STATUS}"
    rig = Rig()
    for head in (
        Pose((1, 1.6, 0.0), (0.0, 0.0, 0.0, 1.0), True, True, True, True),
        Pose([0.5, 1.6, 0.0], (0.0, 0.0, 0.0, 1.0), True, True, True, True),  # type: ignore[arg-type]
    ):
        state = rig.update(TrackingFrame(0, 0, head, head, head, head, head), 0.0)
        delta = xrorigin_delta(state.start, state.origin)
        assert native(state.trig, head, head, head, delta, PoseFrame, ORIGIN) is None
        got = pose_frame(state, False, delta)
        assert got == mapping._pose_frame(state, delta) == _reference(state)
        assert got.flags == FLAG_PHYSICAL | FLAG_HEAD | FLAG_RIGHT | FLAG_LEFT
