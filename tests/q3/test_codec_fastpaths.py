"""The hot-path shortcuts (cached XOR keystreams, ...) agree with the plain per-byte rules."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from headcast.netcode.q3.clientmsg import write_client_message
from headcast.netcode.q3.msg import BitReader, BitWriter, MsgError, huffman_bits
from headcast.netcode.q3.netchan import Netchan, NetchanMode, _xor
from headcast.netcode.q3.netfields import ENTITY_FIELDS, FLOAT_INT_BIAS, FLOAT_INT_BITS, PLAYER_FIELDS
from headcast.netcode.q3.usercmd import UserCmd

from q3_spec import xor_from_spec


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.binary(max_size=3000),
            st.sampled_from([4, 12, 5]),
            st.integers(-(2**31), 2**31 - 1),
            st.sampled_from([b"", b"\0", b"cs 5 100%", b"say \xff\x80", b"x" * 70, b"ab\0cd"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_cached_xor_matches_the_per_byte_rule(packets) -> None:
    cache: dict = {}  # one cache across packets: streams are reused, grown and evicted
    for body, start, key, text in packets:
        assert _xor(body, start, key, text, cache) == xor_from_spec(body, start, key, text)
    assert len(cache) <= 8


def test_cache_stays_bounded_over_many_texts() -> None:
    cache: dict = {}
    for i in range(100):
        _xor(bytes(200), 4, i, f"say {i}", cache)
    assert len(cache) <= 8


_WIDTHS = st.sampled_from([1, 2, 3, 7, 8, 9, 10, 12, 13, 15, 16, 17, 24, 31, 32])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**32), 2**32), _WIDTHS), max_size=80))
def test_huffman_bits_equals_the_bit_writer(pairs) -> None:
    w = BitWriter()
    flat: list[int] = []
    for value, nbits in pairs:
        w.write_bits(value, nbits)
        flat += (value, nbits)
    assert huffman_bits(flat) == w.to_bytes()


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-(2**31), 2**32 - 1),
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.lists(st.text(max_size=40), min_size=64, max_size=64),
    st.integers(0, 2**31 - 1),
)
def test_transmit_with_known_longs_matches_the_read_back(server_id, msg_ack, cmd_seq, ring, time) -> None:
    """The client passes the longs it wrote; ioq3 reads them back from the clean buffer: same bytes."""
    cmds = [UserCmd(time, (1, 2, 3), 5, 0, 10, -10, 0), UserCmd(time + 16, (4, 5, 6), 5, 0, 10, -10, 0)]
    body = write_client_message(server_id, msg_ack, cmd_seq, [(1, "say hi")], cmds, 77)
    a = Netchan(NetchanMode.LEGACY, 1592594996, 31337)
    b = Netchan(NetchanMode.LEGACY, 1592594996, 31337)
    s32 = lambda v: (v & 0xFFFFFFFF) - (1 << 32) if v & 0x80000000 else v & 0xFFFFFFFF  # noqa: E731
    assert a.transmit(body, ring, (s32(server_id), msg_ack, cmd_seq)) == b.transmit(body, ring)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(-(2**32), 2**32), st.sampled_from([8, 16, 32])), max_size=40))
def test_a_flag_merged_with_its_value_is_the_same_bits(pairs) -> None:
    w = BitWriter()
    flat: list[int] = []
    for flag, value, nbits in pairs:
        w.write_bits(flag, 1)
        w.write_bits(value, nbits)
        flat += (flag | (value & ((1 << nbits) - 1)) << 1, nbits + 1)
    assert huffman_bits(flat) == w.to_bytes()


def netfields_per_flag(r: BitReader, widths, base, zero_flags):
    """The netField walk one flag at a time (the plain reading of ioq3 MSG_ReadDelta*)."""
    lc = r.read_bits(8)
    if lc > len(widths):
        raise MsgError("count")
    values = list(base)
    for i in range(lc):
        if not r.read_flag():
            continue
        if zero_flags and not r.read_flag():
            values[i] = 0 if widths[i] else 0.0
            continue
        if widths[i] == 0:
            if r.read_flag():
                values[i] = struct.unpack("<f", struct.pack("<i", r.read_bits(32)))[0]
            else:
                values[i] = float(r.read_bits(FLOAT_INT_BITS) - FLOAT_INT_BIAS)
        else:
            values[i] = r.read_bits(widths[i])
    return tuple(values)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=60), st.booleans(), st.integers(0, 7))
def test_netfield_run_skipping_matches_the_per_flag_walk(data, entity, start_bit) -> None:
    widths = tuple(f.bits for f in (ENTITY_FIELDS if entity else PLAYER_FIELDS))
    base = tuple(range(len(widths)))
    fast, slow = BitReader(data), BitReader(data)
    if start_bit and len(data) > 1:
        fast.read_bits(start_bit), slow.read_bits(start_bit)
    try:
        got = fast.read_netfields(widths, base, entity)
    except MsgError:
        with pytest.raises(MsgError):
            netfields_per_flag(slow, widths, base, entity)
        return
    # floats by their bits: a NaN read from garbage is not equal to itself
    bits = lambda values: [struct.pack("<d", v) if isinstance(v, float) else v for v in values]  # noqa: E731
    assert bits(netfields_per_flag(slow, widths, base, entity)) == bits(got)
    assert fast.bit == slow.bit
