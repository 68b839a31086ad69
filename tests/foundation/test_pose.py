"""Pose conventions: named head poses against hand-derived Quake angles and Unity quaternions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from headcast.netcode.pose import (
    angle_normalize180,
    angle_normalize360,
    angle_subtract,
    lerp_angle,
    q_conj,
    q_mul,
    q_normalize,
    q_rotate,
    quake_angles,
    quat_from_axis_angle,
    unity_position,
    unity_quat,
    yaw_quat,
)

TOL = 1e-6
S15, C15 = math.sin(math.radians(15)), math.cos(math.radians(15))  # half of 30°
S225, C225 = math.sin(math.radians(22.5)), math.cos(math.radians(22.5))  # half of 45°
S10, C10 = math.sin(math.radians(10)), math.cos(math.radians(10))  # half of 20°

# Rotations written out by hand (right-handed, OpenXR axes), not through the module under test.
LOOK_UP_30 = (S15, 0.0, 0.0, C15)  # about +X: −Z forward tips toward +Y
TURN_LEFT_45 = (0.0, S225, 0.0, C225)  # about +Y: forward swings toward −X (left)
TILT_RIGHT_20 = (0.0, 0.0, -S10, C10)  # about −Z (forward): +X (right side) dips


def close(a, b, tol=TOL):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def test_axis_angle_and_yaw_builders_match_hand_quaternions():
    assert close(quat_from_axis_angle((1, 0, 0), 30), LOOK_UP_30)
    assert close(quat_from_axis_angle((0, 5, 0), 45), TURN_LEFT_45)  # axis normalised
    assert close(quat_from_axis_angle((0, 0, -1), 20), TILT_RIGHT_20)
    assert close(yaw_quat(45), TURN_LEFT_45)
    assert quat_from_axis_angle((0, 0, 0), 30) == (0.0, 0.0, 0.0, 1.0)


# name -> (OpenXR quaternion, Quake (pitch, yaw, roll), Unity quaternion)
NAMED = {
    "identity": ((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
    "look_up_30": (LOOK_UP_30, (-30.0, 0.0, 0.0), (-S15, 0.0, 0.0, C15)),
    "turn_left_45": (TURN_LEFT_45, (0.0, 45.0, 0.0), (0.0, -S225, 0.0, C225)),
    "tilt_right_20": (TILT_RIGHT_20, (0.0, 0.0, 20.0), (0.0, 0.0, -S10, C10)),
    # turn left 45, then (in the head's frame) look up 30: Hamilton product expanded by hand
    "turn_left_45_look_up_30": (
        (C225 * S15, S225 * C15, -S225 * S15, C225 * C15),
        (-30.0, 45.0, 0.0),
        (-C225 * S15, -S225 * C15, -S225 * S15, C225 * C15),
    ),
    # look up 30, then tilt right 20 about the new forward axis
    "look_up_30_tilt_right_20": (
        (S15 * C10, S15 * S10, -C15 * S10, C15 * C10),
        (-30.0, 0.0, 20.0),
        (-S15 * C10, -S15 * S10, -C15 * S10, C15 * C10),
    ),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_pose_quake_angles_and_unity_quat(name):
    q, angles, unity = NAMED[name]
    assert close(quake_angles(q), angles), quake_angles(q)
    assert close(unity_quat(q), unity)


def test_compositions_through_q_mul_match_the_hand_products():
    assert close(q_mul(TURN_LEFT_45, LOOK_UP_30), NAMED["turn_left_45_look_up_30"][0])
    assert close(q_mul(LOOK_UP_30, TILT_RIGHT_20), NAMED["look_up_30_tilt_right_20"][0])
    full = q_mul(q_mul(TURN_LEFT_45, LOOK_UP_30), TILT_RIGHT_20)
    assert close(quake_angles(full), (-30.0, 45.0, 20.0))
    # Unity conversion is a homomorphism: unity(a·b) = unity(a)·unity(b)
    assert close(
        unity_quat(full), q_mul(q_mul(unity_quat(TURN_LEFT_45), unity_quat(LOOK_UP_30)), unity_quat(TILT_RIGHT_20))
    )


def test_turn_left_past_180_wraps_yaw_sign():
    assert close(quake_angles(yaw_quat(190)), (0.0, -170.0, 0.0))
    assert close(quake_angles(yaw_quat(-90)), (0.0, -90.0, 0.0))


def test_straight_down_puts_heading_in_yaw_and_zero_roll():
    q = q_mul(yaw_quat(30), quat_from_axis_angle((1, 0, 0), -90))
    pitch, yaw, roll = quake_angles(q)
    assert abs(pitch - 90.0) <= TOL and abs(yaw - 30.0) <= 1e-4 and roll == 0.0


def test_unity_position_flips_z():
    assert unity_position((1.0, 1.6, -2.5)) == (1.0, 1.6, 2.5)


def test_q_rotate_conj_and_normalize():
    assert close(q_rotate(TURN_LEFT_45, (0, 0, -1)), (-math.sqrt(0.5), 0.0, -math.sqrt(0.5)))
    assert close(q_rotate(LOOK_UP_30, (0, 0, -1)), (0.0, 0.5, -math.cos(math.radians(30))))
    assert close(q_mul(TURN_LEFT_45, q_conj(TURN_LEFT_45)), (0.0, 0.0, 0.0, 1.0))
    assert close(q_normalize((0.0, 2.0, 0.0, 0.0)), (0.0, 1.0, 0.0, 0.0))
    for bad in [(0.0, 0.0, 0.0, 0.0), (math.nan, 0.0, 0.0, 1.0), (math.inf, 0.0, 0.0, 1.0)]:
        assert q_normalize(bad) == (0.0, 0.0, 0.0, 1.0)
    assert quake_angles((0.0, 0.0, 0.0, 0.0)) == (0.0, 0.0, 0.0)
    # an unnormalised input is normalised first
    assert close(quake_angles(tuple(3 * c for c in LOOK_UP_30)), (-30.0, 0.0, 0.0))


def _angle_vectors(pitch, yaw, roll):
    """Quake's AngleVectors (forward, right, up) in Quake axes, written from q_math.c's formulas."""
    sp, cp = math.sin(math.radians(pitch)), math.cos(math.radians(pitch))
    sy, cy = math.sin(math.radians(yaw)), math.cos(math.radians(yaw))
    sr, cr = math.sin(math.radians(roll)), math.cos(math.radians(roll))
    forward = (cp * cy, cp * sy, -sp)
    right = (-sr * sp * cy + cr * sy, -sr * sp * sy - cr * cy, -sr * cp)  # q_math's right = −left
    up = (cr * sp * cy + sr * sy, cr * sp * sy - sr * cy, cr * cp)
    return forward, right, up


def _to_quake(v):
    return (-v[2], -v[0], v[1])


@settings(max_examples=300, deadline=None)
@given(st.floats(-89.0, 89.0), st.floats(-179.0, 179.0), st.floats(-179.0, 179.0))
def test_quake_angles_inverts_angle_vectors(pitch, yaw, roll):
    # yaw about +Y, then pitch (positive = down = about −X), then roll (right dips = about −Z)
    q = q_mul(q_mul(yaw_quat(yaw), quat_from_axis_angle((-1, 0, 0), pitch)), quat_from_axis_angle((0, 0, -1), roll))
    forward, right, up = _angle_vectors(pitch, yaw, roll)
    assert close(_to_quake(q_rotate(q, (0, 0, -1))), forward, 1e-9)
    assert close(_to_quake(q_rotate(q, (1, 0, 0))), right, 1e-9)
    assert close(_to_quake(q_rotate(q, (0, 1, 0))), up, 1e-9)
    assert close(quake_angles(q), (pitch, yaw, roll), 1e-6)


@pytest.mark.parametrize(
    "a1,a2,want",
    [
        (10.0, 350.0, 20.0),
        (350.0, 10.0, -20.0),
        (180.0, 0.0, 180.0),
        (-180.0, 0.0, -180.0),
        (181.0, 0.0, -179.0),
        (-181.0, 0.0, 179.0),
        (540.0, 0.0, 180.0),
        (-540.0, 0.0, -180.0),
        (900.5, 0.0, 180.5 - 360.0),
        (1e6, 0.0, 1e6 - 2778 * 360.0),
        (45.0, 45.0, 0.0),
    ],
)
def test_angle_subtract_matches_q_math_loops(a1, a2, want):
    assert abs(angle_subtract(a1, a2) - want) <= 1e-9


def _angle_subtract_loop(a1, a2):
    a = a1 - a2
    while a > 180:
        a -= 360
    while a < -180:
        a += 360
    return a


@settings(deadline=None)
@given(st.floats(-5000, 5000), st.floats(-5000, 5000))
def test_angle_subtract_equals_the_loop(a1, a2):
    assert abs(angle_subtract(a1, a2) - _angle_subtract_loop(a1, a2)) <= 1e-9


@pytest.mark.parametrize(
    "a,want360,want180",
    [
        (0.0, 0.0, 0.0),
        (360.0, 0.0, 0.0),
        (-1.0, 65354 * 360 / 65536, 65354 * 360 / 65536 - 360),  # int(-182.04) = -182 → & 65535
        (190.0, 34588 * 360 / 65536, 34588 * 360 / 65536 - 360),
        (180.0, 180.0, 180.0),
        (90.001, 16384 * 360 / 65536, 16384 * 360 / 65536),  # 16384.18 truncates
        (-720.5, (-131163 & 65535) * 360 / 65536, (-131163 & 65535) * 360 / 65536 - 360),
    ],
)
def test_angle_normalize_quantises_like_q_math(a, want360, want180):
    assert angle_normalize360(a) == want360
    assert angle_normalize180(a) == want180


def test_lerp_angle_takes_the_short_way_unwrapped():
    assert lerp_angle(350.0, 10.0, 0.5) == 360.0
    assert lerp_angle(10.0, 350.0, 0.25) == 5.0
    assert lerp_angle(0.0, 90.0, 0.5) == 45.0
    assert lerp_angle(-170.0, 170.0, 0.5) == -180.0


@pytest.mark.parametrize(
    "fn,args",
    [
        (angle_subtract, (math.inf, 0.0)),
        (angle_subtract, (0.0, math.nan)),
        (angle_normalize360, (math.nan,)),
        (angle_normalize180, (-math.inf,)),
        (lerp_angle, (math.nan, 0.0, 0.5)),
    ],
)
def test_non_finite_angles_are_a_typed_error(fn, args):
    with pytest.raises(ValueError):
        fn(*args)
