"""The mirror window under Xvfb (Mesa llvmpipe): screenshots of known poses checked by pixels.

mirror_shot.py renders a head looking 40° up, then 40° down, and saves the frames (PNG
artifacts + raw pixels + where the scene was drawn). Each avatar's nose has its own colour; its
pixels must sit where the scene's camera projects that avatar's nose — for the Quake 3 avatar
that is the head as a VR receiver rebuilds it from the 7-bit pitch (EMA-smoothed), for NetSync the
decoded body.
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
from headcast.app.run.synthetic import orientation
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
    if kind == "q3vr":  # (1.0, 1.0, 0.6): pale yellow (the grey tracked head has b = r)
        return bright & (r > 0.9) & (g > 0.9) & (b > 0.45) & (b < 0.75)
    if kind == "netsync":  # (0.9, 0.2, 0.9): magenta
        return bright & (r > 0.8) & (g < 0.4) & (b > 0.8)
    return bright & (g > 0.9) & (r < 0.4) & (b < 0.5)  # tracked: (0.2, 0.9, 0.3) green


def window_point(shot: dict, p) -> tuple[float, float]:
    """A world point in window pixels, by the scene's own view-projection and rect (shot json)."""
    rect, vp = shot["scene"]["rect"], np.array(shot["scene"]["vp"])
    at = scene.project(vp, tuple(p), int(rect[2] - rect[0]), int(rect[3] - rect[1]))
    return rect[0] + at[0], rect[1] + at[1]


def expected_nose(shot: dict, kind: str, pitch: float) -> tuple[float, float]:
    if kind == "q3vr":  # what the receiver decodes from the 7 bits
        pitch = float(unpack7(pack7(pitch, 80.0)))
    q = orientation(pitch, 0.0, 0.0)
    c = np.array(shot["scene"]["anchors"][kind]) + scene.quat_matrix(q) @ np.array(NOSE_OFFSET)
    return window_point(shot, c)


def centroid(mask: np.ndarray, around: tuple[float, float], radius: int = 90) -> tuple[float, float]:
    x0, y0 = int(around[0]), int(around[1])
    sub = np.zeros_like(mask)
    sub[max(0, y0 - radius) : y0 + radius, max(0, x0 - radius) : x0 + radius] = True
    ys, xs = np.nonzero(mask & sub)
    assert len(xs) >= 20, f"no nose drawn near {around}"
    return float(xs.mean()), float(ys.mean())


@pytest.fixture(scope="module")
def shots(xvfb_display, artifacts_dir):
    out = artifacts_dir / "mirror"
    out.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11")
    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("mirror_shot.py")), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.mark.parametrize("kind", ["tracked", "q3vr", "netsync"])
def test_each_avatar_shows_the_head_pitch(shots, kind):
    seen, wanted = {}, {}
    for pitch in (-40.0, 40.0):
        img = np.load(shots / f"pitch_{pitch:+.0f}.npy")
        shot = json.loads((shots / f"pitch_{pitch:+.0f}.json").read_text())
        assert img.shape[:2] == (720, 1280)
        want = expected_nose(shot, kind, pitch)
        got = centroid(nose_mask(img, kind), want)
        assert abs(got[0] - want[0]) < 20 and abs(got[1] - want[1]) < 20, (kind, pitch, got, want)
        seen[pitch], wanted[pitch] = got, want
    # Looking down puts the nose lower on the screen than looking up, by most of what the camera says.
    drop = wanted[40.0][1] - wanted[-40.0][1]
    assert drop > 15 and seen[40.0][1] - seen[-40.0][1] > 0.6 * drop


def test_hud_and_plots_are_drawn(shots):
    img = np.load(shots / "pitch_+40.npy")
    shot = json.loads((shots / "pitch_+40.json").read_text())
    x0, y0, x1, y1 = (int(v) for v in shot["layout"]["header"])
    assert (img[y0:y1, x0:x1].min(axis=2) > 200).sum() > 300  # white header text
    texts = [t["text"] for t in shot["text"]]
    assert "headcast" in texts and any(t.startswith("frame ") for t in texts)
    assert texts.count("OFFLINE") >= 2  # no server: each far side says so
    x0, y0, x1, y1 = (int(v) for v in shot["layout"]["plots"])
    plots = img[y0:y1, x0:x1]
    orange = (plots[..., 0] > 180) & (plots[..., 1] > 90) & (plots[..., 1] < 170) & (plots[..., 2] < 60)
    assert orange.sum() > 50  # the "seen" pitch trace (Q3's colour)
    white = plots.min(axis=2) >= 240  # SENT_COLOR (242); text is 237 at most
    assert white.sum() > 50  # the "sent" trace


def test_pause_freezes_the_plots_and_says_so(shots):
    state = json.loads((shots / "state.json").read_text())
    assert state["paused"] == {"held": True, "said": True} and state["resumed"] is True


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
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "run",
            "--mock",
            "look_around",
            "--mirror",
            "--duration",
            "1.5",
            "--json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["stopped"] == "ran for 1.5 s" and summary["frames"] > 60
