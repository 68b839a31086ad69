"""The mirror window under Xvfb (Mesa llvmpipe): screenshots of known poses checked by pixels.

mirror_shot.py renders a head looking 40° up, then 40° down, and saves the frames (PNG
artifacts + raw pixels). Each avatar's nose has its own colour; its pixels must sit where the
scene's camera projects that avatar's nose — for the Quake 3 avatar that is the head as a VR
receiver rebuilds it from the 7-bit pitch (EMA-smoothed), for NetSync the decoded body.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from headcast.app import scene
from headcast.app.synthetic import orientation
from headcast.netcode.q3.vrhead import pack7, unpack7
from support import REPO

pytestmark = pytest.mark.display

NOSE_OFFSET = (0.0, -0.02, -0.2)  # scene.head_triangles: the nose box centre in the head frame


def nose_mask(img: np.ndarray, kind: str) -> np.ndarray:
    """Pixels whose hue is the avatar's nose colour (any of the face shades)."""
    rgb = img.astype(float)
    m = rgb.max(axis=2)
    n = rgb / np.maximum(m, 1.0)[..., None]
    bright = m > 50
    r, g, b = n[..., 0], n[..., 1], n[..., 2]
    if kind == "q3":        # (1.0, 0.9, 0.1): yellow (the orange head has g ≈ 0.58)
        return bright & (r > 0.9) & (g > 0.8) & (b < 0.3)
    if kind == "netsync":   # (0.9, 0.2, 0.9): magenta
        return bright & (r > 0.8) & (g < 0.4) & (b > 0.8)
    return bright & (g > 0.9) & (r < 0.4) & (b < 0.5)   # tracked: (0.2, 0.9, 0.3) green


def expected_nose(kind: str, pitch: float, w: int, h: int) -> tuple[float, float]:
    if kind == "q3":  # what the receiver decodes from the 7 bits
        pitch = float(unpack7(pack7(pitch, 80.0)))
    q = orientation(pitch, 0.0, 0.0)
    c = np.array(scene.ANCHORS[kind]) + scene.quat_matrix(q) @ np.array(NOSE_OFFSET)
    return scene.project(scene.view_projection(w, h), tuple(c), w, h)


def centroid(mask: np.ndarray, around: tuple[float, float], radius: int = 90) -> tuple[float, float]:
    x0, y0 = int(around[0]), int(around[1])
    sub = np.zeros_like(mask)
    sub[max(0, y0 - radius):y0 + radius, max(0, x0 - radius):x0 + radius] = True
    ys, xs = np.nonzero(mask & sub)
    assert len(xs) >= 20, f"no nose drawn near {around}"
    return float(xs.mean()), float(ys.mean())


@pytest.fixture(scope="module")
def shots(xvfb_display, artifacts_dir):
    out = artifacts_dir / "mirror"
    out.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11")
    r = subprocess.run([sys.executable, str(Path(__file__).with_name("mirror_shot.py")), str(out)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.mark.parametrize("kind", ["tracked", "q3", "netsync"])
def test_each_avatar_shows_the_head_pitch(shots, kind):
    up, down = np.load(shots / "pitch_-40.npy"), np.load(shots / "pitch_+40.npy")
    h, w, _ = up.shape
    assert (w, h) == (1280, 720)
    seen = {}
    for pitch, img in ((-40.0, up), (40.0, down)):
        want = expected_nose(kind, pitch, w, h)
        got = centroid(nose_mask(img, kind), want)
        assert abs(got[0] - want[0]) < 20 and abs(got[1] - want[1]) < 20, (kind, pitch, got, want)
        seen[pitch] = got
    # Looking down puts the nose lower on the screen than looking up.
    assert seen[40.0][1] - seen[-40.0][1] > 25


def test_hud_and_plots_are_drawn(shots):
    img = np.load(shots / "pitch_+40.npy")
    h, w, _ = img.shape
    hud = img[:60, :700]
    assert (hud.min(axis=2) > 200).sum() > 500            # white HUD text, top left
    plots = img[int(h * 0.7):, :]
    orange = (plots[..., 0] > 180) & (plots[..., 1] > 90) & (plots[..., 1] < 170) & (plots[..., 2] < 60)
    assert orange.sum() > 50                               # the "seen" pitch trace


def test_resize_minimise_and_close(shots):
    state = json.loads((shots / "state.json").read_text())
    assert state["resized"][:2] == [600, 800]
    assert state["minimised_step"] is True
    assert state["after_close_step"] is False and state["stop_reason"] == "mirror window closed"
    assert (shots / "pitch_+40.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gl_session_shares_the_mirror_context(xvfb_display):
    """An OpenGL XR session (mock runtime) bound to the mirror window's context: both run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_", "XR_"))}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11", HEADCAST_XR_SESSION="gl")
    r = subprocess.run([sys.executable, "-m", "headcast.app", "run", "--mock", "look_around", "--mirror",
                        "--duration", "1.5", "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["stopped"] == "ran for 1.5 s" and summary["frames"] > 60
