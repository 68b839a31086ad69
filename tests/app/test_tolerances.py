"""The demo's and e2e tests' quantisation bounds hold for the protocols' own codecs, and are tight.

Each bound in headcast.app.commands.demo is derived from a protocol's quantisation (see its comments). Here
the shipped quantisers are driven over random and adversarial inputs: no error may exceed the
bound (else a real run could fail the check), and the worst error found must come close to it
(else the bound is a fudge factor that would hide a regression).
"""

from __future__ import annotations

import math
import random

import pytest

from headcast.app.commands.demo import (
    ANGLE_STEP,
    NS_PHYS_TOL,
    NS_POS_TOL,
    NS_ROT_TOL,
    Q3_HEAD_TOL,
    Q3_VIEW_TOL,
    STAGE_RADIUS,
)
from headcast.app.run.rig import Origin
from headcast.app.sinks.netsync.mapping import rotation_error_deg, xrorigin_delta
from headcast.app.sinks.q3.mapping import remote_head
from headcast.netcode.netsync.codec import compress_quat, decode_body, decompress_quat, encode_body
from headcast.netcode.netsync.model import PoseFrame, Transform
from headcast.netcode.netsync.origin import receiver_yaw, reconstruct_physical, unity_yaw
from headcast.netcode.pose import angle_subtract, q_mul, unity_position, unity_quat, yaw_quat
from headcast.netcode.q3 import vrhead

N = 20000


def _unit(q):
    n = math.sqrt(sum(c * c for c in q))
    return tuple(c / n for c in q)


def _f32(x: float) -> float:
    import struct

    return struct.unpack("<f", struct.pack("<f", x))[0]


def test_q3_server_view_is_within_one_angle2short_step():
    rng = random.Random(6)
    worst = 0.0
    for _ in range(N):
        a = rng.uniform(-180.0, 180.0)
        s = vrhead.angle2short(a)
        temp = s - 65536 if s >= 32768 else s  # PM_UpdateViewAngles: a short
        view = _f32(temp * _f32(360.0 / 65536))  # SHORT2ANGLE into float playerState.viewangles
        worst = max(worst, abs(angle_subtract(a, view)))
    assert worst <= Q3_VIEW_TOL
    assert worst >= 0.99 * ANGLE_STEP


def test_q3_head_bits_are_within_one_7bit_step():
    rng = random.Random(7)
    worst = 0.0
    for _ in range(N):
        pitch = rng.uniform(-vrhead.HEAD_PITCH_CLAMP, vrhead.HEAD_PITCH_CLAMP)
        offset = rng.uniform(-vrhead.HEAD_YAW_CLAMP, vrhead.HEAD_YAW_CLAMP)
        seen = remote_head(vrhead.pack_head(0, pitch, offset, 0.0), 0)
        worst = max(worst, abs(pitch - seen.pitch), abs(offset - seen.yaw_offset))
    assert worst <= Q3_HEAD_TOL
    assert worst >= 0.99 * 180 / 127


def test_smallest_three_rotation_error_bound_holds_and_is_nearly_reached():
    rng = random.Random(8)
    worst = 0.0
    for _ in range(N):
        q = _unit([rng.gauss(0, 1) for _ in range(4)])
        worst = max(worst, rotation_error_deg(q, decompress_quat(compress_quat(q))))
    for _ in range(N):  # the worst case: all four components near ±1/2
        q = _unit([rng.choice((-1, 1)) * (0.5 + rng.uniform(-0.01, 0.01)) for _ in range(4)])
        worst = max(worst, rotation_error_deg(q, decompress_quat(compress_quat(q))))
    assert worst <= NS_ROT_TOL
    assert worst >= 0.9 * NS_ROT_TOL
    # The previous bound (0.2°) was below what the codec really does.
    assert worst > 0.2


@pytest.mark.parametrize("protocol", [3, 8])
def test_relayed_head_position_and_physical_pose_bounds(protocol):
    rng = random.Random(9)
    worst_pos = worst_phys = 0.0
    for _ in range(N):
        r, bearing = STAGE_RADIUS * math.sqrt(rng.random()), rng.uniform(0, 2 * math.pi)
        stage = (r * math.cos(bearing), rng.uniform(0.3, 2.0), r * math.sin(bearing))
        origin = Origin(rng.uniform(-50, 50), rng.uniform(-50, 50), rng.uniform(-180, 180))
        world = origin.to_world(stage)
        head = Transform(unity_position(world), unity_quat(yaw_quat(rng.uniform(-180, 180))))
        frame = PoseFrame.build(head, delta=xrorigin_delta(Origin(), origin))
        body = decode_body(encode_body(1, frame, protocol), 0, protocol)[0]
        worst_pos = max(worst_pos, math.dist(head.pos, body.head.pos))
        worst_phys = max(worst_phys, math.dist(unity_position(stage), body.physical.pos))
    assert worst_pos <= NS_POS_TOL and worst_pos >= 0.8 * NS_POS_TOL
    assert worst_phys <= NS_PHYS_TOL and worst_phys >= 0.7 * NS_PHYS_TOL


@pytest.mark.parametrize("protocol", [3, 8])
def test_physical_yaw_is_checked_against_the_receivers_reconstruction_not_the_true_yaw(protocol):
    """The official receivers' physical yaw (atan2 of the head, docs/protocols/netsync.md#physical-pose) is the
    true yaw only without head pitch and roll: at pitch 30°, roll 15° it is ~9° off. So the demo's
    "netsync physical" check compares the decoded physical yaw with reconstruct_physical of the
    quantised head and Δ we sent — which it equals exactly — and only reports its distance from
    the true yaw."""
    rng = random.Random(10)
    worst_true = 0.0
    for _ in range(2000):
        yaw, pitch, roll = rng.uniform(-180, 180), rng.uniform(-30, 30), rng.uniform(-15, 15)
        stage_q = q_mul(
            q_mul(yaw_quat(yaw), (math.sin(math.radians(pitch) / 2), 0.0, 0.0, math.cos(math.radians(pitch) / 2))),
            (0.0, 0.0, math.sin(math.radians(roll) / 2), math.cos(math.radians(roll) / 2)),
        )
        stage = (rng.uniform(-2, 2), rng.uniform(0.3, 2.0), rng.uniform(-2, 2))
        origin = Origin(rng.uniform(-50, 50), rng.uniform(-50, 50), rng.uniform(-180, 180))
        head = Transform(unity_position(origin.to_world(stage)), unity_quat(origin.rotate(stage_q)))
        body = decode_body(
            encode_body(1, PoseFrame.build(head, delta=xrorigin_delta(Origin(), origin)), protocol), 0, protocol
        )[0]
        model = reconstruct_physical(body.head, body.delta)  # the receivers, on what we sent
        assert body.physical == model
        true_yaw = unity_yaw(unity_quat(stage_q))
        worst_true = max(worst_true, abs(math.remainder(receiver_yaw(body.physical.rot) - true_yaw, 360.0)))
    assert worst_true > 5.0  # the true yaw is no bound for the receivers' one: a check against it would fail
