"""The sans-IO client core, driven with bytes and an injected clock (no sockets)."""
from __future__ import annotations

import pytest

from headcast.netcode.netsync.client import (
    Dropped,
    Joined,
    MembersChanged,
    NetSyncClientCore,
    OwnPose,
    PeerPose,
    ServerBack,
    ServerSilent,
)
from headcast.netcode.netsync.codec import (PoseEncodeError, decode_body, decode_client_pose, encode_body, encode_body_tail,
                                           encode_device_id_mapping, encode_room_pose)
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
    core.receive_broadcast(0.0, room((1, PEER_BODY)))
    assert core.events() == [] and core.counters.drops["room pose: before mapping"] == 1
    core.receive_unicast(0.1, mapping((1, "peer"), (2, "me")))
    ev = core.events()
    assert ev == [MembersChanged((DeviceMapping(1, "peer", False), DeviceMapping(2, "me", False)), (1, 2), ()),
                  Joined(2, (0, 10, 4))]
    core.receive_broadcast(0.2, room((1, PEER_BODY), (2, OWN_BODY)))
    p, own = core.events()  # our own entry is not a peer: it comes back as OwnPose
    assert isinstance(p, PeerPose) and (p.client_no, p.device_id, p.pose_time, p.received) == (1, "peer", 8.5, 0.2)
    assert own == OwnPose(decode_body(OWN_BODY)[0], 8.5, 0.2)
    # physical = R(−90°)·(head − t) = R(−90°)·(2, 1.7, 0) = (0, 1.7, 2); yaw 0 − 90
    assert p.body.pose_seq == 77 and p.body.physical.pos == pytest.approx((0.0, 1.7, 2.0), abs=1e-9)
    assert p.body.physical.rot == pytest.approx((0.0, -0.7071, 0.0, 0.7071), abs=2e-3)
    core.receive_unicast(0.3, mapping((2, "me")))
    assert core.events() == [MembersChanged((DeviceMapping(2, "me", False),), (), (1,))]
    assert core.client_no == 2 and core.counters.mappings == 2 and core.counters.room_poses == 2


def test_topic_and_room_must_match_exactly():
    core = NetSyncClientCore("lobby", "me")
    core.receive_unicast(0.0, mapping((1, "me")))
    core.events()
    core.receive_broadcast(0.1, [b"lobby2", room((2, PEER_BODY), room_id="lobby2")[1]])
    core.receive_broadcast(0.1, [b"lobby\x00obj", b"\x0e\x03"])
    assert core.counters.drops["broadcast: other topic"] == 2
    core.receive_broadcast(0.2, [ROOM, room((2, PEER_BODY), room_id="other")[1]])
    assert [type(e) for e in core.events()] == [Dropped]
    assert core.counters.drops["room pose: foreign room"] == 1


def test_silence_and_recovery_with_an_injected_clock():
    core = NetSyncClientCore("lobby", "me", silence_timeout=3.0)
    core.pose_message(10.0, PoseFrame.build(Transform((0, 1.6, 0))))
    core.handle_timer(12.9)
    assert core.events() == []
    core.handle_timer(13.1)
    assert core.events() == [ServerSilent(pytest.approx(3.1))]
    core.handle_timer(20.0)
    assert core.events() == []  # once per outage
    core.receive_unicast(21.0, mapping((1, "me")))
    assert ServerBack(pytest.approx(11.0)) in core.events()
    core.handle_timer(23.9)
    assert core.events() == []


def test_other_unicast_types_are_counted_not_decoded():
    core = NetSyncClientCore("lobby", "me")
    core.receive_unicast(0.0, [ROOM, b"\x08\x00\x00"])  # a global-variable sync
    assert core.counters.drops["ignored type 8"] == 1 and core.events() == []


def test_messages_carry_the_cached_header_and_policy_seq():
    core = NetSyncClientCore("lobby", "dévice")
    msg = core.pose_message(0.0, PoseFrame.build(Transform((0, 1.6, 0))))
    pose = decode_client_pose(msg)
    assert pose.device_id == "dévice" and pose.body.pose_seq == 1
    assert core.counters.bytes_sent == len(msg) and core.counters.sends == 1
    with pytest.raises(PoseEncodeError):
        core.pose_message(1.0, PoseFrame.build(Transform((float("nan"), 1.6, 0))))
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
    sent = [t for t in (0.0, 0.2, 0.5, 0.9, 1.0, 1.1, 2.0) if core.pose_message(t, still) is not None]
    assert sent == [0.0, 1.0, 2.0] and encoded == [still]
    assert core.counters.skipped["unchanged"] == 4
    # an equal frame that is another object is encoded (identity, not equality, is trusted)
    same = PoseFrame.build(Transform((0, 1.6, 0)))
    assert core.pose_message(2.5, same) is None and encoded == [still, same]
    moved = PoseFrame.build(Transform((0, 1.7, 0)))
    assert decode_client_pose(core.pose_message(2.6, moved)).body.head.pos[1] == pytest.approx(1.7)
    assert core.pose_message(2.8, still) is not None and len(encoded) == 4  # back: a change again


def test_own_pose_follows_the_number_from_the_latest_mapping():
    """OwnPose is the entry under the clientNo the latest mapping gave our deviceId — after a
    renumbering (server restart) the old number is a peer, the new one is us."""
    core = NetSyncClientCore("lobby", "me")
    core.receive_unicast(0.0, mapping((1, "me"), (2, "peer")))
    core.events()
    core.receive_broadcast(0.1, room((1, OWN_BODY), (2, PEER_BODY)))
    assert [type(e) for e in core.events()] == [OwnPose, PeerPose]
    core.receive_unicast(0.2, mapping((1, "peer"), (2, "me")))
    assert Joined(2, (0, 10, 4)) in core.events()
    core.receive_broadcast(0.3, room((1, PEER_BODY), (2, OWN_BODY)))
    peer, own = core.events()
    assert (peer.client_no, peer.device_id, peer.body.pose_seq) == (1, "peer", 77)
    assert isinstance(own, OwnPose) and own.body.pose_seq == 5
    # a broadcast without our entry (stealth, or not yet relayed) gives no OwnPose
    core.receive_broadcast(0.4, room((1, PEER_BODY)))
    assert [type(e) for e in core.events()] == [PeerPose]
