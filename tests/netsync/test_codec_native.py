"""The NetSync codec's C accelerator (netcode/netsync/_nscodec.c) against its pure-Python paths,
and both against the shipped serializers.

codec.py hands the common case to the extension (NATIVE) and everything it returns None for to
the pure-Python paths. Here the same input goes through both — NATIVE on, NATIVE set to None —
and must give the same bytes or the same exception (type and message) from the encoders, values
equal to the last bit (compared by repr, so -0.0 ≠ 0.0) or the same exception from the decoders:
random and edge poses (out-of-range fields, NaN/inf, integer and zero quaternions, 0…52 virtuals,
moving floor), every flags byte, garbage bodies, client poses and rooms. Then both paths'
bytes are compared with each protocol's shipped serializer (tests/netsync/oracle.py, the real
releases), and both paths' decoded values with its own decoder.

With the extension not built (a machine without a compiler) the comparisons have nothing to
compare: they fail, except where HEADCAST_PURE_PYTHON=1 says the pure path is wanted (then they
are skipped with that reason, as the run asked).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.netsync import codec
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform

from .oracle import PROTOCOLS, oracle, oracle_client, random_frame, tdict
from .test_codec_fastpath import frames, outcome

PURE_WANTED = os.environ.get("HEADCAST_PURE_PYTHON", "") not in ("", "0")
pytestmark = pytest.mark.skipif(PURE_WANTED, reason="HEADCAST_PURE_PYTHON=1: the C accelerator is off by request")
NATIVE = codec.NATIVE


@contextlib.contextmanager
def pure():
    saved = codec.NATIVE
    codec.NATIVE = None
    try:
        yield
    finally:
        codec.NATIVE = saved


def both(fn, *args) -> tuple[tuple, tuple]:
    """fn's outcome with the extension, then on the pure-Python path."""
    assert codec.NATIVE is NATIVE is not None
    a = outcome(fn, *args)
    with pure():
        b = outcome(fn, *args)
    return a, b


def test_the_extension_is_built_and_in_use():
    """A checkout made by scripts/setup.sh (or a wheel) has it; if this fails the others say nothing."""
    assert NATIVE is not None, codec.NATIVE_STATUS
    assert codec.NATIVE_STATUS == "in use"


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=frames, protocol=st.sampled_from(codec.PROTOCOLS), seq=st.integers(-2, 0x1FFFF))
def test_encoders_agree_on_any_pose(frame, protocol, seq):
    a, b = both(codec.encode_client_pose, "dev-é", seq, frame, protocol)
    assert a == b
    a, b = both(codec.encode_body_tail, frame, protocol)
    assert a == b
    a, b = both(codec.encode_body, seq, frame, protocol)
    assert a == b


@pytest.mark.parametrize("protocol", codec.PROTOCOLS)
def test_encoders_agree_on_every_flags_byte(protocol):
    rng = random.Random(200 + protocol)
    for flags in range(256):
        for _ in range(5):
            f = random_frame(rng, flags, rng.choice((0, 1, 3, 50, 51)))
            seq = rng.randrange(0x10000)
            a, b = both(codec.encode_client_pose, "d", seq, f, protocol)
            assert a == b, (protocol, flags)


def test_encoder_odd_inputs_take_the_python_path():
    """Integers, lists, a bool flags value, NaN, short tuples: the same outcome both ways."""
    h = Transform((1, 2, 3), (0, 0, 0, 1))
    f = PoseFrame(0x1E, h, h, h, (), OriginDelta(1, 2, 3, 4))
    lists = PoseFrame(0x3E, Transform([1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0]), virtuals=[Transform()] * 2)
    odd = [
        f,
        lists,
        PoseFrame(True),
        PoseFrame(0x1E, virtuals=(Transform(),)),
        PoseFrame(0x7E),
        PoseFrame(0x1E, head=Transform((math.nan, 0.0, 0.0))),
        PoseFrame(0x3E, virtuals=((1.0,),)),
    ]
    for frame in odd:
        for protocol in codec.PROTOCOLS:
            a, b = both(codec.encode_client_pose, "d", 5, frame, protocol)
            assert a == b, (frame, protocol)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_decoders_agree_on_every_layout_and_corruption(protocol):
    rng = random.Random(300 + protocol)
    for flags in range(256):
        for _ in range(3):
            f = random_frame(rng, flags, rng.choice((0, 1, 3, 50)))
            with pure():
                try:
                    body = codec._pack_body_checked(f, protocol, rng.randrange(0x10000))
                except codec.PoseEncodeError:
                    continue
            data = b"\x07" * 5 + body
            a, b = both(codec.decode_body, data, 5, protocol)
            assert a == b and a[0] == "ok"
            msg = codec.client_pose_header("dev", protocol) + body
            for m in (msg, msg[:-1], msg + b"\x00", bytearray(msg), memoryview(msg)):
                for expect in (None, protocol, 3):
                    a, b = both(codec.decode_client_pose, m, expect)
                    assert a == b, (m, expect)
            for _ in range(3):
                bad = bytearray(data)
                bad[rng.randrange(5, len(bad))] = rng.randrange(256)
                for x in (bytes(bad), bytes(bad[: rng.randrange(5, len(bad) + 2)]), bytes(bad) + b"\x00\x01"):
                    a, b = both(codec.decode_body, x, 5, protocol)
                    assert a == b


@settings(max_examples=800, deadline=None)
@given(data=st.binary(min_size=0, max_size=160), protocol=st.sampled_from(codec.PROTOCOLS), offset=st.integers(0, 3))
def test_decoders_agree_on_garbage(data, protocol, offset):
    a, b = both(codec.decode_body, data, offset, protocol)
    assert a == b
    msg = bytes((11, protocol)) + data
    a, b = both(codec.decode_client_pose, msg, None)
    assert a == b
    room = bytes((12, protocol, 1, 0x41)) + struct.pack("<dH", 1.5, offset) + data
    a, b = both(codec.decode_room_pose, room, None)
    assert a == b


@settings(max_examples=300, deadline=None)
@given(flags=st.integers(0, 255), protocol=st.sampled_from(codec.PROTOCOLS), rest=st.binary(min_size=0, max_size=600))
def test_decoders_agree_on_garbage_behind_every_flags_byte(flags, protocol, rest):
    enc = codec.ENCODING_FLAGS_MOVING_FLOOR if flags & 0x40 else codec.ENCODING_FLAGS
    data = bytes((1, 0, flags, enc)) + rest
    a, b = both(codec.decode_body, data, 0, protocol)
    assert a == b


def _room(rng: random.Random, protocol: int, n: int, flags=None) -> tuple[bytes, list]:
    entries, frames_ = [], []
    for i in range(n):
        f = random_frame(
            rng, flags, None if flags is None else rng.choice((0, 3)), max_flags=128 if protocol >= 5 else 64
        )
        try:
            body = codec.encode_body(i, f, protocol)
        except codec.PoseEncodeError:
            continue
        entries.append((i + 1, 1000.0 + i / 7, body))
        frames_.append(f)
    return codec.encode_room_pose("room-é", 1234.5, entries, protocol), frames_


@pytest.mark.parametrize("protocol", codec.PROTOCOLS)
def test_room_decode_agrees_and_refuses_alike(protocol):
    rng = random.Random(400 + protocol)
    for n in (0, 1, 5, 200):
        msg, _ = _room(rng, protocol, n)
        a, b = both(codec.decode_room_pose, msg, None)
        assert a == b and a[0] == "ok"
        for _ in range(20):
            bad = bytearray(msg)
            bad[rng.randrange(len(bad))] = rng.randrange(256)
            for x in (bytes(bad), msg[: rng.randrange(len(msg) + 1)], msg + b"\x01"):
                for expect in (None, protocol):
                    a, b = both(codec.decode_room_pose, x, expect)
                    assert a == b


def _values(t) -> tuple:
    return tuple(tdict(t).values()) if t is not None else None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_both_paths_match_the_shipped_serializer(protocol):
    """The oracle: each protocol's release encodes the same bytes; its decoder reads the same
    blocks, the physical pose it rebuilds included, from the messages of both paths."""
    shipped = oracle(protocol)
    rng = random.Random(500 + protocol)
    for i in range(400):
        f = random_frame(rng, rng.choice((0x1E, 0x3E, 0x06, 0x02, 0x01, None)), max_flags=64)
        seq = rng.randrange(0x10000)
        theirs = shipped.serialize_client_transform(oracle_client("dev", seq, f))
        native = codec.encode_client_pose("dev", seq, f, protocol)
        with pure():
            python = codec.encode_client_pose("dev", seq, f, protocol)
        assert native == python == theirs, (protocol, f.flags)
        ours = codec.decode_client_pose(theirs, protocol)
        with pure():
            assert repr(codec.decode_client_pose(theirs, protocol)) == repr(ours)
        _, d, raw = shipped.deserialize(theirs)
        b = ours.body
        assert ours.raw_body == raw and (b.pose_seq, b.flags) == (d["poseSeq"], d["flags"])
        for mine, key in ((b.head, "head"), (b.right, "rightHand"), (b.left, "leftHand")):
            if mine is not None:
                t = d[key]
                assert _values(mine) == pytest.approx(
                    (t["posX"], t["posY"], t["posZ"], t["rotX"], t["rotY"], t["rotZ"], t["rotW"]), abs=1e-12
                )
        if b.physical is not None and "physical" in d:
            p = d["physical"]
            assert _values(b.physical) == pytest.approx(
                (p["posX"], p["posY"], p["posZ"], p["rotX"], p["rotY"], p["rotZ"], p["rotW"]), abs=1e-9
            )


def test_the_accelerator_is_actually_taken():
    """Not a silent fallback: a common body is encoded and decoded by the extension itself."""
    f = random_frame(random.Random(1), 0x3E, 3)
    body = NATIVE.encode(b"", f, 7, 8)
    assert body is not None and body == codec._pack_body_checked(f, 8, 7)
    got = NATIVE.decode_body(body, 0, 5, len(body))
    assert got is not None and repr(got) == repr(codec._decode_body_checked(body, 0, 5, len(body)))
    msg, _ = _room(random.Random(2), 8, 50, 0x1E)
    pos = 3 + len("room-é".encode()) + 10
    assert NATIVE.decode_room_entries(msg, pos, 50, 5) is not None
