"""Render the mirror with another player on the Sauerbraten server (run by test_mirror_sauer.py
under Xvfb).

Usage: python mirror_sauer_shot.py OUT_DIR. The Sauerbraten sink's `others` holds one player whose
last relayed record (RELAYED in a live run) puts its eye 16 units behind and 8 to the left of ours
(2 m further from the camera than our Sauerbraten avatar, 1 m to its right on the screen), walking.
Writes sauer_players.png/.npy.
"""

from __future__ import annotations

import sys
from pathlib import Path

from headcast.app.mirror.window import MirrorWindow
from headcast.app.run.loop import FrameLoop
from headcast.app.run.rig import Rig
from headcast.app.sinks.sauer.sink import SauerSink
from headcast.netcode.sauer.client import RemotePlayer
from headcast.netcode.sauer.npos import make_npos

from mirror_shot import ConstantHead, save

OWN_EYE = (512.0, 512.0, 526.0)  # the default spawn point's eye: the offline sink anchors there
PEER_EYE = (OWN_EYE[0] - 8.0, OWN_EYE[1] - 16.0, OWN_EYE[2])
PEER_YAW, PEER_PITCH = 90, -20


def peer() -> RemotePlayer:
    rec = make_npos(1, eye=PEER_EYE, yaw=PEER_YAW, pitch=PEER_PITCH, roll=0.0, vel=(0.0, 16.0, 0.0), move=1)
    return RemotePlayer(1, name="ogro", lifesequence=2, record=rec)


class ServerSauerSink(SauerSink):
    """An offline Sauerbraten sink whose server relayed another player."""

    @property
    def others(self) -> dict:
        return {1: peer()}


def main(out: Path) -> None:
    mirror = MirrorWindow(1280, 720)
    loop = FrameLoop(ConstantHead(0.0), Rig(), [ServerSauerSink()], mirror=mirror)
    for _ in range(20):
        assert loop.step()
    mirror.capture_next = True
    assert loop.step()
    save(mirror, out, "sauer_players")
    loop.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
