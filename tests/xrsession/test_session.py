"""XRSession through real pyopenxr, the real Khronos loader and the mock runtime (headless)."""

from __future__ import annotations

import struct

import pytest

from headcast.xr import actions
from headcast.xr.errors import NoHeadsetError, SessionEnded, XRError
from headcast.xr.frame import INVALID_POSE, ORIGIN, Controls
from headcast.xr.mockrt import PROFILES
from headcast.xr.session import XRSession

LEFT, RIGHT = "/user/hand/left", "/user/hand/right"
TOUCH = "/interaction_profiles/oculus/touch_controller"
pytestmark = pytest.mark.usefixtures("frame_path")  # native helper and ctypes path alike

MAX_FRAMES = 200  # bound on any "until" loop; the mock answers within a frame or two


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def frames(xs: XRSession, n: int) -> list:
    return [xs.next_frame() for _ in range(n)]


def focused(ctl, *args, **kwargs) -> XRSession:
    """A headless session the runtime then gives focus: the mock imitates Monado, which leaves a
    headless session in READY (controls inactive, no hands) unless the runtime moves it on."""
    xs = XRSession(*args, **kwargs)
    ctl.focus()
    return xs


def until(xs: XRSession, pred, what: str):
    for _ in range(MAX_FRAMES):
        frame = xs.next_frame()
        if pred(frame):
            return frame
    pytest.fail(f"no frame with {what} within {MAX_FRAMES} frames")


# -- poses follow the motion file ------------------------------------------------------------

HEAD_KEYS = [  # frame, position, orientation (unit quaternions, not float32-exact on purpose)
    (0, (0.0, 1.6, 0.0), (0.0, 0.0, 0.0, 1.0)),
    (1, (0.1, 1.62, -0.05), (0.0, 0.3826834323650898, 0.0, 0.9238795325112867)),
    (2, (-0.3, 1.55, 0.2), (0.2588190451025208, 0.0, 0.0, 0.9659258262890683)),
    (3, (0.02, 1.7, 0.4), (0.0, 0.0, -0.5, 0.8660254037844386)),
]
RIGHT_AIM = ((0.25, 1.2, -0.4), (0.0, 0.7071067811865476, 0.0, 0.7071067811865476))
LEFT_GRIP = ((-0.2, 1.1, -0.3), (0.5, 0.5, 0.5, 0.5))


def write_motion(path, head_keys=HEAD_KEYS) -> None:
    lines = ["timebase frames", "interpolate off"]
    for i, pos, ori in head_keys:
        lines.append(f"{i} /user/head pose {' '.join(map(repr, pos + ori))}")
    lines.append(f"0 {RIGHT}/input/aim/pose pos 0.5 1.0 -0.5")
    lines.append(f"2 {RIGHT}/input/aim/pose pose {' '.join(map(repr, RIGHT_AIM[0] + RIGHT_AIM[1]))}")
    lines.append(f"0 {LEFT}/input/grip/pose pose {' '.join(map(repr, LEFT_GRIP[0] + LEFT_GRIP[1]))}")
    lines.append(f"3 {RIGHT}/input/trigger/value 0.75")
    path.write_text("\n".join(lines) + "\n")


def test_headless_session_streams_the_motion(ctl, tmp_path, monkeypatch):
    motion = tmp_path / "keys.motion"
    write_motion(motion)
    monkeypatch.setenv("HEADCAST_MOCK_MOTION", str(motion))
    ctl.step_clock()  # frame i is located at motion frame i's time
    with focused(ctl) as xs:
        assert xs.info.headless and xs.info.base_space == "STAGE"
        assert xs.info.extensions == ("XR_MND_headless", "XR_KHR_convert_timespec_time", "XR_FB_display_refresh_rate")
        assert xs.info.time_source == "timespec" and xs.info.rate_hz == 1000.0 and xs.info.fallback == ""
        assert set(xs.info.profiles) == set(PROFILES) and xs.info.rejected_profiles == ()
        got = frames(xs, 5)
    assert [f.seq for f in got] == [0, 1, 2, 3, 4]
    assert all(b.time_ns > a.time_ns > 0 for a, b in zip(got, got[1:]))
    for i, pos, ori in HEAD_KEYS:
        head = got[i].head
        assert head.position == tuple(map(f32, pos)) and head.orientation == tuple(map(f32, ori))
        assert head.valid and head.position_tracked and head.orientation_tracked
    assert got[4].head == got[3].head  # no key at 4: the value holds
    assert got[1].right_aim.position == (0.5, 1.0, -0.5)  # interpolation off: held until frame 2
    assert (got[2].right_aim.position, got[2].right_aim.orientation) == (
        tuple(map(f32, RIGHT_AIM[0])),
        tuple(map(f32, RIGHT_AIM[1])),
    )
    assert (got[0].left_grip.position, got[0].left_grip.orientation) == (
        tuple(map(f32, LEFT_GRIP[0])),
        tuple(map(f32, LEFT_GRIP[1])),
    )
    assert [f.controls.trigger_right for f in got] == [0.0, 0.0, 0.0, 0.75, 0.75]
    assert all(f.focused and f.profile_left == f.profile_right == TOUCH for f in got)


def test_stage_missing_falls_back_to_local(ctl):
    ctl.set_stage_supported(False)
    ctl.set_pose("/user/head", (0.0, 1.75, -0.5))
    with focused(ctl) as xs:
        assert xs.info.base_space == "LOCAL"
        head = xs.next_frame().head
    # The mock's LOCAL origin sits at the 1.6 m eye height, as a seated runtime's does.
    assert head.valid and head.position == (0.0, f32(1.75) - f32(1.6), -0.5)


def test_lost_tracking_is_flagged_never_stale(ctl):
    ctl.set_pose(f"{RIGHT}/input/aim/pose", (0.3, 1.0, -0.2), (0.0, 0.0, 0.0, 1.0))
    with focused(ctl) as xs:
        before = xs.next_frame()
        assert before.right_aim.valid and before.right_aim.position == tuple(map(f32, (0.3, 1.0, -0.2)))
        ctl.set_tracking(RIGHT, 0)
        ctl.set_tracking("/user/head", 0x1 | 0x4)  # orientation only (a 3-DoF fallback)
        lost = xs.next_frame()
        assert lost.right_aim == INVALID_POSE and lost.right_grip == INVALID_POSE
        assert lost.left_aim.valid
        assert lost.head.orientation_valid and lost.head.orientation_tracked
        assert not lost.head.position_valid and not lost.head.position_tracked
        assert lost.head.position == ORIGIN and not lost.head.valid
        ctl.set_tracking(RIGHT, 0x1 | 0x2)  # valid but inferred, not tracked
        ctl.set_tracking("/user/head", 0xF)
        back = xs.next_frame()
    assert back.right_aim.valid and not back.right_aim.position_tracked
    assert back.right_aim.position == before.right_aim.position
    assert back.head.valid and back.head.position_tracked


# -- controls per profile -------------------------------------------------------------------

# emulated profile -> (physical input, value) set on the mock, and the Controls expected.
PROFILE_CASES = {
    "/interaction_profiles/khr/simple_controller": (
        [
            (f"{LEFT}/input/select/click", 1.0),
            (f"{RIGHT}/input/menu/click", True),
            (f"{LEFT}/input/thumbstick", (0.5, 0.5)),
        ],  # no stick on this profile: stays at rest
        Controls(trigger_left=1.0, menu=True),
    ),
    "/interaction_profiles/oculus/touch_controller": (
        [
            (f"{RIGHT}/input/trigger/value", 0.25),
            (f"{LEFT}/input/squeeze/value", 0.5),
            (f"{LEFT}/input/thumbstick", (0.5, -0.25)),
            (f"{RIGHT}/input/thumbstick", (-1.0, 0.125)),
            (f"{RIGHT}/input/a/click", True),
            (f"{LEFT}/input/menu/click", True),
        ],
        Controls(move=(0.5, -0.25), turn=(-1.0, 0.125), trigger_right=0.25, squeeze_left=0.5, jump=True, menu=True),
    ),
    "/interaction_profiles/valve/index_controller": (
        [
            (f"{LEFT}/input/trigger/value", 0.625),
            (f"{RIGHT}/input/squeeze/value", 0.75),
            (f"{LEFT}/input/thumbstick", (0.0, 1.0)),
            (f"{RIGHT}/input/thumbstick", (0.75, 0.0)),
            (f"{RIGHT}/input/a/click", True),
            (f"{LEFT}/input/b/click", True),
        ],
        Controls(move=(0.0, 1.0), turn=(0.75, 0.0), trigger_left=0.625, squeeze_right=0.75, jump=True, menu=True),
    ),
    "/interaction_profiles/htc/vive_controller": (
        [
            (f"{RIGHT}/input/trigger/value", 0.5),
            (f"{LEFT}/input/squeeze/click", True),
            (f"{LEFT}/input/trackpad", (-0.5, 0.5)),
            (f"{RIGHT}/input/trackpad", (0.25, -0.75)),
            (f"{RIGHT}/input/trackpad/click", True),
            (f"{RIGHT}/input/menu/click", True),
        ],
        Controls(move=(-0.5, 0.5), turn=(0.25, -0.75), trigger_right=0.5, squeeze_left=1.0, jump=True, menu=True),
    ),
    "/interaction_profiles/microsoft/motion_controller": (
        [
            (f"{LEFT}/input/trigger/value", 1.0),
            (f"{RIGHT}/input/squeeze/click", True),
            (f"{LEFT}/input/thumbstick", (0.125, 0.25)),
            (f"{RIGHT}/input/thumbstick", (-0.25, 0.0)),
            (f"{RIGHT}/input/thumbstick/click", True),
            (f"{LEFT}/input/menu/click", True),
        ],
        Controls(move=(0.125, 0.25), turn=(-0.25, 0.0), trigger_left=1.0, squeeze_right=1.0, jump=True, menu=True),
    ),
}


def drive(ctl, inputs) -> None:
    for path, value in inputs:
        if isinstance(value, tuple):
            ctl.set_vec2(path, *value)
        elif isinstance(value, bool):
            ctl.set_bool(path, value)
        else:
            ctl.set_float(path, value)


@pytest.mark.parametrize("profile", sorted(PROFILE_CASES))
def test_controls_per_profile(ctl, monkeypatch, profile):
    inputs, expected = PROFILE_CASES[profile]
    monkeypatch.setenv("HEADCAST_MOCK_PROFILE", profile)
    with focused(ctl) as xs:
        rest = xs.next_frame()
        drive(ctl, inputs)
        pressed = xs.next_frame()
    assert rest.controls == Controls()
    assert (pressed.profile_left, pressed.profile_right) == (profile, profile)
    assert pressed.controls == expected
    assert pressed.left_aim.valid and pressed.right_grip.valid


def test_profile_fallback_to_simple_controller(ctl, monkeypatch):
    """A runtime whose controller the app did not suggest falls back to khr/simple_controller."""
    # BINDINGS is data, read when the action set is made: drop Index for this session.
    trimmed = {k: v for k, v in actions.BINDINGS.items() if "index" not in k}
    monkeypatch.setattr(actions, "BINDINGS", trimmed)
    monkeypatch.setenv("HEADCAST_MOCK_PROFILE", "/interaction_profiles/valve/index_controller")
    with focused(ctl) as xs:
        assert "/interaction_profiles/valve/index_controller" not in xs.info.profiles
        xs.next_frame()
        drive(ctl, [(f"{RIGHT}/input/trigger/value", 1.0), (f"{LEFT}/input/thumbstick", (0.5, 0.5))])
        frame = xs.next_frame()
    assert frame.profile_right == "/interaction_profiles/khr/simple_controller"
    assert frame.controls == Controls(trigger_right=1.0)  # select/click; no stick on a simple controller
    assert frame.right_aim.valid


def test_no_suggested_profile_means_no_hands(ctl, monkeypatch):
    only_touch = {TOUCH: actions.BINDINGS[TOUCH]}
    monkeypatch.setattr(actions, "BINDINGS", only_touch)
    monkeypatch.setenv("HEADCAST_MOCK_PROFILE", "/interaction_profiles/htc/vive_controller")
    with focused(ctl) as xs:
        xs.next_frame()
        ctl.set_float(f"{RIGHT}/input/trigger/value", 1.0)
        frame = xs.next_frame()
    assert (frame.profile_left, frame.profile_right) == ("", "")
    assert frame.controls == Controls()
    assert frame.right_aim == INVALID_POSE and frame.left_grip == INVALID_POSE
    assert frame.head.valid


def test_profile_change_is_followed(ctl):
    with focused(ctl) as xs:
        assert xs.next_frame().profile_right == TOUCH
        ctl.set_profile("/interaction_profiles/htc/vive_controller")
        frame = until(xs, lambda f: f.profile_right != TOUCH, "a new profile")
    assert frame.profile_right == frame.profile_left == "/interaction_profiles/htc/vive_controller"


# -- session state machine ------------------------------------------------------------------


def test_focus_loss_and_return(ctl):
    ctl.set_float(f"{RIGHT}/input/trigger/value", 1.0)
    with focused(ctl) as xs:
        assert xs.next_frame().controls.trigger_right == 1.0
        ctl.unfocus()
        unfocused = xs.next_frame()
        assert not unfocused.focused and xs.running
        assert unfocused.controls == Controls()  # actions read inactive when not focused
        assert unfocused.right_aim == INVALID_POSE
        assert unfocused.head.valid  # the headset is still tracked
        ctl.focus()
        refocused = xs.next_frame()
    assert refocused.focused and refocused.controls.trigger_right == 1.0 and refocused.right_aim.valid


@pytest.mark.parametrize("who", ["runtime", "app"])
def test_exit_request_ends_cleanly(ctl, who):
    with XRSession() as xs:
        xs.next_frame()
        if who == "runtime":
            ctl.request_exit()
        else:
            xs.request_exit()
        with pytest.raises(SessionEnded) as ended:
            for _ in range(MAX_FRAMES):
                xs.next_frame()
        assert not ended.value.lost and "ended the session" in str(ended.value)
        assert not xs.running
        assert xs.state.name == "EXITING"
        with pytest.raises(SessionEnded):  # stays ended
            xs.next_frame()
    assert not ctl.instance_alive


def test_session_loss_is_reported_and_teardown_works(ctl):
    with XRSession() as xs:
        xs.next_frame()
        ctl.lose_session()
        xs.request_exit()  # the runtime answers SESSION_LOSS_PENDING: not an error, the event follows
        with pytest.raises(SessionEnded) as ended:
            for _ in range(MAX_FRAMES):
                xs.next_frame()
    assert ended.value.lost and "lost" in str(ended.value)
    assert not ctl.instance_alive


def test_close_while_running_destroys_everything(ctl):
    xs = XRSession()
    xs.next_frame()
    assert ctl.instance_alive and xs.running
    xs.close()
    xs.close()  # idempotent
    assert not ctl.instance_alive
    with pytest.raises(XRError, match="closed"):
        xs.next_frame()


def test_no_headset_is_a_clear_error(ctl):
    ctl.set_hmd_present(False)
    with pytest.raises(NoHeadsetError, match="no headset"):
        XRSession()
    assert not ctl.instance_alive  # the failed open cleaned up its instance


def test_headless_mode_required_but_gl_asked(ctl):
    # "gl" on a runtime that offers both: an OpenGL session needs a display, tested under Xvfb
    # in test_gl_session.py; here the mode argument itself is checked.
    with pytest.raises(ValueError, match="mode"):
        XRSession("vulkan")


def test_idle_frames_until_the_runtime_is_ready(ctl, monkeypatch):
    """Until READY (a headset runtime waits for the user) next_frame paces itself and tracks nothing;
    then the headless session is begun at READY and tracks the head without ever being FOCUSED."""
    import time

    from headcast.xr import session

    monkeypatch.setattr(session, "_READY_WAIT_S", 0.05)  # the open gives up waiting for READY sooner
    pump = XRSession._pump_events
    monkeypatch.setattr(XRSession, "_pump_events", lambda self: None)  # as if READY had not come yet
    with XRSession() as xs:
        assert not xs.running
        start = time.monotonic()
        idle = [xs.next_frame() for _ in range(3)]
        elapsed = time.monotonic() - start
        monkeypatch.setattr(XRSession, "_pump_events", pump)
        live = xs.next_frame()
        assert xs.running and xs.state.name == "READY"
    assert not any(f.focused or f.head.valid or f.right_aim.valid for f in idle)
    assert [f.seq for f in idle] == [0, 1, 2] and all(f.time_ns == 0 for f in idle)
    assert elapsed >= 3 * 0.010  # waited about a frame each instead of spinning
    assert live.seq == 3 and live.head.valid and not live.focused and live.time_ns > 0
    assert live.controls == Controls() and not live.right_aim.valid  # READY: actions inactive


def test_one_rejected_profile_does_not_cost_the_others(ctl, monkeypatch):
    """Each profile is suggested in its own call: a path the runtime refuses loses only that profile."""
    bad = dict(actions.BINDINGS)
    bad[TOUCH] = bad[TOUCH] + (("trigger", f"{RIGHT}/input/trigger/click"),)  # Touch has no trigger/click
    monkeypatch.setattr(actions, "BINDINGS", bad)
    with focused(ctl) as xs:  # the mock emulates a Touch controller
        assert xs.info.rejected_profiles == (TOUCH,)
        assert set(xs.info.profiles) == set(PROFILES) - {TOUCH}
        xs.next_frame()
        ctl.set_float(f"{RIGHT}/input/trigger/value", 1.0)
        frame = xs.next_frame()
    assert frame.profile_right == "/interaction_profiles/khr/simple_controller"
    assert frame.controls.trigger_right == 1.0
