"""Sauerbraten in the mirror: our record as a receiving game decodes it (the SAUER FAR SIDE avatar)
and another player where its relayed record puts it, drawn under Xvfb and checked by pixels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from headcast.app.mirror import scene
from headcast.app.mirror.window import _sauer_peers
from headcast.app.run.loop import FrameLoop
from headcast.app.run.rig import Rig

from support import REPO

sys.path.insert(0, str(Path(__file__).parent))
from mirror_sauer_shot import OWN_EYE, PEER_EYE, PEER_PITCH, PEER_YAW, ServerSauerSink  # noqa: E402
from mirror_shot import ConstantHead  # noqa: E402
from test_mirror import window_point  # noqa: E402

NOSE_OFFSET = (0.0, -0.02, -0.2)


@pytest.fixture(scope="module")
def shot(xvfb_display, artifacts_dir):
    out = artifacts_dir / "mirror_sauer"
    out.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11")
    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("mirror_sauer_shot.py")), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return np.load(out / "sauer_players.npy"), json.loads((out / "sauer_players.json").read_text())


def _centroid(img, mask, want, box=60):
    ys, xs = np.nonzero(mask)
    near = (abs(xs - want[0]) < box) & (abs(ys - want[1]) < box)
    assert near.sum() >= 15, f"nothing drawn near {want}"
    return xs[near].mean(), ys[near].mean()


def _hue(img):
    rgb = img.astype(float)
    m = rgb.max(axis=2)
    return m, rgb / np.maximum(m, 1.0)[..., None]


@pytest.mark.display
def test_our_sauer_avatar_and_the_other_player_are_drawn(shot):
    shot, info = shot
    base = info["scene"]["anchors"]["sauer"]
    m, n = _hue(shot)
    # our record, pitch 0: the nose ahead of the Sauer far side's anchor
    own = window_point(info, np.array(base) + np.array(NOSE_OFFSET))
    nose = (m > 50) & (n[..., 0] < 0.45) & (n[..., 1] > 0.9) & (n[..., 2] > 0.7) & (n[..., 2] < 0.95)
    got = _centroid(shot, nose, own)
    assert abs(got[0] - own[0]) < 15 and abs(got[1] - own[1]) < 15, (got, own)
    # the other player: its head box where its record puts it beside ours
    anchor = scene.sauer_peer_anchor(base, OWN_EYE, PEER_EYE, 0.0)
    # 1 m right (screen) and 2 m back in the game: the same direction, squeezed to within PEER_RADIUS
    d = np.array(anchor) - np.array(base)
    assert d[1] == 0 and d[2] / -d[0] == pytest.approx(2.0) and np.hypot(d[0], d[2]) <= scene.PEER_RADIUS
    want = window_point(info, anchor)
    head = (
        (m > 50) & (n[..., 2] > 0.95) & (n[..., 0] > 0.6) & (n[..., 0] < 0.78) & (n[..., 1] > 0.55) & (n[..., 1] < 0.7)
    )
    got = _centroid(shot, head, want)
    assert abs(got[0] - want[0]) < 15 and abs(got[1] - want[1]) < 15, (got, want)


def test_other_players_carry_their_name_and_walk():
    sink = ServerSauerSink()
    loop = FrameLoop(ConstantHead(0.0), Rig(), [sink])
    for _ in range(3):
        assert loop.step()
    ((anchor, avatar, runs),) = _sauer_peers(sink, (0.0, 1.6, 0.0))
    assert "".join(s for s, _ in runs) == "ogro walking"
    assert avatar.head == pytest.approx(scene.sauer_head_quat(PEER_YAW, PEER_PITCH, 0.0, 0.0))
    loop.close()
