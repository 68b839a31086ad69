"""Record a session's TrackingFrames, replay the trace through the mock: the same frames come back."""

from __future__ import annotations

import struct

import pytest

from headcast.xr.mockrt import PROFILES
from headcast.xr.session import XRSession
from headcast.xr.trace import TraceWriter, frame_row, motion_text, read_trace, replay

N_FRAMES = 60

# Interpolated (slerped / lerped) motion, so the recorded floats are arbitrary float32 values,
# with tracking loss, a 3-DoF head stretch, focus loss, and every kind of input.
RECORDED_MOTION = """\
rate 90
0.0 /user/head pose 0 1.6 0 0 0 0 1
0.3 /user/head ypr 40 -25 10
0.6 /user/head ypr -70 30 -45
0.0 /user/hand/left/input/aim/pose pose -0.2 1.2 -0.3 0 0 0 1
0.6 /user/hand/left/input/aim/pose ypr 30 20 0
0.0 /user/hand/right/input/grip/pose pos 0.2 1.1 -0.2
0.6 /user/hand/right/input/grip/pose pos 0.35 1.4 -0.6
0.0 /user/hand/right/input/trigger/value 0
0.5 /user/hand/right/input/trigger/value 1
0.0 /user/hand/left/input/squeeze/value 0.3
0.0 /user/hand/left/input/thumbstick 0 0
0.4 /user/hand/left/input/thumbstick 0.7 -0.6
0.0 /user/hand/right/input/thumbstick -0.3 0.9
0.0 /user/hand/right/input/a/click 0
0.2 /user/hand/right/input/a/click 1
0.3 /user/hand/right/input/a/click 0
0.0 /user/hand/left/input/menu/click 0
0.25 /user/hand/left/input/menu/click 1
0.0 /user/hand/left/input/b/click 0
0.25 /user/hand/left/input/b/click 1
0.1 /user/hand/right flags none
0.15 /user/hand/right flags ov,pv
0.2 /user/hand/right flags all
0.35 /user/head flags ov,ot
0.4 /user/head flags all
0.45 !unfocus
0.5 !focus
"""


def bits(frame) -> tuple:
    """A frame as raw IEEE bytes of every float plus the flags/controls/profiles, time left out."""
    row = frame_row(frame)
    del row[1]  # time_ns: the replay runs at its own time

    def enc(x):
        if isinstance(x, float):
            return struct.pack("<d", x)
        if isinstance(x, list):
            return tuple(enc(y) for y in x)
        return x

    return enc(row)


def record(ctl, tmp_path, monkeypatch, profile: str):
    motion = tmp_path / "recorded.motion"
    motion.write_text(RECORDED_MOTION)
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion))
    monkeypatch.setenv("HEADCAST_MOCK_PROFILE", profile)
    path = tmp_path / "session.trace"
    ctl.step_clock()  # frame i at the motion's frame i (the replay locates there too)
    with XRSession() as xs, TraceWriter(path, meta={"runtime": xs.info.runtime}) as w:
        ctl.focus()  # the mock leaves a headless session READY, as Monado does; hands need focus
        for _ in range(N_FRAMES):
            w.write(xs.next_frame())
    monkeypatch.delenv("HEADCAST_MOCK_MOTION")
    monkeypatch.delenv("HEADCAST_MOCK_PROFILE")
    ctl.reset()
    return path


@pytest.mark.parametrize("profile", PROFILES)
def test_record_then_replay_is_bit_identical(ctl, tmp_path, monkeypatch, profile):
    path = record(ctl, tmp_path, monkeypatch, profile)
    recorded = read_trace(path).frames
    assert len(recorded) == N_FRAMES
    # The recording exercised what it should (or the comparison below proves little).
    assert any(not f.right_grip.valid for f in recorded) and any(f.right_grip.valid for f in recorded)
    assert any(f.head.orientation_valid and not f.head.position_valid for f in recorded)
    assert any(not f.focused for f in recorded)
    if "simple" not in profile:  # its trigger is select/click: 0 or 1
        assert any(f.controls.trigger_right not in (0.0, 1.0) for f in recorded)
    assert any(f.controls.jump or f.controls.menu for f in recorded)
    assert len({f.head.orientation for f in recorded}) > N_FRAMES // 2
    assert all(f.profile_right == profile for f in recorded)

    replayed = list(replay(path))
    assert len(replayed) == N_FRAMES
    for a, b in zip(recorded, replayed):
        assert bits(a) == bits(b), f"frame {a.seq} differs:\n{a}\n{b}"
    assert not ctl.instance_alive


def test_replay_motion_is_hex_and_sparse(ctl, tmp_path, monkeypatch):
    recorded = read_trace(record(ctl, tmp_path, monkeypatch, PROFILES[1])).frames
    text = motion_text(recorded, PROFILES[1])
    lines = text.splitlines()
    assert lines[1:3] == ["timebase frames", "interpolate off"]
    head = [ln for ln in lines if ln.split()[1:3] == ["/user/head", "pose"]]
    assert head[0].startswith("0 /user/head pose 0x0.0p+0 0x1.99999a0000000p+0 ")
    # Values persist in the runtime: a pose that does not change is not repeated.
    held = sum(
        1
        for a, b in zip(recorded, recorded[1:])
        if a.head.position == b.head.position and a.head.orientation == b.head.orientation
    )
    assert len(head) == N_FRAMES - held
