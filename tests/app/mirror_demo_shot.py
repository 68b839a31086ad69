"""Screenshots of `headcast demo` with its mirror (run by test_mirror_demo.py under Xvfb).

Usage: python mirror_demo_shot.py OUT_DIR [DEMO ARGS...]. Runs the demo in this process — its
real local servers (NetSync; Quake 3 and Sauerbraten when installed), the mock OpenXR runtime
playing the shipped tour — with a mirror that captures one frame in each state of the tour:
start (1 s in, every sink joined), mid-tour (8 s: walking, looking around), snap-turn (two drawn
frames after the rig's first snap, 11–14 s) and tracking-loss (0.3 s into the tour's loss,
14–16 s). Each is saved as <state>.png/.npy/.json (mirror_shot.save). The demo's own output goes
to demo.out; its exit code to demo.json with the states captured.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from headcast.app.mirror import window as mirror_mod

from mirror_shot import save

START_AT, MID_AT, LOST_FOR = 1.0, 8.0, 0.3


class ShotMirror(mirror_mod.MirrorWindow):
    out: Path = Path(".")

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.t0: float | None = None
        self.lost_since: float | None = None
        self.snap_draws: int | None = None
        self.want: str | None = None
        self.saved: dict[str, float] = {}

    def draw(self, loop, now: float) -> bool:
        if self.t0 is None:
            self.t0 = now
        t = now - self.t0
        head = loop.frame.head if loop.frame is not None else None
        lost = head is not None and not head.valid
        self.lost_since = (self.lost_since if self.lost_since is not None else now) if lost else None
        if loop.state is not None and loop.state.snapped and "snap-turn" not in self.saved and self.snap_draws is None:
            self.snap_draws = self.drawn
        due = None
        if "start" not in self.saved and t >= START_AT:
            due = "start"
        elif "mid-tour" not in self.saved and t >= MID_AT:
            due = "mid-tour"
        elif "snap-turn" not in self.saved and self.snap_draws is not None and self.drawn >= self.snap_draws + 2:
            due = "snap-turn"
        elif "tracking-loss" not in self.saved and self.lost_since is not None and now - self.lost_since >= LOST_FOR:
            due = "tracking-loss"
        if due is not None:
            self.capture_next = True
        alive = super().draw(loop, now)
        if due is not None and self.last_pixels is not None and not self.capture_next:
            save(self, self.out, due)
            self.saved[due] = round(t, 2)
            self.last_pixels = None
        return alive


def main(out: Path, args: list[str]) -> None:
    from headcast.app.commands import cli

    ShotMirror.out = out
    shots: list[ShotMirror] = []

    class Recorded(ShotMirror):
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            shots.append(self)

    mirror_mod.MirrorWindow = Recorded  # commands.open_mirror imports it when the demo opens the window
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["demo", "--mirror", *args])
    (out / "demo.out").write_text(buf.getvalue())
    (out / "demo.json").write_text(
        json.dumps({"rc": rc, "saved": shots[0].saved if shots else {}, "drawn": shots[0].drawn if shots else 0})
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
