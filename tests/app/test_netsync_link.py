"""NetSyncLink against the real styly-netsync-server 0.10.4: one client, our own body from OwnPose."""
from __future__ import annotations

import math
import time

import pytest
from support import wait_for

from headcast.app.netsync_link import NetSyncLink
from headcast.netcode.netsync.codec import decode_client_pose
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.transport import NetSyncClient

pytestmark = pytest.mark.live


def frame_at(t: float) -> PoseFrame:
    head = Transform((0.4 * math.sin(t), 1.6, 0.4 * math.cos(t)), (0.0, math.sin(t / 3), 0.0, math.cos(t / 3)))
    return PoseFrame.build(head, Transform((0.3, 1.2, 0.1)), delta=OriginDelta(0.5, -0.25, 45.0))


def test_own_body_comes_from_our_broadcast_entry_with_no_second_member(netsync_server):
    a = netsync_server.address
    link = NetSyncLink(a.host, a.dealer_port, a.pub_port, "link-own", "link-me", 10.0, False)
    viewer = NetSyncClient(a.host, a.dealer_port, a.pub_port, "link-own", "link-viewer", stealth=True)
    sent: dict[int, bytes] = {}
    orig = link.client.core.pose_message

    def record(now, frame):
        msg = orig(now, frame)
        if msg is not None:
            sent[decode_client_pose(msg).body.pose_seq] = msg
        return msg

    link.client.core.pose_message = record
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
