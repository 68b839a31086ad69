"""End to end: mock OpenXR runtime (real loader, pyopenxr) → rig → sinks → REAL local servers.

The Quake 3 server is ioq3ded with the OpenArena data (vanilla: 16-bit buttons), the NetSync
server the current styly-netsync-server release (0.17.5, protocol 8, detected by the link: the
configuration's default `auto`); both on 127.0.0.1, free ports. (0.10.4, protocol 3, is run
through the CLI in test_cli.py and test_netsync_link.py.) What the far
side sees is read back from the servers themselves: our playerState from the Q3 snapshots and
our body from the NetSync room broadcast (our own entry, as every member receives it).
"""

from __future__ import annotations

import math
import time

import pytest

from headcast.app.commands import run as commands
from headcast.app.commands.demo import NS_PHYS_TOL, NS_POS_TOL, NS_ROT_TOL, Q3_HEAD_TOL, Q3_VIEW_TOL
from headcast.app.run import config
from headcast.app.run.loop import FrameLoop
from headcast.app.run.telemetry import Telemetry
from headcast.netcode.netsync.model import FLAG_HEAD
from headcast.netcode.netsync.origin import unity_yaw
from headcast.netcode.pose import angle_subtract
from headcast.xr.session import XRSession

pytestmark = pytest.mark.live

LEAD_IN = 4.0  # seconds still at the start, so both servers have let us in before anything moves


def motion(lines: str, head_pos: str = "0 1.6 0") -> str:
    """A motion file whose keyframe times are shifted by the still lead-in."""
    out = [
        "timebase seconds",
        f"0.0 /user/head pos {head_pos}",
        "0.0 /user/head ypr 0 0 0",
        "0.0 /user/hand/right/input/aim/pose ypr 0 0 0",
        "0.0 /user/hand/right/input/thumbstick 0 0",
        "0.0 /user/head flags all",
    ]
    for line in lines.strip().splitlines():
        t, rest = line.split(maxsplit=1)
        out.append(f"{float(t) + LEAD_IN:.3f} {rest}")
    return "\n".join(out) + "\n"


# Weapon and head sweep apart, HOLD at each extreme, then back. The holds make the extremes
# exact: the far side samples us at its own rates (NetSync: 10 Hz sends, ≤ 10 Hz broadcasts;
# Q3: 20 snapshots/s), so a peak passed through without a hold is seen up to
# rate × sample gap below it, and a scheduling stall on a busy machine widens the gap further.
# A hold of 0.5 s (≥ 5 NetSync samples, 10 snapshots) is seen as is, within quantisation.
HEAD_YAW, HEAD_PITCH, AIM_YAW = 50.0, 30.0, 40.0
SWEEP = motion(f"""
0.0 /user/head ypr 0 0 0
0.0 /user/hand/right/input/aim/pose ypr 0 0 0
1.0 /user/head ypr {HEAD_YAW} -{HEAD_PITCH} 0
1.0 /user/hand/right/input/aim/pose ypr {AIM_YAW} 20 0
1.5 /user/head ypr {HEAD_YAW} -{HEAD_PITCH} 0
1.5 /user/hand/right/input/aim/pose ypr {AIM_YAW} 20 0
2.5 /user/head ypr -{HEAD_YAW} {HEAD_PITCH} 0
2.5 /user/hand/right/input/aim/pose ypr -{AIM_YAW} -20 0
3.0 /user/head ypr -{HEAD_YAW} {HEAD_PITCH} 0
3.0 /user/hand/right/input/aim/pose ypr -{AIM_YAW} -20 0
4.0 /user/head ypr 0 0 0
4.0 /user/hand/right/input/aim/pose ypr 0 0 0
""")
SWEEP_END = 4.3
# Unity's eulerAngles.y of a head pitched by θ moves by ≤ ε/cos θ for a rotation error ε.
NS_YAW_TOL = NS_ROT_TOL / math.cos(math.radians(HEAD_PITCH))
F32_POSE_TOL = 1e-3  # degrees: the runtime's float32 quaternions (~1e-7 rad ≈ 6e-6°), generously

# Right-stick flicks: right, right, left, left, then a long hold right (one snap only).
FLICKS = motion(
    "\n".join(
        f"{t0:.2f} /user/hand/right/input/thumbstick 0 0\n{t0 + 0.05:.2f} /user/hand/right/input/thumbstick {x} 0\n"
        f"{t0 + hold:.2f} /user/hand/right/input/thumbstick {x} 0\n"
        f"{t0 + hold + 0.05:.2f} /user/hand/right/input/thumbstick 0 0"
        for t0, x, hold in ((0.0, 1, 0.3), (0.7, 1, 0.3), (1.4, -1, 0.3), (2.1, -1, 0.3), (2.8, 0.9, 1.0))
    ),
    # Off the stage centre, so the Δ's rotation moves the reconstructed physical pose if it is wrong.
    head_pos="0.6 1.6 -0.4",
)
# The head turns slowly and loses all tracking for 1.5 s.
LOSS = motion("""
0.0 /user/head ypr 0 0 0
3.5 /user/head ypr 60 0 0
1.0 /user/head flags none
2.5 /user/head flags all
""")


def load(mock, tmp_path, text: str) -> None:
    path = tmp_path / "test.motion"
    path.write_text(text)
    mock.load_motion(path)


def run_until(loop, pred, timeout: float, what: str) -> None:
    """Step the loop until pred() holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        assert loop.step(), f"the loop stopped: {loop.stop_reason}"


def pipeline(netsync_server, q3_server, **flags):
    a = netsync_server.address
    host, port = q3_server.address
    cfg = config.load(
        env={"HOME": "/nonexistent"},
        flags={
            ("q3", "host"): f"{host}:{port}",
            ("netsync", "host"): f"{a.host}:{a.dealer_port}:{a.pub_port}",
            ("netsync", "room"): flags.pop("room"),
            ("netsync", "device_id"): flags.pop("device_id"),
            ("mirror", "enabled"): False,
            **flags,
        },
    )
    session = XRSession("headless")
    try:
        sinks = commands.make_sinks(cfg, time.perf_counter)
    except BaseException:
        session.close()
        raise
    return FrameLoop(session, commands.rig_from(cfg), sinks, Telemetry())


def connected(loop) -> bool:
    q3, ns = loop.sinks[0], loop.sinks[1]
    return q3.link.entered and ns.link.client_no is not None and ns.seen is not None


def test_weapon_and_head_follow_on_both_servers(mock, tmp_path, netsync_server, q3_server):
    load(mock, tmp_path, SWEEP)
    loop = pipeline(netsync_server, q3_server, room="e2e-follow", device_id="e2e-follow")
    q3, ns = loop.sinks[0], loop.sinks[1]
    server_yaw, relayed_yaw, decoded = [], [], []
    try:
        run_until(loop, lambda: connected(loop), 15, "both servers to take us in")
        assert loop.frame.seq < LEAD_IN * 90, "connecting took longer than the still lead-in"

        def sample() -> bool:
            if q3.far_head is not None:  # decoded as the mirror does each frame
                decoded.append(q3.far_head)
            if q3.link.view_angles is not None:
                server_yaw.append(q3.link.view_angles[1])
            if ns.seen is not None and ns.seen.head is not None:
                relayed_yaw.append(-unity_yaw(ns.seen.head.rot))  # back to OpenXR's +left
            return loop.frame.seq >= int((LEAD_IN + SWEEP_END) * 90)

        run_until(loop, sample, 15, "the sweep to finish")
    finally:
        loop.close()
    # Q3: the server ran our usercmds and its view equals the weapon to the angle quantum.
    assert q3.link.check.matched > 100
    assert q3.link.check.view_err_max <= Q3_VIEW_TOL
    want = AIM_YAW - Q3_VIEW_TOL - F32_POSE_TOL  # the held extremes, as the server's view
    assert max(server_yaw) >= want and min(server_yaw) <= -want, (min(server_yaw), max(server_yaw))
    # NetSync: the broadcast head follows the HMD within smallest-three quantisation.
    c = ns.check
    assert c.matched >= 25
    assert c.head_rot_max <= NS_ROT_TOL and c.head_pos_max <= NS_POS_TOL
    want = HEAD_YAW - NS_YAW_TOL - F32_POSE_TOL  # the held extremes, as the room broadcast carries them
    assert max(relayed_yaw) >= want and min(relayed_yaw) <= -want, (min(relayed_yaw), max(relayed_yaw))
    # The 7-bit head a VR receiver would decode from our buttons matches the head sent.
    assert len(decoded) > 100 and q3.head_quant_max <= Q3_HEAD_TOL


def test_snap_turns_move_dyaw_not_the_physical_pose(mock, tmp_path, netsync_server, q3_server):
    load(mock, tmp_path, FLICKS)
    loop = pipeline(netsync_server, q3_server, room="e2e-snap", device_id="e2e-snap")
    q3, ns = loop.sinks[0], loop.sinks[1]
    yaws: list[float] = []
    head_jumps: list[float] = []  # world head movement across each snap frame (metres)
    last_head = [None]
    try:
        run_until(loop, lambda: connected(loop), 15, "both servers to take us in")
        assert loop.frame.seq < LEAD_IN * 90, "connecting took longer than the still lead-in"

        def sample() -> bool:
            yaws.append(loop.state.origin.yaw)
            head = loop.state.head.position
            if loop.state.snapped and last_head[0] is not None:
                head_jumps.append(math.dist(head, last_head[0]))
            last_head[0] = head
            return loop.frame.seq >= int((LEAD_IN + 4.2) * 90)

        run_until(loop, sample, 20, "the snap-turn motion to finish")
        run_until(
            loop,
            lambda: ns.seen is not None and ns.seen.delta is not None and ns.seen.delta.dyaw == ns.frame.delta.dyaw,
            5,
            "the last Δ to come back",
        )
    finally:
        loop.close()
    # Five flicks: right, right, left, left, hold right (one snap) → -45, -90, -45, 0, -45 (OpenXR +left).
    steps = [b - a for a, b in zip(yaws, yaws[1:]) if b != a]
    assert [round(s, 6) for s in steps] == [-45.0, -45.0, 45.0, 45.0, -45.0]
    # The turns pivot on the head: its world position does not jump (a turn about the stage
    # centre would move it by 2·0.72·sin(22.5°) ≈ 0.55 m).
    assert len(head_jumps) == 5 and max(head_jumps) < 1e-6, head_jumps
    c = ns.check
    # Unity's yaw is +right: the relayed XROrigin Δ went through 45 and 90 degrees.
    assert {45.0, 90.0} <= c.dyaws
    assert c.physical_max <= NS_PHYS_TOL  # the reconstructed physical pose stayed with the stage head
    # ... and is what the official receivers rebuild from the bytes we sent, in the server's protocol
    assert ns.link.protocol == netsync_server.address.protocol == 8
    assert c.mismatched == 0 and c.physical_model_pos_max == c.physical_model_yaw_max == 0.0
    assert c.head_rot_max <= NS_ROT_TOL
    # Quake 3: the server's view yaw is the weapon's world yaw, which turned with the rig.
    assert q3.link.check.view_err_max <= Q3_VIEW_TOL
    assert abs(angle_subtract(q3.link.view_angles[1], -45.0)) <= Q3_VIEW_TOL


def test_tracking_loss_is_reported_not_frozen(mock, tmp_path, netsync_server, q3_server):
    load(mock, tmp_path, LOSS)
    loop = pipeline(netsync_server, q3_server, room="e2e-loss", device_id="e2e-loss")
    q3, ns = loop.sinks[0], loop.sinks[1]
    # What went on the wire while the head was lost: each usercmd (60/s) and each NetSync pose
    # (the lost pose does not change, so the policy sends it once, then at its 1 s heartbeat).
    q3_during: list[tuple] = []
    ns_during: list[int] = []
    sent = [0, 0]
    try:
        run_until(loop, lambda: connected(loop), 15, "both servers to take us in")
        assert loop.frame.seq < LEAD_IN * 90, "connecting took longer than the still lead-in"

        def sample() -> bool:
            f = loop.frame
            now_sent = [q3.meter.total_messages, ns.meter.total_messages]
            if not f.head.orientation_valid:
                if now_sent[0] != sent[0]:
                    q3_during.append((q3.intent.head, q3.intent.buttons, q3.far_head))
                if now_sent[1] != sent[1]:
                    ns_during.append(ns.frame.flags)
            sent[:] = now_sent
            return f.seq >= int((LEAD_IN + 3.0) * 90)

        run_until(loop, sample, 15, "the tracking-loss motion to finish")
        run_until(loop, lambda: ns.seen is not None and ns.seen.head is not None, 5, "the head to come back")
    finally:
        loop.close()
    # 1.5 s lost = 90 usercmds at 60/s; at least half of them, whatever a busy machine does to us.
    assert len(q3_during) >= 45 and len(ns_during) >= 1, (len(q3_during), len(ns_during))
    for head, buttons, far_head in q3_during:
        assert head is None and buttons & 0x03FFF000 == 0 and far_head is None  # Q3: no head bits, none drawn
    for flags in ns_during:
        assert not flags & FLAG_HEAD  # NetSync: head not valid
    assert q3.lost_frames == q3.lost_cleared >= 45
    assert ns.check.lost_reported >= 1 and ns.check.lost_stale == 0
    assert "tracking lost" not in ns.status(0.0).detail  # recovered: no stale loss message either


def test_other_room_members_are_decoded_and_reconstructed(mock, tmp_path, netsync_server, q3_server):
    from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
    from headcast.netcode.netsync.origin import reconstruct_physical, yaw_quat_unity
    from headcast.netcode.netsync.transport import NetSyncClient

    load(mock, tmp_path, SWEEP)
    loop = pipeline(netsync_server, q3_server, room="e2e-peers", device_id="e2e-me")
    ns = loop.sinks[1]
    a = netsync_server.address
    peer = NetSyncClient(a.host, a.dealer_port, a.pub_port, "e2e-peers", "e2e-peer")
    head = Transform((1.0, 1.5, 2.0), yaw_quat_unity(30.0))
    delta = OriginDelta(0.5, 0.0, 90.0)
    frame = PoseFrame.build(head, delta=delta)
    try:

        def peer_seen() -> bool:
            now = time.perf_counter()
            peer.send_pose(now, frame)
            peer.poll(now)
            return any(b.head is not None for b in ns.others.values())

        run_until(loop, peer_seen, 15, "the other member's pose in our room broadcast")
    finally:
        peer.close()
        loop.close()
    (body,) = ns.others.values()
    assert max(abs(x - y) for x, y in zip(body.head.pos, head.pos)) <= NS_POS_TOL
    want = reconstruct_physical(head, delta)
    assert max(abs(x - y) for x, y in zip(body.physical.pos, want.pos)) <= NS_PHYS_TOL
    assert ns.status(time.perf_counter()).detail.endswith("1 other in the room")
