"""Rig math: origin transforms, snap/smooth turns about the head, stick locomotion."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from headcast.app.run.rig import Origin, Rig, RigSettings, pose_to_world
from headcast.app.run.synthetic import orientation
from headcast.netcode.pose import quake_angles
from headcast.xr.frame import Controls, Pose, TrackingFrame

HEAD = (0.3, 1.7, -0.4)


def frame(seq=0, move=(0.0, 0.0), turn=(0.0, 0.0), head_yaw=0.0, head_valid=True, head_pos=HEAD):
    head = Pose(head_pos, orientation(0, head_yaw, 0), head_valid, head_valid, head_valid, head_valid)
    aim = Pose((0.2, 1.2, -0.3), orientation(0, 10, 0), True, True, True, True)
    return TrackingFrame(seq, seq * 11_111_111, head, aim, aim, aim, aim, Controls(move=move, turn=turn))


def close(a, b, tol=1e-9):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def test_origin_yaw_turns_forward_to_the_left():
    o = Origin(1.0, 2.0, 90.0)
    assert close(o.to_world((0.0, 0.0, -1.0)), (0.0, 0.0, 2.0))  # forward (-Z) becomes -X
    assert close(quake_angles(o.rotate(orientation(0, 10, 0))), (0.0, 100.0, 0.0), 1e-6)


@given(
    st.floats(-50, 50),
    st.floats(-50, 50),
    st.floats(-180, 180),
    st.tuples(st.floats(-3, 3), st.floats(0, 2), st.floats(-3, 3)),
    st.floats(-720, 720),
)
def test_turn_about_keeps_the_pivot_in_place(x, z, yaw, pivot, deg):
    o = Origin(x, z, yaw)
    t = o.turned_about(pivot, deg)
    assert close(o.to_world(pivot), t.to_world(pivot), 1e-6)
    assert abs(math.remainder(t.yaw - (yaw + deg), 360.0)) < 1e-9
    assert -180.0 <= t.yaw <= 180.0


def test_snap_turn_fires_once_per_flick_about_the_head():
    rig = Rig(RigSettings(snap_angle=45.0))
    before = rig.update(frame(0), 1 / 90).head.position
    s = rig.update(frame(1, turn=(1.0, 0.0)), 1 / 90)
    assert s.snapped == -45.0 and rig.origin.yaw == pytest.approx(-45.0)
    assert close(s.head.position, before, 1e-9)  # the head does not jump
    assert quake_angles(s.head.orientation)[1] == pytest.approx(-45.0)
    # Held: no second snap; half released: still none; released: re-armed.
    assert rig.update(frame(2, turn=(1.0, 0.0)), 1 / 90).snapped == 0.0
    assert rig.update(frame(3, turn=(0.5, 0.0)), 1 / 90).snapped == 0.0
    assert rig.update(frame(4, turn=(0.8, 0.0)), 1 / 90).snapped == 0.0
    rig.update(frame(5, turn=(0.1, 0.0)), 1 / 90)
    s = rig.update(frame(6, turn=(-0.9, 0.0)), 1 / 90)
    assert s.snapped == 45.0 and rig.origin.yaw == pytest.approx(0.0)
    assert close(s.head.position, before, 1e-9)


def test_smooth_turn_rate_and_deadzone():
    rig = Rig(RigSettings(turn_mode="smooth", smooth_speed=90.0, deadzone=0.15))
    rig.update(frame(0, turn=(0.1, 0.0)), 1.0)
    assert rig.origin.yaw == 0.0
    for i in range(10):
        rig.update(frame(i, turn=(-0.5, 0.0)), 0.1)
    assert rig.origin.yaw == pytest.approx(45.0)


def test_left_stick_moves_where_the_head_faces():
    rig = Rig(RigSettings(move_speed=2.0))
    s = rig.update(frame(0, move=(0.0, 1.0), head_yaw=90.0), 0.5)  # facing -X
    assert close((rig.origin.x, rig.origin.z), (-1.0, 0.0), 1e-9)
    assert close(s.move_world, (-2.0, 0.0), 1e-9)
    rig.update(frame(1, move=(1.0, 0.0), head_yaw=0.0), 0.5)  # strafe right = +X
    assert close((rig.origin.x, rig.origin.z), (0.0, 0.0), 1e-9)


def test_lost_head_turns_about_its_last_known_place_and_stays_invalid():
    rig = Rig()
    before = rig.update(frame(0), 1 / 90).head.position
    s = rig.update(frame(1, turn=(1.0, 0.0), head_valid=False, head_pos=(9.0, 9.0, 9.0)), 1 / 90)
    assert not s.head.valid
    assert close(rig.origin.to_world(HEAD), before, 1e-9)


def test_bad_turn_mode_is_refused():
    with pytest.raises(ValueError, match="snap"):
        Rig(RigSettings(turn_mode="spin"))


@pytest.mark.parametrize(
    "field, value",
    [
        ("move_speed", -1.0),
        ("move_speed", math.nan),
        ("snap_angle", -5.0),
        ("snap_angle", 0.0),
        ("smooth_speed", math.inf),
        ("deadzone", 1.0),
    ],
)
def test_unusable_rig_numbers_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        Rig(RigSettings(**{field: value}))


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-50, 50),
    st.floats(-50, 50),
    st.floats(-720, 720),
    st.booleans(),
    st.booleans(),
    st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: sum(c * c for c in q) > 0.1),
)
def test_pose_to_world_maps_valid_parts_only(x, z, yaw, pos_ok, ori_ok, q):
    n = math.sqrt(sum(c * c for c in q))
    pose = Pose((0.3, 1.5, -0.7), tuple(c / n for c in q), pos_ok, ori_ok, pos_ok, ori_ok)
    o = Origin(x, z, yaw)
    fast = pose_to_world(pose, o.trig())
    flags = lambda p: (p.position_valid, p.orientation_valid, p.position_tracked, p.orientation_tracked)  # noqa: E731
    assert flags(fast) == flags(pose)
    assert close(fast.position, o.to_world(pose.position) if pos_ok else pose.position, 1e-9)
    assert close(fast.orientation, o.rotate(pose.orientation) if ori_ok else pose.orientation, 1e-12)


def test_state_poses_are_the_frames_poses_in_the_world_of_this_frames_origin():
    """World poses are built when read, from the origin of their own frame, even after the rig
    (or a caller) has moved the origin since."""
    rig = Rig()
    f = frame(0, head_yaw=30.0)
    first = rig.update(f, 1 / 90)
    rig.origin = Origin(1.0, -2.0, 60.0)  # set from outside (a test, a reset): followed
    second = rig.update(f, 1 / 90)
    g = frame(1, turn=(1.0, 0.0), head_yaw=-20.0)
    turned = rig.update(g, 1 / 90)
    assert turned.snapped and turned.origin == rig.origin != Origin(1.0, -2.0, 60.0)
    for state, src, origin in ((first, f, Origin()), (second, f, Origin(1.0, -2.0, 60.0)), (turned, g, rig.origin)):
        for name in ("head", "right_aim", "left_grip", "right_grip"):
            assert getattr(state, name) == pose_to_world(getattr(src, name), origin.trig())
            assert getattr(state, name) is getattr(state, name)  # built once
            stage = getattr(src, name)
            assert state.world_orientation(stage) == (
                getattr(state, name).orientation if stage.orientation_valid else None
            )
    lost = frame(2, head_valid=False)
    assert rig.update(lost, 1 / 90).world_orientation(lost.head) is None


def test_update_builds_the_state_its_constructor_would():
    """Rig.update builds its RigState without calling __init__ (a call fewer per frame): every slot
    as RigState(...) sets it, so a slot added to one and not the other fails here."""
    from headcast.app.run.rig import RigState

    rig = Rig()
    f = frame(3, move=(0.5, 0.5), head_yaw=15.0)
    state = rig.update(f, 1 / 90)
    want = RigState(rig.start, rig.origin, f, state.snapped, state.move_world, rig.origin.trig())
    assert state.move_world != (0.0, 0.0)
    for name in RigState.__slots__:
        assert getattr(state, name) == getattr(want, name), name


def _rig_states(settings_, steps, shared):
    """The states a rig gives for `steps` ((move, turn, head_yaw, head_valid, dt) per frame); with
    `shared`, a frame whose sticks read as the last one's carries the same Controls object (as an
    XR session hands them over), else a new one each frame."""
    rig = Rig(settings_)
    out, last = [], None
    for seq, (move, turn, yaw, valid, dt) in enumerate(steps):
        f = frame(seq, move=move, turn=turn, head_yaw=yaw, head_valid=valid)
        if shared and last is not None and last.move == move and last.turn == turn:
            f = TrackingFrame(f.seq, f.time_ns, f.head, f.left_aim, f.left_grip, f.right_aim, f.right_grip, last)
        last = f.controls
        s = rig.update(f, dt)
        out.append((s.origin, s.snapped, s.move_world, rig._snap_armed))
    return out


_stick = st.sampled_from([0.0, 0.05, -0.1, 0.2, 0.35, -0.5, 0.7, -0.8, 1.0, -1.0])


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["snap", "smooth"]),
    st.lists(
        st.tuples(
            st.tuples(_stick, _stick),
            st.tuples(_stick, st.just(0.0)),
            st.floats(-180, 180),
            st.booleans(),
            st.sampled_from([0.0, 1 / 90, 0.05]),
        ),
        min_size=1,
        max_size=12,
    ).flatmap(lambda s: st.lists(st.integers(1, 4), min_size=len(s), max_size=len(s)).map(lambda n: (s, n))),
)
def test_a_repeated_controls_object_moves_the_rig_as_a_new_one_would(mode, steps_and_repeats):
    """Rig.update's fast path (the same Controls object as a frame that found it inert: no turn, no
    move) gives every state, snap arming included, that fresh Controls objects give: held sticks,
    snap flicks held and released, sticks inside and outside the deadzone, the head lost."""
    steps, repeats = steps_and_repeats
    seq = [step for step, n in zip(steps, repeats) for _ in range(n)]
    settings_ = RigSettings(turn_mode=mode)
    assert _rig_states(settings_, seq, shared=True) == _rig_states(settings_, seq, shared=False)


def test_a_frame_with_inert_controls_calls_no_builtin():
    """The quiet frame's rig (issue 26): the sticks at rest, handed over as the same Controls object
    frame after frame (fastframe keeps it while the states read the same), cost no call into a
    builtin (abs, math.hypot: cold, each several microseconds of a ~50-us frame on this VM) and no
    Python call besides update itself."""
    import sys

    rig = Rig()
    rest = Controls()
    frames = [frame(i) for i in range(3)]
    frames = [
        TrackingFrame(f.seq, f.time_ns, f.head, f.left_aim, f.left_grip, f.right_aim, f.right_grip, rest)
        for f in frames
    ]
    rig.update(frames[0], 1 / 90)  # the first sight of these controls: the slow path finds them inert
    calls: list[str] = []

    def profile(frame_, event, arg):
        if event in ("call", "c_call"):
            calls.append(getattr(arg, "__name__", "") if event == "c_call" else frame_.f_code.co_name)

    sys.setprofile(profile)
    try:
        for f in frames[1:]:
            rig.update(f, 1 / 90)
    finally:
        sys.setprofile(None)
    assert calls == ["update", "__new__"] * 2 + ["setprofile"], calls  # (__new__: the RigState's)
