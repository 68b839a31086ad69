"""Rig state → protocol values: Q3 usercmd fields, NetSync pose frames (Sauerbraten N_POS: test_sauer_sink.py)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings, strategies as st

from headcast.app.run.rig import Origin, Rig, RigSettings
from headcast.app.run.synthetic import orientation
from headcast.app.sinks.netsync.mapping import pose_frame, rotation_error_deg, xrorigin_delta
from headcast.app.sinks.netsync.sink import NetSyncSink
from headcast.app.sinks.q3.mapping import BUTTON_ATTACK, q3_intent, quake_angles, remote_head, weapon_frame_moves
from headcast.netcode import pose
from headcast.netcode.netsync.codec import decode_body, encode_body
from headcast.netcode.netsync.model import (
    FLAG_HEAD,
    FLAG_LEFT,
    FLAG_PHYSICAL,
    FLAG_RIGHT,
    FLAG_STEALTH,
    PoseFrame,
    Transform,
)
from headcast.netcode.pose import unity_position
from headcast.netcode.q3 import vrhead
from headcast.xr.frame import Controls, Pose, TrackingFrame


def frame(head=(0, 0, 0), aim=(0, 0), head_ok=True, aim_ok=True, controls=Controls(), pos=(0.0, 1.6, 0.0)):
    h = Pose(pos, orientation(*head), head_ok, head_ok, head_ok, head_ok)
    a = Pose((0.2, 1.2, -0.3), orientation(aim[0], aim[1], 0), aim_ok, aim_ok, aim_ok, aim_ok)
    return TrackingFrame(0, 0, h, a, a, a, a, controls)


_COMPONENT = st.one_of(
    st.floats(-1.0, 1.0),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-300, math.nan, math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _composed_quake_angles(q):
    """pose.quake_angles as first written: q_normalize, then q_rotate of the forward, right and up
    axes, into Quake's axes — the reference its inlined form (one call per command tick) must equal."""
    n = pose.q_normalize(q)
    fx, fy, fz = pose.q_rotate(n, (0.0, 0.0, -1.0))
    rx, ry, rz = pose.q_rotate(n, (1.0, 0.0, 0.0))
    _, uy, _ = pose.q_rotate(n, (0.0, 1.0, 0.0))
    fqx, fqy, fqz = -fz, -fx, fy
    # sqrt of the sum of squares, as quake_angles defines it (not math.hypot, whose algorithm is
    # CPython's own and changes between versions: the tick in C must give the same bits)
    horiz = math.sqrt(fqx * fqx + fqy * fqy)
    pitch = math.degrees(math.atan2(-fqz, horiz))
    if horiz < 1e-9:
        return pitch, math.degrees(math.atan2(-rz, rx)), 0.0
    return pitch, math.degrees(math.atan2(fqy, fqx)), math.degrees(math.atan2(-ry, uy))


@settings(max_examples=3000, deadline=None)
@given(st.tuples(_COMPONENT, _COMPONENT, _COMPONENT, _COMPONENT))
def test_inlined_quake_angles_are_bit_identical_to_the_composed_form(q):
    """The Q3 mapping's quake_angles is pose.quake_angles, inlined for the tick; it gives the
    composed form's bits: zero signs too, which decide ±180° (and so the ±60° roll clamp) in atan2."""
    assert quake_angles is pose.quake_angles
    bits = lambda v: struct.pack("<3d", *v)  # noqa: E731
    assert bits(quake_angles(q)) == bits(_composed_quake_angles(q))
    # straight up / down: the gimbal branch, yaw from the right vector
    for p in (orientation(89.99999999, 30.0, 5.0), orientation(-90.0, -120.0, 0.0), (q[0], 0.0, 0.0, q[0])):
        assert bits(quake_angles(p)) == bits(_composed_quake_angles(p))


def rig_state(f, yaw=0.0):
    rig = Rig()
    rig.origin = Origin(0.0, 0.0, yaw)
    return rig.update(f, 0.0)


def test_q3_weapon_angles_head_bits_roll_and_buttons():
    f = frame(head=(20, 30, 70), aim=(-10, 5), controls=Controls(trigger_right=0.8))
    i = q3_intent(rig_state(f, yaw=-45.0), f.controls, vr=True, move_speed=2.0)
    assert i.angles[0] == pytest.approx(-10) and i.angles[1] == pytest.approx(-40)  # weapon, turned by the rig
    assert i.angles[2] == pytest.approx(60)  # roll clamped ±60
    assert i.buttons == vrhead.pack_head(BUTTON_ATTACK, i.head[0], i.head[1], i.angles[1])
    assert i.buttons & 0xFFF == BUTTON_ATTACK
    seen = remote_head(i.buttons, i.roll_short)
    assert abs(seen.pitch - 20) <= 180 / 127 and abs(seen.yaw_offset - 25) <= 180 / 127
    assert seen.roll == pytest.approx(60, abs=0.01)


def test_q3_lost_head_clears_head_bits_and_roll():
    f = frame(head=(20, 30, 10), head_ok=False, controls=Controls(jump=True))
    i = q3_intent(rig_state(f), f.controls, vr=True, move_speed=2.0)
    assert i.head is None and i.buttons == 0 and i.angles[2] == 0.0 and i.upmove == 127
    assert remote_head(i.buttons, i.roll_short) is None
    # Without a controller either, the view holds the rig's yaw (no stale head angles).
    f = frame(head_ok=False, aim_ok=False)
    assert q3_intent(rig_state(f, yaw=30.0), f.controls, True, 2.0).angles[:2] == (0.0, 30.0)


def test_q3_flat_link_sends_no_head_and_aims_with_the_head_without_a_controller():
    f = frame(head=(10, 20, 5), aim_ok=False)
    i = q3_intent(rig_state(f), f.controls, vr=False, move_speed=2.0)
    assert i.buttons & vrhead.VR_BUTTON_MASK == 0
    assert i.angles[:2] == pytest.approx((10, 20))


@pytest.mark.parametrize(
    "world, weapon_yaw, expect",
    [
        ((0.0, -2.0), 0.0, (127, 0)),  # forward along -Z, weapon forward
        ((2.0, 0.0), 0.0, (0, 127)),  # +X is the weapon's right
        ((-2.0, 0.0), 90.0, (127, 0)),  # weapon turned left faces -X
        ((0.0, -1.0), 90.0, (0, 64)),  # half speed forward = weapon's right when it faces -X
        ((0.0, 0.0), 10.0, (0, 0)),
    ],
)
def test_moves_rotate_into_the_weapon_frame(world, weapon_yaw, expect):
    assert weapon_frame_moves(world, weapon_yaw, 2.0) == expect


def test_netsync_frame_flags_and_stealth():
    f = frame(head=(0, 10, 0))
    pf = pose_frame(rig_state(f))
    assert pf.flags == FLAG_PHYSICAL | FLAG_HEAD | FLAG_RIGHT | FLAG_LEFT
    # 44 bytes in protocol 3 (the Δ is dx, dz, dyaw); 46 from protocol 4 on (dy joins it)
    assert len(encode_body(0, pf, 3)) == 44
    assert len(encode_body(0, pf, 4)) == len(encode_body(0, pf, 8)) == len(encode_body(0, pf)) == 46
    assert pose_frame(rig_state(frame(head_ok=False))).flags == FLAG_PHYSICAL  # head not valid: no hands
    assert pose_frame(rig_state(f), stealth=True).flags == FLAG_STEALTH


@pytest.mark.parametrize("head_ok", [True, False])
@pytest.mark.parametrize("right_ok", [True, False])
@pytest.mark.parametrize("left_ok", [True, False])
def test_netsync_frame_written_out_is_pose_frame_build(head_ok, right_ok, left_ok):
    """Issue 26: pose_frame builds the PoseFrame in one call; it is the tuple PoseFrame.build
    makes from the three Unity transforms and the Δ (a hand without a head kept, unflagged)."""
    from headcast.app.sinks.netsync.mapping import unity_transform

    def pose(p, ok):
        return Pose(p, orientation(10, 20, 30), ok, ok, ok, ok)

    f = TrackingFrame(
        0,
        0,
        head=pose((0.1, 1.6, 0.2), head_ok),
        right_grip=pose((0.3, 1.1, -0.2), right_ok),
        left_grip=pose((-0.3, 1.2, -0.1), left_ok),
        right_aim=pose((0.3, 1.1, -0.25), True),
    )
    st_ = rig_state(f, yaw=30.0)
    built = PoseFrame.build(
        unity_transform(st_.head),
        right=unity_transform(st_.right_grip),
        left=unity_transform(st_.left_grip),
        delta=xrorigin_delta(st_.start, st_.origin),
    )
    got = pose_frame(st_)
    assert type(got) is PoseFrame and got == built and got.flags == built.flags
    assert encode_body(7, got) == encode_body(7, built)


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-720, 720), st.floats(-180, 180), st.booleans())
def test_rig_world_head_is_world_position_and_orientation(x, z, yaw, head_yaw, valid):
    rig = Rig()
    rig.origin = Origin(x, z, yaw)
    f = frame(head=(5, head_yaw, -7), head_ok=valid, pos=(0.4, 1.7, -0.9))
    state = rig.update(f, 0.0)
    got = state.world_head()
    if not valid:
        assert got is None
        return
    assert got == (*state.world_position(f.head), *state.world_orientation(f.head))


def test_netsync_sink_builds_a_frame_once_per_pose_and_origin():
    """Equal stage poses under the same origin give the same PoseFrame object (the client then
    skips encoding it again); any pose or origin change builds a new, correct one."""
    sink = NetSyncSink()
    rig = Rig()
    f = frame(head=(10, 20, 0))
    sink.send(rig.update(f, 0.0), f, 0.0)
    first = sink.frame
    g = frame(head=(10, 20, 0))  # new Pose objects, equal values
    sink.send(rig.update(g, 0.0), g, 0.1)
    assert sink.frame is first
    for nxt, origin in ((frame(head=(10, 21, 0)), None), (g, Origin(0.5, 0.0, 30.0))):
        if origin is not None:
            rig.origin = origin
        state = rig.update(nxt, 0.0)
        sink.send(state, nxt, 0.2)
        assert sink.frame is not first and sink.frame == pose_frame(state)
        first = sink.frame


def test_xrorigin_delta_uses_unity_yaw_sign():
    d = xrorigin_delta(Origin(), Origin(0.0, 0.0, -45.0))  # turned right in OpenXR
    assert d.dyaw == pytest.approx(45.0) and d.dx == pytest.approx(0.0) and d.dz == pytest.approx(0.0)
    d = xrorigin_delta(Origin(), Origin(1.0, -2.0, 0.0))
    assert (d.dx, d.dz) == pytest.approx((1.0, 2.0))  # Unity z = -OpenXR z


def test_xrorigin_delta_dy_is_the_origin_height_change_zero_on_the_floor():
    """dy (sent from protocol 4 on) = current origin y − initial origin y; the rig's origin stays
    on the floor, so receivers subtract nothing from the head's height."""
    d = xrorigin_delta(Origin(0.3, 0.4, 10.0), Origin(-2.0, 5.0, 135.0))
    assert d.dy == 0.0
    head = Transform((0.5, 1.7, 0.2), (0.0, 0.0, 0.0, 1.0))
    for protocol in (3, 4, 8):
        body = decode_body(encode_body(1, PoseFrame.build(head, delta=d), protocol), 0, protocol)[0]
        assert body.delta.dy == 0.0 and body.physical.pos[1] == pytest.approx(1.7)


def test_sink_models_the_far_side_in_the_latest_protocol_offline():
    from headcast.netcode.netsync.codec import LATEST_PROTOCOL

    sink = NetSyncSink()
    f = frame(head=(10, 20, 0))
    sink.send(Rig().update(f, 0.0), f, 0.0)
    assert sink.observe is None  # offline: no work per frame; the round trip is made when read
    assert sink.protocol == LATEST_PROTOCOL == 8
    assert sink.body_size == len(encode_body(0, sink.frame, 8)) == 46
    assert sink.seen == decode_body(encode_body(0, sink.frame, 8), 0, 8)[0]
    first = sink.seen
    g = frame(head=(-30, 75, 5))
    sink.send(Rig().update(g, 0.0), g, 0.1)  # read after the next frame: that frame's round trip
    assert sink.seen != first and sink.seen == decode_body(encode_body(0, sink.frame, 8), 0, 8)[0]
    assert sink.last_error == rotation_error_deg(sink.frame.head.rot, sink.seen.head.rot)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.sampled_from([-1.0, 0.0, 1.0])), max_size=12),
    st.floats(-1.5, 1.5),
    st.floats(-1.5, 1.5),
    st.floats(-170, 170),
)
def test_physical_pose_survives_any_locomotion(moves, hx, hz, head_yaw):
    """Walk and snap around at random: the receiver's physical pose is the stage head."""
    rig = Rig(RigSettings(move_speed=1.5))
    f = None
    for mx, my, turn in moves:
        f = frame(head=(0, head_yaw, 0), pos=(hx, 1.7, hz), controls=Controls(move=(mx, my), turn=(turn, 0)))
        rig.update(f, 0.1)
        rig.update(frame(head=(0, head_yaw, 0), pos=(hx, 1.7, hz)), 0.0)  # release the stick
    f = frame(head=(0, head_yaw, 0), pos=(hx, 1.7, hz))
    body = decode_body(encode_body(1, pose_frame(rig.update(f, 0.0))))[0]
    want = unity_position((hx, 1.7, hz))
    assert max(abs(a - b) for a, b in zip(body.physical.pos, want)) < 0.03  # Δ and head quantisation


def test_rotation_error():
    assert rotation_error_deg(orientation(0, 10, 0), orientation(0, 10, 0)) == pytest.approx(0, abs=1e-6)
    assert rotation_error_deg(orientation(0, 10, 0), orientation(0, 40, 0)) == pytest.approx(30)


def test_q3_sink_verifies_every_usercmd_only_when_asked():
    from headcast.app.sinks.q3.sink import Q3Sink

    frames = [frame(head=(p, 0, 0)) for p in (10.3, -33.7, 51.1)]
    lazy, every = Q3Sink(), Q3Sink(verify=True)
    for f in frames:
        for sink in (lazy, every):
            sink.send(rig_state(f), f, 0.0)
            sink.observe(0.0)
    assert lazy._quant_max == 0.0  # nothing decoded yet: nobody looked
    worst = max(abs(p - remote_head(vrhead.pack_head(0, p, 0.0, 0.0), 0).pitch) for p in (10.3, -33.7, 51.1))
    assert every.head_quant_max == pytest.approx(worst) and worst > 1.0
    assert lazy.head_quant_max < worst  # only the last usercmd, decoded when asked


@pytest.mark.parametrize(
    "roll, shown", [(-15.0, "(-15.0°)"), (15.0, "(+15.0°)"), (0.0, "(+0.0°)"), (-70.0, "(-60.0°)")]
)
def test_q3_sink_status_shows_the_wire_roll_short_and_its_signed_angle(roll, shown):
    from headcast.app.sinks.q3.sink import Q3Sink

    f = frame(head=(0, 0, roll))
    sink = Q3Sink()
    sink.send(rig_state(f), f, 0.0)
    packed = sink.status(0.0).packed
    assert packed.endswith(f"roll {sink.intent.roll_short} {shown}"), packed


def test_q3_sink_keeps_the_links_refusal_words_while_tracking_is_lost():
    """A refusal (with its retry) stays on the status line when the head is lost too: the
    tracking note is added, not swapped in (issue 13: the HUD shows the refusal while it retries)."""
    from types import SimpleNamespace

    from headcast.app.sinks.q3.sink import Q3Sink

    link = SimpleNamespace(
        due_at=0.0,
        head_bits=True,
        state="refused",
        last_error=None,
        drops={},
        ping_ms=None,
        detail="server refused: Server is full. — retrying in 2 s",
        send_pose=lambda state, controls, vr, move_speed, now: None,  # (no pump armed: q3_intent and send)
        send=lambda intent, now: None,
        poll=lambda now: None,
    )
    sink = Q3Sink(link=link)
    lost = frame(head_ok=False)
    sink.send(rig_state(lost), lost, 0.0)
    st = sink.status(0.0)
    assert st.state == "refused"
    assert st.detail == "server refused: Server is full. — retrying in 2 s; tracking lost: head bits cleared"
