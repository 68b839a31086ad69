"""Protocol 3: our encoder's bytes == the shipped serializer's bytes (styly-netsync-server 0.10.4
as oracle), with docs/protocols/netsync.md#bandwidth's golden and clamping vectors. This file pins protocol 3;
test_codec_protocols.py runs every protocol 3–8 against its own release."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings, strategies as st
from netsync.oracle import oracle, oracle_encode, pinned_codec, random_frame, tdict

from headcast.netcode.netsync.codec import (
    PoseEncodeError,
    compress_quat,
    decode_device_id_mapping,
    decompress_quat,
    encode_device_id_mapping,
)
from headcast.netcode.netsync.model import (
    FLAG_HEAD,
    FLAG_LEFT,
    FLAG_PHYSICAL,
    FLAG_RIGHT,
    FLAG_STEALTH,
    FLAG_VIRTUALS,
    DeviceMapping,
    OriginDelta,
    PoseFrame,
    Transform,
)

from support import LONG

shipped = oracle(3)
P3 = pinned_codec(3)
encode_body, encode_client_pose, encode_room_pose = P3.encode_body, P3.encode_client_pose, P3.encode_room_pose
decode_body, decode_client_pose, decode_room_pose = P3.decode_body, P3.decode_client_pose, P3.decode_room_pose

GOLDEN = bytes.fromhex("ffff1e1f7d00ceff2c017b0000a5000006ffff355a1cdd3600baff3c00fe78d7ecbeffb0ff28003526dce500")


@pytest.mark.parametrize("flags", range(64))
def test_every_flag_combination_matches_shipped(flags):
    rng = random.Random(flags)
    for n in (0, 1, 2, 50, 51):  # 51: both encoders cap at 50
        for seq in (0, 1, 65535, 70000):  # 70000: both mask to u16
            f = random_frame(rng, flags, n)
            ours = encode_client_pose("dev-Ω", seq, f)
            assert ours == oracle_encode("dev-Ω", seq, f), (hex(flags), n, seq)
            # and what we wrote decodes back to the sanitised flags
            body = decode_client_pose(ours).body
            assert body.flags == ours[3 + len("dev-Ω".encode()) + 2]


def test_random_poses_match_shipped():
    count = 200_000 if LONG else 10_000
    rng = random.Random(0x5EED)
    mismatches = []
    for i in range(count):
        f = random_frame(rng, flags=i % 64)  # every flag combination, ~156 random poses each
        seq = rng.randrange(65536)
        if encode_client_pose("d", seq, f) != oracle_encode("d", seq, f):
            mismatches.append((i, f))
    assert not mismatches[:3], f"{len(mismatches)} of {count} differ"


EDGE_QUATS = [
    (0.0, 0.0, 0.0, 0.0),  # zero → identity
    (math.nan, 0.0, 0.0, 1.0),
    (math.inf, 0.0, 0.0, 1.0),
    (1e-7, 1e-7, 1e-7, 1e-7),  # |q|² = 4e-14 ≤ 1e-12 → identity
    (1e-6, 0.0, 0.0, 0.0),  # |q|² = 1e-12: still identity
    (2e-6, 0.0, 0.0, 0.0),  # just above: a real rotation
    (0.5, 0.5, 0.5, 0.5),  # four-way tie → index 0
    (-0.5, 0.5, -0.5, 0.5),  # tie, negative first → negate
    (0.0, 0.0, 0.0, -1.0),  # negative largest
    (0.70710677, 0.70710677, 0.0, 0.0),
    (0.0, -0.70710678, 0.70710678, 0.0),
    (1.0, 1.0, 1.0, 1e-300),
    (3.0, -4.0, 12.0, 84.0),
    (1e300, 1e300, 0.0, 0.0),  # |q|² overflows to inf → identity
]


@pytest.mark.parametrize("q", EDGE_QUATS)
def test_quaternion_edge_cases_match_shipped(q):
    assert compress_quat(q) == shipped._compress_quaternion_smallest_three(*q)
    for flags in (0x06, 0x1E, 0x3E):
        f = PoseFrame(
            flags,
            Transform((1.0, 2.0, 3.0), q),
            Transform((1.5, 2, 3), q),
            Transform((0, 0, 0), (q[3], q[2], q[1], q[0])),
            (Transform((2, 2, 2), q),),
            OriginDelta(1, 2, 3),
        )
        assert encode_client_pose("x", 7, f) == oracle_encode("x", 7, f)


def test_identity_and_decoded_zero_component():
    assert compress_quat((0.0, 0.0, 0.0, 1.0)) == 0xE0080200
    x, y, z, w = decompress_quat(0xE0080200)
    assert x == y == z == pytest.approx(0.000691, abs=1e-6) and w == pytest.approx(1.0, abs=1e-6)


def test_every_packed_value_decodes_to_a_unit_quaternion():
    rng = random.Random(3)
    for packed in [0, 0xFFFFFFFF, 0xC0000000, 0x3FFFFFFF] + [rng.getrandbits(32) for _ in range(20_000)]:
        q = decompress_quat(packed)
        assert all(math.isfinite(c) for c in q)
        assert sum(c * c for c in q) == pytest.approx(1.0, abs=1e-12)


def test_clamping_and_rounding_vector():
    """Clamping and rounding (docs/protocols/netsync.md#bandwidth): head x 0.125 → 12 (half-to-even),
    y 1e5 → int24 max, dz −400 → i16 min, dyaw 4000 → i16 max."""
    f = PoseFrame(
        0x1E,
        Transform((0.125, 100000.0, -5.0)),
        Transform((0.125 + 200.0, 0, 0)),
        Transform((0.125, 100000.0 - 200, -5.0)),
        delta=OriginDelta(0.045, -400.0, 4000.0),
    )
    ours = encode_body(1, f)
    assert ours == oracle_encode("", 1, f)[3:]
    assert ours[4:10] == bytes.fromhex("04000080ff7f")  # dx 0.045 → 4, dz → −32768, dyaw → 32767
    assert ours[10:19] == bytes.fromhex("0c0000ffff7f0cfeff")  # 12, 8388607, −500
    # relative to the unquantised head: right (+200, −1e5, +5) m → (32767, −32768, 1000)
    assert ours[23:29] == bytes.fromhex("ff7f0080e803")
    assert ours[33:39] == bytes.fromhex("000000800000")  # left y −200 m → −32768


def test_golden_body():
    body, end = decode_body(GOLDEN)
    assert end == len(GOLDEN) == 44
    assert (body.pose_seq, body.flags, body.encoding_flags) == (65535, 0x1E, 0x1F)
    assert body.delta == pytest.approx((1.25, -0.5, 30.0, 0.0))
    assert body.head.pos == pytest.approx((1.23, 1.65, -2.5))
    assert body.right.pos == pytest.approx((1.23 + 0.27, 1.65 - 0.35, -2.5 + 0.30))
    assert body.left.pos == pytest.approx((1.23 - 0.33, 1.65 - 0.40, -2.5 + 0.20))
    assert body.virtuals == ()
    # what we decoded encodes back to the same 44 bytes, with our encoder and with the shipped one
    f = PoseFrame(body.flags, body.head, body.right, body.left, body.virtuals, body.delta)
    assert encode_body(65535, f) == GOLDEN
    assert oracle_encode("", 65535, f)[3:] == GOLDEN


@pytest.mark.parametrize(
    "flags, n, size",
    [
        (FLAG_STEALTH, 0, 5),
        (FLAG_HEAD, 0, 18),
        (FLAG_PHYSICAL, 0, 11),
        (0x1C, 0, 38),
        (0x1E, 0, 44),
        (0x3E, 1, 54),
        (0x3E, 50, 544),
        (0x3F, 3, 5),
        (FLAG_RIGHT | FLAG_LEFT | FLAG_VIRTUALS, 2, 5),
    ],
)
def test_body_sizes(flags, n, size):
    f = random_frame(random.Random(n), flags, n)
    assert len(encode_body(0, f)) == size


def test_decoder_agrees_with_shipped_decoder():
    rng = random.Random(11)
    for _ in range(2000):
        f = random_frame(rng)
        msg = encode_client_pose("peer", 9, f)
        ours = decode_client_pose(msg)
        _, theirs, raw = shipped.deserialize(msg)
        assert ours.raw_body == raw and ours.device_id == theirs["deviceId"] == "peer"
        b = ours.body
        assert (b.pose_seq, b.flags, b.encoding_flags) == (theirs["poseSeq"], theirs["flags"], theirs["encodingFlags"])
        if b.delta is not None:
            assert b.delta == (theirs["xrOriginDeltaX"], theirs["xrOriginDeltaZ"], theirs["xrOriginDeltaYaw"], 0.0)
        for mine, key in ((b.head, "head"), (b.right, "rightHand"), (b.left, "leftHand")):
            if mine is not None:
                assert tdict(mine) == pytest.approx(
                    tdict(
                        Transform(
                            (theirs[key]["posX"], theirs[key]["posY"], theirs[key]["posZ"]),
                            (theirs[key]["rotX"], theirs[key]["rotY"], theirs[key]["rotZ"], theirs[key]["rotW"]),
                        )
                    ),
                    abs=1e-12,
                )
        assert len(b.virtuals) == len(theirs["virtuals"])
        for mine, t in zip(b.virtuals, theirs["virtuals"]):
            assert mine.pos == pytest.approx((t["posX"], t["posY"], t["posZ"]), abs=1e-12)
        if b.physical is not None:
            p = theirs["physical"]
            # the receivers' own reconstruction, yaw formula included (docs/protocols/netsync.md#physical-pose)
            assert tdict(b.physical) == pytest.approx(
                tdict(Transform((p["posX"], p["posY"], p["posZ"]), (p["rotX"], p["rotY"], p["rotZ"], p["rotW"]))),
                abs=1e-9,
            )


def test_room_pose_matches_shipped():
    rng = random.Random(5)
    frames = [random_frame(rng) for _ in range(6)]
    bodies = [encode_body(i * 7, f) for i, f in enumerate(frames)]
    entries = [(i + 1, 100.25 + i, b) for i, b in enumerate(bodies)]
    ours = encode_room_pose("room-é", 1234.5, entries)
    theirs = shipped.serialize_room_transform(
        {
            "roomId": "room-é",
            "broadcastTime": 1234.5,
            "clients": [
                {**_client_dict(f, i * 7), "clientNo": i + 1, "poseTime": 100.25 + i} for i, f in enumerate(frames)
            ],
        }
    )
    assert ours == theirs
    room = decode_room_pose(theirs)
    assert room.room_id == "room-é" and room.broadcast_time == 1234.5
    assert [(e.client_no, e.pose_time) for e in room.entries] == [(n, t) for n, t, _ in entries]
    assert [e.body for e in room.entries] == [decode_body(b)[0] for b in bodies]
    assert decode_room_pose(encode_room_pose("r", 0.0, [])).entries == ()


def _client_dict(f: PoseFrame, seq: int) -> dict:
    from netsync.oracle import oracle_client

    d = oracle_client("", seq, f)
    del d["deviceId"]
    return d


def test_device_id_mapping_matches_shipped():
    maps = [DeviceMapping(1, "a" * 36, False), DeviceMapping(2, "ステルス", True), DeviceMapping(65535, "", False)]
    ours = encode_device_id_mapping((0, 10, 4), maps)
    assert ours == shipped.serialize_device_id_mapping(
        [(m.client_no, m.device_id, m.stealth) for m in maps], (0, 10, 4)
    )
    decoded = decode_device_id_mapping(ours)
    assert decoded.server_version == (0, 10, 4) and decoded.mappings == tuple(maps)
    # docs/protocols/netsync.md#mapping example header: 06 00 0a 04 01 00 | 01 00 00 24 <36-byte UUID>
    one = encode_device_id_mapping((0, 10, 4), [DeviceMapping(1, "u" * 36, False)])
    assert one[:10] == bytes.fromhex("06000a04010001000024")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_pose_is_a_typed_error(bad):
    for f in (
        PoseFrame(0x04, Transform((bad, 0, 0))),
        PoseFrame(0x02, delta=OriginDelta(0, bad, 0)),
        PoseFrame(0x0C, right=Transform((0, bad, 0))),
    ):
        with pytest.raises(PoseEncodeError):
            encode_body(0, f)
        with pytest.raises((ValueError, OverflowError)):  # the shipped one raises too
            oracle_encode("", 0, f)


def test_encoder_refuses_undefined_flags_and_long_device_ids():
    with pytest.raises(PoseEncodeError):
        encode_body(0, PoseFrame(0x40 | FLAG_HEAD))
    with pytest.raises(PoseEncodeError):
        encode_client_pose("x" * 256, 0, PoseFrame(FLAG_HEAD))
    assert len(encode_client_pose("x" * 255, 0, PoseFrame(FLAG_HEAD))) == 3 + 255 + 18


def test_build_derives_flags_like_unity():
    h = Transform((0, 1.7, 0))
    assert PoseFrame.build(h, h, h, (h,), OriginDelta()).flags == 0x3E
    assert PoseFrame.build(h, None, h).flags == FLAG_HEAD | FLAG_LEFT
    assert PoseFrame.build(None, h, h, (h,), OriginDelta()).flags == FLAG_PHYSICAL
    assert PoseFrame.build(h, h, stealth=True).flags == FLAG_STEALTH


# Halfway cases are where round-half-to-even matters: multiples of 0.005 m / 0.05° land on .5.
_coord = st.one_of(
    st.floats(-2e5, 2e5, allow_nan=False),
    st.integers(-400_000, 400_000).map(lambda k: k * 0.005),
    st.sampled_from([0.0, -0.0, 0.125, -0.125, 0.045, -0.005, 163.835, -163.84, 83886.07, 83886.075, 1e-320]),
)
_comp = st.one_of(
    st.floats(-2.0, 2.0, allow_nan=False), st.sampled_from([0.0, -0.0, 0.5, -0.5, 0.70710677, -0.70710678, 1e-7])
)
_transform = st.builds(
    lambda p, q: Transform(p, q), st.tuples(_coord, _coord, _coord), st.tuples(_comp, _comp, _comp, _comp)
)


@settings(max_examples=3000 if LONG else 400, deadline=None)
@given(
    st.integers(0, 63),
    _transform,
    _transform,
    _transform,
    st.lists(_transform, max_size=3),
    st.tuples(_coord, _coord, st.one_of(_coord, st.integers(-40_000, 40_000).map(lambda k: k * 0.05))),
)
def test_property_bytes_equal_the_shipped_serializer(flags, head, right, left, virtuals, delta):
    f = PoseFrame(flags, head, right, left, tuple(virtuals), OriginDelta(*delta))
    assert encode_client_pose("p", 1, f) == oracle_encode("p", 1, f)


def test_smallest_three_rounds_exact_halfway_values_to_even():
    """The packer's float rounding (1.5·2**52 trick) equals round() where it matters: inputs whose
    scaled value is exactly k + 0.5 (found by scanning ulps around the ideal), every k."""
    from headcast.netcode.netsync.codec import _QMAX, _QMIN, _QRANGE, _pack_unit

    halfway = []
    for k in range(1023):
        a = _QMIN + (k + 0.5) / 1023 * _QRANGE
        for _ in range(64):
            v = (a - _QMIN) / _QRANGE * 1023
            if v == k + 0.5:
                halfway.append(a)
                break
            a = math.nextafter(a, math.inf if v < k + 0.5 else -math.inf)
    assert len(halfway) > 500  # most k have an exact halfway input

    def q10(c: float) -> int:  # the shipped formula, with Python's round()
        return round((min(max(c, _QMIN), _QMAX) - _QMIN) / _QRANGE * 1023)

    for a in halfway + [_QMIN, _QMAX, 0.0, -0.0, 0.75, -0.75]:
        assert _pack_unit(a, -a, a, 1.0) == 3 << 30 | q10(a) << 20 | q10(-a) << 10 | q10(a)
        # largest first and negative: the quaternion is negated before packing
        assert _pack_unit(-1.0, a, a, -a) == q10(-a) << 20 | q10(-a) << 10 | q10(a)
