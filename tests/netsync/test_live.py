"""Our client against the real styly-netsync-server, the first protocol headcast speaks (0.10.4,
protocol 3) and the current release (0.17.5, protocol 8): relay, protection, traffic, restart,
shutdown. test_protocols_live.py covers every release in between and the official client."""

from __future__ import annotations

import math
import os
import threading
import time

import pytest
import zmq
from netsync.coredrive import record_poses

from headcast.netcode.netsync.codec import (
    MissingDeltaEncodingError,
    decode_client_pose,
    encode_client_pose,
)
from headcast.netcode.netsync.events import Joined, OwnPose, PeerPose, ServerBack, ServerSilent
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.transport import NetSyncClient, NoAnswerError

from support import free_port, wait_for

pytestmark = pytest.mark.live

ROOM = "headcast-test"


def client(srv, device_id, room=ROOM, **kw) -> NetSyncClient:
    a = srv.address
    kw.setdefault("protocol", a.protocol)
    return NetSyncClient(a.host, a.dealer_port, a.pub_port, room, device_id, transform_port=a.transform_port, **kw)


def moving(t: float) -> PoseFrame:
    head = Transform(
        (0.5 + 0.3 * math.sin(t), 1.7, -1.0 + 0.3 * math.cos(t)), (0.0, math.sin(t / 4), 0.0, math.cos(t / 4))
    )
    right = Transform((head.pos[0] + 0.3, 1.2, head.pos[2] - 0.2), (0.1, 0.2, 0.3, 0.9))
    left = Transform((head.pos[0] - 0.3, 1.25, head.pos[2] - 0.1), (0.0, 0.0, 0.0, 1.0))
    virt = (Transform((2.0, 0.5, 3.0), (0.0, 0.7071, 0.0, 0.7071)),)
    return PoseFrame.build(head, right, left, virt, OriginDelta(1.25, -0.5, 30.0))


class Pump:
    """Drives clients once per call (send + poll with the real clock), collecting their events."""

    def __init__(self, clients: dict[str, NetSyncClient], frame_for):
        self.clients = clients
        self.frame_for = frame_for
        self.events: dict[str, list] = {k: [] for k in clients}
        self.sent: dict[str, list[bytes]] = {k: [] for k in clients}

    def __call__(self) -> None:
        now = time.monotonic()
        for name, c in self.clients.items():
            frame = self.frame_for(name, now)
            if frame is not None and c.send_pose(now, frame):
                self.sent[name].append(now)
            self.events[name] += c.poll(now)

    def until(self, pred, timeout: float, what: str):
        def step():
            self()
            return pred()

        return wait_for(step, timeout, what, interval=0.01)

    def of(self, name: str, kind) -> list:
        return [e for e in self.events[name] if isinstance(e, kind)]


def _listening_sockets(pid: int) -> list[tuple[str, str, int]]:
    """(proto, address, port) of every socket of `pid` bound for listening/receiving."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        with open(f"/proc/{pid}/net/{proto}") as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                local, state, inode = cols[1], cols[3], cols[9]
                if inode not in inodes or (proto.startswith("tcp") and state != "0A"):  # 0A = LISTEN
                    continue
                addr, port = local.split(":")
                if len(addr) == 8:
                    ip = ".".join(str(int(addr[i : i + 2], 16)) for i in (6, 4, 2, 0))
                else:
                    ip = addr
                out.append((proto, ip, int(port, 16)))
    return out


def test_server_listens_on_loopback_only(netsync_edge):
    socks = _listening_sockets(netsync_edge.pid)
    a = netsync_edge.address
    assert {(p, port) for p, _, port in socks} >= {("tcp", a.dealer_port), ("tcp", a.pub_port), ("tcp", a.rest_port)}
    assert all(ip == "127.0.0.1" for _, ip, _ in socks), socks
    assert not any(p.startswith("udp") for p, _, _ in socks), "discovery must be off"


def test_mapping_names_us_and_the_real_server_version(netsync_edge):
    c = client(netsync_edge, "versioned")
    try:
        events = c.join(PoseFrame.build(Transform((0, 1.6, 0))), timeout=15)
        joined = [e for e in events if isinstance(e, Joined)]
        installed = tuple(int(x) for x in netsync_edge.address.version.split("."))
        assert joined and joined[0].client_no == 1 and joined[0].server_version == installed
        assert c.core.members[1].device_id == "versioned" and not c.core.members[1].stealth
    finally:
        c.close()


def test_relay_integrity(netsync_edge):
    """docs/protocols/netsync.md#acceptance 4: client → raw cache → broadcast → subscriber, bytes and pose intact."""
    a, b = client(netsync_edge, "sender-a"), client(netsync_edge, "viewer-b")
    raw = zmq.Context.instance().socket(zmq.SUB)
    raw.setsockopt(zmq.LINGER, 0)
    raw.setsockopt(zmq.SUBSCRIBE, ROOM.encode())
    raw.connect(f"tcp://127.0.0.1:{netsync_edge.address.pub_port}")
    sent: list[tuple[float, bytes]] = []  # (now, message) of every pose A's core produced
    try:

        def frame_for(name, now):
            if name == "viewer-b":
                return PoseFrame.build(Transform((0.0, 1.6, 0.0)))
            return moving(now)

        pump = Pump({"sender-a": a, "viewer-b": b}, frame_for)
        record_poses(a.core, sent)
        pump.until(lambda: a.client_no and b.client_no, 15, "both clients to get a clientNo")

        # The server's device-ID mapping is debounced (<= 1 per 0.5 s): A's first poses may reach B
        # before the mapping that names A, so they carry no device id yet; once named, always named.
        def named() -> list[PeerPose]:
            return [p for p in pump.of("viewer-b", PeerPose) if p.device_id == "sender-a"]

        pump.until(lambda: len(named()) >= 5, 15, "five relayed poses of A at B after B learnt A's name")
        peers = pump.of("viewer-b", PeerPose)
        first_named = peers.index(named()[0])
        assert all(p.device_id is None for p in peers[:first_named])
        assert all(p.device_id == "sender-a" for p in peers[first_named:])
        by_seq = {decode_client_pose(m).body.pose_seq: (t, m) for t, m in sent}
        for p in peers:
            assert p.client_no == a.client_no
            assert (
                p.body == decode_client_pose(by_seq[p.body.pose_seq][1]).body
            )  # poseSeq, flags, every field, physical
            assert p.body.flags == 0x3E and len(p.body.virtuals) == 1
        # the reconstructed pose is the sent one within the quantisation bounds
        last = peers[-1].body
        truth = moving(by_seq[last.pose_seq][0])
        assert math.dist(last.head.pos, truth.head.pos) <= 0.0087
        assert math.dist(last.right.pos, truth.right.pos) <= 0.0087 + 0.0044
        assert last.physical is not None and abs(last.physical.pos[1] - last.head.pos[1]) < 1e-12
        # byte-identical relay: the room message carries A's body verbatim
        payloads = []
        while True:
            try:
                payloads.append(raw.recv_multipart(zmq.NOBLOCK)[1])
            except zmq.Again:
                break
        a_bodies = {m[3 + len(b"sender-a") :] for _, m in sent}
        assert any(body in p for p in payloads for body in a_bodies)
    finally:
        raw.close(0)
        a.close()
        b.close()


def test_own_pose_is_our_body_as_the_server_relayed_it(netsync_edge):
    """OwnPose: our entry of the real server's room broadcast, with no second client — each
    one is the body we sent under that poseSeq, field for field; peers never show up as it."""
    me, other = client(netsync_edge, "self-seer"), client(netsync_edge, "other")
    sent: list[tuple[float, bytes]] = []
    record_poses(me.core, sent)
    pump = Pump(
        {"me": me, "other": other},
        lambda n, now: moving(now) if n == "me" else PoseFrame.build(Transform((5.0, 1.6, 5.0))),
    )
    try:
        pump.until(
            lambda: len(pump.of("me", OwnPose)) >= 5 and pump.of("me", PeerPose) and other.client_no,
            15,
            "five own poses, a peer pose and the peer's own clientNo",
        )
        by_seq = {decode_client_pose(m).body.pose_seq: m for _, m in sent}
        own = pump.of("me", OwnPose)
        for o in own:
            assert o.body == decode_client_pose(by_seq[o.body.pose_seq]).body
            assert o.body.physical is not None and o.body.flags == 0x3E
        assert [o.pose_time for o in own] == sorted(o.pose_time for o in own)
        assert {p.client_no for p in pump.of("me", PeerPose)} == {other.client_no} != {me.client_no}
        assert all(o.body.head.pos[0] < 4.0 for o in own)  # never the peer's body (x = 5)
        assert me.counters.sends >= len({o.body.pose_seq for o in own})
    finally:
        me.close()
        other.close()


def test_mixed_client_protection(netsync_edge):
    """docs/protocols/netsync.md#acceptance 3: an old-V3 body (PhysicalValid, no bit 4) is refused — by the server
    (never registered, never relayed) and by our decoder (typed error)."""
    a = netsync_edge.address
    good = encode_client_pose("old-client", 1, moving(0.0), a.protocol)
    old = bytearray(good)
    old[3 + len("old-client") + 3] = 0x0F
    with pytest.raises(MissingDeltaEncodingError):
        decode_client_pose(bytes(old))
    ctx = zmq.Context.instance()
    legacy = ctx.socket(zmq.DEALER)
    legacy.setsockopt(zmq.LINGER, 0)
    legacy.connect(f"tcp://127.0.0.1:{a.transform_port}")  # == the dealer port before protocol 7
    viewer = client(netsync_edge, "viewer")
    try:
        pump = Pump({"viewer": viewer}, lambda n, now: moving(now))  # moving: the server broadcasts at 10 Hz
        for _ in range(5):
            legacy.send_multipart([ROOM.encode(), bytes(old)])
        pump.until(lambda: viewer.client_no, 15, "the viewer's clientNo")
        pump.until(lambda: viewer.counters.room_poses >= 8, 15, "eight broadcasts after the old-V3 poses")
        assert not any(m.device_id == "old-client" for m in viewer.core.members.values())
        assert pump.of("viewer", PeerPose) == []
        assert legacy.poll(0) == 0  # no mapping (nor anything else) came back to the old client
        # the same pose with bit 4 is accepted: the protection is exactly that bit
        legacy.send_multipart([ROOM.encode(), good])
        pump.until(
            lambda: any(m.device_id == "old-client" for m in viewer.core.members.values()),
            15,
            "the fixed client in the mapping",
        )
    finally:
        legacy.close(0)
        viewer.close()


def test_traffic_live(netsync_edge):
    """docs/protocols/netsync.md#acceptance 5, a bounded live run: idle → ~1 Hz, motion → capped at SendRate (10 Hz)."""
    c, v = client(netsync_edge, "walker"), client(netsync_edge, "watcher")
    phase = {"moving": False}
    pump = Pump(
        {"walker": c, "watcher": v},
        lambda n, now: (
            moving(now * 3) if n == "walker" and phase["moving"] else PoseFrame.build(Transform((0, 1.6, 0)))
        ),
    )
    try:
        pump.until(lambda: c.client_no and v.client_no, 15, "clientNos")
        t0 = time.monotonic()
        pump.until(lambda: time.monotonic() - t0 >= 3.0, 10, "3 s idle")
        idle = [t for t in pump.sent["walker"] if t >= t0]
        phase["moving"] = True
        t1 = time.monotonic()
        pump.until(lambda: time.monotonic() - t1 >= 2.0, 10, "2 s of motion")
        motion = [t for t in pump.sent["walker"] if t >= t1]
        assert 2 <= len(idle) <= 4, idle  # 1 Hz heartbeat
        assert 10 <= len(motion) <= 21, len(motion)  # ≤ 10 Hz (+1 for the window edge); a busy machine may lag
        assert min(b - a for a, b in zip(motion, motion[1:])) >= 0.1 - 1e-6
        seqs = [e.body.pose_seq for e in pump.of("watcher", PeerPose) if e.client_no == c.client_no]
        assert seqs == sorted(seqs) and seqs[-1] <= c.core.policy.pose_seq
    finally:
        c.close()
        v.close()


def test_server_restart_survival(netsync_edge):
    a = client(netsync_edge, "survivor-a", silence_timeout=1.0)
    b = client(netsync_edge, "survivor-b", silence_timeout=1.0)
    pump = Pump({"a": a, "b": b}, lambda n, now: moving(now) if n == "a" else PoseFrame.build(Transform((0, 1.6, 0))))
    try:
        pump.until(lambda: len(pump.of("b", PeerPose)) >= 2, 15, "relayed poses before the restart")
        netsync_edge.stop()
        pump.until(
            lambda: pump.of("a", ServerSilent) and pump.of("b", ServerSilent), 10, "ServerSilent on both clients"
        )
        dropped = a.counters.drops.copy()
        pump.until(lambda: a.counters.drops != dropped, 5, "sends counted as dropped while the server is down")
        seen, mappings = len(pump.of("b", PeerPose)), b.counters.mappings
        netsync_edge.start(timeout=60)
        pump.until(lambda: len(pump.of("b", PeerPose)) > seen + 2, 20, "relayed poses after the restart")
        assert pump.of("a", ServerBack) and pump.of("b", ServerBack)
        pump.until(lambda: b.counters.mappings > mappings, 10, "a mapping from the new server process")
        assert b.client_no == pump.of("b", Joined)[-1].client_no
        # bounded queues: nothing from the outage piled up
        assert a.counters.sends < 200
    finally:
        a.close()
        b.close()


def test_no_server_is_a_clear_error():
    c = NetSyncClient("127.0.0.1", free_port(), free_port(), ROOM, "lonely", silence_timeout=2.0)
    try:
        t0 = time.monotonic()
        with pytest.raises(NoAnswerError, match="no device-ID mapping"):
            c.join(PoseFrame.build(Transform((0, 1.6, 0))), timeout=1.0)
        assert time.monotonic() - t0 < 5
        assert any(isinstance(e, ServerSilent) for e in c.poll(time.monotonic() + 2.0))
        assert c.counters.drops  # the sends were counted as lost, not queued
    finally:
        c.close()


def test_exact_topic_match(netsync_edge):
    """Room "a" also receives room "ab" broadcasts (SUB prefix match); none become peer poses."""
    near = client(netsync_edge, "in-ab", room=ROOM + "b")
    me = client(netsync_edge, "in-a")
    pump = Pump({"near": near, "me": me}, lambda n, now: moving(now))
    try:
        pump.until(
            lambda: me.counters.drops["broadcast: other topic"] >= 3 and me.client_no,
            15,
            "room-ab broadcasts at the room-a client",
        )
        assert all(p.device_id != "in-ab" for p in pump.of("me", PeerPose))
    finally:
        near.close()
        me.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_clean_shutdown_leaks_nothing(netsync_edge):
    for warm in range(2):  # the first round may load libraries / lazily create fds
        threads, fds = threading.active_count(), _fds()
        clients = [client(netsync_edge, f"shut-{warm}-{i}") for i in range(4)]
        pump = Pump({str(i): c for i, c in enumerate(clients)}, lambda n, now: moving(now))
        pump.until(lambda: all(c.client_no for c in clients), 15, "all clients joined")
        for c in clients:
            c.close()
            c.close()  # idempotent
        assert threading.active_count() == threads
        wait_for(lambda: _fds() <= fds, 5, f"fds back to {fds}")
        with pytest.raises(zmq.ZMQError):
            clients[0]._dealer.send(b"x")


def test_stealth_client_is_registered_but_never_relayed(netsync_edge):
    ghost = client(netsync_edge, "ghost", stealth=True)
    viewer = client(netsync_edge, "viewer")
    pump = Pump({"ghost": ghost, "viewer": viewer}, lambda n, now: moving(now))
    try:
        # The viewer learns of the ghost from the server's client-number/device-ID mapping, which may
        # come after the viewer's fifth broadcast on a busy machine: wait for it within the bound.
        pump.until(
            lambda: (
                ghost.client_no
                and viewer.client_no
                and viewer.counters.room_poses >= 5
                and ghost.client_no in viewer.core.members
            ),
            15,
            "both joined, five broadcasts, the ghost known",
        )
        assert viewer.core.members[ghost.client_no].stealth
        assert not [p for p in pump.of("viewer", PeerPose) if p.client_no == ghost.client_no]
        assert not pump.of("ghost", OwnPose)  # a stealth member is never in the broadcast, ours included
        assert ghost.counters.bytes_sent == (3 + len("ghost") + 5) * ghost.counters.sends  # minimal body
    finally:
        ghost.close()
        viewer.close()
