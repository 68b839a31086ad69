"""headcast against every NetSync release, watched by STYLY's own Python client.

Each styly-netsync-server release of protocols 3–8 (0.10.4 … 0.17.5) runs on 127.0.0.1; headcast
joins with `protocol=None` (auto-detect) and streams; the official `net_sync_manager` of the same
release (tests/netsync/official_observer.py, in its own process under that release's
PYTHONPATH) sits in the room and reports what it decodes. It must decode exactly what we sent —
head, hands, virtuals and the physical pose it rebuilds — and see our send policy. Mismatches
are named with the server's protocol; a restarted server gets our poses again.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from headcast.netcode.netsync.codec import decode_client_pose, encode_client_pose
from headcast.netcode.netsync.events import (
    Dropped,
    Joined,
    OwnPose,
    ProtocolDetected,
    ProtocolMismatch,
)
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.releases import release_dir
from headcast.netcode.netsync.transport import NetSyncClient, ServerProtocolError

from support import wait_for

pytestmark = pytest.mark.live

ROOM = "headcast-protocols"
OBSERVER = Path(__file__).with_name("official_observer.py")


class Observer:
    """The official client of `srv`'s release in the room, in its own process (stopped by PID)."""

    def __init__(self, srv, *, send: bool = False, seconds: float = 90.0) -> None:
        a = srv.address
        env = dict(os.environ, PYTHONPATH=str(release_dir(a.version)), PYTHONUNBUFFERED="1")
        cmd = [
            sys.executable,
            str(OBSERVER),
            "--control-port",
            str(a.dealer_port),
            "--pub-port",
            str(a.pub_port),
            "--transform-port",
            str(a.transform_port),
            "--room",
            ROOM,
            "--seconds",
            str(seconds),
        ]
        self.proc = subprocess.Popen(
            cmd + (["--send"] if send else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        self.lines: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.ready = wait_for(
            lambda: next((x for x in self.lines if "ready" in x), None), 30, "the official client to start"
        )
        assert self.ready["version"] == a.version  # really that release's own client

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def entries(self, device_client_no: int | None = None, since: float = 0.0) -> list[tuple[float, dict]]:
        """(time, client entry) for every snapshot that had `device_client_no` (all clients if None)."""
        out = []
        for snap in list(self.lines):
            if "clients" not in snap or snap["t"] < since:
                continue
            for no, c in snap["clients"].items():
                if device_client_no is None or int(no) == device_client_no:
                    out.append((snap["t"], c))
        return out

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait(timeout=10)


def client(srv, device_id: str, **kw) -> NetSyncClient:
    a = srv.address
    kw.setdefault("protocol", None)
    return NetSyncClient(a.host, a.dealer_port, a.pub_port, ROOM, device_id, transform_port=a.transform_port, **kw)


def moving(t: float, protocol: int) -> PoseFrame:
    """Head turning and bobbing, both hands, one virtual, an XROrigin Δ with height (sent from 4)."""
    head = Transform(
        (0.5 + 0.3 * math.sin(t), 1.6 + 0.05 * math.sin(3 * t), -1.0 + 0.3 * math.cos(t)),
        (0.2 * math.sin(t / 3), math.sin(t / 4), 0.1, math.cos(t / 4)),
    )
    right = Transform((head.pos[0] + 0.3, 1.2, head.pos[2] - 0.2), (0.1, 0.2, 0.3, 0.9))
    left = Transform((head.pos[0] - 0.3, 1.25, head.pos[2] - 0.1), (0.0, 0.0, 0.0, 1.0))
    virt = (Transform((2.0, 0.5, 3.0), (0.0, 0.7071, 0.0, 0.7071)),)
    return PoseFrame.build(head, right, left, virt, OriginDelta(1.25, -0.5, 30.0 + 10 * math.sin(t), 0.25))


def floor_local(t: float) -> PoseFrame:
    """Protocol 5+: a player on a moving floor sends its floor-local physical pose."""
    yaw = 40.0 + 20.0 * math.sin(t)
    phys = Transform((0.4, 0.1, -0.3), (0.0, math.sin(math.radians(yaw) / 2), 0.0, math.cos(math.radians(yaw) / 2)))
    return PoseFrame.build(
        Transform((0.6, 1.7, -0.2), (0.0, 0.3, 0.0, 0.95)), Transform((0.8, 1.2, -0.4)), None, (), physical=phys
    )


class Streamer:
    """Drives our client from the test's loop: every pose actually sent is kept by its poseSeq."""

    def __init__(self, c: NetSyncClient, frame_at) -> None:
        self.c, self.frame_at = c, frame_at
        self.sent: dict[int, tuple[float, PoseFrame]] = {}
        self.events: list = []

    def step(self) -> None:
        now = time.monotonic()
        frame = self.frame_at(now)
        if self.c.send_pose(now, frame):
            self.sent[self.c.core.policy.pose_seq] = (now, frame)
        self.events += self.c.poll(now)

    def until(self, pred, timeout: float, what: str):
        def go():
            self.step()
            return pred()

        return wait_for(go, timeout, what, interval=0.005)

    def run(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.step()
            time.sleep(0.005)

    def of(self, kind) -> list:
        return [e for e in self.events if isinstance(e, kind)]


IDENTITY_AT_ORIGIN = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]  # the official decoder's absent block


def assert_same(observed: list | None, ours: Transform | None, what: str) -> None:
    if ours is None:
        assert observed in (None, IDENTITY_AT_ORIGIN), what
    else:
        assert observed == pytest.approx(list(ours.pos) + list(ours.rot), abs=1e-9), what


def check_official_decode(obs: Observer, s: Streamer, client_no: int, protocol: int, device_id: str) -> int:
    """Every entry the official client decoded for us equals our decode of the very bytes we
    sent under that poseSeq (the official receivers' arithmetic, physical pose included)."""
    checked = 0
    for _, e in obs.entries(client_no):
        seq = e["pose_seq"]
        if seq not in s.sent:
            continue
        body = decode_client_pose(encode_client_pose(device_id, seq, s.sent[seq][1], protocol), expect=protocol).body
        assert e["flags"] == body.flags
        assert_same(e["head"], body.head, "head")
        assert_same(e["right"], body.right, "right hand")
        assert_same(e["left"], body.left, "left hand")
        assert len(e["virtuals"]) == len(body.virtuals)
        for v, mine in zip(e["virtuals"], body.virtuals):
            assert_same(v, mine, "virtual")
        assert_same(e["physical"], body.physical, "physical")
        checked += 1
    return checked


def test_auto_detects_every_release_and_the_official_client_decodes_what_we_sent(netsync_release):
    srv = netsync_release
    proto = srv.address.protocol
    obs = Observer(srv)
    c = client(srv, f"headcast-p{proto}")
    try:
        mode = {"floor": False}
        s = Streamer(c, lambda now: floor_local(now) if mode["floor"] else moving(now, proto))
        t0 = time.monotonic()
        s.until(lambda: c.client_no, 5.0, "joined by auto-detection")
        detected = s.of(ProtocolDetected)
        assert [d.protocol for d in detected] == [proto] and c.core.protocol == proto
        assert s.of(Joined)[0].server_version == tuple(int(x) for x in srv.address.version.split("."))
        print(
            f"\n{srv.address.version}: protocol {proto} detected via {detected[0].how}, "
            f"joined in {time.monotonic() - t0:.2f} s"
        )
        s.until(
            lambda: len({e["pose_seq"] for _, e in obs.entries(c.client_no)}) >= 8,
            15,
            "8 of our poses at the official client",
        )
        if proto >= 5:
            mode["floor"] = True
            s.until(
                lambda: any(e["flags"] & 0x40 for _, e in obs.entries(c.client_no)), 10, "a moving-floor pose decoded"
            )
            s.run(0.5)
        n = check_official_decode(obs, s, c.client_no, proto, f"headcast-p{proto}")
        assert n >= 8
        # and it is the pose we meant, within the wire's quantisation
        t, e = obs.entries(c.client_no)[-1]
        frame = s.sent[e["pose_seq"]][1]
        assert math.dist(e["head"][:3], frame.head.pos) <= 0.0087
        if proto >= 5:
            assert e["flags"] & 0x40 and math.dist(e["physical"][:3], frame.physical.pos) <= 0.0087
        assert not [d for d in s.of(Dropped)], s.of(Dropped)
        assert not s.of(ProtocolMismatch)
    finally:
        c.close()
        obs.close()


def _seq_rate(entries: list[tuple[float, dict]]) -> float:
    (t0, a), (t1, b) = entries[0], entries[-1]
    return ((b["pose_seq"] - a["pose_seq"]) & 0xFFFF) / (t1 - t0)


def test_the_official_client_sees_our_send_policy(netsync_edge):
    """Rate cap (5 Hz asked, 90 Hz offered), only on change, 1 Hz heartbeat when still — as the
    poseSeq advances at the official client, which sees only what the server relays."""
    srv = netsync_edge
    obs = Observer(srv)
    c = client(srv, "policy", send_rate=5.0)
    still = moving(0.0, 8)
    try:
        mode = {"still": False}
        s = Streamer(c, lambda now: still if mode["still"] else moving(now, 8))
        s.until(lambda: c.client_no, 5.0, "joined")
        s.until(lambda: len(obs.entries(c.client_no)) >= 2, 10, "our first poses at the official client")
        t_moving = time.monotonic()
        s.run(3.0)
        moving_rate = _seq_rate(obs.entries(c.client_no, since=t_moving))
        mode["still"] = True
        s.run(0.5)
        t_still = time.monotonic()
        s.run(4.0)
        still_entries = obs.entries(c.client_no, since=t_still)
        still_rate = _seq_rate(still_entries)
        print(
            f"\n{srv.address.version}: poseSeq at the official client: {moving_rate:.2f}/s moving (cap 5), "
            f"{still_rate:.2f}/s still"
        )
        assert 4.0 <= moving_rate <= 5.5
        assert 0.6 <= still_rate <= 1.3
        # still: every relayed body is the same pose, re-sent only by the heartbeat
        assert len({json.dumps(e["head"]) for _, e in still_entries}) == 1
    finally:
        c.close()
        obs.close()


def test_server_restart_mid_stream_poses_resume(netsync_edge):
    srv = netsync_edge
    obs = Observer(srv)
    c = client(srv, "restart", silence_timeout=1.0)
    try:
        s = Streamer(c, lambda now: moving(now, 8))
        s.until(lambda: c.client_no, 5.0, "joined")
        s.until(lambda: len(obs.entries(c.client_no)) >= 3, 10, "our poses at the official client")
        srv.stop()
        s.run(1.5)
        srv.start(timeout=60)
        restarted = time.monotonic()
        s.until(
            lambda: any(isinstance(e, OwnPose) for e in s.events[-50:]) and c.client_no,
            20,
            "our own pose relayed again",
        )
        s.until(
            lambda: [e for t, e in obs.entries() if t > restarted], 20, "poses at the official client after the restart"
        )
        after = [e for t, e in obs.entries() if t > restarted]
        assert after and all(e["pose_seq"] in s.sent for e in after)
        assert check_official_decode(obs, s, c.client_no, srv.address.protocol, "restart") >= 3
    finally:
        c.close()
        obs.close()


def test_a_protocol_8_peer_in_the_room_is_named_not_silently_dropped(netsync_server):
    """The issue's case: headcast told to speak 3 in a 0.17.5 room where an official protocol-8
    client is sending. Its broadcasts are dropped and counted with the reason, and the mismatch
    names protocol 8 — not 'no answer … firewall'."""
    peer = Observer(netsync_server, send=True)
    c = client(netsync_server, "old-headcast", protocol=3)
    try:
        s = Streamer(c, lambda now: moving(now, 3))
        s.until(lambda: s.of(ProtocolMismatch), 10, "the mismatch named")
        m = s.of(ProtocolMismatch)[0]
        assert (m.ours, m.server_protocol) == (3, 8)
        assert "speaks NetSync protocol 8; headcast spoke 3" in m.message and "firewall" not in m.message
        s.until(lambda: c.counters.drops["room pose: protocol 8"] >= 3, 10, "peer broadcasts counted as drops")
        assert any(d.reason == "room pose: protocol 8" for d in s.of(Dropped))
        assert c.client_no is None  # the server never took a protocol-3 pose
    finally:
        c.close()
        peer.close()


@pytest.mark.parametrize("speak", [3, 7])
def test_join_names_the_servers_protocol_when_ours_is_wrong(netsync_edge, speak):
    srv = netsync_edge
    if srv.address.protocol == speak:
        speak = 8 if speak == 3 else 3
    c = client(srv, f"wrong-{speak}", protocol=speak)
    try:
        t0 = time.monotonic()
        with pytest.raises(ServerProtocolError) as e:
            c.join(moving(0.0, speak), timeout=10)
        took = time.monotonic() - t0
        m = e.value.mismatch
        assert (m.ours, m.server_protocol) == (speak, srv.address.protocol)
        assert f"speaks NetSync protocol {srv.address.protocol}; headcast spoke {speak}" in str(e.value)
        assert took < 5.0  # well within one connect timeout
        print(f"\n{srv.address.version} vs protocol {speak}: {e.value} ({took:.2f} s)")
    finally:
        c.close()
