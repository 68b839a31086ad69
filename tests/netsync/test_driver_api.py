"""The NetSync core and transport on netcode/driver.py's one API: the core is a `driver.Core`, the
transport a `driver.Transport`; the join state machine is one table. The core is driven with
bytes and an injected clock; the transport against a real styly-netsync-server (the current
release), through `driver.drive`."""

from __future__ import annotations

import time

import pytest

from headcast.netcode import driver
from headcast.netcode.netsync.client import (
    HELLO_PERIOD,
    LANE_CONTROL,
    LANE_ROOM,
    LANE_TRANSFORM,
    MISMATCH_PROBE_AFTER,
    TRANSITIONS,
    Incoming,
    NetSyncClientCore,
    Outgoing,
    State,
)
from headcast.netcode.netsync.codec import (
    decode_client_hello,
    decode_client_pose,
    encode_body,
    encode_device_id_mapping,
    encode_room_pose,
)
from headcast.netcode.netsync.errors import NetSyncError, NoAnswerError, ServerProtocolError
from headcast.netcode.netsync.events import Joined, MembersChanged, OwnPose, PeerPose, ProtocolDetected, ServerSilent
from headcast.netcode.netsync.model import DeviceMapping, PoseFrame, Transform
from headcast.netcode.netsync.transport import NetSyncClient

ROOM = b"lobby"
STILL = PoseFrame.build(Transform((0.0, 1.6, 0.0)))


def mapping(version, *entries: tuple[int, str]) -> Incoming:
    payload = encode_device_id_mapping(version, [DeviceMapping(n, d, False) for n, d in entries])
    return Incoming(LANE_CONTROL, [ROOM, payload])


def room(*client_nos: int, protocol: int = 8) -> Incoming:
    body = encode_body(3, STILL, protocol)
    return Incoming(LANE_ROOM, [ROOM, encode_room_pose("lobby", 9.0, [(n, 8.5, body) for n in client_nos], protocol)])


def drain(core) -> list:
    out = []
    while (e := core.next_event()) is not None:
        out.append(e)
    return out


def test_the_core_is_a_driver_core_and_behaves_as_one():
    core = NetSyncClientCore("lobby", "me", protocol=8)
    assert isinstance(core, driver.Core)
    assert core.state is State.IDLE and core.get_timer() is None and core.next_event() is None
    core.connect(10.0)
    assert core.state is State.JOINING
    assert core.get_timer() <= 10.0  # the first hello is due at once
    core.set_pose(STILL)
    out = core.datagrams_to_send(10.0)
    assert [(o.lane, o.kind) for o in out] == [(LANE_TRANSFORM, "pose"), (LANE_CONTROL, "hello")]
    assert all(isinstance(o, Outgoing) and o.frames[0] == ROOM for o in out)
    assert decode_client_pose(out[0].frames[1]).body.pose_seq == core.pose_seq == 1
    assert decode_client_hello(out[1].frames[1]).device_id == "me"
    assert core.datagrams_to_send(10.05) == []  # the pose is offered once per set_pose
    assert core.get_timer() == pytest.approx(10.0 + HELLO_PERIOD)
    core.receive_datagram(mapping((0, 17, 5), (4, "me")), 10.1)
    assert core.state is State.JOINED and core.client_no == 4
    assert [type(e) for e in drain(core)] == [MembersChanged, Joined]
    core.receive_datagram(room(4, 5), 10.2)
    assert [type(e) for e in drain(core)] == [OwnPose, PeerPose]
    # the counters read as a mapping of ints, as driver.Core promises
    assert core.counters["sends"] == 1 and core.counters["hellos"] == 1 and core.counters["room_poses"] == 1
    assert dict(core.counters)["mappings"] == 1
    # silence: a deadline silence_timeout s after the last message, reported once
    core.handle_timer(13.19)
    assert drain(core) == [] and core.get_timer() == pytest.approx(min(13.2, 11.0))
    core.handle_timer(13.2)
    assert drain(core) == [ServerSilent(pytest.approx(3.0))] and core.silent
    core.close(14.0)
    assert core.state is State.CLOSED and core.get_timer() is None
    core.set_pose(STILL)
    assert core.datagrams_to_send(14.0) == []
    core.receive_datagram(room(4, 5), 14.1)
    assert drain(core) == []


def test_poses_go_on_the_control_lane_before_protocol_7():
    core = NetSyncClientCore("lobby", "me", protocol=6)
    core.connect(0.0)
    core.set_pose(STILL)
    (out,) = core.datagrams_to_send(0.0)
    assert (out.lane, out.kind) == (LANE_CONTROL, "pose")
    # no hello before 7: only the silence deadline and, unmapped, the mismatch probe's start
    assert core.get_timer() == pytest.approx(min(3.0, MISMATCH_PROBE_AFTER))


def test_a_load_client_counts_rooms_and_late_mappings_without_decoding_them():
    core = NetSyncClientCore("lobby", "me", protocol=8, observe=False, mismatch_probes=False)
    core.connect(0.0)
    assert core.get_timer() == pytest.approx(0.0)  # the hello; never a mismatch probe
    core.receive_datagram(mapping((0, 17, 5), (1, "me")), 0.1)  # decoded: our number
    assert core.client_no == 1
    drain(core)
    core.receive_datagram(room(1, 2), 0.2)
    core.receive_datagram(mapping((0, 17, 5), (1, "me"), (2, "peer")), 0.3)
    assert drain(core) == [] and core.counters.room_poses == 1 and core.counters.mappings == 2
    assert core.members.keys() == {1}  # the second mapping was counted, not read
    assert not any(o.kind == "probe" for t in (1.0, 2.5, 5.0) for o in core.datagrams_to_send(t))


def test_the_join_state_machine_is_one_table():
    """Every state is reached through TRANSITIONS and every reachable pair is exercised by a core."""
    reachable = {State.IDLE}
    changed = True
    while changed:
        changed = False
        for (src, _), dst in TRANSITIONS.items():
            if src in reachable and dst not in reachable:
                reachable.add(dst)
                changed = True
    assert reachable == set(State)
    assert all((s, "close") in TRANSITIONS for s in State if s is not State.CLOSED)
    assert not [k for k in TRANSITIONS if k[0] is State.CLOSED]  # closed is final
    # detecting → joining → joined → joining (a mapping without us) → joined
    core = NetSyncClientCore("lobby", "me", protocol=None)
    core.connect(0.0)
    assert core.state is State.DETECTING
    core.receive_datagram(room(9, protocol=7), 0.1)
    assert core.state is State.JOINING and any(isinstance(e, ProtocolDetected) for e in drain(core))
    core.receive_datagram(mapping((0, 15, 0), (1, "me")), 0.2)
    assert core.state is State.JOINED
    core.receive_datagram(mapping((0, 15, 0), (2, "peer")), 0.3)
    assert core.state is State.JOINING and core.client_no is None
    core.receive_datagram(mapping((0, 15, 0), (3, "me")), 0.4)
    assert core.state is State.JOINED and core.client_no == 3
    # joining → mismatch: a broadcast in another protocol before any mapping
    other = NetSyncClientCore("lobby", "me", protocol=3)
    other.connect(0.0)
    other.receive_datagram(room(9, protocol=8), 0.1)
    assert other.state is State.MISMATCH and other.mismatch is not None


def test_one_error_root():
    from headcast.netcode.netsync import codec, localserver, releases

    for cls in (
        codec.NetSyncDecodeError,
        codec.TruncatedError,
        codec.PoseEncodeError,
        NoAnswerError,
        ServerProtocolError,
        localserver.ServerStartError,
        releases.ReleaseInstallError,
    ):
        assert issubclass(cls, NetSyncError), cls
    assert issubclass(codec.NetSyncDecodeError, ValueError) and issubclass(NoAnswerError, TimeoutError)


@pytest.mark.live
def test_the_transport_is_a_driver_transport_joined_by_drive(netsync_server):
    """`driver.drive` alone (a selector on the ZMQ_FDs and the deadlines) joins a real server,
    sends poses, and the metrics hook counts both ways."""
    a = netsync_server.address
    counted: dict[str, int] = {}

    def metrics(name: str, n: int) -> None:
        counted[name] = counted.get(name, 0) + n

    with NetSyncClient(a.host, a.dealer_port, a.pub_port, "lobby", "drive-me", metrics=metrics) as c:
        assert isinstance(c, driver.Transport)
        assert len(c.filenos()) == 2 and c.next_deadline() == 0.0  # starts at the first call, on its clock
        seen: list = []
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not any(isinstance(e, OwnPose) for e in seen):
            c.send_pose(time.monotonic(), PoseFrame.build(Transform((0.0, 1.6, time.monotonic() % 1.0))))
            driver.drive([c], time.monotonic() + 0.1, on_event=lambda t, e: seen.append(e))
        assert any(isinstance(e, Joined) for e in seen), (seen, dict(c.counters))
        assert any(isinstance(e, OwnPose) for e in seen), dict(c.counters)
    assert counted["sent_datagrams"] >= 2 and counted["sent_bytes"] > 0
    assert counted["received_datagrams"] >= 2 and counted["received_bytes"] == c.counters.bytes_received
    assert counted["room_broadcasts"] >= 1
    assert c.filenos() == () and c.next_deadline() is None


@pytest.mark.live
@pytest.mark.parametrize("path", ["c-drain", "pyzmq", "sub-thread"])
def test_every_read_path_counts_each_message_once(netsync_server, monkeypatch, path):
    """The three reads (the C extension's drain, pyzmq's recv, the C thread that owns the SUB)
    hand each message to the core and the metrics hook alike: the bytes counted are the core's
    own count, every room broadcast is counted once and is one received datagram."""
    from headcast.netcode.netsync import transport

    if path == "pyzmq":
        monkeypatch.setattr(transport, "NATIVE_READS", None)  # (read at construction)
    elif transport.NATIVE_READS is None or (path == "sub-thread" and transport._NATIVE_SUB is None):
        pytest.skip("the C extension is not built here (HEADCAST_PURE_PYTHON=1 or no compiler)")
    a = netsync_server.address
    counted: dict[str, int] = {}

    def metrics(name: str, n: int) -> None:
        counted[name] = counted.get(name, 0) + n

    with NetSyncClient(
        a.host, a.dealer_port, a.pub_port, "lobby", f"paths-{path}", metrics=metrics, sub_thread=path == "sub-thread"
    ) as c:
        assert (c._zdrain is None) == (path == "pyzmq") and (c._reader is not None) == (path == "sub-thread")
        owns = 0
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and owns < 3:
            now = time.monotonic()
            c.send_pose(now, PoseFrame.build(Transform((0.0, 1.6, now % 1.0))))
            owns += sum(isinstance(e, OwnPose) for e in c.poll(now))
            time.sleep(0.02)
        assert owns >= 3, (path, dict(c.counters))
        assert counted["received_bytes"] == c.counters.bytes_received > 0
        # each broadcast carried our own pose; the mapping that let us in came on the control lane
        assert counted["room_broadcasts"] >= owns and c.counters.mappings >= 1
        assert counted["received_datagrams"] >= counted["room_broadcasts"] + c.counters.mappings


@pytest.mark.live
def test_clients_share_a_context_and_close_without_ending_it(netsync_server):
    import zmq

    a = netsync_server.address
    ctx = zmq.Context(io_threads=1)
    try:
        clients = [
            NetSyncClient(a.host, a.dealer_port, a.pub_port, "lobby", f"shared-{i}", context=ctx) for i in range(3)
        ]
        try:
            frame = PoseFrame.build(Transform((0.0, 1.6, 0.0)))
            for c in clients:
                c.join(frame, timeout=10.0)
            assert len({c.client_no for c in clients}) == 3
        finally:
            for c in clients:
                c.close()
        assert not ctx.closed  # not ours to end
    finally:
        ctx.term()
