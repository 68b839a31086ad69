"""Hostile Sauerbraten servers (issue 27): one channel-1 packet of 1,000 nested N_CLIENT headers
(defect 2: RecursionError out of messages._parse) and 100,000 packets of distinct bad messages
(defect 3: a drop counter keyed by reason text with offsets grew without bound). The packets are
scripted here, fed to SauerClientCore's receive path; `HostileSauerServer` sends the nested one
over real ENet (pyenet, 127.0.0.1) for tests/app/test_hostile_servers.py — no real server sends
such packets on demand."""

from __future__ import annotations

import threading
import time

from sauer.test_client_core import connected, feed, servinfo

from headcast.netcode.drops import MAX_DROP_REASONS
from headcast.netcode.sauer import client as sc
from headcast.netcode.sauer.client import SauerClientCore, State
from headcast.netcode.sauer.messages import build, parse_messages
from headcast.netcode.sauer.protocol import Msg
from headcast.netcode.sauer.wire import put_uint


def nested_clients(depth: int = 1000, inner: bytes = b"") -> bytes:
    """N_CLIENT cn length [N_CLIENT cn length [... inner]]: each header wraps the rest."""
    data = inner
    for _ in range(depth):
        head = bytearray(build(Msg.N_CLIENT, 1))
        put_uint(head, len(data))  # the length is a getuint
        data = bytes(head) + data
    return data


def test_a_thousand_nested_n_client_headers_parse_without_recursion():
    data = nested_clients(1000, build(Msg.N_TEXT, "deep"))
    assert len(data) > 3000
    result = parse_messages(data)
    assert result.stopped == "" and [m.text for m in result.messages] == ["deep"]
    deeper = nested_clients(20000)  # deeper than any C stack the game has: still no recursion
    assert parse_messages(deeper).stopped == ""


def test_nested_relays_stop_inside_and_go_on_outside():
    """A stop inside one relayed buffer ends that buffer only (the game's recursive call returns)."""
    bad_inner = build(Msg.N_CLIENT, 2, 1) + bytes([0x7F])  # unknown type 127 inside (length 1 < 128)
    data = nested_clients(50, bad_inner) + build(Msg.N_SERVMSG, "after")
    result = parse_messages(data)
    assert result.stopped == "" and [m.text for m in result.messages] == ["after"]


def test_the_core_takes_the_nested_packet_as_a_packet():
    core = SauerClientCore("vrA")
    connected(core)
    feed(core, 1, nested_clients(1000), 1.0)
    assert core.state is State.ALIVE


def test_100k_distinct_bad_packets_keep_the_drop_counters_bounded():
    """Every structure the server's bytes fill stays bounded: drop reasons (normalised, capped),
    players (client numbers are the server's), undrained events."""
    core = SauerClientCore("vrA")
    connected(core)
    t0 = time.perf_counter()
    for i in range(100_000):
        # an unknown message type after a varying prefix: the reason text carries type and offset;
        # every 10th a player under a new client number, then text the core makes an event of
        feed(core, 1, build(Msg.N_PING, i) * (i % 7) + bytes([0x70 + i % 15]) + bytes(i % 5), 1.0)
        if i % 10 == 0:
            feed(core, 1, build(Msg.N_INITCLIENT, 1000 + i, f"p{i}", "good", 0) + build(Msg.N_SERVMSG, f"t{i}"), 1.0)
    took = time.perf_counter() - t0
    drops = core.counters.drops
    assert len(drops) <= MAX_DROP_REASONS and all(len(k) <= 64 for k in drops), dict(drops)
    assert sum(drops.values()) >= 100_000
    assert 100 < len(core.players) <= sc.MAX_PLAYERS and len(core._events) <= sc.MAX_EVENTS
    assert took < 20


class HostileSauerServer(threading.Thread):
    """ENet on 127.0.0.1: answers a connect with N_SERVINFO, then sends `packet` on channel 1 and
    keeps the peer until it disconnects (`disconnected`) or `limit` s pass."""

    def __init__(self, packet: bytes, limit: float = 30.0) -> None:
        import enet

        super().__init__(daemon=True)
        self.host = enet.Host(enet.Address(b"127.0.0.1", 0), 4, 3, 0, 0)
        self.port = self.host.address.port
        self.packet, self.limit = packet, limit
        self.connected = self.disconnected = False
        self.sent = 0
        self._halt = threading.Event()

    def run(self) -> None:
        import enet

        end = time.monotonic() + self.limit
        while not self._halt.is_set() and time.monotonic() < end:
            ev = self.host.service(10)
            if ev.type == enet.EVENT_TYPE_CONNECT:
                self.connected = True
                ev.peer.send(1, enet.Packet(servinfo(cn=0), enet.PACKET_FLAG_RELIABLE))
                ev.peer.send(1, enet.Packet(self.packet, enet.PACKET_FLAG_RELIABLE))
                self.sent += 1
            elif ev.type == enet.EVENT_TYPE_DISCONNECT:
                self.disconnected = True

    def stop(self) -> None:
        self._halt.set()
        self.join(5)
