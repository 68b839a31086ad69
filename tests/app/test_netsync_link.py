"""NetSyncLink: against the real styly-netsync-server releases (the current one, protocol 8, and
0.10.4, protocol 3) it detects the protocol and gets our own body back from OwnPose; a server in
another protocol is a named mismatch, and dropped room poses are counted and shown by reason."""

from __future__ import annotations

import math
import time

import pytest

from headcast.app.errors import UsageError
from headcast.app.sinks.netsync.link import NetSyncLink, drop_text, parse_address, parse_protocol
from headcast.app.sinks.netsync.sink import NetSyncSink
from headcast.netcode.netsync.client import LANE_ROOM, Incoming, version_text
from headcast.netcode.netsync.codec import decode_client_pose, encode_body, encode_room_pose
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.releases import parse_version
from headcast.netcode.netsync.transport import NetSyncClient

from support import free_port, wait_for


def frame_at(t: float) -> PoseFrame:
    head = Transform((0.4 * math.sin(t), 1.6, 0.4 * math.cos(t)), (0.0, math.sin(t / 3), 0.0, math.cos(t / 3)))
    return PoseFrame.build(head, Transform((0.3, 1.2, 0.1)), delta=OriginDelta(0.5, -0.25, 45.0))


@pytest.mark.live
def test_auto_detects_and_own_body_comes_from_our_broadcast_entry(netsync_release):
    a = netsync_release.address
    link = NetSyncLink(a.host, a.dealer_port, a.pub_port, "link-own", "link-me", 10.0, False)  # protocol auto
    viewer = NetSyncClient(a.host, a.dealer_port, a.pub_port, "link-own", "link-viewer", protocol=None, stealth=True)
    sent: dict[int, bytes] = {}
    orig = link.client.core.datagrams_to_send

    def record(now):
        out = orig(now)
        for o in out:
            if o.kind == "pose":
                sent[decode_client_pose(o.frames[1]).body.pose_seq] = o.frames[1]
        return out

    link.client.core.datagrams_to_send = record
    pose_now = link.client.core.pose_now  # the transport's one call when only the pose is due

    def record_pose(now, frame):
        msg = pose_now(now, frame)
        if msg:
            sent[decode_client_pose(msg).body.pose_seq] = msg
        return msg

    link.client.core.pose_now = record_pose
    bodies = []

    def step():
        now = time.perf_counter()
        link.send(frame_at(now), now)
        link.poll(now)
        viewer.send_pose(now, PoseFrame.build(None, stealth=True))
        viewer.poll(now)
        if link.own_body is not None and (not bodies or bodies[-1] is not link.own_body):
            bodies.append(link.own_body)
        return len({b.pose_seq for b in bodies}) >= 4 and len(viewer.core.members) >= 2

    try:
        wait_for(step, 20, "four of our relayed bodies at the link", interval=0.01)
        assert link.state == "connected" and link.joined
        assert link.protocol == link.model_protocol == a.protocol
        assert f"protocol {a.protocol}, server {a.version}" in link.detail, link.detail
        assert link.mismatch is None and link.drops == {}
        # the own body is exactly what we sent under that poseSeq, as the server relayed it
        for b in bodies:
            assert b == decode_client_pose(sent[b.pose_seq]).body
        assert link.others == {}  # we are not our own peer (the stealth viewer is never broadcast)
        # the room holds our client and the viewer only: no observer member any more
        assert {m.device_id for m in viewer.core.members.values()} == {"link-me", "link-viewer"}
    finally:
        link.close()
        viewer.close()
    assert link.client.closed


@pytest.mark.live
def test_a_set_protocol_the_server_does_not_speak_is_a_named_mismatch(netsync_release):
    a = netsync_release.address
    wrong = 3 if a.protocol == 8 else 8
    link = NetSyncLink(a.host, a.dealer_port, a.pub_port, "link-wrong", "link-wrong", 10.0, False, protocol=wrong)
    sink = NetSyncSink(link=link)
    try:

        def mismatch():
            now = time.perf_counter()
            link.send(frame_at(now), now)
            link.poll(now)
            return link.mismatch

        m = wait_for(mismatch, 10, "the mismatch to be named", interval=0.01)
        st = sink.status(time.perf_counter())
    finally:
        link.close()
    assert (m.ours, m.server_protocol) == (wrong, a.protocol)
    # by version when the mapping came first, by the protocol's releases when the broadcast did
    server = version_text(parse_version(a.version) if m.server_version else None, a.protocol)
    assert m.message == (
        f"server ({server}) speaks NetSync protocol {a.protocol}; "
        f"headcast spoke {wrong}: use --netsync-protocol auto (or {a.protocol})"
    )
    assert st.state == "protocol mismatch" and st.detail.startswith(m.message)
    assert not link.joined
    assert str(link.failure) == f"netsync: {m.message}" and link.failure.exit_code == 4
    assert sink.status(time.perf_counter()).state == "disconnected"  # after close: says so


def test_dropped_room_poses_are_counted_and_shown_with_their_reason():
    """Room broadcasts in protocol 8 reaching a link told to speak 3: each is dropped and counted;
    the status (HUD, console, summary) says how many and why, and the first names the mismatch."""
    port = free_port()
    link = NetSyncLink("127.0.0.1", port, port + 1, "room", "me", 10.0, False, protocol=3)
    sink = NetSyncSink(link=link)
    core = link.client.core
    body = encode_body(7, frame_at(1.0), 8)
    try:
        for i in range(12):
            room = encode_room_pose("room", 0.0, [(1, 0.0, body)], protocol=8)
            core.receive_datagram(Incoming(LANE_ROOM, [b"room", room]), float(i))
        core.receive_datagram(Incoming(LANE_ROOM, [b"room", b"\x0c\x03\x04ro"]), 12.0)  # protocol 3, cut short
        link.poll(12.0)
        st = sink.status(12.0)
    finally:
        link.close()
    assert link.drops == {"room pose: protocol 8": 12, "room pose: TruncatedError": 1}
    assert st.drops == link.drops and st.as_dict()["drops"] == link.drops
    assert st.state == "protocol mismatch"
    assert "speaks NetSync protocol 8; headcast spoke 3" in st.detail
    assert "dropped 12 room poses: protocol 8; dropped 1 room pose: TruncatedError" in st.detail


def test_drop_reasons_read_as_sentences():
    assert drop_text("room pose: protocol 3", 12) == "dropped 12 room poses: protocol 3"
    assert drop_text("mapping: TruncatedError", 1) == "dropped 1 device-ID mapping: TruncatedError"
    assert drop_text("broadcast: frames", 2) == "dropped 2 broadcast messages: frames"


def test_addresses_and_protocols_parse_or_say_why():
    assert parse_address("h") == ("h", 5555, 5556, None)
    assert parse_address("h:6000") == ("h", 6000, 6001, None)
    assert parse_address("h:6000:7000:8000") == ("h", 6000, 7000, 8000)
    assert parse_protocol("auto") is None and parse_protocol("AUTO") is None
    assert [parse_protocol(str(p)) for p in range(3, 9)] == list(range(3, 9))
    for bad in ("2", "9", "latest", ""):
        with pytest.raises(UsageError, match="expected auto or a NetSync protocol 3..8"):
            parse_protocol(bad)
    for bad in ("h:1:2:3:4", ":1", "h:x", "h:0"):
        with pytest.raises(UsageError, match="--netsync"):
            parse_address(bad)


def test_the_transform_port_defaults_to_control_plus_two():
    port = free_port()
    link = NetSyncLink("127.0.0.1", port, port + 1, "room", "me", 10.0, False)
    try:
        assert link.transform_port == link.client.transform_port == port + 2
        assert link.protocol is None and link.model_protocol == 8  # detecting: the model speaks the latest
    finally:
        link.close()
    link = NetSyncLink("127.0.0.1", port, port + 1, "room", "me", 10.0, False, protocol=7, transform_port=port + 9)
    try:
        assert link.client.transform_port == port + 9 and link.protocol == 7
    finally:
        link.close()


def test_other_players_stay_bounded_whatever_client_numbers_the_server_sends():
    """A server's rooms name 65,536 distinct client numbers: the link keeps at most MAX_PEERS
    other players, the latest heard (issue 27, bounded memory)."""
    from headcast.app.sinks.netsync.link import MAX_PEERS

    port = free_port()
    link = NetSyncLink("127.0.0.1", port, port + 1, "room", "me", 10.0, False, protocol=3)
    core = link.client.core
    body = encode_body(7, frame_at(1.0), 3)
    core.client_no = 0  # as after the server's mapping named us: entry 0 is our own pose
    try:
        for r in range(256):
            entries = [(r * 256 + i, 0.0, body) for i in range(256)]
            now = 1.0 + r * 0.05  # a broadcast every 50 ms, each read at once
            core.receive_datagram(
                Incoming(LANE_ROOM, [b"room", encode_room_pose("room", 0.0, entries, protocol=3)]), now
            )
            link.poll(now)
    finally:
        link.close()
    assert 0 < len(link.others) <= MAX_PEERS
    assert max(link.others) == 65535


@pytest.mark.live
def test_a_still_head_costs_the_sink_one_test_and_sends_what_the_policy_sends(netsync_server):
    """A still headset (the same stage poses frame after frame) gives the same PoseFrame, which the
    send policy refuses as unchanged until its 1 s heartbeat: the sink answers those frames itself,
    without calling the link, and counts them as the policy does. What goes out is exactly what the
    policy decides for the same frames (replayed through a bare SendPolicy: the same poseSeqs at the
    same times, the same bytes), the heartbeat included, and the first frame that moves again goes
    out at once."""
    from headcast.app.run.rig import Rig
    from headcast.netcode.netsync.codec import encode_body_tail
    from headcast.netcode.netsync.policy import HEARTBEAT_S, SendPolicy
    from headcast.xr.frame import Pose, TrackingFrame

    a = netsync_server.address
    link = NetSyncLink(a.host, a.dealer_port, a.pub_port, "link-still", "link-still", 10.0, False)
    sink = NetSyncSink(link=link)
    rig = Rig()
    calls = []
    link_send = link.send
    link.send = lambda pf, now: calls.append(now) or link_send(pf, now)
    sent: list[tuple[float, bytes]] = []  # (the sink's now, the message) of every pose that went out
    offered: list[tuple[float, object]] = []  # (now, PoseFrame built) of every call to the sink's send
    # A pose goes out by either of the transport's paths: pose_now (only the pose due) or, when a
    # hello or another control message is due on the same frame, set_pose + datagrams_to_send.
    pose_now = link.client.core.pose_now
    to_send = link.client.core.datagrams_to_send

    def record(now, f):
        msg = pose_now(now, f)
        if msg:
            sent.append((now, msg))
        return msg

    def record_flushed(now):
        out = to_send(now)
        sent.extend((now, o.frames[1]) for o in out if o.kind == "pose")
        return out

    link.client.core.pose_now = record
    link.client.core.datagrams_to_send = record_flushed

    def tracking(yaw: float) -> TrackingFrame:
        q = (0.0, math.sin(math.radians(yaw) / 2), 0.0, math.cos(math.radians(yaw) / 2))
        head = Pose((0.1, 1.6, -0.2), q, True, True, True, True)
        hand = Pose((0.2, 1.2, -0.3), (0.0, 0.0, 0.0, 1.0), True, True, True, True)
        return TrackingFrame(0, 0, head, hand, hand, hand, hand)

    def step(yaw: float) -> None:
        now = time.perf_counter()
        f = tracking(yaw)  # new Pose objects each frame, as the runtime gives them
        state = rig.update(f, 0.0)
        if now >= sink.send_at:
            sink.send(state, f, now)
            if sink.frame is not None:  # (under the rate cap the policy refuses whatever the frame)
                offered.append((now, sink.frame))
        link.poll(now)
        time.sleep(1 / 90)

    try:
        wait_for(lambda: step(time.perf_counter() * 30.0) or link.joined, 20, "the server to map us", interval=0)
        moving_until = time.perf_counter() + 0.5
        while time.perf_counter() < moving_until:
            step(time.perf_counter() * 30.0)
        sent.clear(), calls.clear(), offered.clear()
        skipped = link.skipped["unchanged"]
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 2.5:  # still: 2.5 s of the same pose
            step(10.0)
        still_calls, still_sent = len(calls), len(sent)
        still_skips = link.skipped["unchanged"] - skipped
        moved_at, send_at, last = time.perf_counter(), sink.send_at, sink._last_send
        step(20.0)  # it moves: out at once (the last send was >= 1 s ago)
        # what the sink and the link knew at the moving frame, should it not go out
        why = (
            moved_at - t0,
            send_at - t0,
            None if last is None else last - t0,
            link.state,
            link.detail,
            dict(link.skipped),
            [c - t0 for c in calls[-2:]],
            sink._sent_pf is sink.frame,
        )
    finally:
        link.close()
    # the first still frame goes out (it differs from the moving one before), then the heartbeats
    assert 3 <= still_sent <= 4, [round(t - t0, 3) for t, _ in sent]
    assert still_calls == still_sent  # no call to the link for a frame the policy would refuse
    assert still_skips >= 150  # ~90 frames a second less the sends: answered and counted by the sink
    times = [t for t, _ in sent]
    beats = times[:still_sent]
    assert all(HEARTBEAT_S <= b - a < HEARTBEAT_S + 0.1 for a, b in zip(beats, beats[1:])), beats
    assert len(sent) == still_sent + 1 and calls[-1] == times[-1], why  # the moving frame went out
    # What went out is what the bare policy sends for the same frames at the same times
    policy = SendPolicy(10.0)
    policy.pose_seq = decode_client_pose(sent[0][1]).body.pose_seq - 1
    replay = []
    for now, pf in offered:
        tail = encode_body_tail(pf, link.protocol)
        seq = policy.decide(now, tail)
        if seq is not None:
            replay.append((now, seq, tail))
    got = [(t, decode_client_pose(m).body.pose_seq, m[-len(tail) :]) for (t, m), (_, _, tail) in zip(sent, replay)]
    assert got == replay and len(replay) == len(sent)
    # The sink keeps each message as sent; its body (what the relayed bytes are checked against) is
    # byte for byte the body encoded again from the frame under that poseSeq
    kept = [s for s in sink._sent if s is not None]
    assert len(kept) >= len(sent)
    for seq, pf, _, _, msg, size, _ in kept:
        assert msg[len(msg) - size :] == encode_body(seq, pf, link.protocol)


@pytest.mark.live
def test_polls_run_the_timers_only_when_one_is_due(netsync_release):
    """The link is polled ~30 times a second, but its core's timers (the protocol-7+ hello once a
    second, probes, the 3 s silence) are seconds apart: a poll runs them (handle_timer, then what is
    due to send) only once the driver's deadline has come, or after the core was handed something
    that may move it. The hellos still go out once a second (protocol 8), the room is still read and
    our poses still relayed, against the current release and the protocol-3 one."""
    a = netsync_release.address
    link = NetSyncLink(a.host, a.dealer_port, a.pub_port, "link-timers", "link-timers", 10.0, False)
    core = link.client.core
    timers = []
    handle_timer = core.handle_timer
    core.handle_timer = lambda now: timers.append(now) or handle_timer(now)
    polls = 0

    def step() -> None:
        nonlocal polls
        now = time.perf_counter()
        link.send(frame_at(now), now)
        if now >= link.next_poll:
            link.poll(now)
            polls += 1
        time.sleep(1 / 90)

    try:
        wait_for(lambda: step() or (link.joined and link.own_body is not None), 20, "our body relayed", interval=0)
        timers.clear()
        polls, hellos, rooms = 0, core.counters.hellos, core.counters.room_poses
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 3.0:
            step()
        took = time.perf_counter() - t0
        assert link.state == "connected"
    finally:
        link.close()
    assert polls >= 15 * took  # (polled every 1/30 s: ~90 in 3 s on a quiet machine)
    assert len(timers) <= took + 2, (len(timers), polls)  # the hello's second, not every poll
    assert core.counters.room_poses - rooms >= 5 * took  # the room's ~10 broadcasts a second read
    if a.protocol >= 7:
        assert took - 1.5 <= core.counters.hellos - hellos <= took + 1.5  # still one a second
    else:
        assert core.counters.hellos == hellos == 0


@pytest.mark.live
def test_relayed_bodies_are_checked_together_when_the_check_is_read(netsync_server):
    """The sink's check of each relayed body against what was sent under its poseSeq waits until
    something reads it (`check`, `matched`, `relay_ms`, the status line, the mirror, close) or
    VERIFY_BATCH bodies wait: no poll checks one alone. Read, every body read so far is checked,
    in order (the last one read is `matched`)."""
    from headcast.app.run.rig import Rig
    from headcast.app.sinks.netsync.sink import VERIFY_BATCH
    from headcast.xr.frame import Pose, TrackingFrame

    a = netsync_server.address
    link = NetSyncLink(a.host, a.dealer_port, a.pub_port, "link-verify", "link-verify", 10.0, False)
    sink = NetSyncSink(link=link)
    rig = Rig()
    checked = []
    verify = sink._verify
    sink._verify = lambda body, *rest: checked.append(body.pose_seq) or verify(body, *rest)
    bodies = []
    unchecked_polls = 0

    def step() -> None:
        nonlocal unchecked_polls
        now = time.perf_counter()
        yaw = math.radians(now * 30.0)
        head = Pose((0.1, 1.6, -0.2), (0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2)), True, True, True, True)
        hand = Pose((0.2, 1.2, -0.3), (0.0, 0.0, 0.0, 1.0), True, True, True, True)
        f = TrackingFrame(0, 0, head, hand, hand, hand, hand)
        state = rig.update(f, 0.0)
        if now >= sink.send_at:
            sink.send(state, f, now)
        if now >= sink.poll_at:
            n = len(checked)
            sink.poll(now)
            seen = sink._seen
            if seen is not None and (not bodies or bodies[-1] is not seen):
                bodies.append(seen)
                if len(checked) == n:
                    unchecked_polls += 1
        time.sleep(1 / 90)

    try:
        wait_for(lambda: step() or len(bodies) >= VERIFY_BATCH - 1, 20, "our bodies relayed", interval=0)
        assert checked == []  # read, none checked yet: nothing read the check
        n = len(bodies)
        c = sink.check
        assert checked == [b.pose_seq for b in bodies[:n]] and c.matched == n and c.mismatched == 0
        assert sink.matched is not None and sink.matched[1] is bodies[n - 1] and sink.relay_ms is not None
        wait_for(lambda: step() or len(bodies) >= n + VERIFY_BATCH, 20, "a batch of bodies relayed", interval=0)
        assert len(checked) >= n + VERIFY_BATCH  # the batch bound checked them unasked
    finally:
        sink.close()
    assert checked == [b.pose_seq for b in bodies] and sink.check.matched == len(bodies)
    assert unchecked_polls == len(bodies) - 1  # only the poll that filled the batch checked (it, and those before)
