"""The shipped serializers as oracles, and random poses (shared by the netsync tests and benchmarks).

One styly-netsync-server release per protocol, each release's own `binary_serializer.py`
loaded side by side (`releases.load_serializer`, from build/netsync/<version>, which
scripts/setup.sh installs). `from netsync.oracle import ...` (tests/ is on sys.path).
"""

from __future__ import annotations

import functools
import logging
import math
import random
from types import SimpleNamespace

from headcast.netcode.netsync import codec
from headcast.netcode.netsync.model import (
    MAX_VIRTUALS,
    OriginDelta,
    PoseFrame,
    Transform,
)
from headcast.netcode.netsync.releases import load_serializer

# The release each protocol's oracle comes from (docs/protocols/netsync.md#versions).
ORACLE_RELEASE = {3: "0.10.4", 4: "0.11.0", 5: "0.12.0", 6: "0.14.0", 7: "0.15.0", 8: "0.17.5"}
PROTOCOLS = tuple(ORACLE_RELEASE)


@functools.cache
def oracle(protocol: int):
    """That protocol's official binary_serializer module (its warnings silenced: the fuzz and
    edge tests feed it what it logs about)."""
    m = load_serializer(ORACLE_RELEASE[protocol])
    assert m.PROTOCOL_VERSION == protocol, (ORACLE_RELEASE[protocol], m.PROTOCOL_VERSION)
    m.logger.setLevel(logging.ERROR)
    return m


def pinned_codec(protocol: int) -> SimpleNamespace:
    """The codec's message functions with the protocol fixed (the protocol-3 test files use it)."""
    p = functools.partial
    return SimpleNamespace(
        encode_body=p(codec.encode_body, protocol=protocol),
        encode_client_pose=p(codec.encode_client_pose, protocol=protocol),
        encode_room_pose=p(codec.encode_room_pose, protocol=protocol),
        decode_body=p(codec.decode_body, protocol=protocol),
        decode_client_pose=p(codec.decode_client_pose, expect=protocol),
        decode_room_pose=p(codec.decode_room_pose, expect=protocol),
    )


def tdict(t: Transform) -> dict:
    (x, y, z), (qx, qy, qz, qw) = t
    return {"posX": x, "posY": y, "posZ": z, "rotX": qx, "rotY": qy, "rotZ": qz, "rotW": qw}


def transform_of(d: dict) -> Transform:
    """A shipped decoder's transform dict back to a Transform."""
    return Transform((d["posX"], d["posY"], d["posZ"]), (d["rotX"], d["rotY"], d["rotZ"], d["rotW"]))


def oracle_client(device_id: str, seq: int, f: PoseFrame) -> dict:
    """The shipped serializer's input dict for the same pose (protocol 3 ignores dy and physical)."""
    return {
        "deviceId": device_id,
        "poseSeq": seq,
        "flags": f.flags,
        "head": tdict(f.head),
        "rightHand": tdict(f.right),
        "leftHand": tdict(f.left),
        "virtuals": [tdict(v) for v in f.virtuals],
        "xrOriginDeltaX": f.delta.dx,
        "xrOriginDeltaY": f.delta.dy,
        "xrOriginDeltaZ": f.delta.dz,
        "xrOriginDeltaYaw": f.delta.dyaw,
        "physical": tdict(f.physical),
    }


def oracle_encode(device_id: str, seq: int, f: PoseFrame, protocol: int = 3) -> bytes:
    return oracle(protocol).serialize_client_transform(oracle_client(device_id, seq, f))


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


def random_frame(
    rng: random.Random, flags: int | None = None, n_virtuals: int | None = None, max_flags: int = 64
) -> PoseFrame:
    """A pose within every field's range: head anywhere ±1 km, parts within ±150 m of it, a Δ
    with height, a floor-local physical pose (used only with flag 0x40, protocol 5+)."""
    head = random_transform(rng, spread=1000.0)
    near = lambda: random_transform(rng, head.pos, 150.0)  # noqa: E731
    n = rng.choice((0, 0, 1, 3, MAX_VIRTUALS)) if n_virtuals is None else n_virtuals
    return PoseFrame(
        rng.randrange(max_flags) if flags is None else flags,
        head,
        near(),
        near(),
        tuple(near() for _ in range(n)),
        OriginDelta(rng.uniform(-300, 300), rng.uniform(-300, 300), rng.uniform(-180, 180), rng.uniform(-300, 300)),
        random_transform(rng, spread=300.0),
    )
