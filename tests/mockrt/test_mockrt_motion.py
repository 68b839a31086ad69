"""Scripted motion: a function of the XrTime located at (keyframe interpolation, exact hex-float
samples at frame times), the shipped files, commands by the clock, errors."""

from __future__ import annotations

import math
import random
import re
import struct
import time
from pathlib import Path

import pytest
import xr
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.xr import mockrt

from support import REPO

START = 1_000_000_000_000  # a stopped runtime clock, for tests that move time themselves


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def ypr_quat(yaw: float, pitch: float, roll: float) -> tuple[float, float, float, float]:
    """The runtime's convention: yaw about +Y, then pitch about +X, then roll about +Z (degrees)."""

    def mul(a, b):
        ax, ay, az, aw = a
        bx, by, bz, bw = b
        return (
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        )

    h = math.pi / 360
    qy = (0.0, math.sin(yaw * h), 0.0, math.cos(yaw * h))
    qp = (math.sin(pitch * h), 0.0, 0.0, math.cos(pitch * h))
    qr = (0.0, 0.0, math.sin(roll * h), math.cos(roll * h))
    return mul(mul(qy, qp), qr)


def quat(pose) -> tuple[float, float, float, float]:
    o = pose.orientation
    return (o.x, o.y, o.z, o.w)


def pos(pose) -> tuple[float, float, float]:
    return (pose.position.x, pose.position.y, pose.position.z)


def run_frames(h, n: int):
    """The head (VIEW in STAGE) at frame times 0..n-1 after begin: no frame calls, time alone."""
    return [h.locate(h.view, h.at(k)) for k in range(n)]


def test_head_yaws_3_degrees_per_frame_and_reads_back_exactly(mock, session, tmp_path):
    motion = tmp_path / "yaw.motion"
    motion.write_text("timebase frames\n0 /user/head pos 0 1.6 0\n0 /user/head ypr 0 0 0\n60 /user/head ypr 180 0 0\n")
    mock.load_motion(motion)
    with session() as h:
        heads = run_frames(h, 61)
        assert quat(h.locate(h.view, h.at(7.5)).pose) == pytest.approx(ypr_quat(22.5, 0, 0), abs=1e-6)  # between frames
    assert mock.frames_waited == 0
    at30 = heads[30]
    assert at30.location_flags == mockrt.TRACKED
    assert math.degrees(2 * math.atan2(at30.pose.orientation.y, at30.pose.orientation.w)) == pytest.approx(
        90.0, abs=1e-4
    )
    for frame in (0, 15, 30, 45):
        assert quat(heads[frame].pose) == pytest.approx(ypr_quat(3.0 * frame, 0, 0), abs=1e-6)
    # at a keyframe the value is the keyframe's, bit for bit
    assert quat(heads[60].pose) == tuple(f32(c) for c in ypr_quat(180, 0, 0))
    assert pos(heads[30].pose) == (0.0, f32(1.6), 0.0)


def test_exact_samples_replay_bit_identical(mock, session, tmp_path):
    rng = random.Random(5)
    frames = []
    lines = ["timebase frames", "interpolate off"]
    for i in range(20):
        q = [rng.uniform(-1, 1) for _ in range(4)]
        n = math.sqrt(sum(c * c for c in q))
        q = [f32(c / n) for c in q]  # float32, normalised in float64 then rounded: not exactly unit
        p = [f32(rng.uniform(-2, 2)) for _ in range(3)]
        frames.append((p, q))
        lines.append(f"{i} /user/head pose " + " ".join(v.hex() for v in p + q))
    motion = tmp_path / "samples.motion"
    motion.write_text("\n".join(lines) + "\n")
    mock.load_motion(motion)
    with session() as h:
        heads = run_frames(h, 22)
    for i, (p, q) in enumerate(frames):
        assert pos(heads[i].pose) == tuple(p), i
        assert quat(heads[i].pose) == tuple(q), i
    assert quat(heads[21].pose) == tuple(frames[-1][1])  # the last sample holds


def test_look_around_sweeps_past_the_clamps(mock, session):
    mock.load_motion(mockrt.motion_path("look_around"))
    with session() as h:
        heads = run_frames(h, 12 * 90 + 1)
    expect = {
        90: (120, 0, 0),
        270: (-120, 0, 0),
        450: (0, 85, 0),
        630: (0, -85, 0),
        810: (0, 0, 70),
        990: (0, 0, -70),
        45: (60, 0, 0),
    }
    for frame, ypr in expect.items():
        assert quat(heads[frame].pose) == pytest.approx(ypr_quat(*ypr), abs=1e-5), frame


def test_tracking_loss_drops_and_recovers(mock, session):
    mock.load_motion(mockrt.motion_path("tracking_loss"))
    with session() as h:
        heads = run_frames(h, 3 * 90 + 20)
    assert heads[45].location_flags == mockrt.TRACKED
    inferred = heads[int(1.5 * 90)]
    assert inferred.location_flags == mockrt.ORIENTATION_VALID | mockrt.POSITION_VALID | mockrt.ORIENTATION_TRACKED
    lost = heads[int(2.5 * 90)]
    assert lost.location_flags == 0
    assert quat(lost.pose) == (0, 0, 0, 1) and pos(lost.pose) == (0, 0, 0)  # no stale pose behind a zero flag
    assert heads[3 * 90 + 10].location_flags == mockrt.TRACKED


def test_loop_and_commands_by_the_clock(mock, session, tmp_path):
    motion = tmp_path / "loop.motion"
    motion.write_text("timebase frames\nloop on\n0 /user/head pos 0 0 0\n10 /user/head pos 1 0 0\n12 !unfocus\n")
    mock.load_motion(motion)
    mock.set_clock(START)
    with session(focus=True) as h:
        heads = run_frames(h, 16)
        h.goto(11.9)
        assert h.events() == []  # locating in the future does not run the command
        h.goto(12)
        assert h.events() == [xr.SessionState.VISIBLE]
    assert pos(heads[5].pose) == pytest.approx((0.5, 0, 0))
    assert pos(heads[15].pose) == pytest.approx((0.5, 0, 0))  # frame 15 wraps to 5


def test_script_layers_on_top_of_motion(mock, session, tmp_path):
    base = tmp_path / "base.motion"
    base.write_text("timebase frames\n0 /user/head pos 0 1 0\n")
    script = tmp_path / "script.motion"
    script.write_text("timebase frames\ninterpolate off\n3 /user/head pos 0 2 0\n")
    mock.load_motion(base)
    mock.load_script(script)
    with session() as h:
        heads = run_frames(h, 5)
    assert [pos(x.pose)[1] for x in heads] == [1, 1, 1, 2, 2]


@pytest.mark.parametrize(
    "text, line",
    [
        ("0 /user/head ypr 0 0\n", 1),
        ("timebase hours\n", 1),
        ("0 /user/head pos 0 0 0\n# ok\n0 /user/nose pos 0 0 0\n", 3),
        ("1 /user/head pos 0 0 0\n0 /user/head pos 1 0 0\n", 2),
        ("0 /user/hand/left/input/thumbstick 1\n", 1),
        ("0 /user/head flags pv,xx\n", 1),
        ("0 !explode\n", 1),
        ("nan /user/head pos 0 0 0\n", 1),
    ],
)
def test_bad_motion_files_name_the_line(mock, tmp_path, text, line):
    bad = tmp_path / "bad.motion"
    bad.write_text(text)
    with pytest.raises(mockrt.MockControlError, match=f"bad.motion:{line}:"):
        mock.load_motion(bad)


def test_motion_from_the_environment(mock, session, tmp_path, monkeypatch):
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(mockrt.motion_path("walk")))
    with session() as h:
        assert pos(h.locate(h.view, h.at(90)).pose)[1] == pytest.approx(1.58)  # the walk's head bob
    mock.reset()
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(tmp_path / "missing.motion"))
    with pytest.raises(xr.RuntimeFailureError):
        with session():
            pass


TOKENS = st.sampled_from(
    [
        "0",
        "1.5",
        "-2",
        "0x1.8p+1",
        "nan",
        "1e400",
        "timebase",
        "frames",
        "seconds",
        "interpolate",
        "loop",
        "on",
        "off",
        "rate",
        "/user/head",
        "/user/hand/left",
        "/user/hand/right/input/trigger/value",
        "/user/hand/left/input/thumbstick",
        "/user/hand/right/input/aim/pose",
        "pos",
        "ypr",
        "quat",
        "pose",
        "flags",
        "ov,pv",
        "all",
        "none",
        "!exit",
        "!loss",
        "#",
        "\t",
        "x" * 300,
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.lists(TOKENS, max_size=12).map(" ".join), max_size=12), tail=st.binary(max_size=64))
def test_any_text_loads_or_fails_with_a_message(mock, tmp_path, lines, tail):
    bad = tmp_path / "fuzz.motion"
    bad.write_bytes("\n".join(lines).encode() + b"\n" + tail)
    try:
        mock.load_motion(bad)
    except mockrt.MockControlError as exc:
        assert re.search(r"fuzz\.motion:\d+: \S", str(exc)), str(exc)  # file, line, and why


def test_overlong_lines_are_refused(mock, tmp_path):
    bad = tmp_path / "long.motion"
    bad.write_text("0 /user/head pos 0 0 0 " + " " * 2000 + "\n")
    with pytest.raises(mockrt.MockControlError, match="long.motion:1: line longer"):
        mock.load_motion(bad)


def test_binary_files_are_refused_at_the_line(mock, tmp_path):
    bad = tmp_path / "nul.motion"
    bad.write_bytes(b"0 /user/head pos 0 0 0\n\0\0garbage\n")
    with pytest.raises(mockrt.MockControlError, match=r"nul\.motion:2: NUL byte"):
        mock.load_motion(bad)
    bad.write_bytes(b"0 /user/head\0 pos 0 0 0\n")
    with pytest.raises(mockrt.MockControlError, match=r"nul\.motion:1: NUL byte"):
        mock.load_motion(bad)


# --- finding and checking motion files ---------------------------------------------------------


def test_motion_path_in_the_editable_install():
    import headcast.assets

    # the case that broke: the namespace package's __path__ holds the editable finder's hook entry,
    # which is no directory (importlib.resources.files() raises NotADirectoryError on it)
    entries = [Path(e) for e in headcast.assets.__path__]
    assert any(not e.is_dir() for e in entries), f"not an editable install? {entries}"
    assert mockrt.motion_path("walk") == REPO / "assets" / "motions" / "walk.motion"
    assert mockrt.motion_path("fire.motion") == REPO / "assets" / "motions" / "fire.motion"
    assert mockrt.shipped_motions() == ["fire", "look_around", "snap_turns", "tracking_loss", "walk"]
    with pytest.raises(FileNotFoundError, match=r"'nope.motion' in assets/motions \(shipped: fire, look_around"):
        mockrt.motion_path("nope")


def test_runtime_env_refuses_a_missing_motion_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.motion"):
        mockrt.runtime_env(tmp_path / "missing.motion")
    with pytest.raises(FileNotFoundError, match="shipped: "):
        mockrt.runtime_env("no_such_shipped_motion")
    env = mockrt.runtime_env("walk", script=mockrt.motion_path("fire"), throttle=False)
    assert env["HEADCAST_MOCK_MOTION"] == str(REPO / "assets" / "motions" / "walk.motion")
    assert env["HEADCAST_MOCK_SCRIPT"] == str(REPO / "assets" / "motions" / "fire.motion")


def test_check_motion_names_file_and_line_and_plays_nothing(mock, session, tmp_path):
    for name in mockrt.shipped_motions():
        mockrt.check_motion(mockrt.motion_path(name))
    bad = tmp_path / "bad.motion"
    bad.write_text("0 /user/head pos 0 1.6 0\n# fine so far\n0.5 /user/head bogus 1 2\n")
    with pytest.raises(mockrt.MockControlError, match=r"motion file: .*bad\.motion:3: unknown pose channel"):
        mockrt.check_motion(bad)
    with pytest.raises(mockrt.MockControlError, match=r"missing\.motion: No such file"):
        mock.check_motion(tmp_path / "missing.motion")
    # a directory opens but cannot be read: an error, not an empty motion
    with pytest.raises(mockrt.MockControlError, match=r":1: cannot read: Is a directory"):
        mock.check_motion(tmp_path)
    with pytest.raises(mockrt.MockControlError, match="Is a directory"):
        mock.load_motion(tmp_path)
    # checking loads nothing: the session sees the default head, not the checked file's
    mock.check_motion(mockrt.motion_path("walk"))
    with session() as h:
        frames = run_frames(h, 91)
        assert pos(frames[90].pose) == pos(frames[0].pose)  # the walk would bob the head


# --- time: the runtime's clocks ----------------------------------------------------------------


def test_a_headless_app_sees_motion_at_the_runtimes_now(mock, session):
    """A spec-following headless loop: the time from XR_KHR_convert_timespec_time, no frame calls,
    a session left READY (Monado's way): the head still moves as time passes."""
    mock.load_motion(mockrt.motion_path("look_around"))
    with session() as h:
        seen = set()
        deadline = time.monotonic() + 10
        while len(seen) < 5 and time.monotonic() < deadline:  # bounded: 5 poses in ≤ 10 s
            seen.add(quat(h.locate(h.view).pose))
            time.sleep(0.02)
        assert len(seen) >= 5
        assert mock.frames_waited == 0 and mock.session_state == xr.SessionState.READY.value


def test_stopped_and_step_clocks(mock, session, tmp_path):
    motion = tmp_path / "ramp.motion"
    motion.write_text("timebase frames\n0 /user/head pos 0 0 0\n100 /user/head pos 100 0 0\n")
    mock.load_motion(motion)
    mock.set_clock(START)
    with session() as h:
        assert mock.begin_time == START and mock.now == START
        assert abs(h.now() - START) < 50_000_000  # the timespec conversion keeps the stopped clock's offset
        mock.advance_clock(h.at(10) - START)
        assert pos(h.locate(h.view, mock.now).pose)[0] == 10.0
        with pytest.raises(mockrt.MockControlError, match="does not go back"):
            mock.advance_clock(-1)
    mock.step_clock()
    with session() as h:  # each time query (here the timespec conversion) reads the next frame slot
        assert [pos(h.locate(h.view).pose)[0] for _ in range(4)] == pytest.approx([0, 1, 2, 3], abs=1e-5)
        assert mock.now == h.at(3)
    mock.set_clock(0)
    with pytest.raises(mockrt.MockControlError, match="real clock"):
        mock.advance_clock(1)


def test_a_time_located_again_sees_every_change(mock, session, tmp_path):
    """The runtime samples its devices once per time asked for and answers a frame's locates at that
    time from the sample (as a tracker does per display time); a pose or tracking change, a motion
    loaded or cleared shows at that same time at once."""
    all_flags = 0xF
    motion = tmp_path / "up.motion"
    motion.write_text("timebase frames\n0 /user/head pos 0 5 0\n")
    with session() as h:
        t = h.at(5)
        assert pos(h.locate(h.view, t).pose) == pytest.approx((0, 1.6, 0))
        assert pos(h.locate(h.view, t).pose) == pytest.approx((0, 1.6, 0))
        mock.set_pose("/user/head", (1, 2, 3))
        assert pos(h.locate(h.view, t).pose) == pytest.approx((1, 2, 3))
        mock.set_tracking("/user/head", 0)
        assert h.locate(h.view, t).location_flags == 0
        mock.set_tracking("/user/head", all_flags)
        assert h.locate(h.view, t).location_flags == all_flags
        mock.load_motion(motion)
        assert pos(h.locate(h.view, t).pose) == pytest.approx((0, 5, 0))  # the track sets all three
        mock.clear_motion()
        assert pos(h.locate(h.view, t).pose) == pytest.approx((1, 2, 3))
