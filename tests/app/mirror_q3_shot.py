"""Render the mirror with other Quake 3 players on the server (run by test_mirror_q3.py under Xvfb).

Usage: python mirror_q3_shot.py OUT_DIR. The Q3 sink's `others` is a fixed snapshot's players
(RELAYED in a live run): a VR player 64 units behind and 80 to the left of us (2 m further from
the camera than our Q3 avatar, 2.5 m to its right on the screen), head pitched 29° down, and a
flat player; `snapshot(crowd=True)` adds six more further off. Writes q3_players.png/.npy, and
cost.json: the mirror's draw() time per frame (median, p90; ms) with no other players and with
eight, interleaved in rounds so both see the same machine load.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from headcast.app.mirror.window import MirrorWindow
from headcast.app.run.loop import FrameLoop
from headcast.app.run.rig import Rig
from headcast.app.sinks.q3.sink import Q3Sink
from headcast.netcode.q3.delta import EntityState
from headcast.netcode.q3.entities import ET_PLAYER, SnapshotEntities, player_entity
from headcast.netcode.q3.vrhead import EF_VR_PLAYER, unpack7

from mirror_shot import ConstantHead, save

OWN_ORIGIN = (100.0, 200.0, 24.0)
VR_PEER = (OWN_ORIGIN[0] - 64.0, OWN_ORIGIN[1] + 80.0, OWN_ORIGIN[2])  # 2 m behind (+Z), 2.5 m left (−X)
VR_HEAD_PITCH_CODE = 84  # 29.06° down
FLAT_PEER = (OWN_ORIGIN[0] - 96.0, OWN_ORIGIN[1] - 64.0, OWN_ORIGIN[2])


def player(number: int, origin, view, head_code: int | None = None) -> EntityState:
    fields = {"number": number, "eType": ET_PLAYER, "pos.trBase": origin, "apos.trBase": view}
    if head_code is not None:
        fields.update({"eFlags": EF_VR_PLAYER, "angles2": (unpack7(head_code), 0.0, unpack7(63))})
    return EntityState.from_dict(fields)


def snapshot(crowd: bool) -> SnapshotEntities:
    states = [player(1, VR_PEER, (0.0, 0.0, 0.0), VR_HEAD_PITCH_CODE), player(2, FLAT_PEER, (-10.0, 90.0, 0.0))]
    if crowd:
        states += [
            player(
                3 + i,
                (OWN_ORIGIN[0] - 160.0 - 40 * i, OWN_ORIGIN[1] - 100 + 35 * i, 24.0),
                (0.0, 30.0 * i, 0.0),
                60 + i if i % 2 else None,
            )
            for i in range(6)
        ]
    names = {1: "^1Vera", 2: "bob"}
    players = tuple(player_entity(es, names.get(es.number, f"p{es.number}")) for es in states)
    return SnapshotEntities(1, 1000, 0, OWN_ORIGIN, (0.0, 0.0, 0.0), players)


class ServerQ3Sink(Q3Sink):
    """An offline Q3 sink whose server snapshot shows other players."""

    def __init__(self, ents: SnapshotEntities | None) -> None:
        super().__init__()
        self.ents = ents

    @property
    def others(self) -> SnapshotEntities | None:
        return self.ents


def main(out: Path) -> None:
    mirror = MirrorWindow(1280, 720)
    q3 = ServerQ3Sink(snapshot(crowd=False))
    loop = FrameLoop(ConstantHead(0.0), Rig(), [q3], mirror=mirror)
    for _ in range(20):
        assert loop.step()
    mirror.capture_next = True
    assert loop.step()
    save(mirror, out, "q3_players")

    # draw() alone, 0 vs 8 other players, interleaved rounds of 30 frames
    times: dict[str, list[float]] = {"none": [], "eight": []}
    crowds = {"none": None, "eight": snapshot(crowd=True)}
    for _ in range(8):
        for key, ents in crowds.items():
            q3.ents = ents
            for _ in range(30):
                t = time.perf_counter()
                mirror.draw(loop, t)
                times[key].append(time.perf_counter() - t)
    cost = {
        k: {
            "median_ms": statistics.median(v) * 1e3,
            "p90_ms": statistics.quantiles(v, n=10)[-1] * 1e3,
            "frames": len(v),
        }
        for k, v in times.items()
    }
    (out / "cost.json").write_text(json.dumps(cost))
    loop.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
