"""Rig state → a NetSync PoseFrame (Unity's frame), and the angle the far side sees.

Head absolute (world), hands from the grip poses, the XROrigin Δ from the rig's start and
current origins. Tracking lost → no head block (HeadValid clear): the receiver keeps no
stale head, and hands go with it (the protocol only carries hands relative to a head).
"""

from __future__ import annotations

import math

from headcast.app.run.rig import Origin, RigState
from headcast.netcode.netsync.codec import NATIVE
from headcast.netcode.netsync.model import (
    FLAG_HEAD,
    FLAG_LEFT,
    FLAG_PHYSICAL,
    FLAG_RIGHT,
    ORIGIN,
    OriginDelta,
    PoseFrame,
    Transform,
)
from headcast.netcode.netsync.origin import origin_delta
from headcast.netcode.pose import Quat, q_conj, q_mul
from headcast.xr.frame import Pose

_new = tuple.__new__  # Transform(...) without its Python-level __new__
_new_object = object.__new__
_set = object.__setattr__  # (a frozen dataclass's own way to set its fields)
_STEALTH = PoseFrame.build(None, stealth=True)
# The C accelerator's pose_frame (_nscodec.c): `_pose_frame` below in one call, the same floats
# (its operations in the same order, no fused multiply-add), or None for anything unusual.
native_frame = None if NATIVE is None else getattr(NATIVE, "pose_frame", None)


def unity_transform(pose: Pose) -> Transform | None:
    if not (pose.position_valid and pose.orientation_valid):
        return None
    # unity_position / unity_quat inlined (the sends' latency path): p = (x, y, −z), q = (−x, −y, z, w)
    x, y, z = pose.position
    qx, qy, qz, qw = pose.orientation
    return _new(Transform, ((x, y, -z), (-qx, -qy, qz, qw)))


def unity_origin(o: Origin) -> tuple[tuple[float, float, float], float]:
    """An XROrigin as Unity sees it: position (x, y, -z), eulerAngles.y (+ = turn right). The
    rig's origin stays on the floor (y = 0): it slides and turns, it never climbs."""
    return (o.x, 0.0, -o.z), -o.yaw


def xrorigin_delta(start: Origin, now: Origin) -> OriginDelta:
    """The Δ from the rig's initial origin to its current one, `dy` included (current origin y −
    initial origin y: 0 for a rig on the floor). Protocol 3 has no field for dy; from protocol 4
    on it is sent and receivers subtract it from the head's height."""
    p0, yaw0 = unity_origin(start)
    p1, yaw1 = unity_origin(now)
    return origin_delta(p0, yaw0, p1, yaw1)


def pose_frame(state: RigState, stealth: bool = False, delta: OriginDelta | None = None) -> PoseFrame:
    """`delta`: the XROrigin Δ of `state`, when the caller keeps it (it changes only when the
    origin moves); else computed here."""
    if stealth:
        return _STEALTH
    if delta is None:
        delta = xrorigin_delta(state.start, state.origin)
    if native_frame is not None:  # the send's path in one C call: the rig's numbers to the frame
        stage = state.frame
        pf: PoseFrame | None = native_frame(
            state.trig, stage.head, stage.right_grip, stage.left_grip, delta, PoseFrame, ORIGIN
        )
        if pf is not None:
            return pf
    return _pose_frame(state, delta)


def _pose_frame(state: RigState, delta: OriginDelta) -> PoseFrame:
    """pose_frame in Python: the reference the C path (`native_frame`) is tested against, and
    what runs without it or for anything it leaves to Python."""
    # PoseFrame.build(unity_transform(head), right=..., left=..., delta=delta) written out: one
    # call on the send path, not six (the same tuple: a hand is kept without a head, unflagged).
    # The world poses from the rig's own transforms of the stage poses (world_head, world_position,
    # world_orientation: pose_to_world's operations, the same floats) without building the world
    # Pose objects a reader of state.head gets: 5 calls where those are 9 and 18 attribute sets.
    flags = FLAG_PHYSICAL
    stage = state.frame
    w = state.world_head()
    if w is not None:
        x, y, z, qx, qy, qz, qw = w
        head = _new(Transform, ((x, y, -z), (-qx, -qy, qz, qw)))
        flags = FLAG_PHYSICAL | FLAG_HEAD
    else:
        head = ORIGIN
    p = stage.right_grip
    if p.position_valid and p.orientation_valid:
        x, y, z = state.world_position(p)
        qx, qy, qz, qw = state.world_orientation(p)  # type: ignore[misc]  # (valid: not None)
        right = _new(Transform, ((x, y, -z), (-qx, -qy, qz, qw)))
        if flags & FLAG_HEAD:
            flags |= FLAG_RIGHT
    else:
        right = ORIGIN
    p = stage.left_grip
    if p.position_valid and p.orientation_valid:
        x, y, z = state.world_position(p)
        qx, qy, qz, qw = state.world_orientation(p)  # type: ignore[misc]  # (valid: not None)
        left = _new(Transform, ((x, y, -z), (-qx, -qy, qz, qw)))
        if flags & FLAG_HEAD:
            flags |= FLAG_LEFT
    else:
        left = ORIGIN
    # PoseFrame(flags, head, right, left, (), delta, ORIGIN): its frozen dataclass __init__'s own
    # object.__setattr__ calls, without the Python frame around them
    frame: PoseFrame = _new_object(PoseFrame)
    _set(frame, "flags", flags)
    _set(frame, "head", head)
    _set(frame, "right", right)
    _set(frame, "left", left)
    _set(frame, "virtuals", ())
    _set(frame, "delta", delta)
    _set(frame, "physical", ORIGIN)
    return frame


def rotation_error_deg(a: Quat, b: Quat) -> float:
    """The angle of the rotation taking `a` to `b` (degrees, 0..180)."""
    x, y, z, w = q_mul(q_conj(a), b)
    return math.degrees(2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w)))
