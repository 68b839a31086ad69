"""Strict decoding: every defect is a typed error naming the offset; fuzzed bytes give nothing else.

Protocol 3's hand-made byte strings (pinned here); test_codec_protocols.py has the same checks
for the bodies of protocols 4–8 and fuzzes them."""

from __future__ import annotations

import functools
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from netsync.coredrive import broadcast, drain, unicast
from netsync.oracle import oracle, pinned_codec, random_frame

from headcast.netcode.netsync import client
from headcast.netcode.netsync.codec import (
    FlagsError,
    MessageTypeError,
    MissingDeltaEncodingError,
    NetSyncDecodeError,
    StringError,
    TrailingBytesError,
    TruncatedError,
    UnsupportedProtocolError,
    VirtualCountError,
    decode_device_id_mapping,
    encode_device_id_mapping,
)
from headcast.netcode.netsync.events import Dropped
from headcast.netcode.netsync.model import DeviceMapping, PoseFrame

from support import LONG

shipped = oracle(3)
P3 = pinned_codec(3)
encode_body, encode_client_pose, encode_room_pose = P3.encode_body, P3.encode_client_pose, P3.encode_room_pose
decode_body, decode_client_pose, decode_room_pose = P3.decode_body, P3.decode_client_pose, P3.decode_room_pose
NetSyncClientCore = functools.partial(client.NetSyncClientCore, protocol=3)

FUZZ = 20_000 if LONG else 1_500


def _body(flags=0x1E, n=0, seq=1):
    return encode_body(seq, random_frame(random.Random(flags * 100 + n), flags, n))


def test_physical_without_delta_bit_fails_fast_like_the_server():
    """docs/protocols/netsync.md#acceptance 3: an old-V3 body (bit 4 clear) is refused, at offset 3."""
    body = bytearray(_body(0x1E))
    body[3] = 0x0F
    with pytest.raises(MissingDeltaEncodingError) as e:
        decode_body(bytes(body))
    assert e.value.offset == 3
    msg = b"\x0b\x03\x01d" + bytes(body)
    with pytest.raises(MissingDeltaEncodingError) as e:
        decode_client_pose(msg)
    assert e.value.offset == 4 + 3
    assert shipped.deserialize(msg)[1] is None  # the oracle refuses it too
    # without PhysicalValid the bit is not looked at (decoders check it only then)
    body = bytearray(_body(0x1C))
    body[3] = 0x00
    assert decode_body(bytes(body))[0].flags == 0x1C


@pytest.mark.parametrize("flags, n", [(0x01, 0), (0x02, 0), (0x04, 0), (0x1E, 0), (0x3E, 3), (0x3C, 1)])
def test_every_truncation_is_a_typed_error_at_the_cut(flags, n):
    body = _body(flags, n)
    for cut in range(len(body)):
        with pytest.raises(TruncatedError) as e:
            decode_body(body[:cut])
        assert e.value.offset <= cut  # the block that runs past the end starts at or before it


def test_truncation_names_the_block():
    body = _body(0x1E)
    with pytest.raises(TruncatedError, match="head") as e:
        decode_body(body[:15])
    assert e.value.offset == 10
    with pytest.raises(TruncatedError, match="left hand") as e:
        decode_body(body[:40])
    assert e.value.offset == 33


def test_trailing_bytes():
    body = _body(0x1E)
    with pytest.raises(TrailingBytesError) as e:
        decode_client_pose(b"\x0b\x03\x00" + body + b"\x00")
    assert e.value.offset == 3 + len(body)


def test_junk_inside_a_room_entry_rejects_the_whole_broadcast():
    """docs/protocols/netsync.md#defects: the server relays 3 junk bytes after a pose; the next entry desyncs."""
    good = _body(0x1E)
    msg = encode_room_pose("r", 1.0, [(1, 2.0, good + b"\xde\xad\xbe"), (2, 3.0, good)])
    with pytest.raises(NetSyncDecodeError):
        decode_room_pose(msg)
    msg = encode_room_pose("r", 1.0, [(1, 2.0, good), (2, 3.0, good + b"\x01\x02\x03")])
    with pytest.raises(TrailingBytesError):
        decode_room_pose(msg)


def test_virtual_count_over_the_limit():
    body = bytearray(_body(0x3E, 0))
    body[-1] = 51
    body += bytes(51 * 10)
    with pytest.raises(VirtualCountError) as e:
        decode_body(bytes(body))
    assert e.value.offset == 43
    body = bytearray(_body(0x3E, 50))
    assert len(decode_body(bytes(body))[0].virtuals) == 50


def test_inconsistent_and_undefined_flags():
    body = bytearray(_body(0x1E))
    body[2] = 0x5E  # 0x40 = MOVING_FLOOR_LOCAL, protocol 5+
    with pytest.raises(FlagsError) as e:
        decode_body(bytes(body))
    assert e.value.offset == 2
    with pytest.raises(FlagsError):
        decode_body(b"\x00\x00\x05\x1f" + bytes(14))  # stealth + head
    with pytest.raises(FlagsError):
        decode_body(b"\x00\x00\x08\x1f" + bytes(11))  # right hand without head
    with pytest.raises(FlagsError) as e:
        decode_body(b"\x00\x00\x04\x1f" + bytes(13) + b"\x01" + bytes(10))  # virtuals without VirtualsValid
    assert e.value.offset == 17


def test_envelopes():
    body = _body(0x1E)
    with pytest.raises(UnsupportedProtocolError) as e:
        decode_client_pose(b"\x0b\x02\x00" + body)  # protocol 2 (0.8.0)
    assert e.value.offset == 1
    with pytest.raises(UnsupportedProtocolError):
        decode_room_pose(b"\x0c\x08\x00" + bytes(10))  # protocol 8 (0.17.x)
    with pytest.raises(MessageTypeError) as e:
        decode_room_pose(b"\x0b\x03\x00" + body)
    assert e.value.offset == 0
    with pytest.raises(StringError):
        decode_client_pose(b"\x0b\x03\x02\xff\xfe" + body)
    with pytest.raises(TruncatedError):
        decode_room_pose(b"\x0c\x03\x05abc")
    mapping = encode_device_id_mapping((0, 10, 4), [DeviceMapping(1, "abc", False)])
    with pytest.raises(TrailingBytesError):
        decode_device_id_mapping(mapping + b"\x00")
    with pytest.raises(FlagsError):
        decode_device_id_mapping(mapping[:8] + b"\x02" + mapping[9:])
    for cut in range(len(mapping)):
        with pytest.raises(TruncatedError):
            decode_device_id_mapping(mapping[:cut])


DECODERS = (decode_body, decode_client_pose, decode_room_pose, decode_device_id_mapping)


def _only_typed_errors(data: bytes) -> None:
    for decode in DECODERS:
        try:
            decode(data)
        except NetSyncDecodeError:
            pass


@settings(max_examples=FUZZ, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_fuzz_random_bytes(data):
    _only_typed_errors(data)
    _only_typed_errors(b"\x0b\x03" + data)
    _only_typed_errors(b"\x0c\x03" + data)
    _only_typed_errors(b"\x06" + data)


def _valid_messages() -> list[bytes]:
    rng = random.Random(99)
    bodies = [
        encode_body(i, random_frame(rng, flags, n))
        for i, (flags, n) in enumerate([(0x1E, 0), (0x3E, 2), (0x01, 0), (0x06, 0)])
    ]
    return [
        encode_client_pose("dev", 3, random_frame(rng, 0x3E, 1)),
        encode_room_pose("room", 5.0, [(i + 1, float(i), b) for i, b in enumerate(bodies)]),
        encode_device_id_mapping((0, 10, 4), [DeviceMapping(1, "a", False), DeviceMapping(2, "b", True)]),
    ]


@settings(max_examples=FUZZ, deadline=None)
@given(
    st.sampled_from(_valid_messages()),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
    st.integers(0, 600),
    st.binary(max_size=12),
)
def test_fuzz_mutated_messages(msg, flips, cut, tail):
    data = bytearray(msg)
    for pos, value in flips:
        data[pos % len(data)] = value
    for candidate in (bytes(data), bytes(data[:cut]), bytes(data) + tail):
        _only_typed_errors(candidate)


@settings(max_examples=FUZZ // 3, deadline=None)
@given(st.binary(min_size=1, max_size=300))
def test_bad_broadcast_leaves_the_client_state_untouched(junk):
    """Nothing partially applied: a broken room pose changes no member, number or pose."""
    core = NetSyncClientCore("room", "me")
    unicast(
        core,
        0.0,
        [
            b"room",
            encode_device_id_mapping((0, 10, 4), [DeviceMapping(1, "me", False), DeviceMapping(2, "peer", False)]),
        ],
    )
    drain(core)
    good = encode_body(1, random_frame(random.Random(1), 0x1E, 0))
    msg = encode_room_pose("room", 1.0, [(2, 1.0, good)]) + junk
    members, client_no = dict(core.members), core.client_no
    broadcast(core, 1.0, [b"room", msg])
    events = drain(core)
    assert all(isinstance(e, Dropped) for e in events) and len(events) == 1
    assert core.members == members and core.client_no == client_no
    assert sum(core.counters.drops.values()) == 1


def test_junk_from_the_network_never_raises_out_of_the_client_core():
    core = NetSyncClientCore("room", "me")
    rng = random.Random(7)
    for i in range(2000):
        frames = [b"room", rng.randbytes(rng.randrange(0, 80))] if i % 3 else [rng.randbytes(3)] * rng.randrange(0, 4)
        broadcast(core, float(i), frames)
        unicast(core, float(i), frames)
    assert sum(core.counters.drops.values()) >= 2000
    assert len(drain(core)) <= 4096  # bounded even when nobody polls
    assert core.client_no is None


def test_struct_layout_offsets_of_the_44_byte_body():
    """docs/protocols/netsync.md#body offsets:
    seq 0, flags 2, enc 3, dx 4, dz 6, dyaw 8, head 10/13/16, rot 19, right 23, left 33, count 43."""
    body = _body(0x1E)
    dx, dz, dyaw = struct.unpack_from("<hhh", body, 4)
    b = decode_body(body)[0]
    assert (dx * 0.01, dz * 0.01, dyaw * 0.1, 0.0) == b.delta
    assert int.from_bytes(body[10:13], "little", signed=True) * 0.01 == b.head.pos[0]
    assert body[43] == 0 and len(body) == 44
    assert encode_client_pose("", 0, PoseFrame(0x1E))[3:][2:] == encode_body(0, PoseFrame(0x1E))[2:]


@settings(max_examples=FUZZ // 3, deadline=None)
@given(st.integers(1, 60), st.binary(max_size=8))
def test_bad_mapping_leaves_the_client_state_untouched(cut, junk):
    """A mapping cut short or with junk after it changes no member and not our number."""
    core = NetSyncClientCore("room", "me")
    good = encode_device_id_mapping((0, 10, 4), [DeviceMapping(1, "me", False), DeviceMapping(2, "peer", False)])
    unicast(core, 0.0, [b"room", good])
    drain(core)
    renumbered = encode_device_id_mapping((0, 10, 5), [DeviceMapping(7, "me", False), DeviceMapping(8, "new", True)])
    bad = renumbered[: min(cut, len(renumbered) - 1)] if junk == b"" else renumbered + junk
    members, version = dict(core.members), core.server_version
    unicast(core, 1.0, [b"room", bad])
    events = drain(core)
    assert [type(e) for e in events] == [Dropped]
    assert core.members == members and core.client_no == 1 and core.server_version == version == (0, 10, 4)
