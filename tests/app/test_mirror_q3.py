"""Other Quake 3 players in the mirror, and the Q3 far side in the HUD.

mirror_q3_shot.py draws a fixed snapshot's players under Xvfb: the VR player's nose must sit where
the scene projects it (its relayed head pitch, its place on the map relative to ours), and the
mirror's draw() time with eight other players is recorded next to the time with none. The HUD's
far-side lines are checked in-process: they carry the model's name and the values the property
test (test_q3_far_side.py) holds equal to the server's decode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from headcast.app.mirror import scene
from headcast.app.mirror.labels import plain_name
from headcast.app.mirror.panels import q3_lines
from headcast.app.mirror.window import _q3_peers
from headcast.app.run.loop import FrameLoop
from headcast.app.run.rig import Rig
from headcast.app.run.synthetic import orientation
from headcast.netcode.q3.vrhead import Receiver, roll_views, unpack7

from support import REPO

# The shot scripts run as programs from this folder (importing each other by name); import them the same way.
sys.path.insert(0, str(Path(__file__).parent))
from mirror_q3_shot import OWN_ORIGIN, VR_HEAD_PITCH_CODE, VR_PEER, ServerQ3Sink, snapshot  # noqa: E402
from mirror_shot import ConstantHead  # noqa: E402
from test_mirror import window_point  # noqa: E402

NOSE_OFFSET = (0.0, -0.02, -0.2)  # scene.head_triangles: the nose box centre in the head frame


@pytest.fixture(scope="module")
def shot(xvfb_display, artifacts_dir):
    out = artifacts_dir / "mirror_q3"
    out.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11")
    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("mirror_q3_shot.py")), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.mark.display
def test_other_players_are_drawn_where_the_snapshot_puts_them(shot):
    img = np.load(shot / "q3_players.npy")
    info = json.loads((shot / "q3_players.json").read_text())
    anchor = scene.q3_peer_anchor(info["scene"]["anchors"]["q3"], OWN_ORIGIN, VR_PEER)
    q = orientation(unpack7(VR_HEAD_PITCH_CODE), unpack7(63), 0.0)  # relayed head: pitch, view yaw 0 + offset
    want = window_point(info, np.array(anchor) + scene.quat_matrix(q) @ np.array(NOSE_OFFSET))
    rgb = img.astype(float)
    m = rgb.max(axis=2)
    n = rgb / np.maximum(m, 1.0)[..., None]
    nose = (
        (m > 50) & (n[..., 0] > 0.9) & (n[..., 1] > 0.55) & (n[..., 1] < 0.72) & (n[..., 2] > 0.5) & (n[..., 2] < 0.68)
    )
    ys, xs = np.nonzero(nose)
    near = (abs(xs - want[0]) < 60) & (abs(ys - want[1]) < 60)
    assert near.sum() >= 15, f"no Q3 player's nose near {want}"
    got = (xs[near].mean(), ys[near].mean())
    assert abs(got[0] - want[0]) < 15 and abs(got[1] - want[1]) < 15, (got, want)


@pytest.mark.display
def test_draw_cost_with_eight_other_players_is_recorded(shot):
    cost = json.loads((shot / "cost.json").read_text())
    print("mirror draw() per frame, ms:", cost)
    assert cost["none"]["frames"] == cost["eight"]["frames"] == 240
    assert 0 < cost["eight"]["median_ms"] < 50  # a figure for the report, not a benchmark gate


def test_hud_names_the_model_and_shows_the_far_side():
    q3 = ServerQ3Sink(snapshot(crowd=False))
    loop = FrameLoop(ConstantHead(10.0), Rig(), [q3])
    for _ in range(3):
        assert loop.step()
    far = q3.far_side
    assert far.receiver is Receiver.QVM and (far.roll_own, far.roll_others) == roll_views(q3.intent.roll_short)
    assert q3.receiver_seen == (Receiver.QVM, "^1Vera")  # codes 84 and 63 decode differently in a native build
    lines = q3_lines(q3)
    text = [t for t, _, _ in lines]
    assert any(
        f"a VR server (Trinity, as seen on Vera) would see: head pitch {far.pitch:+.2f}°, turn "
        f"{far.yaw_offset:+.2f}°" in t
        for t in text
    ), text
    # the precise build and field names are the line's tooltip, not its words
    assert any("Trinity QVM (q3lcc)" in tip for _, _, tip in lines) and not any("q3lcc" in t for t in text)
    assert any("others see" in t for t in text)
    assert any("others in view: Vera (VR), bob" in t for t in text), text
    labels = ["".join(s for s, _ in runs) for _, _, runs in _q3_peers(q3, (0.0, 1.6, 0.0))]
    assert labels == ["Vera VR", "bob"]
    runs = _q3_peers(q3, (0.0, 1.6, 0.0))[0][2]
    assert runs[0] == ("Vera", (1.0, 0.25, 0.25))  # ^1: drawn red, as the game draws it
    native = ServerQ3Sink(None)  # nobody seen: the configured build is modelled
    native.receiver = Receiver.NATIVE
    native.intent = q3.intent
    assert native.far_side.receiver is Receiver.NATIVE and "a VR server (native build) would see:" in " ".join(
        t for t, _, _ in q3_lines(native)
    )
    assert plain_name("^1Ve^^7ra^x") == "Ve^ra"


def test_the_model_follows_the_build_another_vr_player_betrays():
    """A relayed head angle only a native build decodes to: the far side is then modelled as native."""
    from headcast.netcode.q3.delta import EntityState
    from headcast.netcode.q3.entities import ET_PLAYER, SnapshotEntities, player_entity
    from headcast.netcode.q3.vrhead import DECODED, EF_VR_PLAYER

    code = next(p for p in range(128) if DECODED[Receiver.QVM][p] != DECODED[Receiver.NATIVE][p])
    es = EntityState.from_dict(
        {
            "number": 1,
            "eType": ET_PLAYER,
            "eFlags": EF_VR_PLAYER,
            "angles2": (unpack7(code, Receiver.NATIVE), 0.0, unpack7(63, Receiver.NATIVE)),
        }
    )
    q3 = ServerQ3Sink(SnapshotEntities(1, 1000, 0, OWN_ORIGIN, (0.0, 0.0, 0.0), (player_entity(es, "^2Nat"),)))
    loop = FrameLoop(ConstantHead(10.0), Rig(), [q3])
    assert loop.step()
    assert q3.receiver is Receiver.QVM and q3.receiver_seen == (Receiver.NATIVE, "^2Nat")
    assert q3.far_side.receiver is Receiver.NATIVE
    text = " ".join(t for t, _, _ in q3_lines(q3))
    assert "(native build, as seen on Nat) would see" in text, text


@pytest.mark.live
def test_the_q3_map_counts_the_servers_players_not_only_those_in_view(q3_server):
    """Five players in game on a real ioq3ded, then we join: the server's configstrings say six
    are on it (us included) whether or not its snapshots show them (only those in our PVS), and
    the room map's title says "N of 6 in view"."""
    import time

    from headcast.app.mirror import view as mv
    from headcast.app.sinks.q3.link import Q3Link
    from headcast.app.sinks.q3.sink import Q3Sink
    from headcast.netcode.q3.client import ClientConfig, State
    from headcast.netcode.q3.transport import Q3Client

    others = [Q3Client(q3_server.address, ClientConfig(name=f"p{i}")) for i in range(5)]
    link = sink = loop = None
    try:
        now = time.monotonic()
        for c in others:
            c.start(now)
        end = now + 20
        while not all(c.state is State.ACTIVE for c in others):
            assert time.monotonic() < end, [c.state for c in others]
            for c in others:
                c.poll(time.monotonic())
            time.sleep(0.003)
        link = Q3Link(*q3_server.address, clock=time.perf_counter)
        sink = Q3Sink(link=link)
        loop = FrameLoop(ConstantHead(10.0), Rig(), [sink])
        end = time.monotonic() + 20
        while not (link.entered and sink.others is not None and link.client.core.player_count == 6):
            assert time.monotonic() < end, (link.state, link.client.core.player_count)
            assert loop.step()
            for c in others:
                c.poll(time.monotonic())
        members = mv.q3_members(sink)
        assert 1 <= len(members) <= 6
        assert mv.room_title(sink, members) == f"Quake 3 · {len(members)} of 6 in view"
        # one leaves: the server empties its configstring, and the count follows
        others.pop().close(time.monotonic())
        end = time.monotonic() + 10
        while link.client.core.player_count != 5:
            assert time.monotonic() < end, link.client.core.player_count
            assert loop.step()
            for c in others:
                c.poll(time.monotonic())
    finally:
        if loop is not None:
            loop.close()
        for c in others:
            c.close(time.monotonic())
