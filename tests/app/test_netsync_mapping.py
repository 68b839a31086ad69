"""The NetSync pose frame from the rig's own world transforms (mapping.pose_frame) is, float for float,
the frame built from the world Pose objects the rig hands other readers (RigState.head,
.right_grip, .left_grip through pose_to_world), whatever the poses, their validity and the origin."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings, strategies as st

from headcast.app.run.rig import Origin, Rig
from headcast.app.sinks.netsync.mapping import pose_frame, unity_transform, xrorigin_delta
from headcast.netcode.netsync.codec import encode_body
from headcast.netcode.netsync.model import FLAG_HEAD, FLAG_LEFT, FLAG_PHYSICAL, FLAG_RIGHT, ORIGIN, PoseFrame
from headcast.xr.frame import Pose, TrackingFrame

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
