"""The swarm's motion reader (app/swarm/motion.py) against the mock runtime's own C parser and
interpolation (the oracle: every shipped motion, head and hand poses at every third frame), its
errors (file:line, never a crash: fuzzed), and the per-spot protocol tables."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.app.run.mock import find_motion, shipped_motions
from headcast.app.swarm.motion import MotionError, Script, motion_frames, parse_motion, spots
from headcast.xr import mockrt

from support import mock_control

POSE_PATHS = {
    "/user/head": "head",
    "/user/hand/right/input/aim/pose": "right_aim",
    "/user/hand/left/input/grip/pose": "left_grip",
    "/user/hand/right/input/grip/pose": "right_grip",
}


@pytest.fixture
def mock(monkeypatch):
    yield from mock_control(mockrt.ensure_runtime(), monkeypatch, paced=False)


def _begun_session():
    import xr

    info = xr.ApplicationInfo(application_name="swarm-motion-oracle")
    inst = xr.create_instance(
        xr.InstanceCreateInfo(application_info=info, enabled_extension_names=[xr.MND_HEADLESS_EXTENSION_NAME])
    )
    sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
    session = xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
    xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
    return inst


def test_poses_equal_the_mock_runtime_for_every_shipped_motion(mock):
    import xr

    mock.set_clock(10**12)
    inst = _begun_session()
    try:
        for name in shipped_motions():
            path = find_motion(name)
            mock.load_motion(path)
            frames = motion_frames(path)
            worst = 0.0
            for i in range(0, len(frames), 3):
                mock.set_clock(mock.at(i))
                for xr_path, attr in POSE_PATHS.items():
                    p, q = mock.get_pose(xr_path)
                    mine = getattr(frames[i], attr)
                    dq = min(
                        max(abs(a - b) for a, b in zip(q, mine.orientation)),
                        max(abs(a + b) for a, b in zip(q, mine.orientation)),
                    )
                    worst = max(worst, dq, *(abs(a - b) for a, b in zip(p, mine.position)))
            assert worst < 1e-6, f"{name}: differs from the mock runtime by {worst}"  # float32 vs double
    finally:
        xr.destroy_instance(inst)


def test_controls_and_tracking_flags_follow_the_file(tmp_path):
    f = tmp_path / "m.motion"
    f.write_text(
        "timebase frames\n0 /user/hand/left/input/thumbstick 0 0\n90 /user/hand/left/input/thumbstick 0 1\n"
        "0 /user/hand/right/input/trigger/value 1\n45 /user/head flags none\n60 /user/head flags all\n"
        "30 /user/hand/right/input/a/click 1\n30 !loss\n"
    )
    frames = motion_frames(f)
    assert frames[45].controls.move == pytest.approx((0.0, 0.5))
    assert frames[0].controls.trigger_right == 1.0 and frames[30].controls.jump and not frames[29].controls.jump
    assert not frames[50].head.position_valid and frames[60].head.orientation_tracked


@pytest.mark.parametrize(
    "line, why",
    [
        ("0 /user/head pos 1 2", "3 values expected"),
        ("0 /user/head spin 1 2 3", "unknown pose channel"),
        ("0 /user/foot pos 0 0 0", "unknown path"),
        ("0 /user/head quat 0 0 0 0", "zero quaternion"),
        ("0 /user/head flags sometimes", "flags"),
        ("x /user/head pos 0 0 0", "could not convert"),
        ("0 /user/head pos nan 0 0", "not finite"),
        ("rate 0", "rate must be"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, line, why):
    f = tmp_path / "bad.motion"
    f.write_text(f"# ok\n0 /user/head pos 0 1.6 0\n{line}\n")
    with pytest.raises(MotionError, match=rf"bad\.motion:3: .*{why}"):
        parse_motion(f)


def test_out_of_order_keyframes_and_unreadable_files(tmp_path):
    f = tmp_path / "o.motion"
    f.write_text("1 /user/head pos 0 1 0\n0.5 /user/head pos 0 1 0\n")
    with pytest.raises(MotionError, match="o.motion:2: keyframes out of time order"):
        parse_motion(f)
    with pytest.raises(MotionError, match="missing.motion"):
        parse_motion(tmp_path / "missing.motion")
    (tmp_path / "b.motion").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(MotionError):
        parse_motion(tmp_path / "b.motion")


TOKENS = st.sampled_from(
    [
        "0",
        "1.5",
        "-3",
        "0x1p-2",
        "nan",
        "1e400",
        "/user/head",
        "/user/hand/left",
        "/user/hand/right/input/thumbstick",
        "/user/hand/right/input/aim/pose",
        "pos",
        "ypr",
        "quat",
        "pose",
        "flags",
        "all",
        "ov,pt",
        "!exit",
        "rate",
        "timebase",
        "frames",
        "interpolate",
        "off",
        "#",
        "\t",
        "é",
        "\x00",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(TOKENS, max_size=9).map(" ".join), max_size=12))
def test_any_text_is_a_motion_or_a_motion_error(tmp_path, lines):
    f = tmp_path / "fuzz.motion"
    f.write_text("\n".join(lines))
    try:
        frames = motion_frames(f)
    except MotionError:
        return
    assert len(frames) >= 90 and all(math.isfinite(c) for fr in frames for c in fr.head.position)


def test_tables_per_spot_and_looping():
    script = Script.load(find_motion("walk"))
    a, b = spots(4)[0], spots(4)[2]
    assert len(script.q3(a)) == len(script.netsync(a)) == len(script.sauer(a)) == len(script)
    assert script.q3(a) is script.q3(a) and script.q3(a) is not script.q3(b)
    assert script.index(0.0) == 0 and script.index(script.period) == 0
    assert script.index(script.period * 2.5) == script.index(script.period * 0.5)
    eyes = {tuple(round(c) for c in script.sauer(s)[0].eye) for s in spots(4)}
    assert len(eyes) == 4  # other places in the room


def test_a_recorded_trace_plays_as_its_frames(tmp_path):
    from headcast.xr.trace import write_trace

    frames = motion_frames(find_motion("look_around"))[:200]
    path = write_trace(tmp_path / "t.jsonl", frames)
    script = Script.load(trace=path)
    assert len(script) == 200 and script.period == pytest.approx(200 / 90, rel=1e-6)
    assert [f.head for f in script.frames] == [f.head for f in frames]
    # cut short (no end record): plays up to its last whole frame
    text = path.read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(text[:101]) + "\n")
    assert len(Script.load(trace=tmp_path / "cut.jsonl")) == 100
    (tmp_path / "junk.jsonl").write_text("not a trace\n")
    with pytest.raises(MotionError, match="junk.jsonl"):
        Script.load(trace=tmp_path / "junk.jsonl")
