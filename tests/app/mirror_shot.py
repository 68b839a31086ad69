"""Render the mirror for known head poses and save what it drew (run by test_mirror.py under Xvfb).

Usage: python mirror_shot.py OUT_DIR. Writes pitch_<P>.png (artifact), .npy (pixels) and .json
(`save`: where the scene was drawn — its rect, the avatars' anchors, the view-projection — and
every text box), and state.json with the window/resize/minimise/close observations. Runs in its
own process so its glfw/GL state never meets another test's.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from headcast.app.mirror.window import MirrorWindow
from headcast.app.run.loop import FrameLoop
from headcast.app.run.rig import Rig
from headcast.app.run.synthetic import orientation
from headcast.app.sinks.netsync.sink import NetSyncSink
from headcast.app.sinks.q3.sink import Q3Sink
from headcast.xr.frame import Controls, Pose, TrackingFrame

PITCHES = (-40.0, 40.0)  # Quake sense: -40 looks up, +40 looks down
FRAMES = 40  # at 90 Hz: the receiver's 30 ms EMA has long converged


class ConstantHead:
    """A head held at one pitch, paced at 90 Hz."""

    def __init__(self, pitch: float) -> None:
        self.pitch, self.seq, self.t0 = pitch, 0, time.perf_counter()

    def next_frame(self) -> TrackingFrame:
        due = self.t0 + self.seq / 90
        if (d := due - time.perf_counter()) > 0:
            time.sleep(d)
        head = Pose((0.0, 1.6, 0.0), orientation(self.pitch, 0.0, 0.0), True, True, True, True)
        hand = Pose((0.2, 1.2, -0.3), orientation(0.0, 0.0, 0.0), True, True, True, True)
        f = TrackingFrame(self.seq, int(self.seq * 1e9 / 90), head, hand, hand, hand, hand, Controls(), focused=True)
        self.seq += 1
        return f

    def close(self) -> None:
        pass


def save(mirror: MirrorWindow, out: Path, name: str) -> None:
    """The captured frame as PNG + pixels, and what the tests need to read it (json)."""
    rect, anchors, vp = mirror.last_scene
    np.save(out / f"{name}.npy", mirror.last_pixels)
    mirror.screenshot(out / f"{name}.png")
    (out / f"{name}.json").write_text(
        json.dumps(
            {
                "scene": {"rect": list(rect), "anchors": {k: list(v) for k, v in anchors.items()}, "vp": vp.tolist()},
                "text": [
                    {"text": b.text, "box": list(b.box), "clip": list(b.clip), "color": list(b.color)}
                    for b in mirror.last_text
                ],
                "layout": {k: list(v) for k, v in mirror.last_layout.items()},
                "hidden_rows": mirror.panel.hidden_rows,
                "hidden_labels": mirror.panel.hidden_labels,
                "scene_left": mirror.scene_left,
                "size": list(mirror.last_pixels.shape[:2][::-1]),
                "fonts": mirror.ui.fonts,
                "missing_glyphs": mirror.ui.missing_glyphs("".join(b.text for b in mirror.last_text)),
            },
            ensure_ascii=False,
        )
    )


def main(out: Path) -> None:
    import glfw

    mirror = MirrorWindow(1280, 720)
    state: dict = {}
    for pitch in PITCHES:
        loop = FrameLoop(ConstantHead(pitch), Rig(), [Q3Sink(), NetSyncSink()], mirror=mirror)
        for _ in range(FRAMES):
            assert loop.step()
        mirror.capture_next = True
        assert loop.step()
        save(mirror, out, f"pitch_{pitch:+.0f}")
    # Pause: the plots' time stands still while the loop goes on; the header and button say so.
    mirror.toggle_pause()
    held = mirror.tracker.now
    for _ in range(20):
        assert loop.step()
    mirror.capture_next = True
    assert loop.step()
    texts = [b.text for b in mirror.last_text]
    state["paused"] = {
        "held": mirror.tracker.now == held and mirror.tracker.paused,
        "said": "plots paused" in texts and "Resume (space)" in texts,
    }
    mirror.toggle_pause()
    assert loop.step()
    state["resumed"] = not mirror.tracker.paused and mirror.tracker.now > held
    # Resize: the next frame is drawn at the new framebuffer size.
    glfw.set_window_size(mirror.window, 800, 600)
    mirror.capture_next = True
    for _ in range(20):
        glfw.poll_events()
        if glfw.get_framebuffer_size(mirror.window) == (800, 600):
            break
        time.sleep(0.05)
    assert loop.step()
    state["resized"] = list(mirror.last_pixels.shape)
    # Minimise: drawing is skipped, the loop goes on.
    glfw.iconify_window(mirror.window)
    state["minimised_step"] = all(loop.step() for _ in range(5))
    glfw.restore_window(mirror.window)
    # Close: the loop ends, saying why.
    glfw.set_window_should_close(mirror.window, True)
    state["after_close_step"] = loop.step()
    state["stop_reason"] = loop.stop_reason
    loop.close()
    (out / "state.json").write_text(json.dumps(state))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
