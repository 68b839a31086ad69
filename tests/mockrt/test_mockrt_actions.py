"""Actions through the mock: binding validation, the five profiles, fallback, states, haptics."""

from __future__ import annotations

import math
import random
import struct

import pytest
import xr

from headcast.xr import mockrt

L, R = "/user/hand/left", "/user/hand/right"
TOUCH, INDEX, VIVE, SIMPLE = (mockrt.PROFILES[i] for i in (1, 2, 3, 0))


class Rig:
    """The action set headcast uses: poses, trigger, squeeze, move/turn sticks, jump, menu, haptic."""

    KINDS = {
        "aim": xr.ActionType.POSE_INPUT,
        "grip": xr.ActionType.POSE_INPUT,
        "trigger": xr.ActionType.FLOAT_INPUT,
        "squeeze": xr.ActionType.FLOAT_INPUT,
        "move": xr.ActionType.VECTOR2F_INPUT,
        "turn": xr.ActionType.VECTOR2F_INPUT,
        "jump": xr.ActionType.BOOLEAN_INPUT,
        "menu": xr.ActionType.BOOLEAN_INPUT,
        "haptic": xr.ActionType.VIBRATION_OUTPUT,
    }

    def __init__(self, h):
        self.h = h
        self.hands = [h.path(L), h.path(R)]
        self.set = xr.create_action_set(h.inst, xr.ActionSetCreateInfo("gameplay", "Gameplay", 0))
        self.a = {
            name: xr.create_action(
                self.set,
                xr.ActionCreateInfo(
                    action_type=kind, action_name=name, localized_action_name=name.title(), subaction_paths=self.hands
                ),
            )
            for name, kind in self.KINDS.items()
        }

    def suggest(self, profile: str, bindings: list[tuple[str, str]]) -> None:
        xr.suggest_interaction_profile_bindings(
            self.h.inst,
            xr.InteractionProfileSuggestedBinding(
                interaction_profile=self.h.path(profile),
                suggested_bindings=[
                    xr.ActionSuggestedBinding(self.a[name], self.h.path(path)) for name, path in bindings
                ],
            ),
        )

    def suggest_all(self) -> None:
        poses = [("aim", f"{h}/input/aim/pose") for h in (L, R)] + [("grip", f"{h}/input/grip/pose") for h in (L, R)]
        haptic = [("haptic", f"{h}/output/haptic") for h in (L, R)]
        self.suggest(
            SIMPLE, poses + haptic + [("trigger", f"{R}/input/select/click"), ("menu", f"{L}/input/menu/click")]
        )
        self.suggest(
            TOUCH,
            poses
            + haptic
            + [
                ("trigger", f"{L}/input/trigger/value"),
                ("trigger", f"{R}/input/trigger/value"),
                ("squeeze", f"{R}/input/squeeze/value"),
                ("move", f"{L}/input/thumbstick"),
                ("turn", f"{R}/input/thumbstick"),
                ("jump", f"{R}/input/a/click"),
                ("menu", f"{L}/input/menu/click"),
            ],
        )
        self.suggest(
            VIVE,
            poses
            + haptic
            + [
                ("trigger", f"{R}/input/trigger/value"),
                ("move", f"{L}/input/trackpad"),
                ("turn", f"{R}/input/trackpad"),
                ("jump", f"{R}/input/trackpad/click"),
                ("menu", f"{L}/input/menu/click"),
            ],
        )

    def attach(self) -> None:
        xr.attach_session_action_sets(self.h.session, xr.SessionActionSetsAttachInfo(action_sets=[self.set]))
        self.spaces = {
            (name, hand): xr.create_action_space(
                self.h.session, xr.ActionSpaceCreateInfo(action=self.a[name], subaction_path=self.h.path(hand))
            )
            for name in ("aim", "grip")
            for hand in (L, R)
        }

    def sync(self) -> None:
        xr.sync_actions(
            self.h.session, xr.ActionsSyncInfo(active_action_sets=[xr.ActiveActionSet(self.set, xr.NULL_PATH)])
        )

    def state(self, name: str, hand: str | None = None):
        info = xr.ActionStateGetInfo(self.a[name], self.h.path(hand) if hand else xr.NULL_PATH)
        getter = {
            xr.ActionType.FLOAT_INPUT: xr.get_action_state_float,
            xr.ActionType.VECTOR2F_INPUT: xr.get_action_state_vector2f,
            xr.ActionType.BOOLEAN_INPUT: xr.get_action_state_boolean,
            xr.ActionType.POSE_INPUT: xr.get_action_state_pose,
        }
        return getter[self.KINDS[name]](self.h.session, info)

    def profile(self, hand: str) -> str:
        p = xr.get_current_interaction_profile(self.h.session, self.h.path(hand)).interaction_profile
        return xr.path_to_string(self.h.inst, p) if p else ""


START = 1_000_000_000_000  # the stopped runtime clock the tests move themselves


@pytest.fixture
def rig(mock, session):
    """A begun headless session, focused by the runtime, with the rig attached (all profiles
    suggested), synced once; the runtime clock stopped at its begin."""

    def setup(h):
        nonlocal made
        made = Rig(h)
        made.suggest_all()
        made.attach()

    made = None
    mock.set_clock(START)
    with session(setup=setup, focus=True):
        made.sync()
        yield made


@pytest.mark.parametrize(
    "profile, path",
    [
        (TOUCH, f"{R}/input/trigger/click"),  # Touch triggers are analog only
        (TOUCH, f"{L}/input/a/click"),  # A/B are on the right Touch, X/Y on the left
        (TOUCH, f"{R}/input/trackpad"),
        (SIMPLE, f"{R}/input/trigger/value"),
        (VIVE, f"{L}/input/thumbstick"),
        (INDEX, f"{L}/input/menu/click"),  # the Index has no menu button
        (mockrt.PROFILES[4], f"{R}/input/a/click"),
        (TOUCH, "/user/head/input/trigger/value"),
        (TOUCH, f"{R}/input"),  # a parent path names one input, not a group of them
        (TOUCH, f"{R}/output"),
    ],
)
def test_binding_validation_rejects_paths_the_profile_lacks(mock, session, profile, path):
    with session(begin=False) as h:
        rig = Rig(h)
        action = "turn" if path.endswith(("thumbstick", "trackpad")) else "jump"
        with pytest.raises(xr.PathUnsupportedError):
            rig.suggest(profile, [("aim", f"{R}/input/aim/pose"), (action, path)])


def test_grip_surface_pose_needs_openxr_1_1(mock, session):
    with session(begin=False) as h:
        with pytest.raises(xr.PathUnsupportedError):
            Rig(h).suggest(TOUCH, [("grip", f"{R}/input/grip_surface/pose")])
    mock.set_pose(f"{R}/input/grip/pose", (0.25, 1.0, -0.1))

    def setup(h):
        nonlocal rig
        rig = Rig(h)
        rig.suggest(TOUCH, [("grip", f"{R}/input/grip_surface/pose")])
        rig.attach()

    rig = None
    with session(api_version=xr.Version(1, 1, 0), setup=setup, focus=True) as h:
        rig.sync()
        assert rig.h.locate(rig.spaces[("grip", R)]).pose.position.x == pytest.approx(0.25)


def test_valid_bindings_for_every_profile_and_the_attach_rules(mock, session):
    with session(begin=False) as h:
        rig = Rig(h)
        rig.suggest_all()
        rig.suggest(
            INDEX,
            [
                ("trigger", f"{R}/input/trigger/click"),
                ("jump", f"{R}/input/a/click"),
                ("move", f"{L}/input/thumbstick"),
                ("squeeze", f"{R}/input/squeeze/force"),
            ],
        )
        rig.suggest(
            mockrt.PROFILES[4],
            [
                ("trigger", f"{R}/input/trigger/value"),
                ("jump", f"{R}/input/thumbstick/click"),
                ("move", f"{L}/input/thumbstick"),
                ("menu", f"{L}/input/menu/click"),
            ],
        )
        rig.suggest(TOUCH, [("trigger", f"{R}/input/trigger"), ("jump", f"{R}/input/a")])  # parent-path shorthand
        with pytest.raises(xr.PathUnsupportedError):
            rig.suggest("/interaction_profiles/acme/blaster", [("jump", f"{R}/input/a/click")])
        rig.attach()
        with pytest.raises(xr.ActionsetsAlreadyAttachedError):
            rig.suggest(SIMPLE, [("jump", f"{R}/input/select/click")])
        with pytest.raises(xr.ActionsetsAlreadyAttachedError):
            xr.create_action(
                rig.set,
                xr.ActionCreateInfo(
                    action_type=xr.ActionType.FLOAT_INPUT, action_name="late", localized_action_name="Late"
                ),
            )


def test_touch_states_round_trip(mock, rig):
    assert rig.profile(L) == TOUCH and rig.profile(R) == TOUCH
    assert rig.state("trigger", R).is_active and rig.state("trigger", R).current_state == 0
    mock.set_float(f"{R}/input/trigger/value", 0.75)
    mock.set_float(f"{R}/input/squeeze/value", 0.5)
    mock.set_vec2(f"{L}/input/thumbstick", 0.25, -1.0)
    mock.set_vec2(f"{R}/input/thumbstick", 1.0, 0.0)
    mock.set_bool(f"{R}/input/a/click", True)
    mock.set_bool(f"{L}/input/menu/click", True)
    rig.sync()
    trig = rig.state("trigger", R)
    assert trig.current_state == 0.75 and trig.changed_since_last_sync and trig.last_change_time > 0
    assert rig.state("trigger", L).current_state == 0
    assert rig.state("trigger").current_state == 0.75  # no subaction path: both hands combined
    assert rig.state("squeeze", R).current_state == 0.5
    move = rig.state("move", L).current_state
    assert (move.x, move.y) == (0.25, -1.0)
    assert rig.state("turn", R).current_state.x == 1.0
    assert rig.state("jump", R).current_state and rig.state("menu", L).current_state
    rig.sync()
    assert not rig.state("trigger", R).changed_since_last_sync
    mock.set_bool(f"{R}/input/a/click", False)
    rig.sync()
    assert not rig.state("jump", R).current_state and rig.state("jump", R).changed_since_last_sync
    with pytest.raises(xr.ActionTypeMismatchError):
        xr.get_action_state_boolean(rig.h.session, xr.ActionStateGetInfo(rig.a["trigger"], xr.NULL_PATH))
    with pytest.raises(xr.PathUnsupportedError):
        rig.state("trigger", "/user/head")


def test_syncs_that_change_nothing_keep_every_state(mock, rig):
    """A sync that finds the inputs and active sets as the last sync left them (the runtime then skips
    its actions: mockxr.c's g_sync_memo) reads the same states, none changed, the same change
    times; any change after it is seen at the next sync, with that sync's time."""
    mock.set_float(f"{R}/input/trigger/value", 0.75)
    mock.advance_clock(1_000_000)
    rig.sync()
    t1 = mock.now
    trig = rig.state("trigger", R)
    assert trig.current_state == 0.75 and trig.changed_since_last_sync and trig.last_change_time == t1
    for _ in range(3):  # the first clears the change, the next ones find nothing to do
        mock.advance_clock(1_000_000)
        mock.set_float(f"{R}/input/trigger/value", 0.75)  # the same value: no change
        rig.sync()
        trig = rig.state("trigger", R)
        assert trig.current_state == 0.75 and not trig.changed_since_last_sync and trig.last_change_time == t1
        assert rig.state("squeeze", R).is_active and not rig.state("jump", R).current_state
    mock.advance_clock(1_000_000)
    mock.set_float(f"{R}/input/trigger/value", 0.5)
    rig.sync()
    trig = rig.state("trigger", R)
    assert trig.current_state == 0.5 and trig.changed_since_last_sync and trig.last_change_time == mock.now
    rig.sync()
    rig.sync()
    mock.unfocus()  # inactive, then active again from the sync that finds it focused
    with pytest.raises(xr.SessionNotFocused):
        rig.sync()
    assert not rig.state("trigger", R).is_active and rig.state("trigger", R).last_change_time == 0
    mock.focus()
    mock.advance_clock(1_000_000)
    rig.sync()
    trig = rig.state("trigger", R)
    assert trig.is_active and not trig.changed_since_last_sync and trig.last_change_time == mock.now
    rig.sync()
    mock.set_profile(SIMPLE)  # a profile change re-binds every action: its states start over
    rig.sync()
    assert rig.profile(R) == SIMPLE and not rig.state("squeeze", R).is_active


def test_aim_and_grip_spaces_locate_the_hands(mock, rig):
    mock.set_pose(f"{R}/input/aim/pose", (0.3, 1.2, -0.4), (0.0, 0.38268343, 0.0, 0.9238795))
    mock.set_pose(f"{L}/input/grip/pose", (-0.3, 1.1, -0.2))
    assert rig.state("aim", R).is_active
    loc = rig.h.locate(rig.spaces[("aim", R)])
    assert loc.location_flags == mockrt.TRACKED
    assert (loc.pose.position.x, loc.pose.position.y, loc.pose.position.z) == struct.unpack(
        "3f", struct.pack("3f", 0.3, 1.2, -0.4)
    )
    assert loc.pose.orientation.y == struct.unpack("f", struct.pack("f", 0.38268343))[0]
    grip = rig.h.locate(rig.spaces[("grip", L)]).pose.position
    assert (grip.x, grip.y) == pytest.approx((-0.3, 1.1))
    mock.set_tracking(L, 0)
    assert rig.h.locate(rig.spaces[("grip", L)]).location_flags == 0
    assert rig.h.locate(rig.spaces[("aim", R)]).location_flags == mockrt.TRACKED
    # the aim space relative to the head: both transforms applied
    head = rig.h.locate(rig.h.view)
    rel = xr.locate_space(rig.spaces[("aim", R)], rig.h.view, rig.h.now())
    assert rel.pose.position.y == pytest.approx(1.2 - head.pose.position.y, abs=1e-6)


def test_hand_samples_replay_bit_identical(mock, rig, tmp_path):
    rng = random.Random(7)
    lines, want = ["timebase frames", "interpolate off"], []
    for i in range(1, 6):
        q = [rng.uniform(-1, 1) for _ in range(4)]
        n = math.sqrt(sum(c * c for c in q))
        vals = [rng.uniform(-1, 2) for _ in range(3)] + [c / n for c in q]
        vals = list(struct.unpack("7f", struct.pack("7f", *vals)))
        trigger = abs(vals[0]) / 2  # a float32 in 0..1, the range the runtime accepts
        want.append((vals, trigger))
        lines.append(f"{i} {R}/input/aim/pose pose " + " ".join(v.hex() for v in vals))
        lines.append(f"{i} {R}/input/trigger/value {trigger.hex()}")
    motion = tmp_path / "hands.motion"
    motion.write_text("\n".join(lines) + "\n")
    mock.load_motion(motion)  # samples at frames 1..5 after begin
    for i, (vals, trigger) in enumerate(want, 1):
        t = rig.h.goto(i)  # actions read at the runtime clock, poses at the time located at
        rig.sync()
        p = rig.h.locate(rig.spaces[("aim", R)], t).pose
        got = [
            p.position.x,
            p.position.y,
            p.position.z,
            p.orientation.x,
            p.orientation.y,
            p.orientation.z,
            p.orientation.w,
        ]
        assert got == vals
        assert rig.state("trigger", R).current_state == trigger


def test_profile_fallback_and_change_event(mock, session):
    mock.set_profile(INDEX)  # the app suggests no Index bindings: the runtime falls back to simple

    def setup(h):
        nonlocal rig
        rig = Rig(h)
        rig.suggest_all()
        rig.attach()

    rig = None
    with session(setup=setup, focus=True) as h:
        assert "profile" in h.events()
        assert rig.profile(R) == SIMPLE
        mock.set_float(f"{R}/input/trigger/value", 1.0)
        rig.sync()
        assert rig.state("trigger", R).current_state == 1.0  # select/click from the trigger
        assert not rig.state("move", L).is_active  # the simple controller has no stick
        mock.set_profile(VIVE)
        assert h.events() == ["profile"]
        rig.sync()
        assert rig.profile(L) == VIVE
        mock.set_vec2(f"{L}/input/thumbstick", 0.0, 1.0)  # the Vive trackpad carries the primary 2-axis input
        mock.set_bool(f"{R}/input/thumbstick/click", True)
        rig.sync()
        assert rig.state("move", L).current_state.y == 1.0
        assert rig.state("jump", R).current_state
        mock.set_vec2(f"{L}/input/trackpad", -0.5, 0.25)  # its own trackpad wins over the stick state
        mock.set_bool(f"{R}/input/thumbstick/click", False)
        mock.set_bool(f"{R}/input/trackpad/click", True)
        rig.sync()
        move = rig.state("move", L).current_state
        assert (move.x, move.y) == (-0.5, 0.25) and rig.state("jump", R).current_state
        sources = [
            xr.path_to_string(h.inst, p)
            for p in xr.enumerate_bound_sources_for_action(
                h.session, xr.BoundSourcesForActionEnumerateInfo(action=rig.a["move"])
            )
        ]
        assert sources == [f"{L}/input/trackpad"]
        name = xr.get_input_source_localized_name(
            h.session,
            xr.InputSourceLocalizedNameGetInfo(
                h.path(f"{L}/input/trackpad"),
                xr.INPUT_SOURCE_LOCALIZED_NAME_USER_PATH_BIT | xr.INPUT_SOURCE_LOCALIZED_NAME_INTERACTION_PROFILE_BIT,
            ),
        )
        assert name == "Left Hand HTC Vive Controller"


def test_no_suggested_profile_means_inactive_actions(mock, session):
    def setup(h):
        nonlocal rig
        rig = Rig(h)
        rig.suggest(INDEX, [("trigger", f"{R}/input/trigger/value")])  # emulated Touch, no simple either
        rig.attach()

    rig = None
    with session(setup=setup, focus=True):
        rig.sync()
        assert rig.profile(R) == ""
        assert not rig.state("trigger", R).is_active
        assert rig.h.locate(rig.spaces[("aim", R)]).location_flags == 0


def test_unfocused_sessions_get_no_input_and_no_haptics(mock, rig):
    vib = xr.HapticVibration(amplitude=0.8, duration=20_000_000, frequency=xr.FREQUENCY_UNSPECIFIED)
    xr.apply_haptic_feedback(rig.h.session, xr.HapticActionInfo(rig.a["haptic"], rig.h.path(R)), vib)
    rec = mock.haptics(R)
    assert (rec.count, rec.duration_ns) == (1, 20_000_000) and rec.amplitude == pytest.approx(0.8)
    assert mock.haptics(L).count == 0
    xr.apply_haptic_feedback(rig.h.session, xr.HapticActionInfo(rig.a["haptic"], xr.NULL_PATH), vib)
    assert (mock.haptics(L).count, mock.haptics(R).count) == (1, 2)
    xr.stop_haptic_feedback(rig.h.session, xr.HapticActionInfo(rig.a["haptic"], rig.h.path(L)))
    assert mock.haptics(L).stops == 1
    mock.unfocus()
    mock.set_float(f"{R}/input/trigger/value", 1.0)
    with pytest.raises(xr.SessionNotFocused):
        rig.sync()
    assert not rig.state("trigger", R).is_active
    with pytest.raises(xr.SessionNotFocused):
        xr.apply_haptic_feedback(rig.h.session, xr.HapticActionInfo(rig.a["haptic"], rig.h.path(R)), vib)
    assert mock.haptics(R).count == 2
    mock.focus()
    rig.sync()
    assert rig.state("trigger", R).current_state == 1.0


@pytest.mark.parametrize(
    "name, frame, action, hand, want",
    [
        ("fire", int(0.7 * 90), "trigger", R, 1.0),
        ("fire", int(1.2 * 90), "trigger", R, 0.0),
        ("fire", int(4.1 * 90), "jump", R, True),
        ("walk", 90, "move", L, (0.0, 1.0)),
        ("walk", int(5.0 * 90), "move", L, (1.0, 0.0)),
        ("snap_turns", int(0.6 * 90), "turn", R, (1.0, 0.0)),
        ("snap_turns", int(2.6 * 90), "turn", R, (-1.0, 0.0)),
        ("snap_turns", int(1.2 * 90), "turn", R, (0.0, 0.0)),
    ],
)
def test_shipped_motions_drive_the_controls(mock, session, name, frame, action, hand, want):
    mock.load_motion(mockrt.motion_path(name))

    def setup(h):
        nonlocal rig
        rig = Rig(h)
        rig.suggest_all()
        rig.attach()

    rig = None
    mock.set_clock(START)
    with session(setup=setup, focus=True) as h:
        h.goto(frame)
        rig.sync()
        got = rig.state(action, hand).current_state
        if isinstance(want, tuple):
            got = (got.x, got.y)
        assert got == want


def test_destroyed_actions_leave_no_dangling_state(mock, rig):
    aim_space = rig.spaces[("aim", R)]
    xr.destroy_action(rig.a["aim"])
    rig.sync()
    assert rig.h.locate(aim_space).location_flags == 0
    xr.destroy_action_set(rig.set)
    with pytest.raises(xr.HandleInvalidError):
        rig.sync()
    rig.h.locate(rig.h.view)


def test_action_spaces_may_be_created_before_attach(mock, session):
    """Legal in OpenXR (hello_xr does it); XR_ERROR_ACTIONSET_NOT_ATTACHED is no code xr.xml allows
    xrCreateActionSpace. The space locates once the set is attached and synced."""
    mock.set_pose(f"{R}/input/aim/pose", (0.3, 1.2, -0.4))

    def setup(h):
        nonlocal rig, early
        rig = Rig(h)
        rig.suggest_all()
        early = xr.create_action_space(
            h.session, xr.ActionSpaceCreateInfo(action=rig.a["aim"], subaction_path=h.path(R))
        )
        assert h.locate(early).location_flags == 0  # not bound yet
        rig.attach()

    rig = early = None
    with session(setup=setup, focus=True) as h:
        rig.sync()
        loc = h.locate(early)
        assert loc.location_flags == mockrt.TRACKED and loc.pose.position.x == pytest.approx(0.3)


def test_a_headless_session_left_ready_gets_no_input(mock, session):
    """Monado's way: the session is never FOCUSED, so xrSyncActions says SESSION_NOT_FOCUSED and
    every action is inactive (hand spaces too); the head still locates."""

    def setup(h):
        nonlocal rig
        rig = Rig(h)
        rig.suggest_all()
        rig.attach()

    rig = None
    mock.set_float(f"{R}/input/trigger/value", 1.0)
    with session(setup=setup) as h:
        with pytest.raises(xr.SessionNotFocused):
            rig.sync()
        assert not rig.state("trigger", R).is_active and not rig.state("aim", R).is_active
        assert h.locate(rig.spaces[("aim", R)]).location_flags == 0
        assert h.locate(h.view).location_flags == mockrt.TRACKED


def test_inputs_follow_the_runtime_clock(mock, session, tmp_path):
    motion = tmp_path / "squeeze.motion"
    motion.write_text(f"timebase frames\n0 {R}/input/trigger/value 0\n10 {R}/input/trigger/value 1\n")
    mock.load_motion(motion)

    def setup(h):
        nonlocal rig
        rig = Rig(h)
        rig.suggest_all()
        rig.attach()

    rig = None
    mock.set_clock(START)
    with session(setup=setup, focus=True) as h:
        for frame, want in ((0, 0.0), (2.5, 0.25), (5, 0.5), (10, 1.0), (20, 1.0)):
            h.goto(frame)
            rig.sync()
            state = rig.state("trigger", R)
            assert state.current_state == pytest.approx(want), frame
        assert state.last_change_time == h.at(10) and not state.changed_since_last_sync
