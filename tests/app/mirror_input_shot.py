"""Click the mirror's plot tabs and press space the way a quick hand does (run by
test_mirror_input.py under Xvfb).

Usage: python mirror_input_shot.py OUT_JSON. The input is real X input: the X server's XTEST
extension (libXtst, through ctypes: x11-utils, which scripts/setup.sh installs, depends on it)
moves the pointer onto a tab, then presses and releases the button — or the space key — with
nothing drawn in between (the press and the release reach the window in the same event poll,
as an instant click or a touchpad tap does). Then the loop runs on and the script notes which
tab the next frames show and whether the plots paused; last it rests the pointer on a row of the
sink panel and notes the tooltip shown. Writes {"clicks": [{"tab", "want", "shown"}...],
"space": {...}, "tooltip": ...}.
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from headcast.app.mirror.window import MirrorWindow  # noqa: E402
from headcast.app.run.loop import FrameLoop  # noqa: E402
from headcast.app.run.rig import Rig  # noqa: E402
from headcast.app.sinks.netsync.sink import NetSyncSink  # noqa: E402
from headcast.app.sinks.q3.sink import Q3Sink  # noqa: E402

from mirror_shot import ConstantHead  # noqa: E402

XK_SPACE = 0x20


class XTest:
    """The X server's XTEST input, through libX11 + libXtst (ctypes)."""

    def __init__(self) -> None:
        self.x11 = ctypes.CDLL("libX11.so.6")
        self.xtst = ctypes.CDLL("libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        for f in (self.x11.XFlush, self.x11.XCloseDisplay):
            f.argtypes = [ctypes.c_void_p]
        self.x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.x11.XKeysymToKeycode.restype = ctypes.c_ubyte
        self.xtst.XTestFakeMotionEvent.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_ulong,
        ]
        self.xtst.XTestFakeButtonEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.dpy = self.x11.XOpenDisplay(None)
        assert self.dpy, "cannot open the X display"

    def move(self, x: int, y: int) -> None:
        self.xtst.XTestFakeMotionEvent(self.dpy, -1, x, y, 0)
        self.x11.XSync(self.dpy, 0)

    def click(self) -> None:
        """Button 1 down and up, sent together: the window receives both in one event poll."""
        self.xtst.XTestFakeButtonEvent(self.dpy, 1, 1, 0)
        self.xtst.XTestFakeButtonEvent(self.dpy, 1, 0, 0)
        self.x11.XSync(self.dpy, 0)

    def tap_key(self, keysym: int) -> None:
        code = self.x11.XKeysymToKeycode(self.dpy, keysym)
        self.xtst.XTestFakeKeyEvent(self.dpy, code, 1, 0)
        self.xtst.XTestFakeKeyEvent(self.dpy, code, 0, 0)
        self.x11.XSync(self.dpy, 0)

    def close(self) -> None:
        self.x11.XCloseDisplay(self.dpy)


def steps_until_drawn(loop, mirror, frames: int) -> None:
    """Run the loop until `frames` more mirror frames have been drawn (bounded: 20 s, for a
    machine under load)."""
    want = mirror.drawn + frames
    deadline = time.perf_counter() + 20.0
    while time.perf_counter() < deadline:
        assert loop.step()
        if mirror.drawn >= want:
            return
    raise AssertionError(f"the mirror drew {mirror.drawn - want + frames} of {frames} frames in 20 s")


def tab_boxes(mirror) -> dict[str, tuple]:
    plots = mirror.last_layout["plots"]
    titles = ("Q3 view", "Q3 VR head", "NetSync", "Latency")
    return {b.text: b.box for b in mirror.last_text if b.text in titles and b.clip[1] >= plots[1] - 1}


def main(out: Path) -> None:
    import glfw

    mirror = MirrorWindow(1280, 720)
    loop = FrameLoop(ConstantHead(10.0), Rig(), [Q3Sink(), NetSyncSink()], mirror=mirror)
    x = XTest()
    result: dict = {"clicks": []}
    try:
        steps_until_drawn(loop, mirror, 3)
        wx, wy = glfw.get_window_pos(mirror.window)
        keys = {"Q3 view": "q3", "Q3 VR head": "q3.head", "NetSync": "netsync", "Latency": "latency"}
        for title in ("NetSync", "Latency", "Q3 VR head", "Q3 view"):
            boxes = tab_boxes(mirror)
            box = boxes[title]
            cx, cy = int((box[0] + box[2]) / 2), int((box[1] + box[3]) / 2)
            x.move(wx + cx, wy + cy)
            steps_until_drawn(loop, mirror, 2)  # the pointer rests on the tab (hovered)
            before = mirror.panel.tab
            # Wait for the mirror's next draw to be as far away as it gets, so that the press
            # and the release surely fall between two drawn frames.
            t_end = time.perf_counter() + 1.0
            drawn = mirror.drawn
            while mirror.drawn == drawn and time.perf_counter() < t_end:
                assert loop.step()
            x.click()
            steps_until_drawn(loop, mirror, 3)
            result["clicks"].append({"tab": title, "want": keys[title], "before": before, "shown": mirror.panel.tab})
        paused = mirror.tracker.paused
        x.tap_key(XK_SPACE)
        steps_until_drawn(loop, mirror, 2)
        result["space"] = {"before": paused, "after": mirror.tracker.paused}
        # Hovering a row of the sink panel shows its precise terms (the row's words are plain).
        result["tooltip_before"] = mirror.panel.tooltip
        box = next(b.box for b in mirror.last_text if b.text.startswith("no server: your aim"))
        x.move(wx + int(box[0]) + 20, wy + int((box[1] + box[3]) / 2))
        steps_until_drawn(loop, mirror, 2)
        result["tooltip"] = mirror.panel.tooltip
    finally:
        x.move(4000, 4000)  # off the window: no later test's window starts under our pointer
        x.close()
        loop.close()
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
