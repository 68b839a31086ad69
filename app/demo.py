"""`headcast demo`: the whole pipeline on this machine, on an embedded default."""
from __future__ import annotations

import argparse
import json
import sys
import time

from headcast.app.q3map import q3_intent, remote_head
from headcast.app.rig import Rig, RigSettings
from headcast.app.synthetic import LOOK_AROUND, SyntheticSource

HEADER = (f"{'t':>5} {'head p/y/r':>19} {'weapon y':>8} {'buttons':>10} {'roll':>5} "
          f"{'far side p/yoff/r':>19} {'origin yaw':>10}")


def cmd_demo(args: argparse.Namespace) -> int:
    rate = 90.0
    source = SyntheticSource(LOOK_AROUND, rate)
    rig = Rig(RigSettings())
    out = sys.stdout
    if not args.json:
        print("headcast demo: scripted head motion (embedded look_around) → Quake 3 VR usercmd fields", file=out)
        print(HEADER, file=out)
    frames = int(args.duration * rate)
    for _ in range(frames):
        frame = source.next_frame()
        state = rig.update(frame, 1.0 / rate)
        intent = q3_intent(state, frame.controls, vr=True, move_speed=rig.settings.move_speed)
        if frame.seq % 9:
            continue
        seen = remote_head(intent.buttons, intent.roll_short)
        t = frame.time_ns / 1e9
        if args.json:
            print(json.dumps({"t": round(t, 3), "head": intent.head, "weapon": intent.angles[:2],
                              "buttons": intent.buttons, "roll_short": intent.roll_short,
                              "seen": None if seen is None else [seen.pitch, seen.yaw_offset, seen.roll],
                              "origin_yaw": state.origin.yaw}), file=out, flush=True)
            continue
        head = "   (tracking lost)  " if intent.head is None else "{:6.1f} {:6.1f} {:5.1f}".format(*intent.head)
        far = "  (no head bits)   " if seen is None else f"{seen.pitch:6.1f} {seen.yaw_offset:6.1f} {seen.roll:5.1f}"
        print(f"{t:5.2f} {head:>19} {intent.angles[1]:8.1f} {intent.buttons:#010x} "
              f"{intent.roll_short:5d} {far:>19} {state.origin.yaw:10.1f}", file=out, flush=True)
    source.close()
    return 0
