"""`headcast demo` with its mirror under Xvfb: screenshots at start, mid-tour, snap turn and tracking
loss saved into build/mirror/ (mirror_demo_shot.py), and what they show checked from the frame's
own text records and pixels: every far side names its source truthfully for the demo's servers
(the NetSync room broadcast and a second Sauerbraten client: RELAYED; the vanilla Quake 3 server:
the 16-bit view RELAYED beside the VR head, a MODEL NOT SENT), the join's transient is shaded and
named, tracking loss and snap turns read as such, and no text overlaps or leaves its area.

The mock runtime is told to focus its headless session (HEADCAST_MOCK_HEADLESS_FOCUS=1) so the
tour's stick inputs (the snap turns) reach the rig.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import REPO

sys.path.insert(0, str(Path(__file__).parent))
from test_mirror_layout import check_text_boxes  # noqa: E402

pytestmark = pytest.mark.display
STATES = ("start", "mid-tour", "snap-turn", "tracking-loss")
OUT = REPO / "build" / "mirror"


@pytest.fixture(scope="module")
def demo(xvfb_display, mock_manifest):
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY" and not k.startswith("HEADCAST_")}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11", HEADCAST_MOCK_HEADLESS_FOCUS="1")
    r = subprocess.run([sys.executable, str(Path(__file__).with_name("mirror_demo_shot.py")), str(OUT),
                        "--duration", "16"], cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads((OUT / "demo.json").read_text())
    assert result["rc"] == 0, (OUT / "demo.out").read_text()[-3000:]
    return result


def _shot(state: str) -> tuple[np.ndarray, dict, list[str]]:
    shot = json.loads((OUT / f"{state}.json").read_text())
    return np.load(OUT / f"{state}.npy"), shot, [t["text"] for t in shot["text"]]


def test_every_state_is_captured(demo):
    assert set(demo["saved"]) == set(STATES), demo
    for state in STATES:
        assert (OUT / f"{state}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("state", STATES)
def test_text_is_legible_in_every_state(demo, state):
    img, shot, _ = _shot(state)
    check_text_boxes(img, shot, *shot["size"])
    assert shot["hidden_labels"] == 0


def test_each_far_side_names_its_source_truthfully(demo):
    _, shot, texts = _shot("mid-tour")
    scene = shot["layout"]["scene"]
    labels = [t["text"] for t in shot["text"] if t["clip"] == scene]  # the avatars' labels
    for title, source in (("Q3 16-bit", "RELAYED"), ("Q3 VR head", "MODEL · NOT SENT"),
                          ("NetSync", "RELAYED"), ("Sauer", "RELAYED")):
        i = labels.index(title)
        assert labels[i + 1].startswith(source), (title, labels)
    assert not any("OFFLINE" in t for t in texts)          # every server is up: nothing is local-only
    joined = " ".join(texts)
    assert "NOT SENT: the server has no vr_support" in joined


def test_the_join_is_shown_as_a_transient(demo):
    _, _, texts = _shot("start")
    assert any(t.startswith("shaded: transients") for t in texts)
    assert any("transient samples not counted" in t for t in texts)


def test_tracking_loss_and_snap_turns_read_as_such(demo):
    _, _, lost = _shot("tracking-loss")
    assert "TRACKING LOST" in lost and any("tracking lost" in t for t in lost)
    _, _, snap = _shot("snap-turn")
    assert any(t.startswith("snap turn ") for t in snap) and "tracking OK" in snap
