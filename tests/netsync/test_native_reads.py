"""The NetSync receive path in C (netcode/netsync/_nscodec.c): `decode_room`, the whole room
broadcast in one call, and `zmq_drain`, a socket's messages read through libzmq's own API.

`decode_room` reads bytes from the network, so it is held to the Python decoder on valid rooms
of every protocol, on every one-byte corruption and truncation of them, and on random bytes
behind a valid header (hypothesis): it returns None (the Python path then decides, and raises
what it finds) or exactly what the Python path decodes, and our body's bytes as relayed. The
core is driven with the same broadcasts with the extension and without it: the same events and
counts. `zmq_drain` is held to pyzmq's own recv on real ZeroMQ sockets (inproc; a test of the
library, not of a server).
"""

from __future__ import annotations

import gc
import os
import random
import struct
import time
import warnings

import pytest
import zmq
from hypothesis import HealthCheck, given, settings, strategies as st
from netsync.coredrive import broadcast, drain, unicast

from headcast.netcode.netsync import client as client_module, codec, transport
from headcast.netcode.netsync.client import NetSyncClientCore
from headcast.netcode.netsync.events import OwnPose
from headcast.netcode.netsync.model import DeviceMapping

from .oracle import random_frame

PURE_WANTED = os.environ.get("HEADCAST_PURE_PYTHON", "") not in ("", "0")
pytestmark = pytest.mark.skipif(PURE_WANTED, reason="HEADCAST_PURE_PYTHON=1: the C accelerator is off by request")
NATIVE = codec.NATIVE
ROOM = "room-é"
TOPIC = ROOM.encode()


def _room(rng: random.Random, protocol: int, n: int) -> tuple[bytes, dict[int, bytes]]:
    """A room broadcast of n random members, and each member's body bytes by clientNo."""
    entries, bodies = [], {}
    for i in range(n):
        f = random_frame(rng, None, rng.choice((0, 3)), max_flags=128 if protocol >= 5 else 64)
        try:
            body = codec.encode_body(i, f, protocol)
        except codec.PoseEncodeError:
            continue
        entries.append((i + 1, 1000.0 + i / 7, body))
        bodies[i + 1] = body
    return codec.encode_room_pose(ROOM, 1234.5, entries, protocol), bodies


def _python(data: bytes, protocol: int):
    saved = codec.NATIVE
    codec.NATIVE = None
    try:
        return codec.decode_room_pose(data, protocol)
    except codec.NetSyncDecodeError:
        return None
    finally:
        codec.NATIVE = saved


def _agrees(data: bytes, protocol: int, own: int, bodies: dict[int, bytes] | None = None) -> bool:
    """decode_room(data) is None or what the Python path decodes (and our body's bytes); True when
    the C path took it."""
    got = NATIVE.decode_room(data, protocol, TOPIC, own)
    if got is None:
        return False
    room = _python(data, protocol)
    assert room is not None and room.room_id == ROOM and room.protocol == protocol
    broadcast_time, entries, raw = got
    assert repr(broadcast_time) == repr(room.broadcast_time) and repr(entries) == repr(room.entries)
    mine = [e for e in room.entries if e.client_no == own]
    if len(mine) != 1:
        assert raw is None
    else:
        assert raw is not None and codec.decode_body(raw, 0, protocol) == (mine[0].body, len(raw))
        if bodies is not None:
            assert raw == bodies[own]
    return True


def test_the_extension_has_the_receive_path():
    assert NATIVE is not None, codec.NATIVE_STATUS
    assert NATIVE.zmq_bind() == zmq.zmq_version_info()
    assert transport.NATIVE_READS is not None  # the transport reads through it


@pytest.mark.parametrize("protocol", codec.PROTOCOLS)
def test_decode_room_agrees_on_valid_and_corrupted_rooms(protocol):
    rng = random.Random(900 + protocol)
    for n in (0, 1, 2, 7, 60):
        msg, bodies = _room(rng, protocol, n)
        for own in (-1, 1, 2, n, n + 1, 0xFFFF):
            assert _agrees(msg, protocol, own, bodies)  # a valid room of ours: the C path takes it
        for other in (p for p in codec.PROTOCOLS if p != protocol):
            assert NATIVE.decode_room(msg, other, TOPIC, 1) is None
        assert NATIVE.decode_room(msg, protocol, b"room", 1) is None  # another room (a prefix of ours)
        assert NATIVE.decode_room(msg, protocol, TOPIC + b"x", 1) is None
        assert NATIVE.decode_room(bytearray(msg), protocol, TOPIC, 1) is None  # only bytes
        for cut in range(len(msg)):
            _agrees(msg[:cut], protocol, 1)
        _agrees(msg + b"\x00", protocol, 1)
        for _ in range(200):
            bad = bytearray(msg)
            bad[rng.randrange(len(bad))] = rng.randrange(256)
            _agrees(bytes(bad), protocol, rng.choice((1, 2, -1)))


def test_decode_room_gives_no_bytes_for_our_number_twice():
    body = codec.encode_body(1, random_frame(random.Random(1), 0x06, 0), 8)
    msg = codec.encode_room_pose(ROOM, 1.0, [(3, 1.0, body), (3, 2.0, body)], 8)
    got = NATIVE.decode_room(msg, 8, TOPIC, 3)
    assert got is not None and got[2] is None and len(got[1]) == 2


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rest=st.binary(min_size=0, max_size=400),
    protocol=st.sampled_from(codec.PROTOCOLS),
    count=st.integers(0, 5),
    own=st.integers(-1, 6),
)
def test_decode_room_agrees_on_garbage_behind_a_valid_header(rest, protocol, count, own):
    msg = bytes((12, protocol, len(TOPIC))) + TOPIC + struct.pack("<dH", 7.25, count) + rest
    _agrees(msg, protocol, own)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(min_size=0, max_size=200), protocol=st.integers(-1, 300), own=st.integers(-2, 70000))
def test_decode_room_never_fails_on_any_bytes(data, protocol, own):
    got = NATIVE.decode_room(data, protocol, TOPIC, own)
    if got is not None:
        assert _agrees(data, protocol, own)


def _drive(protocol: int, broadcasts: list[bytes]) -> tuple[list, dict, int]:
    core = NetSyncClientCore(ROOM, "me", protocol=protocol)
    unicast(core, 0.0, [TOPIC, codec.encode_device_id_mapping((0, 17, 5), [DeviceMapping(2, "me", False)])])
    events = drain(core)
    for i, payload in enumerate(broadcasts):
        broadcast(core, 0.1 + i, [TOPIC, payload])
        events += drain(core)
    return events, dict(core.counters.drops), core.counters.room_poses


@pytest.mark.parametrize("protocol", codec.PROTOCOLS)
def test_the_core_sees_the_same_with_and_without_the_extension(protocol, monkeypatch):
    """Valid, foreign, corrupted and truncated broadcasts: the same events (OwnPose's bytes aside,
    which only the C path knows) and the same drops and counts."""
    rng = random.Random(950 + protocol)
    stream = []
    for n in (1, 2, 5):
        msg, _ = _room(rng, protocol, n)
        stream += [msg, msg[:-1], msg + b"\x00", codec.encode_room_pose("other", 1.0, [], protocol)]
        for _ in range(30):
            bad = bytearray(msg)
            bad[rng.randrange(len(bad))] = rng.randrange(256)
            stream.append(bytes(bad))
    c_events, c_drops, c_rooms = _drive(protocol, stream)
    monkeypatch.setattr(client_module, "_NATIVE", None)
    p_events, p_drops, p_rooms = _drive(protocol, stream)
    assert c_events == p_events and c_drops == p_drops and c_rooms == p_rooms
    own = [e for e in c_events if isinstance(e, OwnPose)]
    assert own and all(e.raw is not None for e in own)  # the C path gave our body's bytes


def _batched(protocol: int, stream: list, sizes: list[int]):
    """As _drive, the broadcasts handed over in batches (receive_broadcasts), `sizes` long each in turn."""
    core = NetSyncClientCore(ROOM, "me", protocol=protocol)
    unicast(core, 0.0, [TOPIC, codec.encode_device_id_mapping((0, 17, 5), [DeviceMapping(2, "me", False)])])
    events, moved, i, k = drain(core), [], 0, 0
    while i < len(stream):
        batch = stream[i : i + sizes[k % len(sizes)]]
        moved.append(core.receive_broadcasts(batch, 0.5))
        events += drain(core)
        i, k = i + len(batch), k + 1
    return events, dict(core.counters.drops), core.counters, moved


@pytest.mark.parametrize("protocol", codec.PROTOCOLS)
def test_broadcasts_handed_over_together_are_seen_as_one_by_one(protocol):
    """The transport hands the SUB thread's messages to the core in one call (receive_broadcasts):
    the same events (our body's bytes included), drops and counts as each through
    receive_datagram, whatever the messages (valid, foreign, corrupted, truncated, the wrong frame
    count or topic, another protocol's) and however they are batched; it says True when anything
    but the common broadcast came (the driver then asks for its deadline again)."""
    rng = random.Random(1950 + protocol)
    stream: list = []
    for n in (1, 2, 5):
        msg, _ = _room(rng, protocol, n)
        other = 3 if protocol != 3 else 4
        stream += [[TOPIC, msg]] * 3 + [[TOPIC, msg[:-1]], [TOPIC, msg + b"\x00"], [TOPIC + b"x", msg], [TOPIC]]
        stream += [[TOPIC, msg, b""], [TOPIC, b""], [TOPIC, b"\x06"], [TOPIC, bytes((12, other)) + msg[2:]]]
        for _ in range(20):
            bad = bytearray(msg)
            bad[rng.randrange(len(bad))] = rng.randrange(256)
            stream.append([TOPIC, bytes(bad)])
    core = NetSyncClientCore(ROOM, "me", protocol=protocol)
    unicast(core, 0.0, [TOPIC, codec.encode_device_id_mapping((0, 17, 5), [DeviceMapping(2, "me", False)])])
    one_events = drain(core)
    for frames in stream:
        core.receive_datagram(client_module.Incoming(client_module.LANE_ROOM, frames), 0.5)
        one_events += drain(core)
    for sizes in ([1], [3, 1, 7], [len(stream)]):
        events, drops, counters, _ = _batched(protocol, stream, sizes)
        assert events == one_events and drops == dict(core.counters.drops)
        assert (
            counters.room_poses == core.counters.room_poses and counters.bytes_received == core.counters.bytes_received
        )
    assert any(isinstance(e, OwnPose) and e.raw is not None for e in one_events)
    msg, _ = _room(rng, protocol, 2)
    assert _batched(protocol, [[TOPIC, msg]] * 4, [2])[3] == [False, False]  # the common one
    assert _batched(protocol, [[TOPIC, msg], [TOPIC, msg[:-1]]], [2])[3] == [True]  # the Python path's


def test_broadcasts_after_a_silence_report_the_server_back_and_move_the_deadline():
    """A broadcast that ends a silence is the core's news (ServerBack) and re-arms its silence
    timer: receive_broadcasts says so (True), so the transport asks for the deadline again."""
    core = NetSyncClientCore(ROOM, "me", protocol=8)
    unicast(core, 0.0, [TOPIC, codec.encode_device_id_mapping((0, 17, 5), [DeviceMapping(2, "me", False)])])
    drain(core)
    core.handle_timer(10.0)  # silent since 0.0
    assert core.silent and type(drain(core)[0]).__name__ == "ServerSilent"
    msg, _ = _room(random.Random(5), 8, 2)
    assert core.receive_broadcasts([[TOPIC, msg]], 11.0) is True
    events = drain(core)
    assert not core.silent and type(events[0]).__name__ == "ServerBack" and core.get_timer() <= 11.0 + 3.0
    assert core.receive_broadcasts([[TOPIC, msg]], 11.5) is False


# ------------------------------------------------------------------ zmq_drain


@pytest.fixture
def pair():
    ctx = zmq.Context()
    a, b = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    for s in (a, b):
        s.setsockopt(zmq.LINGER, 0)
    a.bind("inproc://native-reads")
    b.connect("inproc://native-reads")
    yield a, b
    a.close()
    b.close()
    ctx.term()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    messages=st.lists(st.lists(st.binary(max_size=300), min_size=1, max_size=4), max_size=12),
    limit=st.integers(1, 20),
)
def test_zmq_drain_reads_what_pyzmq_reads(pair, messages, limit):
    a, b = pair
    for m in messages:
        a.send_multipart(m)
    got: list[list[bytes]] = []
    for _ in range(len(messages) + 2):
        # (inproc delivers at once: every message sent is there before the first read)
        batch, status = NATIVE.zmq_drain(b.underlying, limit)
        got += batch
        assert status in (0, 1) and len(batch) <= limit
        assert status == 1 if len(batch) == limit else status == 0
        if status == 0:
            break
    assert got == messages
    assert not b.getsockopt(zmq.EVENTS) & zmq.POLLIN  # read empty: the edge is re-armed


def test_zmq_drain_reports_a_failed_read(pair):
    """A socket that cannot receive (a PUB) fails its read: the errno comes back, nothing raised."""
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    try:
        msgs, status = NATIVE.zmq_drain(pub.underlying, 5)
        assert msgs == [] and status == zmq.ENOTSUP
    finally:
        pub.close(linger=0)
        ctx.term()


# ------------------------------------------------------------------ the SUB reader thread


def _take_until(reader, want: int, timeout: float = 5.0) -> tuple[list, int]:
    """What the reader hands over until `want` messages were taken or lost (polled with a bound)."""
    taken: list = []
    lost = 0
    deadline = time.monotonic() + timeout
    while len(taken) + lost < want and time.monotonic() < deadline:
        got = NATIVE.reader_take(reader)
        if got is None:
            time.sleep(0.001)
            continue
        messages, n, err = got
        assert err == 0
        taken += messages
        lost += n
    return taken, lost


def test_sub_reader_hands_over_every_message_and_counts_what_its_ring_lost():
    ctx = zmq.Context()
    pub, sub = ctx.socket(zmq.PUB), ctx.socket(zmq.SUB)
    try:
        pub.bind("inproc://sub-reader")
        sub.setsockopt(zmq.SUBSCRIBE, b"t")
        sub.connect("inproc://sub-reader")
        reader = NATIVE.sub_reader(sub, sub.underlying)
        assert reader is not None and NATIVE.reader_take(reader) is None
        sent = [[b"t", bytes([i]) * i] for i in range(5)] + [[b"t"], [b"t", b"", b"x"]]
        deadline = time.monotonic() + 5.0  # the subscription reaches the PUB asynchronously
        while time.monotonic() < deadline:
            pub.send_multipart([b"t", b"hello"])
            if _take_until(reader, 1, 0.05)[0]:
                break
        while NATIVE.reader_take(reader) is not None:
            pass
        for m in sent:
            pub.send_multipart(m)
        pub.send_multipart([b"other", b"filtered"])
        taken, lost = _take_until(reader, len(sent))
        assert (taken, lost) == (sent, 0)
        for i in range(200):  # faster than the test takes them: the ring keeps the newest
            pub.send_multipart([b"t", struct.pack("<H", i)])
        taken, lost = _take_until(reader, 200)
        assert len(taken) + lost == 200 and taken[-1] == [b"t", struct.pack("<H", 199)]
        assert [struct.unpack("<H", m[1])[0] for m in taken] == sorted(struct.unpack("<H", m[1])[0] for m in taken)
        NATIVE.reader_stop(reader)
        NATIVE.reader_stop(reader)  # (idempotent: close may come twice)
        pub.send_multipart([b"t", b"after"])  # the socket is ours again: read here, not by the thread
        assert sub.poll(5000) and sub.recv_multipart(zmq.NOBLOCK) == [b"t", b"after"]
    finally:
        sub.close(linger=0)
        pub.close(linger=0)
        ctx.term()


def test_a_client_dropped_unclosed_stops_its_reader_first():
    """Garbage in a reference cycle: the reader's finalizer stops the thread before the context's
    own finalizer closes every socket (the thread's SUB too); nothing listens at the ports."""
    from headcast.netcode.netsync.localserver import free_port

    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # (the unclosed context, on purpose)
            c = transport.NetSyncClient("127.0.0.1", free_port(), free_port(), "r", "d", sub_thread=True)
            assert c.filenos() == c.filenos()[:1]  # the SUB's descriptor is the thread's
            c.cycle = c  # type: ignore[attr-defined]
            del c
            gc.collect()
    c = transport.NetSyncClient("127.0.0.1", free_port(), free_port(), "r", "d", sub_thread=True)
    c.close()
    c.close()
