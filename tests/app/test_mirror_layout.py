"""The mirror's text at 800×600, 1280×720 and 1920×1080 in the demo's states (start, mid-tour,
tracking loss, snap turn), under Xvfb: no two text boxes intersect, every one stays inside the
window and inside the area that clips it (nothing cut at an edge), and the pixels agree — each
box holds drawn text (ink unlike its background). The stress text (mirror_layout_shot.py): a
5-digit roll short, `vr\\1`, a Q3 colour code, a long name, a Japanese room name.
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
from mirror_layout_shot import CROWD, LONG_NAME, ROOM, STATES  # noqa: E402

pytestmark = pytest.mark.display
SIZES = ("800x600", "1280x720", "1920x1080")
TOL = 0.5  # px: ImGui rounds text positions to whole pixels


@pytest.fixture(scope="module")
def shots(xvfb_display, artifacts_dir):
    out = artifacts_dir / "mirror_layout"
    out.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11")
    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("mirror_layout_shot.py")), str(out), *SIZES],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def _load(shots: Path, size: str, state: str) -> tuple[np.ndarray, dict]:
    return np.load(shots / f"{size}_{state}.npy"), json.loads((shots / f"{size}_{state}.json").read_text())


def _overlap(a, b) -> bool:
    return a[0] < b[2] - TOL and b[0] < a[2] - TOL and a[1] < b[3] - TOL and b[1] < a[3] - TOL


def check_text_boxes(img: np.ndarray, shot: dict, w: int, h: int) -> None:
    """No two text boxes intersect; each is inside the window and inside what clips it."""
    assert img.shape[:2] == (h, w) and shot["size"] == [w, h]
    boxes = [t for t in shot["text"] if t["text"].strip()]
    assert len(boxes) > 30
    for t in boxes:
        x0, y0, x1, y1 = t["box"]
        c = t["clip"]
        assert -TOL <= x0 and -TOL <= y0 and x1 <= w + TOL and y1 <= h + TOL, ("outside the window", t)
        assert c[0] - TOL <= x0 and c[1] - TOL <= y0 and x1 <= c[2] + TOL and y1 <= c[3] + TOL, ("clipped", t)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not _overlap(a["box"], b["box"]), ("overlap", a, b)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("state", STATES)
def test_text_boxes_do_not_intersect_and_stay_inside(shots, size, state):
    img, shot = _load(shots, size, state)
    w, h = (int(v) for v in size.split("x"))
    check_text_boxes(img, shot, w, h)


@pytest.mark.parametrize("size", SIZES)
def test_each_text_box_holds_drawn_text(shots, size):
    """Cross-check with the pixels: inside every box some pixels stand out from the box's own
    background (its most common colour) by the text colour's contrast."""
    img, shot = _load(shots, size, "mid-tour")
    for t in shot["text"]:
        if not t["text"].strip():
            continue
        x0, y0, x1, y1 = (int(round(v)) for v in t["box"])
        patch = img[y0:y1, x0:x1].reshape(-1, 3).astype(int)
        assert len(patch), t
        colors, counts = np.unique(patch, axis=0, return_counts=True)
        bg = colors[counts.argmax()]
        ink = np.abs(patch - bg).sum(axis=1) > 120
        assert ink.sum() >= 3 * len(t["text"].strip().replace(" ", "")) ** 0.5, ("no text drawn", t)


def test_the_stress_text_is_shown_as_it_is(shots):
    _, shot = _load(shots, "1920x1080", "mid-tour")
    text = " ".join(t["text"] for t in shot["text"])
    assert ROOM in text  # the Japanese room name, not ???
    assert shot["missing_glyphs"] == "", shot["fonts"]  # ...and every character of it has a glyph
    assert "vr\\1" in text and "VR?1" not in text  # case and backslash kept
    assert "Vera" in text and "^1" not in text  # colour codes drawn, not printed
    assert "roll -15.0°" in text  # the roll (its 5-digit short: the tooltip)
    assert "RELAYED" in text and "MODEL" in text
    assert LONG_NAME.replace("^7", "") in text  # the long name whole somewhere (panel or label)


@pytest.mark.parametrize("size", SIZES)
def test_only_the_servers_asked_for_are_shown(shots, size):
    """No --sauer: no Sauerbraten row, panel, avatar, tab or map; the Q3 map counts the server's
    players, not only those in our view (3 of the 5 others are in this snapshot)."""
    _, shot = _load(shots, size, "mid-tour")
    texts = [t["text"] for t in shot["text"]]
    assert not any("Sauer" in t for t in texts), [t for t in texts if "Sauer" in t]
    joined = " ".join(texts)
    assert "4 of 6 in view" in joined
    assert "NetSync · 3" in joined


@pytest.mark.parametrize("size", SIZES)
def test_states_read_as_such(shots, size):
    texts = {s: [t["text"] for t in _load(shots, size, s)[1]["text"]] for s in STATES}
    assert "TRACKING LOST" in texts["tracking-loss"] and "tracking OK" in texts["mid-tour"]
    assert any(t.startswith("snap turn ") for t in texts["snap-turn"])
    # the vanilla server: the 16-bit avatar is RELAYED, the VR head beside it a MODEL
    assert "Q3 16-bit" in texts["mid-tour"] and "Q3 VR head" in texts["mid-tour"]


@pytest.mark.parametrize("size", SIZES)
def test_a_crowd_is_drawn_nearest_first_and_counted(shots, size):
    """50 others in the NetSync room: the 3D view draws the nearest 16 and says how many it left
    to the room map (which has them all), so a mirror frame stays cheap for the pose loop."""
    from headcast.app.mirror.window import MAX_SCENE_PEERS

    _, shot = _load(shots, size, "crowd")
    assert shot["scene_left"] == CROWD - MAX_SCENE_PEERS
    texts = [t["text"] for t in shot["text"]]
    assert any(t.endswith(f"{CROWD - MAX_SCENE_PEERS} farther players not drawn: see the room maps") for t in texts), (
        texts
    )
    assert f"NetSync · {CROWD + 1}" in " ".join(texts)
