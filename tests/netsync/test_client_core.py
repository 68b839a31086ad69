"""The sans-IO client core, driven with bytes and an injected clock (no sockets)."""

from __future__ import annotations

import pytest
from netsync.coredrive import broadcast, control, drain, send_pose, unicast

from headcast.netcode.netsync.client import NetSyncClientCore
from headcast.netcode.netsync.codec import (
    PoseEncodeError,
    decode_body,
    decode_client_pose,
    encode_body,
    encode_body_tail,
    encode_device_id_mapping,
    encode_room_pose,
)
from headcast.netcode.netsync.events import (
    Dropped,
    Joined,
    MembersChanged,
    OwnPose,
    PeerPose,
    ServerBack,
    ServerSilent,
)
from headcast.netcode.netsync.model import DeviceMapping, OriginDelta, PoseFrame, Transform

ROOM = b"lobby"


def mapping(*entries: tuple[int, str]) -> list[bytes]:
    return [ROOM, encode_device_id_mapping((0, 10, 4), [DeviceMapping(n, d, False) for n, d in entries])]


def room(*entries: tuple[int, bytes], room_id: str = "lobby") -> list[bytes]:
    return [room_id.encode(), encode_room_pose(room_id, 9.0, [(n, 8.5, b) for n, b in entries])]


PEER_BODY = encode_body(77, PoseFrame.build(Transform((3.0, 1.7, 2.0)), delta=OriginDelta(1.0, 2.0, 90.0)))
OWN_BODY = encode_body(5, PoseFrame.build(Transform((0.0, 1.5, 0.0))))


def test_join_members_and_peer_poses():
    core = NetSyncClientCore("lobby", "me")
    broadcast(core, 0.0, room((1, PEER_BODY)))
    assert drain(core) == [] and core.counters.drops["room pose: before mapping"] == 1
    unicast(core, 0.1, mapping((1, "peer"), (2, "me")))
    ev = drain(core)
    assert ev == [
        MembersChanged((DeviceMapping(1, "peer", False), DeviceMapping(2, "me", False)), (1, 2), ()),
        Joined(2, (0, 10, 4)),
    ]
    broadcast(core, 0.2, room((1, PEER_BODY), (2, OWN_BODY)))
    p, own = drain(core)  # our own entry is not a peer: it comes back as OwnPose
    assert isinstance(p, PeerPose) and (p.client_no, p.device_id, p.pose_time, p.received) == (1, "peer", 8.5, 0.2)
    assert own == OwnPose(decode_body(OWN_BODY)[0], 8.5, 0.2)
    # physical = R(−90°)·(head − t) = R(−90°)·(2, 1.7, 0) = (0, 1.7, 2); yaw 0 − 90
    assert p.body.pose_seq == 77 and p.body.physical.pos == pytest.approx((0.0, 1.7, 2.0), abs=1e-9)
    assert p.body.physical.rot == pytest.approx((0.0, -0.7071, 0.0, 0.7071), abs=2e-3)
    unicast(core, 0.3, mapping((2, "me")))
    assert drain(core) == [MembersChanged((DeviceMapping(2, "me", False),), (), (1,))]
    assert core.client_no == 2 and core.counters.mappings == 2 and core.counters.room_poses == 2


def test_topic_and_room_must_match_exactly():
    core = NetSyncClientCore("lobby", "me")
    unicast(core, 0.0, mapping((1, "me")))
    drain(core)
    broadcast(core, 0.1, [b"lobby2", room((2, PEER_BODY), room_id="lobby2")[1]])
    broadcast(core, 0.1, [b"lobby\x00obj", b"\x0e\x03"])
    assert core.counters.drops["broadcast: other topic"] == 2
    broadcast(core, 0.2, [ROOM, room((2, PEER_BODY), room_id="other")[1]])
    assert [type(e) for e in drain(core)] == [Dropped]
    assert core.counters.drops["room pose: foreign room"] == 1


def test_silence_and_recovery_with_an_injected_clock():
    core = NetSyncClientCore("lobby", "me", silence_timeout=3.0)
    send_pose(core, 10.0, PoseFrame.build(Transform((0, 1.6, 0))))
    core.handle_timer(12.9)
    assert drain(core) == []
    core.handle_timer(13.1)
    assert drain(core) == [ServerSilent(pytest.approx(3.1))]
    core.handle_timer(20.0)
    assert drain(core) == []  # once per outage
    unicast(core, 21.0, mapping((1, "me")))
    assert ServerBack(pytest.approx(11.0)) in drain(core)
    core.handle_timer(23.9)
    assert drain(core) == []


def test_other_unicast_types_are_counted_not_decoded():
    core = NetSyncClientCore("lobby", "me")
    unicast(core, 0.0, [ROOM, b"\x08\x00\x00"])  # a global-variable sync
    assert core.counters.drops["ignored type 8"] == 1 and drain(core) == []


def test_messages_carry_the_cached_header_and_policy_seq():
    core = NetSyncClientCore("lobby", "dévice")
    msg = send_pose(core, 0.0, PoseFrame.build(Transform((0, 1.6, 0))))
    pose = decode_client_pose(msg)
    assert pose.device_id == "dévice" and pose.body.pose_seq == 1
    assert core.counters.bytes_sent == len(msg) and core.counters.sends == 1
    with pytest.raises(PoseEncodeError):
        send_pose(core, 1.0, PoseFrame.build(Transform((float("nan"), 1.6, 0))))
    with pytest.raises(PoseEncodeError):
        NetSyncClientCore("lobby", "x" * 256)


def test_a_frame_offered_again_is_not_encoded_again(monkeypatch):
    """A still headset offers the same (immutable) PoseFrame frame after frame: its bytes are
    encoded once, and the policy answers exactly as for fresh bytes (unchanged, then heartbeat)."""
    import headcast.netcode.netsync.client as client_mod

    encoded = []

    def counting(frame, protocol):
        encoded.append(frame)
        return encode_body_tail(frame, protocol)

    monkeypatch.setattr(client_mod, "encode_body_tail", counting)
    core = NetSyncClientCore("lobby", "d")
    still = PoseFrame.build(Transform((0, 1.6, 0)))
    sent = [t for t in (0.0, 0.2, 0.5, 0.9, 1.0, 1.1, 2.0) if send_pose(core, t, still) is not None]
    assert sent == [0.0, 1.0, 2.0] and encoded == [still]
    assert core.counters.skipped["unchanged"] == 4
    # an equal frame that is another object is encoded (identity, not equality, is trusted)
    same = PoseFrame.build(Transform((0, 1.6, 0)))
    assert send_pose(core, 2.5, same) is None and encoded == [still, same]
    moved = PoseFrame.build(Transform((0, 1.7, 0)))
    assert decode_client_pose(send_pose(core, 2.6, moved)).body.head.pos[1] == pytest.approx(1.7)
    assert send_pose(core, 2.8, still) is not None and len(encoded) == 4  # back: a change again


def test_own_pose_follows_the_number_from_the_latest_mapping():
    """OwnPose is the entry under the clientNo the latest mapping gave our deviceId — after a
    renumbering (server restart) the old number is a peer, the new one is us."""
    core = NetSyncClientCore("lobby", "me")
    unicast(core, 0.0, mapping((1, "me"), (2, "peer")))
    drain(core)
    broadcast(core, 0.1, room((1, OWN_BODY), (2, PEER_BODY)))
    assert [type(e) for e in drain(core)] == [OwnPose, PeerPose]
    unicast(core, 0.2, mapping((1, "peer"), (2, "me")))
    assert Joined(2, (0, 10, 4)) in drain(core)
    broadcast(core, 0.3, room((1, PEER_BODY), (2, OWN_BODY)))
    peer, own = drain(core)
    assert (peer.client_no, peer.device_id, peer.body.pose_seq) == (1, "peer", 77)
    assert isinstance(own, OwnPose) and own.body.pose_seq == 5
    # a broadcast without our entry (stealth, or not yet relayed) gives no OwnPose
    broadcast(core, 0.4, room((1, PEER_BODY)))
    assert [type(e) for e in drain(core)] == [PeerPose]


# ------------------------------------------------------------ protocols 7–8, detection, mismatch

from headcast.netcode.netsync.client import (  # noqa: E402
    DETECT_ORDER,
    HELLO_PERIOD,
    MISMATCH_PROBE_AFTER,
    PROBE_STEP,
    PROBE_SUFFIX,
    ProtocolDetected,
    ProtocolMismatch,
    probe_messages,
)
from headcast.netcode.netsync.codec import decode_client_hello  # noqa: E402

STILL = PoseFrame.build(Transform((0.0, 1.6, 0.0)))


def versioned_mapping(version, *entries: tuple[int, str]) -> list[bytes]:
    return [ROOM, encode_device_id_mapping(version, [DeviceMapping(n, d, False) for n, d in entries])]


def test_from_protocol_7_a_hello_once_a_second_and_poses_on_the_transform_lane():
    core = NetSyncClientCore("lobby", "me", protocol=8)
    assert core.uses_transform_lane
    control(core, 0.0)
    unicast(core, 0.05, versioned_mapping((0, 17, 5), (1, "me")))  # joined: no probing later
    hellos = [0.0] + [t for t in (x * 0.1 for x in range(1, 35)) if control(core, t)]
    assert hellos == pytest.approx([0.0, HELLO_PERIOD, 2 * HELLO_PERIOD, 3 * HELLO_PERIOD])
    assert decode_client_hello(control(core, 10.0)[0]) == decode_client_hello(bytes([19, 8, 0, 2]) + b"me")
    assert decode_client_pose(send_pose(core, 10.0, STILL)).protocol == 8
    # protocols 3–6 have no hello: the pose itself joins, on the one dealer socket
    old = NetSyncClientCore("lobby", "me", protocol=6)
    assert not old.uses_transform_lane and control(old, 0.0) == []


def test_stealth_from_protocol_7_is_the_hello_alone():
    core = NetSyncClientCore("lobby", "ghost", protocol=7, stealth=True)
    core.set_pose(STILL)
    (out,) = core.datagrams_to_send(0.0)  # the hello, no pose
    assert out.kind == "hello" and core.counters.skipped["stealth (hello only)"] == 1
    h = decode_client_hello(out.frames[1])
    assert (h.device_id, h.stealth, h.protocol) == ("ghost", True, 7)


def test_a_refused_control_message_is_retried_soon_not_every_poll():
    core = NetSyncClientCore("lobby", "me", protocol=8)
    (hello,) = core.datagrams_to_send(0.0)
    core.send_failed(hello)
    assert core.get_timer() == pytest.approx(0.1)
    assert control(core, 0.05) == [] and control(core, 0.1)


@pytest.mark.parametrize("protocol", [3, 4, 5, 6, 7, 8])
def test_detection_by_the_room_broadcasts_protocol_byte(protocol):
    core = NetSyncClientCore("lobby", "me", protocol=None)
    core.set_pose(STILL)
    out = core.datagrams_to_send(0.0)  # no pose while detecting: the newest protocol's probe, our deviceId
    assert [(o.kind, o.frames[1]) for o in out] == [("probe", probe_messages("me", (8,))[0])]
    assert core.counters.skipped["detecting"] == 1
    assert control(core, 0.1) == [] and control(core, PROBE_STEP) == probe_messages("me", (7,))
    body = encode_body(1, PoseFrame.build(Transform((1.0, 1.6, 0.0))), protocol)
    broadcast(core, 1.1, [ROOM, encode_room_pose("lobby", 9.0, [(4, 8.5, body)], protocol)])
    det = [e for e in drain(core) if isinstance(e, ProtocolDetected)]
    assert [(d.protocol, d.how) for d in det] == [(protocol, "room broadcast")] and core.protocol == protocol
    assert decode_client_pose(send_pose(core, 1.2, STILL)).protocol == protocol
    unicast(core, 1.3, versioned_mapping((0, 17, 5), (4, "me")))
    assert any(isinstance(e, Joined) and e.client_no == 4 for e in drain(core))


def test_detection_asks_one_protocol_at_a_time_newest_first_and_stops_once_answered():
    """A server logs every join message of another protocol as a warning (styly-netsync-server:
    "Received invalid control-lane message type …"): detection sends one protocol's probe at a
    time, newest first, the next only after PROBE_STEP s without an answer, none once answered;
    a probe the socket refused goes again before the next protocol's."""
    core = NetSyncClientCore("lobby", "me", protocol=None)
    assert DETECT_ORDER == (8, 7, 6, 5, 4, 3)
    sent = []
    t = 0.0
    for _ in DETECT_ORDER:
        (msg,) = control(core, t)
        sent.append(msg)
        assert control(core, t + PROBE_STEP / 2) == []
        t += PROBE_STEP
    assert sent == probe_messages("me")[::-1] and core.counters.probes == 6
    # after a whole round unanswered: the same order again, once a second
    assert control(core, t) == [] and control(core, t - PROBE_STEP + 1.0) == probe_messages("me", (8,))
    # a refused send is retried (same protocol) soon
    again = NetSyncClientCore("lobby", "me", protocol=None)
    (probe,) = again.datagrams_to_send(0.0)
    assert [probe.frames[1]] == probe_messages("me", (8,))
    again.send_failed(probe)
    assert control(again, 0.1) == probe_messages("me", (8,)) and again.counters.probes == 1
    # answered (a 0.15 server mapped the hello 7): protocol 7, no more probes, hellos once a second
    assert control(again, 0.1 + PROBE_STEP) == probe_messages("me", (7,))
    unicast(again, 0.4, versioned_mapping((0, 15, 0), (1, "me")))
    assert again.protocol == 7
    later = [m for t in (0.5, 1.0, 2.0, 3.0, 5.0) for m in control(again, t)]
    assert later and all(m[0] == 19 and m[1] == 7 for m in later) and again.counters.probes == 2


def test_detection_by_the_mappings_server_version_and_a_probe_that_registered_us():
    core = NetSyncClientCore("lobby", "me", protocol=None)
    control(core, 0.0)
    unicast(core, 0.3, versioned_mapping((0, 15, 1), (1, "me")))
    ev = drain(core)
    assert [(type(e).__name__) for e in ev if not isinstance(e, MembersChanged)] == ["ProtocolDetected", "Joined"]
    assert core.protocol == 7 and core.client_no == 1
    # an unknown (future) version names nothing: the broadcast will
    other = NetSyncClientCore("lobby", "me", protocol=None)
    unicast(other, 0.3, versioned_mapping((0, 99, 0), (1, "me")))
    assert other.protocol is None and not [e for e in drain(other) if isinstance(e, ProtocolDetected)]


def test_unanswered_explicit_protocol_probes_under_a_probe_id_and_names_the_mismatch():
    core = NetSyncClientCore("lobby", "me", protocol=3)
    assert control(core, 0.0) == []  # protocol 3: nothing on the control lane
    assert control(core, MISMATCH_PROBE_AFTER - 0.01) == []
    probes = control(core, MISMATCH_PROBE_AFTER)
    assert probes == probe_messages("me" + PROBE_SUFFIX, (8,))  # one protocol at a time, newest first
    unicast(core, 2.5, versioned_mapping((0, 17, 5), (1, "me" + PROBE_SUFFIX)))
    m = [e for e in drain(core) if isinstance(e, ProtocolMismatch)]
    assert len(m) == 1 and (m[0].ours, m[0].server_protocol) == (3, 8)
    assert m[0].message == (
        "server (styly-netsync-server 0.17.5) speaks NetSync protocol 8; headcast spoke 3: "
        "use --netsync-protocol auto (or 8)"
    )
    assert core.client_no is None and control(core, 5.0) == []  # asked once, answered: no more probes


def test_a_probe_answered_in_our_own_protocol_points_at_the_ports():
    core = NetSyncClientCore("lobby", "me", protocol=8)
    control(core, 0.0)
    control(core, MISMATCH_PROBE_AFTER)
    unicast(core, 2.5, versioned_mapping((0, 17, 5), (1, "me" + PROBE_SUFFIX)))
    (m,) = [e for e in drain(core) if isinstance(e, ProtocolMismatch)]
    assert m.server_protocol == 8 and "transform port" in m.message


def test_a_late_mapping_of_our_own_stops_the_diagnosis():
    core = NetSyncClientCore("lobby", "me", protocol=8)
    control(core, 0.0)
    control(core, MISMATCH_PROBE_AFTER)
    unicast(core, 2.5, versioned_mapping((0, 17, 5), (1, "me"), (2, "me" + PROBE_SUFFIX)))
    assert not [e for e in drain(core) if isinstance(e, ProtocolMismatch)] and core.client_no == 1
    assert all(m[0] == 19 for m in control(core, 5.0))  # hellos only, the probing is over


@pytest.mark.parametrize("byte, named", [(8, 8), (9, None), (2, None)])
def test_a_broadcast_in_another_protocol_is_a_counted_drop_and_names_the_mismatch(byte, named):
    core = NetSyncClientCore("lobby", "me", protocol=3)
    payload = bytearray(encode_room_pose("lobby", 1.0, [(2, 1.0, PEER_BODY)], 8))
    payload[1] = byte
    broadcast(core, 0.5, [ROOM, bytes(payload)])
    broadcast(core, 0.6, [ROOM, bytes(payload)])
    assert core.counters.drops[f"room pose: protocol {byte}"] == 2
    ev = drain(core)
    (m,) = [e for e in ev if isinstance(e, ProtocolMismatch)]  # named once
    assert m.server_protocol == named and f"protocol {byte}" in m.message
    assert len([e for e in ev if isinstance(e, Dropped)]) == 2
