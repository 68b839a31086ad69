"""Every protocol 3–8 against its own release's shipped serializer (tests/netsync/oracle.py):
encoder bytes identical, decoded values what the official decoder computes (head, hands,
virtuals, XROrigin Δ, the physical pose it rebuilds, the moving-floor pose), hello and room
messages, strict errors for each protocol's layout, and fuzzing of every decoder."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from netsync.oracle import PROTOCOLS, oracle, oracle_client, oracle_encode, random_frame, tdict, transform_of

from headcast.netcode.netsync.codec import (
    ENCODING_FLAGS_MOVING_FLOOR,
    FlagsError,
    MissingDeltaEncodingError,
    NetSyncDecodeError,
    PoseEncodeError,
    TruncatedError,
    UnsupportedProtocolError,
    decode_body,
    decode_client_hello,
    decode_client_pose,
    decode_room_pose,
    encode_body,
    encode_client_hello,
    encode_client_pose,
    encode_room_pose,
)
from headcast.netcode.netsync.model import (
    FLAG_HEAD,
    FLAG_MOVING_FLOOR,
    FLAG_PHYSICAL,
    OriginDelta,
    PoseFrame,
    Transform,
)

from support import LONG

NFLAGS = {p: 128 if p >= 5 else 64 for p in PROTOCOLS}  # 0x40 exists from protocol 5 on


def assert_transform(ours: Transform | None, theirs: dict, valid: bool = True) -> None:
    if not valid:
        assert ours is None
        return
    assert tdict(ours) == pytest.approx(tdict(transform_of(theirs)), abs=1e-9)


def assert_decodes_like_shipped(protocol: int, msg: bytes) -> None:
    """Our decode of `msg` == the official decoder's, field by field."""
    ours = decode_client_pose(msg, expect=protocol)
    kind, theirs, raw = oracle(protocol).deserialize(msg)
    assert kind == 11 and theirs is not None and ours.raw_body == raw and ours.protocol == protocol
    b = ours.body
    assert (b.pose_seq, b.flags, b.encoding_flags) == (theirs["poseSeq"], theirs["flags"], theirs["encodingFlags"])
    head_valid = bool(b.flags & FLAG_HEAD)
    assert_transform(b.head, theirs["head"], head_valid)
    assert_transform(b.right, theirs["rightHand"], head_valid and bool(b.flags & 0x08))
    assert_transform(b.left, theirs["leftHand"], head_valid and bool(b.flags & 0x10))
    assert len(b.virtuals) == len(theirs["virtuals"])
    for v, t in zip(b.virtuals, theirs["virtuals"]):
        assert_transform(v, t)
    if b.delta is not None:
        dy = theirs.get("xrOriginDeltaY", 0.0)
        assert b.delta == pytest.approx(
            (theirs["xrOriginDeltaX"], theirs["xrOriginDeltaZ"], theirs["xrOriginDeltaYaw"], dy), abs=1e-12
        )
    # the physical pose exactly where the official decoder builds one (Δ + head, or moving floor)
    if b.physical is not None:
        assert_transform(b.physical, theirs["physical"])
    else:
        assert tdict(transform_of(theirs["physical"])) == tdict(Transform())


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_flag_combination_matches_its_release(protocol):
    rng = random.Random(protocol)
    for flags in range(NFLAGS[protocol]):
        for n in (0, 1, 50, 51):  # 51: both encoders cap at 50
            f = random_frame(rng, flags, n)
            ours = encode_client_pose("dev-Ω", 65535 + flags, f, protocol)
            assert ours == oracle_encode("dev-Ω", 65535 + flags, f, protocol), (protocol, hex(flags), n)
            assert_decodes_like_shipped(protocol, ours)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_poses_match_their_release(protocol):
    count = 20_000 if LONG else 2_000
    rng = random.Random(0x5EED + protocol)
    for i in range(count):
        f = random_frame(rng, flags=i % NFLAGS[protocol], n_virtuals=rng.choice((0, 0, 1, 3)))
        seq = rng.randrange(65536)
        msg = encode_client_pose("d", seq, f, protocol)
        assert msg == oracle_encode("d", seq, f, protocol), (protocol, i)
        if i % 4 == 0:
            assert_decodes_like_shipped(protocol, msg)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_edge_values_match_their_release(protocol):
    """Clamps and halfway roundings in every field, the Δ height from 4 on, non-unit and
    degenerate rotations, and a moving-floor pose whose yaw is undefined."""
    edges = [0.0, -0.0, 0.005, 0.0025, -0.0075, 0.045, 0.125, 327.67, 327.675, -327.685, 1e6, -1e6, 83886.07, 83886.075]
    rots = [
        (0.0, 0.0, 0.0, 0.0),
        (0.0, 1.0, 0.0, 0.0),
        (0.5, 0.5, 0.5, 0.5),
        (1e300, 1e300, 0.0, 0.0),
        (0.0, 0.0, 3.0, 4.0),
    ]
    rng = random.Random(7)
    for e in edges:
        for r in rots:
            flags = 0x7E if protocol >= 5 and rng.random() < 0.5 else 0x3E
            t = Transform((e, -e, e * 0.5), r)
            f = PoseFrame(flags, t, Transform((e + 0.0025, 1.0, e), r), t, (t,), OriginDelta(e, -e, e * 10, e / 3), t)
            msg = encode_client_pose("e", 1, f, protocol)
            assert msg == oracle_encode("e", 1, f, protocol), (protocol, e, r)
            assert_decodes_like_shipped(protocol, msg)


def test_delta_height_from_protocol_4_and_the_receivers_subtract_it():
    head = Transform((1.0, 1.7, 2.0), (0.0, 0.0, 0.0, 1.0))
    f = PoseFrame.build(head, delta=OriginDelta(0.5, -0.25, 90.0, 0.3))
    p3, p4 = encode_body(1, f, 3), encode_body(1, f, 4)
    assert len(p3) == 4 + 6 + 13 + 1 and len(p4) == 4 + 8 + 13 + 1
    assert p4[4:12] == bytes.fromhex("32001e00e7ff8403")  # dx 50, dy 30, dz −25, dyaw 900
    b3, b4 = decode_body(p3, 0, 3)[0], decode_body(p4, 0, 4)[0]
    assert b3.delta.dy == 0.0 and b3.physical.pos[1] == pytest.approx(1.7)
    assert b4.delta.dy == pytest.approx(0.3) and b4.physical.pos[1] == pytest.approx(1.4)


@pytest.mark.parametrize("protocol", [5, 6, 7, 8])
def test_moving_floor_local_sends_the_physical_pose_itself(protocol):
    yaw = 123.4
    phys = Transform((1.5, 0.25, -2.0), (0.0, math.sin(math.radians(yaw) / 2), 0.0, math.cos(math.radians(yaw) / 2)))
    f = PoseFrame.build(Transform((0.3, 1.7, 0.1)), physical=phys)
    assert f.flags == FLAG_PHYSICAL | FLAG_HEAD | FLAG_MOVING_FLOOR
    body = encode_body(9, f, protocol)
    assert body[2:4] == bytes((0x46, ENCODING_FLAGS_MOVING_FLOOR))
    assert body[4:12] == bytes.fromhex("9600190038ffd204")  # 150, 25, −200, 1234
    b = decode_body(body, 0, protocol)[0]
    assert b.moving_floor and b.delta is None
    assert b.physical.pos == pytest.approx((1.5, 0.25, -2.0)) and b.physical.rot == pytest.approx(phys.rot, abs=1e-9)
    assert body == oracle_encode("", 9, f, protocol)[3:]
    # protocols 3 and 4 have no such flag: refused, not silently dropped
    for old in (3, 4):
        with pytest.raises(PoseEncodeError):
            encode_body(9, f, old)
        with pytest.raises(FlagsError):
            decode_body(body, 0, old)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_room_pose_matches_its_release(protocol):
    rng = random.Random(protocol * 3)
    frames = [random_frame(rng, max_flags=NFLAGS[protocol]) for _ in range(6)]
    bodies = [encode_body(i * 7, f, protocol) for i, f in enumerate(frames)]
    entries = [(i + 1, 100.25 + i, b) for i, b in enumerate(bodies)]
    ours = encode_room_pose("room-é", 1234.5, entries, protocol)
    clients = []
    for i, f in enumerate(frames):
        d = oracle_client("", i * 7, f)
        del d["deviceId"]
        clients.append({**d, "clientNo": i + 1, "poseTime": 100.25 + i})
    theirs = oracle(protocol).serialize_room_transform(
        {"roomId": "room-é", "broadcastTime": 1234.5, "clients": clients}
    )
    assert ours == theirs
    room = decode_room_pose(theirs, expect=protocol)
    assert room.protocol == protocol and [e.body for e in room.entries] == [
        decode_body(b, 0, protocol)[0] for b in bodies
    ]
    with pytest.raises(UnsupportedProtocolError) as e:
        decode_room_pose(theirs, expect=protocol % 8 + 3)
    assert e.value.protocol == protocol


@pytest.mark.parametrize("protocol", [7, 8])
@pytest.mark.parametrize("stealth", [False, True])
def test_hello_matches_its_release(protocol, stealth):
    ours = encode_client_hello("dev-ステルス", stealth, protocol)
    assert ours == oracle(protocol).serialize_client_hello("dev-ステルス", stealth)
    kind, theirs, _ = oracle(protocol).deserialize(ours)
    assert kind == 19 and theirs == {"deviceId": "dev-ステルス", "flags": int(stealth), "isStealthMode": stealth}
    h = decode_client_hello(ours)
    assert (h.device_id, h.stealth, h.protocol) == ("dev-ステルス", stealth, protocol)
    # the other hello-speaking release refuses it, as a protocol-3–6 server has no type 19 at all
    other = 15 - protocol
    assert oracle(other).deserialize(ours)[1] is None
    assert oracle(6).deserialize(ours)[1] is None
    with pytest.raises(ValueError):
        encode_client_hello("x", False, 6)


@pytest.mark.parametrize("protocol", [4, 5, 8])
def test_strict_errors_for_the_8_byte_physical_block(protocol):
    body = encode_body(1, random_frame(random.Random(1), 0x1E, 0), protocol)
    assert len(body) == 46  # Unity's usual body, 2 bytes longer than protocol 3's 44
    with pytest.raises(TruncatedError) as e:
        decode_body(body[:10], 0, protocol)
    assert "physical block needs 8 bytes" in str(e.value)
    bad = bytearray(body)
    bad[3] = 0x0F  # PhysicalValid without bit 4 and without the moving-floor flag
    with pytest.raises(MissingDeltaEncodingError):
        decode_body(bytes(bad), 0, protocol)
    bad[2] |= 0x80
    with pytest.raises(FlagsError):
        decode_body(bytes(bad), 0, protocol)
    for cut in range(len(body)):
        with pytest.raises(TruncatedError):
            decode_body(body[:cut], 0, protocol)


def _messages(protocol: int) -> list[bytes]:
    rng = random.Random(protocol)
    bodies = [
        encode_body(i, random_frame(rng, flags, n), protocol)
        for i, (flags, n) in enumerate(
            [(0x1E, 0), (0x3E, 2), (0x01, 0), (0x06, 0)] + ([(0x7E, 1)] if protocol >= 5 else [])
        )
    ]
    out = [
        encode_client_pose("dev", 3, random_frame(rng, 0x3E, 1), protocol),
        encode_room_pose("room", 5.0, [(i + 1, float(i), b) for i, b in enumerate(bodies)], protocol),
    ]
    if protocol >= 7:
        out.append(encode_client_hello("dev", True, protocol))
    return out


DECODERS = (
    decode_client_pose,
    decode_room_pose,
    decode_client_hello,
    lambda d: decode_body(d, 0, 4),
    lambda d: decode_body(d, 0, 8),
)


@settings(max_examples=3000 if LONG else 300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PROTOCOLS), st.data())
def test_fuzz_mutated_messages_of_every_protocol(protocol, data):
    """Any mutation of a valid message of any protocol: a typed error or a clean decode, never
    anything else."""
    msg = bytearray(data.draw(st.sampled_from(_messages(protocol))))
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(msg) - 1))
        msg[i] = data.draw(st.integers(0, 255))
    msg = bytes(msg[: data.draw(st.integers(0, len(msg)))]) + data.draw(st.binary(max_size=12))
    for dec in DECODERS:
        try:
            dec(msg)
        except NetSyncDecodeError:
            pass


@settings(max_examples=2000 if LONG else 200, deadline=None)
@given(st.sampled_from(PROTOCOLS), st.integers(0, 127), st.data())
def test_property_bytes_equal_every_release(protocol, flags, data):
    flags &= NFLAGS[protocol] - 1
    coord = st.one_of(st.floats(-4e5, 4e5, allow_nan=False), st.integers(-80_000, 80_000).map(lambda k: k * 0.005))
    comp = st.floats(-2.0, 2.0, allow_nan=False)
    tr = st.builds(Transform, st.tuples(coord, coord, coord), st.tuples(comp, comp, comp, comp))
    f = PoseFrame(
        flags,
        data.draw(tr),
        data.draw(tr),
        data.draw(tr),
        tuple(data.draw(st.lists(tr, max_size=2))),
        OriginDelta(*data.draw(st.tuples(coord, coord, coord, coord))),
        data.draw(tr),
    )
    assert encode_client_pose("p", 1, f, protocol) == oracle_encode("p", 1, f, protocol)
