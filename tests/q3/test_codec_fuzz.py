"""Property and fuzz tests: every reader of network bytes fails only with MsgError (or a counted
drop), never IndexError / KeyError / a hang; and writers round-trip through the readers."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.q3 import huffman
from headcast.netcode.q3.clientmsg import read_client_message, write_client_message
from headcast.netcode.q3.delta import (
    NULL_ENTITY,
    NULL_PLAYER,
    EntityState,
    PlayerState,
    read_delta_entity,
    read_delta_playerstate,
    write_delta_entity,
    write_delta_playerstate,
)
from headcast.netcode.q3.msg import MAX_MSGLEN, BitReader, BitWriter, MsgError
from headcast.netcode.q3.netchan import FRAGMENT_BIT, Netchan, NetchanMode
from headcast.netcode.q3.netfields import ENTITY_FIELDS, PLAYER_FIELDS
from headcast.netcode.q3.usercmd import NULL_CMD, UserCmd, read_delta_usercmd_key

from support import LONG

FUZZ = settings(max_examples=2000 if LONG else 150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RING = [f"cmd {i} %\xff" for i in range(64)]

widths = st.sampled_from([1, 2, 3, 7, 8, 10, 13, 16, 19, 24, 31, 32, -8, -16, -5])
garbage = st.binary(max_size=600)


@FUZZ
@given(
    garbage,
    st.lists(st.sampled_from(["bits", "byte", "short", "long", "string", "bigstring", "data"]), max_size=40),
    widths,
)
def test_bitreader_random_bytes_only_msgerror(data: bytes, ops: list[str], width: int) -> None:
    r = BitReader(data)
    try:
        for op in ops:
            if op == "bits":
                r.read_bits(width)
            elif op == "data":
                r.read_data(3)
            else:
                getattr(r, "read_" + op)()
            assert 0 <= r.bit <= len(data) * 8
    except MsgError:
        pass


values = st.integers(min_value=-(2**31), max_value=2**32 - 1)


@FUZZ
@given(st.lists(st.tuples(widths, values), max_size=60), st.text(max_size=50))
def test_bitwriter_round_trip(fields: list[tuple[int, int]], text: str) -> None:
    w = BitWriter()
    for n, v in fields:
        w.write_bits(v, n)
    w.write_string(text)
    r = BitReader(w.to_bytes())
    for n, v in fields:
        got = r.read_bits(n)
        width = abs(n)
        assert got & ((1 << width) - 1) == v & ((1 << width) - 1)
    expect = "".join(c if (ord(c) < 128 and c != "%") else "." for c in text.split("\0")[0])
    # str → latin-1 with '?' for characters outside it; those are ASCII, the rest become '.'.
    expect = "".join("?" if ord(t) > 255 else e for t, e in zip(text.split("\0")[0], expect))
    assert r.read_string() == expect
    assert r.bits_left < 8


@FUZZ
@given(garbage, st.integers(min_value=0, max_value=1023))
def test_entity_reader_random_bytes(data: bytes, number: int) -> None:
    try:
        state = read_delta_entity(BitReader(data), NULL_ENTITY, number)
    except MsgError:
        return
    assert state is None or (state.number == number and len(state.values) == len(ENTITY_FIELDS))


@FUZZ
@given(garbage)
def test_playerstate_reader_random_bytes(data: bytes) -> None:
    try:
        ps = read_delta_playerstate(BitReader(data), None)
    except MsgError:
        return
    assert len(ps.values) == len(PLAYER_FIELDS) and len(ps.stats) == 16


@FUZZ
@given(garbage, st.integers(), st.sampled_from([16, 32]))
def test_usercmd_reader_random_bytes(data: bytes, key: int, button_bits: int) -> None:
    r = BitReader(data)
    prev = NULL_CMD
    try:
        for _ in range(40):
            prev = read_delta_usercmd_key(r, key, prev, button_bits)
            assert all(0 <= a <= 0xFFFF for a in prev.angles) and -127 <= prev.forwardmove <= 127
    except MsgError:
        pass


@FUZZ
@given(garbage)
def test_client_message_reader_random_bytes(data: bytes) -> None:
    try:
        read_client_message(data, 1234, RING, 32)
    except MsgError:
        pass


@FUZZ
@given(st.binary(max_size=400))
def test_adaptive_decompress_random_bytes(data: bytes) -> None:
    packet = b"\xff\xff\xff\xffconnect " + data
    try:
        out = huffman.decompress(packet, max_size=2048)
    except MsgError:
        return
    assert len(out) <= 2048


@FUZZ
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=300))
def test_adaptive_round_trip(userinfo: str) -> None:
    packet = b"\xff\xff\xff\xffconnect " + ('"' + userinfo + '"').encode()
    try:
        out = huffman.compress(packet)
    except MsgError:
        return  # does not shrink: refused, as ioq3 would have truncated it
    assert huffman.decompress(out) == packet


packets = st.one_of(
    garbage,
    # Plausible headers so the fuzz reaches the fragment and sequence paths.
    st.builds(
        lambda seq, frag, start, n, body: (
            struct.pack("<I", seq | (FRAGMENT_BIT if frag else 0)) + struct.pack("<hh", start, n) + body
        ),
        st.integers(0, 40),
        st.booleans(),
        st.integers(-5, 3000),
        st.integers(-5, 1400),
        st.binary(max_size=1400),
    ),
)


@FUZZ
@given(st.lists(packets, max_size=30), st.sampled_from(list(NetchanMode)))
def test_netchan_process_never_raises_and_stays_bounded(pkts: list[bytes], mode: NetchanMode) -> None:
    chan = Netchan(mode, 0x5EED, 7)
    for p in pkts:
        got = chan.process(p, RING)
        assert got is None or len(got.data) <= MAX_MSGLEN
        assert len(chan._frag_buffer) <= MAX_MSGLEN
    assert chan.incoming_sequence >= 0


cmd_strategy = st.builds(
    UserCmd,
    st.integers(0, 2**31 - 1),
    st.tuples(*[st.integers(0, 0xFFFF)] * 3),
    st.integers(0, 2**31 - 1),
    st.integers(0, 255),
    st.integers(-127, 127),
    st.integers(-127, 127),
    st.integers(-127, 127),
)


@FUZZ
@given(st.lists(cmd_strategy, min_size=1, max_size=8), st.integers(-(2**31), 2**31 - 1))
def test_usercmd_32bit_round_trip(cmds: list[UserCmd], key: int) -> None:
    cmds = sorted(cmds, key=lambda c: c.server_time)
    payload = write_client_message(5, 6, 0, [(1, "say x")], cmds, key ^ 6 ^ 0, button_bits=32)
    ring = [""] * 64
    got = read_client_message(payload, key, ring, button_bits=32)
    # Server key = feed ^ messageAck ^ hash(""): the client used key ^ 6, so pass feed = key.
    assert list(got.cmds) == cmds


floats = st.one_of(st.integers(-5000, 5000).map(float), st.floats(-1e6, 1e6, allow_nan=False, width=32))


def _entity(draw_vals: list) -> EntityState:
    return EntityState(77, tuple(draw_vals))


entity_values = st.tuples(*[floats if f.bits == 0 else st.integers(0, (1 << abs(f.bits)) - 1) for f in ENTITY_FIELDS])
player_values = st.tuples(
    *[
        floats
        if f.bits == 0
        else (
            st.integers(-(1 << (abs(f.bits) - 1)), (1 << (abs(f.bits) - 1)) - 1)
            if f.bits < 0
            else st.integers(0, (1 << f.bits) - 1)
        )
        for f in PLAYER_FIELDS
    ]
)


@FUZZ
@given(entity_values, entity_values)
def test_entity_delta_round_trip(a: tuple, b: tuple) -> None:
    # 32-bit ints are C ints: keep them in the signed range the reader returns.
    def fix(vals: tuple) -> list:
        return [v - (1 << 32) if (f.bits == 32 and v >= 1 << 31) else v for f, v in zip(ENTITY_FIELDS, vals)]

    frm, to = _entity(fix(a)), _entity(fix(b))
    w = BitWriter()
    write_delta_entity(w, frm, to, force=True)
    r = BitReader(w.to_bytes())
    assert r.read_bits(10) == 77
    got = read_delta_entity(r, frm, 77)
    assert got is not None
    for f, x, y in zip(ENTITY_FIELDS, got.values, to.values):
        assert x == y or (f.bits == 0 and x == 0.0 and y == 0.0), f.name


@FUZZ
@given(player_values, st.lists(st.integers(-32768, 32767), min_size=16, max_size=16))
def test_playerstate_delta_round_trip(vals: tuple, stats: list[int]) -> None:
    fix = tuple(v - (1 << 32) if (f.bits == 32 and v >= 1 << 31) else v for f, v in zip(PLAYER_FIELDS, vals))
    to = PlayerState(fix, tuple(stats))
    w = BitWriter()
    write_delta_playerstate(w, NULL_PLAYER, to)
    assert read_delta_playerstate(BitReader(w.to_bytes()), None) == to


def _valid_stream() -> bytes:
    w = BitWriter()
    ps = PlayerState.from_dict(
        {
            "commandTime": 50016,
            "origin": (512, 512.5, 24),
            "viewangles": (1.5, 2, 3),
            "stats[7]": 5289,
            "powerups[2]": 99,
            "eFlags": 0x404,
        }
    )
    write_delta_playerstate(w, None, ps)
    es = EntityState.from_dict(
        {"number": 5, "pos.trBase": (100, -200, 24.125), "eFlags": 0x404, "angles2": (57.4, 0, 29.0), "time": 123456}
    )
    write_delta_entity(w, NULL_ENTITY, es, force=True)
    return w.to_bytes()


VALID = _valid_stream()


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID) * 8 - 1)), max_size=6), st.integers(0, len(VALID)))
def test_mutated_valid_deltas_only_msgerror(flips: list[tuple[int]], cut: int) -> None:
    data = bytearray(VALID)
    for (bit,) in flips:
        data[bit >> 3] ^= 1 << (bit & 7)
    r = BitReader(bytes(data[:cut]))
    try:
        read_delta_playerstate(r, None)
        num = r.read_bits(10)
        read_delta_entity(r, NULL_ENTITY, num)
    except MsgError:
        pass
