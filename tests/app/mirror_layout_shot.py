"""Render the mirror at several window sizes in the demo's states (run by test_mirror_layout.py
under Xvfb): start, mid-tour, tracking loss, snap turn.

Usage: python mirror_layout_shot.py OUT_DIR [WxH ...]. Each size gets one window and a scripted
head (90 Hz) through the four states; at each state one frame is captured and saved as
<W>x<H>_<state>.png/.npy/.json (mirror_shot.save: every text box with the rect that clips it);
the last state, "crowd", puts 50 others in the NetSync room.

The text is the stress case: a roll short of five digits (roll −15° → 62842), players named
`vr\\1` (case and backslash as they are), `^1Vera` (a Q3 colour code) and a long name, a NetSync
room named in Japanese, a 16-bit Q3 server (two Q3 avatars) with six players (three in our view),
Sauerbraten offline (no --sauer: not shown). The links are
stand-ins that only hold what a live link shows (state, detail, other players, our echoed body):
this test is about drawing. tests/app/test_mirror_demo.py draws the real servers.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from headcast.app.mirror.window import MirrorWindow
from headcast.app.run.loop import FrameLoop
from headcast.app.run.rig import Rig
from headcast.app.run.synthetic import orientation
from headcast.app.sinks.netsync.sink import NetSyncSink
from headcast.app.sinks.q3.sink import Q3Sink
from headcast.app.sinks.sauer.sink import SauerSink
from headcast.netcode.netsync.codec import decode_body, encode_body
from headcast.netcode.netsync.model import Transform
from headcast.netcode.pose import unity_position, unity_quat
from headcast.netcode.q3.entities import SnapshotEntities, player_entity
from headcast.netcode.q3.vrhead import angle2short, view_angle
from headcast.xr.frame import Controls, Pose, TrackingFrame

from mirror_q3_shot import OWN_ORIGIN, player
from mirror_shot import save

ROOM = "ヘッドキャスト試験室"
LONG_NAME = "vr\\1_TheQuickBrownFox^7JumpsOverTheLazyDog"
STATES = ("start", "mid-tour", "tracking-loss", "snap-turn", "crowd")
CROWD = 50  # others in the NetSync room in the "crowd" state (the NetSync simulator's default)


class ScriptedHead:
    """A head moving through the states at 90 Hz: still, then looking around with a −15° roll,
        then lost, then tracked again with the right stick flicked for a snap turn (and then still, in a
    crowd)."""

    def __init__(self) -> None:
        self.seq, self.t0 = 0, time.perf_counter()
        self.lost = False
        self.flick = False

    def next_frame(self) -> TrackingFrame:
        due = self.t0 + self.seq / 90
        if (d := due - time.perf_counter()) > 0:
            time.sleep(d)
        t = self.seq / 90
        pitch, yaw, roll = 25 * math.sin(t * 1.7), 60 * math.sin(t * 0.9), -15.0
        ok = not self.lost
        head = Pose((0.1 * math.sin(t), 1.6, 0.0), orientation(pitch, yaw, roll), ok, ok, ok, ok)
        hand = Pose((0.2, 1.2, -0.3), orientation(0.0, yaw, 0.0), True, True, True, True)
        controls = Controls(turn=(1.0 if self.flick else 0.0, 0.0))
        f = TrackingFrame(self.seq, int(self.seq * 1e9 / 90), head, hand, hand, hand, hand, controls, focused=True)
        self.seq += 1
        return f

    def close(self) -> None:
        pass


class VanillaQ3Link:
    """Stands in for Q3Link on a server without vr_support: in game, 16-bit buttons; its
    snapshot holds three other players."""

    state = "in game"
    head_bits = False
    closed = False
    detail = "server has no vr_support: 16-bit buttons, head tracking not sent"
    last_error = None
    drops: dict = {}
    ping_ms = 31.0
    due_at = -math.inf
    entered = True

    def __init__(self) -> None:
        states = [
            player(1, (OWN_ORIGIN[0] - 64, OWN_ORIGIN[1] + 80, 24.0), (0.0, 0.0, 0.0), 84),
            player(2, (OWN_ORIGIN[0] - 96, OWN_ORIGIN[1] - 64, 24.0), (-10.0, 90.0, 0.0)),
            player(3, (OWN_ORIGIN[0] + 900, OWN_ORIGIN[1] - 400, 24.0), (0.0, 45.0, 0.0), 70),
        ]
        names = {1: "^1Vera", 2: "vr\\1", 3: LONG_NAME}
        players = tuple(player_entity(es, names[es.number]) for es in states)
        # six on the server: us, the three in this snapshot and two out of our view
        self.entities = SnapshotEntities(1, 1000, 0, OWN_ORIGIN, (0.0, 0.0, 0.0), players)
        self.last_cmd_time = 0
        self.player_count = 6
        self.view_angles = None
        self.ps = None  # a vanilla server's playerState carries no head decode
        self.eflags = 0
        self.snapshots = 0
        self.check = SimpleNamespace(matched=0, rebased=0, vr_flag_frames=0)

    def poll(self, now: float) -> None:
        pass

    def send_pose(self, state, controls, vr, move_speed, now):
        """No pump here: the sink builds the intent and calls send (Q3Link.send_pose's decline)."""
        return None

    def send(self, intent, now: float):
        """The server runs the usercmd at once: its snapshot shows our view, matched."""
        self.view_angles = tuple(view_angle(angle2short(a)) for a in intent.angles)
        self.last_cmd_time += 16
        self.snapshots += 1
        self.check.matched += 1
        self.last_error = 0.0
        return 60, now

    def close(self) -> None:
        pass


class RoomLink:
    """Stands in for NetSyncLink in a room named in Japanese with two others; echoes our body as
    the room broadcast would."""

    state = "connected"
    joined = True
    closed = False
    drops: dict = {}
    model_protocol = 8
    next_poll = 0.0  # the clock time the real link next reads (NetSyncSink's poll_at): every frame
    detail = f"client #1 in room '{ROOM}', protocol 8, server 0.17.5"

    def __init__(self) -> None:
        self.own_body = None
        self.own_raw = None  # (the real link's: the relayed bytes when known)
        self.seq = 0
        self.skipped = {"unchanged": 0}  # (the real link's: its send policy's skips by reason)
        self.protocol_changes = 0  # (the real link's: protocol changes seen, for the sink's unchanged test)
        near = decode_body(encode_body(1, _frame((0.8, 1.7, 1.2)), 8), 0, 8)[0]
        far = decode_body(encode_body(1, _frame((-6.0, 1.5, 9.0)), 8), 0, 8)[0]
        self.others = {2: near, 7: far}

    def poll(self, now: float) -> None:
        pass

    def send(self, pf, now: float):
        self.seq += 1
        body = encode_body(self.seq, pf, 8)
        self.own_body = decode_body(body, 0, 8)[0]
        msg = bytes(20) + body  # (the real link's: the message as sent, its body last)
        return len(msg), len(body), now, self.seq, msg

    def drops_text(self) -> str:
        return ""

    def close(self) -> None:
        pass


def _frame(pos):
    from headcast.netcode.netsync.model import FLAG_HEAD, PoseFrame

    return PoseFrame(FLAG_HEAD, Transform(unity_position(pos), unity_quat(orientation(0.0, 30.0, 0.0))))


def run(out: Path, w: int, h: int) -> None:
    src = ScriptedHead()
    room = RoomLink()
    sinks = [Q3Sink(link=VanillaQ3Link()), NetSyncSink(link=room), SauerSink()]
    mirror = MirrorWindow(w, h)
    loop = FrameLoop(src, Rig(), sinks, mirror=mirror)

    def shot(state: str) -> None:
        mirror.capture_next = True
        assert loop.step()
        save(mirror, out, f"{w}x{h}_{state}")

    for _ in range(3):
        assert loop.step()
    shot("start")
    for _ in range(150):
        assert loop.step()
    shot("mid-tour")
    src.lost = True
    for _ in range(45):
        assert loop.step()
    shot("tracking-loss")
    src.lost = False
    for _ in range(20):
        assert loop.step()
    src.flick = True
    while not (loop.state is not None and loop.state.snapped):
        assert loop.step()
    src.flick = False
    for _ in range(5):
        assert loop.step()
    shot("snap-turn")
    # A room of 50 (a load test's simulated clients around us, 2–12 m off)
    room.others = {
        2 + i: decode_body(
            encode_body(1, _frame(((2 + i % 10) * math.cos(i * 0.7), 1.6, (2 + i % 10) * math.sin(i * 0.7))), 8), 0, 8
        )[0]
        for i in range(CROWD)
    }
    for _ in range(10):
        assert loop.step()
    shot("crowd")
    loop.close()


def main(out: Path, sizes: list[str]) -> None:
    for size in sizes:
        w, h = (int(v) for v in size.split("x"))
        run(out, w, h)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] or ["800x600", "1280x720", "1920x1080"])
