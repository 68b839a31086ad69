"""Hostile NetSync input (issue 27): protocol detection trusts the server's own release mapping
over a junk room broadcast, and 100,000 distinct bad messages leave every structure the server's
bytes fill bounded (drop reasons, their details, pending events, members). Scripted bytes fed to
the sans-IO core: no real server sends these on demand."""

from __future__ import annotations

import time

from netsync.coredrive import broadcast, control, drain, send_pose, unicast
from netsync.test_client_core import ROOM, STILL, versioned_mapping

from headcast.netcode.drops import MAX_DETAIL_LEN, MAX_DROP_REASONS, MAX_REASON_LEN
from headcast.netcode.netsync import client as nc
from headcast.netcode.netsync.client import NetSyncClientCore
from headcast.netcode.netsync.codec import decode_client_pose, encode_body, encode_room_pose
from headcast.netcode.netsync.events import Joined, ProtocolDetected, ProtocolMismatch
from headcast.netcode.netsync.model import PoseFrame, Transform


def _junk_broadcast(protocol: int) -> list[bytes]:
    body = encode_body(1, PoseFrame.build(Transform((1.0, 1.6, 0.0))), protocol)
    return [ROOM, encode_room_pose("lobby", 9.0, [(4, 8.5, body)], protocol)]


def test_the_servers_mapping_wins_over_a_junk_broadcast_seen_first():
    core = NetSyncClientCore("lobby", "me", protocol=None)
    control(core, 0.0)
    broadcast(core, 0.1, _junk_broadcast(6))  # a broadcast says 6 ...
    assert core.protocol == 6
    unicast(core, 0.3, versioned_mapping((0, 17, 5), (4, "me")))  # ... the server's own mapping: 0.17.5
    ev = drain(core)
    det = [e for e in ev if isinstance(e, ProtocolDetected)]
    assert [d.protocol for d in det] == [6, 8] and "device-ID mapping" in det[-1].how
    assert core.protocol == 8 and not [e for e in ev if isinstance(e, ProtocolMismatch)]
    assert any(isinstance(e, Joined) and e.client_no == 4 for e in ev)
    assert decode_client_pose(send_pose(core, 1.0, STILL)).protocol == 8


def test_100k_distinct_bad_messages_keep_the_core_bounded():
    core = NetSyncClientCore("lobby", "me", protocol=8)
    unicast(core, 0.0, versioned_mapping((0, 17, 5), (1, "me")))
    drain(core)
    t0 = time.perf_counter()
    for i in range(100_000):
        bad = i.to_bytes(4, "little") * (1 + i % 5)
        broadcast(core, 1.0, [ROOM, bytes([12, i % 256]) + bad])  # room pose, any protocol byte, junk
        if i % 4 == 0:
            unicast(core, 1.0, [ROOM, bytes([6]) + bad])  # a mapping that is not one
        if i % 8 == 0:
            broadcast(core, 1.0, [ROOM + bytes([i % 251]), bad])  # another topic
    took = time.perf_counter() - t0
    drops = core.counters.drops
    assert len(drops) <= MAX_DROP_REASONS and all(len(k) <= MAX_REASON_LEN for k in drops), dict(drops)
    assert sum(drops.values()) >= 100_000
    ev = drain(core)  # never drained in the loop above: bounded, each detail bounded
    assert len(ev) <= nc.MAX_PENDING_EVENTS
    assert all(len(getattr(e, "detail", "")) <= MAX_DETAIL_LEN for e in ev)
    assert len({getattr(e, "reason", "") for e in ev}) <= MAX_DROP_REASONS
    assert len(core.members) <= 1
    assert took < 20
