"""The codec's generated per-layout functions against its checked paths, bit for bit.

codec.py encodes and decodes each layout with a straight-line function generated on first use
(the fast path) and hands anything unusual to the checked path it was written from. Here both
run on the same input: the same bytes or the same exception (type and message) from the
encoders, and decoded values equal to the last bit (compared by repr, so -0.0 ≠ 0.0) or the
same exception from the decoders — for every protocol, every flags byte, random and edge poses
(out-of-range fields, NaN/inf, zero and integer quaternions, 0…52 virtuals) and garbage bodies.
The oracle tests compare the results with the shipped serializers.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.netsync import codec
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform

from .oracle import random_frame

FAMILIES = (3, 4, 5)
EDGE = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    1e300,
    -1e300,
    2.0**51,
    -(2.0**51),
    2**60,
    83886.07,
    83886.08,
    -83886.08,
    -83886.09,  # int24 head limits at 0.01
    163.835,
    163.84,
    -163.84,
    -163.845,  # int16 at 0.005 (hands)
    327.67,
    327.675,
    -327.68,
    -327.685,
    3276.7,
    3276.75,  # int16 at 0.01 / 0.1 (Δ)
    0.0025,
    0.0075,
    0.005,
    0.015,
    1,
    0,
    -1,
]


def outcome(fn, *args) -> tuple:
    try:
        return ("ok", repr(fn(*args)))
    except Exception as e:  # noqa: BLE001 - the exception is the result being compared
        return ("raised", type(e).__name__, str(e))


def checked_encode(frame, protocol, seq):
    return codec._pack_body_checked(frame, protocol, seq)


def checked_decode(data, offset, protocol):
    return codec._decode_body_checked(data, offset, codec._family(protocol), len(data))


floats = st.one_of(st.floats(-400.0, 400.0), st.sampled_from(EDGE), st.floats(allow_nan=True, allow_infinity=True))
quats = st.one_of(
    st.tuples(*[st.floats(-1.0, 1.0)] * 4),
    st.tuples(
        *[st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 0.70710677, -0.70710677, 2.0, 0, 1, math.nan, math.inf])]
        * 4
    ),
    st.tuples(*[floats] * 4),
)
transforms = st.builds(Transform, st.tuples(floats, floats, floats), quats)
frames = st.builds(
    PoseFrame,
    st.one_of(st.integers(0, 255), st.sampled_from([0x1E, 0x3E, 0x5E, 0x7E, 0x06, 0x02, 0x42, 0x01, -1, 256])),
    transforms,
    transforms,
    transforms,
    st.lists(transforms, max_size=52).map(tuple),
    st.builds(OriginDelta, floats, floats, floats, floats),
    transforms,
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=frames, protocol=st.sampled_from(codec.PROTOCOLS), seq=st.integers(0, 0xFFFF))
def test_encoders_agree_on_any_pose(frame, protocol, seq):
    assert outcome(codec.encode_body, seq, frame, protocol) == outcome(checked_encode, frame, protocol, seq)
    assert outcome(codec.encode_body_tail, frame, protocol) == outcome(checked_encode, frame, protocol, None)


@pytest.mark.parametrize("protocol", codec.PROTOCOLS)
def test_encoders_agree_on_random_poses_every_flags_byte(protocol):
    rng = random.Random(protocol)
    for flags in range(256):
        for _ in range(6):
            f = random_frame(rng, flags, rng.choice((0, 1, 3, 50, 51)))
            seq = rng.randrange(0x10000)
            assert outcome(codec.encode_body, seq, f, protocol) == outcome(checked_encode, f, protocol, seq), (
                protocol,
                flags,
            )
            assert outcome(codec.encode_body_tail, f, protocol) == outcome(checked_encode, f, protocol, None), (
                protocol,
                flags,
            )


@pytest.mark.parametrize("protocol", (3, 4, 5, 8))
def test_decoders_agree_on_every_layout(protocol):
    """Valid bodies of every flags byte the protocol encodes, then each one corrupted."""
    rng = random.Random(100 + protocol)
    for flags in range(256):
        for _ in range(4):
            f = random_frame(rng, flags, rng.choice((0, 1, 3, 50)))
            try:
                body = codec._pack_body_checked(f, protocol, rng.randrange(0x10000))
            except codec.PoseEncodeError:
                continue
            data = b"\x07" * 5 + body  # at an offset, as in a room message
            assert outcome(codec.decode_body, data, 5, protocol) == outcome(checked_decode, data, 5, protocol)
            for _ in range(3):
                bad = bytearray(data)
                bad[rng.randrange(5, len(bad))] = rng.randrange(256)
                cut = bytes(bad[: rng.randrange(5, len(bad) + 2)])
                for b in (bytes(bad), cut, bytes(bad) + b"\x00\x01"):
                    assert outcome(codec.decode_body, b, 5, protocol) == outcome(checked_decode, b, 5, protocol)


@settings(max_examples=800, deadline=None)
@given(data=st.binary(min_size=0, max_size=120), family=st.sampled_from(FAMILIES), offset=st.integers(0, 3))
def test_decoders_agree_on_garbage(data, family, offset):
    protocol = {3: 3, 4: 4, 5: 8}[family]
    assert outcome(codec.decode_body, data, offset, protocol) == outcome(checked_decode, data, offset, protocol)


@settings(max_examples=300, deadline=None)
@given(flags=st.integers(0, 255), family=st.sampled_from(FAMILIES), rest=st.binary(min_size=0, max_size=600))
def test_decoders_agree_on_garbage_behind_every_flags_byte(flags, family, rest):
    """Garbage after a chosen flags byte and a valid encodingFlags: every generated decoder runs."""
    protocol = {3: 3, 4: 4, 5: 8}[family]
    enc = codec.ENCODING_FLAGS_MOVING_FLOOR if flags & 0x40 else codec.ENCODING_FLAGS
    data = bytes((1, 0, flags, enc)) + rest
    assert outcome(codec.decode_body, data, 0, protocol) == outcome(checked_decode, data, 0, protocol)


def test_client_pose_envelope_fast_path_matches_the_checked_one():
    """decode_client_pose's inlined envelope: the same result or error as the checked order."""
    rng = random.Random(7)
    for _ in range(300):
        protocol = rng.choice(codec.PROTOCOLS)
        msg = codec.encode_client_pose("dev-é", rng.randrange(0x10000), random_frame(rng, 0x1E, 0), protocol)
        variants = [msg, msg[:-1], msg + b"\x00", msg[:5], bytearray(msg), memoryview(msg)]
        bad = bytearray(msg)
        bad[rng.randrange(len(bad))] = rng.randrange(256)
        variants.append(bytes(bad))
        for m in variants:
            for expect in (None, protocol, 3):

                def checked(m=m, expect=expect):
                    p = codec._versioned(m, codec.MSG_CLIENT_POSE, expect)
                    device_id, start = codec._string(m, 2, "deviceId")
                    body, end = checked_decode(m, start, p)
                    codec._end(m, end, "pose body")
                    return codec.ClientPose(device_id, body, bytes(m[start:]), p)

                assert outcome(codec.decode_client_pose, m, expect) == outcome(checked), (m, expect)


def test_every_layout_generates():
    for protocol in codec.PROTOCOLS:
        for flags in range(256):
            for tail in (False, True):
                codec._make_encoder(protocol, flags, tail)
    for family in FAMILIES:
        for flags in range(256):
            assert callable(codec._make_decoder(family, flags))
