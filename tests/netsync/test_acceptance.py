"""docs/protocols/netsync.md#acceptance 1, on 10,000 random poses: encode → decode → reconstruct, max errors printed."""

from __future__ import annotations

import math
import random

from netsync.oracle import random_quat

from headcast.netcode.netsync.codec import decode_client_pose, encode_client_pose
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.origin import delta_angle, reconstruct_physical, unity_yaw
from headcast.netcode.pose import q_normalize

from support import LONG


def angle_deg(a, b) -> float:
    """Rotation angle between two unit quaternions (q and −q are the same rotation)."""
    dot = abs(sum(x * y for x, y in zip(q_normalize(a), q_normalize(b))))
    return math.degrees(2.0 * math.acos(min(1.0, dot)))


def sub(a, b):
    return tuple(x - y for x, y in zip(a, b))


def test_acceptance_12_1_on_random_poses():
    count = 100_000 if LONG else 10_000
    rng = random.Random(121)
    worst = dict.fromkeys(
        ("head_pos", "rel_pos", "abs_part_pos", "rot", "delta_t", "dyaw", "phys_pos", "phys_yaw"), 0.0
    )
    for _ in range(count):
        head = Transform(tuple(rng.uniform(-500, 500) for _ in range(3)), random_quat(rng))
        parts = [
            Transform(tuple(h + rng.uniform(-150, 150) for h in head.pos), random_quat(rng))
            for _ in range(2 + rng.randrange(4))
        ]
        delta = OriginDelta(rng.uniform(-300, 300), rng.uniform(-300, 300), rng.uniform(-180, 180))
        f = PoseFrame.build(head, parts[0], parts[1], tuple(parts[2:]), delta)
        b = decode_client_pose(encode_client_pose("d", 1, f)).body

        worst["head_pos"] = max(worst["head_pos"], math.dist(b.head.pos, head.pos))
        worst["rot"] = max(worst["rot"], angle_deg(b.head.rot, head.rot))
        for sent, got in zip(parts, (b.right, b.left, *b.virtuals), strict=True):
            worst["rel_pos"] = max(worst["rel_pos"], math.dist(sub(got.pos, b.head.pos), sub(sent.pos, head.pos)))
            worst["abs_part_pos"] = max(worst["abs_part_pos"], math.dist(got.pos, sent.pos))
            worst["rot"] = max(worst["rot"], angle_deg(got.rot, sent.rot))
        worst["delta_t"] = max(worst["delta_t"], math.hypot(b.delta.dx - delta.dx, b.delta.dz - delta.dz))
        worst["dyaw"] = max(worst["dyaw"], abs(b.delta.dyaw - delta.dyaw))
        exact = reconstruct_physical(head, delta)
        lever = math.hypot(head.pos[0] - delta.dx, head.pos[2] - delta.dz)
        err = math.dist(b.physical.pos, exact.pos)
        # Δ-yaw quantum (≤ 0.05°) turns the lever; the rest is head + Δ translation quanta
        assert err <= 0.0087 + 0.0071 + lever * math.radians(0.05) + 1e-9
        worst["phys_pos"] = max(worst["phys_pos"], err - lever * math.radians(0.05))
        x, y, z, w = q_normalize(head.rot)
        # the receivers' yaw formula (origin.receiver_yaw) is undefined where both its atan2
        # arguments vanish; near there a quantum of the head's rotation turns it by a lot
        if math.hypot(2 * (w * y + z * x), 1 - 2 * (y * y + z * z)) > 0.2:
            worst["phys_yaw"] = max(
                worst["phys_yaw"], abs(delta_angle(unity_yaw(b.physical.rot), unity_yaw(exact.rot)))
            )
        for q in (b.head.rot, b.right.rot, b.left.rot, b.physical.rot, *(v.rot for v in b.virtuals)):
            assert all(math.isfinite(c) for c in q) and abs(sum(c * c for c in q) - 1.0) < 1e-9

    print(f"\nacceptance check 1 on {count} random poses, max errors reached:")
    for k, v in worst.items():
        print(f"  {k:>13}: {v:.6f}" + (" deg" if k in ("rot", "dyaw", "phys_yaw") else " m"))
    assert worst["head_pos"] <= 0.01  # spec: head ≤ 0.01 m
    assert worst["rel_pos"] <= 0.005  # spec: hands/virtuals relative ≤ 0.005 m
    assert worst["rot"] <= 1.0  # spec: rotation ≤ 1°
    assert worst["delta_t"] <= 0.01 and worst["dyaw"] <= 0.05 + 1e-9
    assert worst["phys_yaw"] <= 1.0  # (heads pitched less than ~78°)
