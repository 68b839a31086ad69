"""The shipped serializer as oracle, and random poses (shared by the netsync tests and benchmarks).

`from netsync.oracle import ...` (tests/ is on sys.path; tests/netsync is a namespace package).
"""
from __future__ import annotations

import math
import random

from styly_netsync import binary_serializer as shipped

from headcast.netcode.netsync.model import (
    MAX_VIRTUALS,
    OriginDelta,
    PoseFrame,
    Transform,
)


def tdict(t: Transform) -> dict:
    (x, y, z), (qx, qy, qz, qw) = t
    return {"posX": x, "posY": y, "posZ": z, "rotX": qx, "rotY": qy, "rotZ": qz, "rotW": qw}


def oracle_client(device_id: str, seq: int, f: PoseFrame) -> dict:
    """The shipped serializer's input dict for the same pose."""
    return {
        "deviceId": device_id,
        "poseSeq": seq,
        "flags": f.flags,
        "head": tdict(f.head),
        "rightHand": tdict(f.right),
        "leftHand": tdict(f.left),
        "virtuals": [tdict(v) for v in f.virtuals],
        "xrOriginDeltaX": f.delta.dx,
        "xrOriginDeltaZ": f.delta.dz,
        "xrOriginDeltaYaw": f.delta.dyaw,
    }


def oracle_encode(device_id: str, seq: int, f: PoseFrame) -> bytes:
    return shipped.serialize_client_transform(oracle_client(device_id, seq, f))


def random_quat(rng: random.Random) -> tuple[float, float, float, float]:
    """Uniform on the 3-sphere, with a random scale (the codec normalises)."""
    while True:
        q = [rng.gauss(0.0, 1.0) for _ in range(4)]
        n = math.sqrt(sum(c * c for c in q))
        if n > 1e-6:
            s = rng.choice((1.0, rng.uniform(0.2, 5.0)))
            return tuple(c / n * s for c in q)


def random_transform(rng: random.Random, around=(0.0, 0.0, 0.0), spread: float = 50.0) -> Transform:
    return Transform(tuple(c + rng.uniform(-spread, spread) for c in around), random_quat(rng))


def random_frame(rng: random.Random, flags: int | None = None, n_virtuals: int | None = None) -> PoseFrame:
    """A pose within every field's range: head anywhere ±1 km, parts within ±150 m of it."""
    head = random_transform(rng, spread=1000.0)
    near = lambda: random_transform(rng, head.pos, 150.0)  # noqa: E731
    n = rng.choice((0, 0, 1, 3, MAX_VIRTUALS)) if n_virtuals is None else n_virtuals
    return PoseFrame(
        rng.randrange(64) if flags is None else flags,
        head,
        near(),
        near(),
        tuple(near() for _ in range(n)),
        OriginDelta(rng.uniform(-300, 300), rng.uniform(-300, 300), rng.uniform(-180, 180)),
    )
