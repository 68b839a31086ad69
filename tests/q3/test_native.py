"""The C extension (_q3native) against the pure-Python reference it replaces on the hot paths.

Same bytes, values, reader positions, error types and messages, on random and garbage input;
the extension is in use when built; and the codec tests also pass with it disabled
(HEADCAST_PURE_PYTHON=1), so the fallback stays tested. The extension is imported directly here,
so these comparisons run in both modes.
"""

from __future__ import annotations

import importlib
import os
import random
import struct
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.q3 import build_native, clientmsg, msg, netchan, serverparse
from headcast.netcode.q3.delta import EntityState, PlayerState, write_delta_entity, write_delta_playerstate
from headcast.netcode.q3.native import NATIVE, PURE_ENV, init as native_init
from headcast.netcode.q3.netfields import ENTITY_WIDTHS, PLAYER_WIDTHS
from headcast.netcode.q3.usercmd import UserCmd

from support import LONG, REPO

PURE = os.environ.get(PURE_ENV, "") not in ("", "0")
PROPS = settings(max_examples=2000 if LONG else 250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings(max_examples=5000 if LONG else 500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load():
    try:
        mod = importlib.import_module("headcast.netcode.q3._q3native")
    except ImportError as exc:
        pytest.fail(f"the C extension is not built ({exc}): run netcode/q3/build_native.py (scripts/setup.sh does)")
    native_init(mod)
    return mod


N = None


@pytest.fixture(autouse=True)
def native():
    global N
    N = _load()
    return N


def outcome(fn, *args):
    """What a call gives: ("ok", value) or ("err", type, message)."""
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return ("err", type(exc), str(exc))


def canon(value):
    """Values compared bit for bit: floats by their IEEE bytes (NaN payloads and -0.0 included)."""
    if isinstance(value, float):
        return ("f", struct.pack("<d", value))
    if isinstance(value, (tuple, list)):
        return tuple(canon(v) for v in value)
    return value


@contextmanager
def netchan_native(mod):
    """netchan's C hook set to `mod` (None: the Python reference) for the duration."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(netchan, "NATIVE", mod)
        yield


# ------------------------------------------------------------------ in use


def test_the_extension_is_in_use_when_built() -> None:
    if PURE:
        assert NATIVE is None and msg.BitReader is msg.PyBitReader and msg.huffman_bits is msg.py_huffman_bits
        assert clientmsg.write_client_message is clientmsg.py_write_client_message
        return
    assert build_native.EXT.target().exists(), "run netcode/q3/build_native.py (scripts/setup.sh does)"
    assert not build_native.EXT.stale(), "_q3native.c is newer than the built extension: run netcode/q3/build_native.py"
    assert NATIVE is not None
    assert msg.BitReader is NATIVE.BitReader
    assert msg.huffman_bits is NATIVE.huffman_bits
    assert clientmsg.write_client_message is NATIVE.write_client_message
    assert netchan.NATIVE is NATIVE and serverparse.BitReader is NATIVE.BitReader


def test_a_build_from_an_older_source_is_not_loaded(monkeypatch) -> None:
    """Like the XR frame helper: a stale extension may no longer match the Python reference, so
    the loader falls back and says why (doctor shows the status)."""
    from headcast.netcode.q3 import native

    monkeypatch.delenv(PURE_ENV, raising=False)
    monkeypatch.setattr(build_native.EXT, "stale", lambda path=None: True)
    module, status = native._load()
    assert module is None and status == "built from an older _q3native.c; run netcode/q3/build_native.py"
    monkeypatch.setattr(build_native.EXT, "stale", lambda path=None: False)
    module, status = native._load()
    assert status == "in use" and module is not None


def test_the_codec_tests_pass_without_the_extension() -> None:
    """The non-live q3 tests (vectors from ioq3, fuzz, properties) once more on the Python fallback."""
    env = dict(os.environ, **{PURE_ENV: "1"})
    me = "tests/q3/test_native.py::test_the_codec_tests_pass_without_the_extension"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/q3",
            "-m",
            "not live",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            "--deselect",
            me,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


def test_an_uninitialised_reader_raises() -> None:
    r = N.BitReader.__new__(N.BitReader)
    with pytest.raises(ValueError):
        r.read_byte()


# ------------------------------------------------------------------ writers


@PROPS
@given(st.lists(st.tuples(st.integers(-(2**70), 2**70), st.integers(0, 64)), max_size=60), st.booleans())
def test_huffman_bits_matches(pairs, odd) -> None:
    flat = [x for pair in pairs for x in pair] + ([5] if odd else [])
    assert N.huffman_bits(flat) == msg.py_huffman_bits(flat)


def test_huffman_bits_refuses_widths_beyond_64() -> None:
    with pytest.raises(ValueError):
        N.huffman_bits([1, 65])
    with pytest.raises(ValueError):
        N.huffman_bits([1, -1])


big = st.integers(-(2**40), 2**40)
texts = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(["say hi", "cp 123 %s", "a\0b", "\xff\u0100%", "x" * 1022, "y" * 1023, b"z" * 2000]),
)
cmds = st.builds(UserCmd, big, st.tuples(big, big, big), big, big, big, big, big)


@PROPS
@given(
    big,
    big,
    big,
    st.lists(st.tuples(big, texts), max_size=3),
    st.lists(cmds, max_size=34),
    big,
    st.sampled_from([16, 32, 8]),
    st.booleans(),
)
def test_client_message_matches(server_id, msg_seq, cmd_seq, reliable, cmd_list, key, button_bits, no_delta) -> None:
    args = (server_id, msg_seq, cmd_seq, reliable, cmd_list, key, button_bits, no_delta)
    assert outcome(N.write_client_message, *args) == outcome(clientmsg.py_write_client_message, *args)


ring = st.lists(st.one_of(st.text(max_size=30), st.binary(max_size=30)), min_size=64, max_size=64)


@PROPS
@given(
    st.sampled_from(list(netchan.NetchanMode)),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(1, 2**31 - 1),
    st.integers(0, 0xFFFF),
    big,
    big,
    big,
    st.lists(st.tuples(big, texts), max_size=2),
    st.lists(cmds, max_size=3),
    big,
    ring,
    st.sampled_from([16, 32]),
    st.booleans(),
    st.integers(0, 3),
)
def test_client_datagram_matches_message_then_transmit(
    mode,
    challenge,
    seq,
    qport,
    server_id,
    msg_seq,
    cmd_seq,
    reliable,
    cmd_list,
    feed,
    server_ring,
    bb,
    no_delta,
    big_reliables,
) -> None:
    """The per-tick call equals write_client_message + usercmd_key + transmit (fragments included)."""
    reliable = reliable + [(i, "w" * 1000) for i in range(big_reliables)]  # 2+ of these fragment
    got, want = netchan.Netchan(mode, challenge, qport), netchan.Netchan(mode, challenge, qport)
    got.outgoing_sequence = want.outgoing_sequence = seq
    with netchan_native(N):
        a = outcome(
            got.transmit_client_message,
            server_id,
            msg_seq,
            cmd_seq,
            reliable,
            cmd_list,
            feed,
            server_ring,
            bb,
            no_delta,
        )
    with netchan_native(None):
        text = server_ring[cmd_seq & 63]
        s32 = netchan._s32
        b = outcome(
            lambda: want.transmit(
                clientmsg.py_write_client_message(
                    server_id,
                    msg_seq,
                    cmd_seq,
                    reliable,
                    cmd_list,
                    clientmsg.usercmd_key(feed, msg_seq, text),
                    bb,
                    no_delta,
                ),
                server_ring,
                (s32(server_id), s32(msg_seq), s32(cmd_seq)),
            )
        )
    assert a == b
    assert got.outgoing_sequence == want.outgoing_sequence


# ------------------------------------------------------------------ netchan helpers


@FUZZ
@given(st.binary(max_size=200), st.integers(0, 20), st.integers(-(2**40), 2**40), texts)
def test_xor_matches(data, start, key, text) -> None:
    assert N.xor(data, start, key, text) == netchan._xor(data, start, key, text, {})


def test_short_outputs_are_fresh_objects() -> None:
    """CPython shares its 1-byte bytes objects: writing into one would change b"y" everywhere."""
    for _ in range(3):
        assert N.xor(b"y", 0, 0, "cp") == netchan._xor(b"y", 0, 0, "cp", {})
        assert N.legacy_unscramble(b"yyyyy", 0, ["cp"] * 64) == netchan._xor(b"yyyyy", 4, 0, "cp", {})
    assert b"y"[0] == 0x79 and b"yyyy"[:1].hex() == "79"  # the shared object is unchanged


@FUZZ
@given(st.binary(max_size=40), st.integers(0, 45), st.integers(0, 5))
def test_lenient_long_read_matches(data, start, count) -> None:
    assert N.read_longs(data, start, count) == netchan._ioq3_read_longs(data, start, count)


@FUZZ
@given(st.binary(max_size=120), st.integers(-(2**40), 2**40), ring)
def test_unscramble_matches(data, key, server_ring) -> None:
    (ack,) = netchan._ioq3_read_longs(data, 0, 1)
    want = netchan._xor(data, 4, key, server_ring[ack & 63], {})
    assert N.legacy_unscramble(data, key, server_ring) == want


def test_unscramble_needs_the_full_ring() -> None:
    with pytest.raises(ValueError, match="64-slot"):
        N.legacy_unscramble(bytes(20), 1, ["x"] * 63)


# ------------------------------------------------------------------ the reader (network bytes)


def run_reader(cls, data, start, ops):
    """Each op's outcome and the position after it; a failed op does not stop the run."""
    made = outcome(cls, data, start)
    if made[0] == "err":
        return [made]
    r = made[1]
    trace = []
    for op in ops:
        kind = op[0]
        if kind == "netfields":
            _, entity, base = op
            widths = ENTITY_WIDTHS if entity else PLAYER_WIDTHS
            got = outcome(r.read_netfields, widths, base[: len(widths)] if base else tuple(range(len(widths))), entity)
        elif kind == "entity_delta":
            got = outcome(r.read_entity_delta, op[1] or tuple(range(len(ENTITY_WIDTHS))))
        elif kind == "playerstate_delta":
            _, base, arrays = op
            got = outcome(r.read_playerstate_delta, (base or tuple(range(51)))[: len(PLAYER_WIDTHS)], *arrays)
        elif kind in ("bits", "data"):
            got = outcome(getattr(r, "read_" + kind), op[1])
        else:
            got = outcome(getattr(r, "read_" + kind))
        trace.append((canon(got), r.bit, r.bits_left))
    return trace


float_bases = st.lists(st.floats(allow_nan=True, width=32), min_size=51, max_size=51).map(tuple)
reader_ops = st.lists(
    st.one_of(
        st.tuples(st.just("bits"), st.one_of(st.integers(-34, 34), st.sampled_from([2**70, -(2**70)]))),
        st.tuples(st.sampled_from(["flag", "byte", "short", "long", "string", "bigstring"])),
        st.tuples(st.just("data"), st.integers(-2, 40)),
        st.tuples(st.just("netfields"), st.booleans(), st.one_of(st.none(), float_bases)),
        st.tuples(st.just("entity_delta"), st.one_of(st.none(), float_bases)),
        st.tuples(
            st.just("playerstate_delta"),
            st.one_of(st.none(), float_bases),
            st.lists(st.lists(st.integers(-5, 5), min_size=15, max_size=17).map(tuple), min_size=4, max_size=4),
        ),
    ),
    max_size=30,
)


@FUZZ
@given(st.binary(max_size=300), st.integers(-2, 305), reader_ops)
def test_reader_matches_on_garbage(data, start, ops) -> None:
    start = min(start, len(data) + 1)
    assert run_reader(N.BitReader, data, start, ops) == run_reader(msg.PyBitReader, data, start, ops)


def test_reader_accepts_bytes_like_and_copies() -> None:
    buf = bytearray(msg.py_huffman_bits([0x41, 8, 0x42, 8]))
    r = N.BitReader(buf)
    buf[:] = bytes(len(buf))
    assert (r.read_byte(), r.read_byte()) == (0x41, 0x42)
    assert N.BitReader(memoryview(bytes(buf)), start=1).bit == 8


# ------------------------------------------------------------------ the whole server-message parser


def _valid_messages() -> list[tuple[bytes, int, dict, dict]]:
    """A gamestate, a full and a delta snapshot with entities, and a server command, as a server writes them."""
    base = {n: EntityState.from_dict({"number": n, "eType": 2, "modelindex": n}) for n in (3, 9, 40)}
    ps0 = PlayerState.from_dict(
        {
            "commandTime": 5000,
            "origin": (1.5, -2.25, 24.0),
            "stats[0]": 100,
            "delta_angles": (100, 65000, 0),
            "viewangles": (1e9, -0.0, 3.0),
        }
    )
    ps1 = PlayerState.from_dict(
        {"commandTime": 5050, "origin": (9.5, -2.0, 1e-30), "powerups[3]": -7, "weaponTime": -300}, ps0
    )
    ents0 = {
        n: EntityState.from_dict({"pos.trBase": (n * 1.5, 2.0, -n * 1e6), "eFlags": 0x404, "solid": 0xFFFFFF}, base[n])
        for n in base
    }
    ents1 = {3: EntityState.from_dict({"pos.trBase": (7.25, 2.0, 3.0), "time": -5}, ents0[3]), 9: ents0[9]}

    w = msg.BitWriter()
    w.write_long(1)
    w.write_byte(serverparse.SVC_GAMESTATE)
    w.write_long(3)
    w.write_byte(serverparse.SVC_CONFIGSTRING)
    w.write_short(0)
    w.write_bigstring("\\mapname\\q3dm1\\sv_hostname\\x%y")
    for n in base:
        w.write_byte(serverparse.SVC_BASELINE)
        write_delta_entity(w, None, base[n], force=True)
    w.write_byte(serverparse.SVC_EOF)
    w.write_long(0)
    w.write_long(12345)
    w.write_byte(serverparse.SVC_EOF)
    gamestate = w.to_bytes()

    def snap(num_back, ps_from, ents_from, ents_to, cmd):
        w = msg.BitWriter()
        w.write_long(2)
        if cmd:
            w.write_byte(serverparse.SVC_SERVERCOMMAND)
            w.write_long(4)
            w.write_string(cmd)
        w.write_byte(serverparse.SVC_SNAPSHOT)
        w.write_long(9000)
        w.write_byte(num_back)
        w.write_byte(0)
        w.write_byte(2)
        w.write_byte(0xAB)
        w.write_byte(0x01)
        write_delta_playerstate(w, ps_from, ps1 if num_back else ps0)
        for n in sorted(set(ents_from) | set(ents_to)):
            write_delta_entity(w, ents_from.get(n, base.get(n)), ents_to.get(n), force=False)
        w.write_bits(serverparse.ENTITYNUM_NONE, serverparse.GENTITYNUM_BITS)
        w.write_byte(serverparse.SVC_EOF)
        return w.to_bytes()

    full = snap(0, None, {}, ents0, "")
    parsed_full = serverparse.parse_server_message(full, 10, lambda n: None, base)
    ring = {10: parsed_full.ops[0]}
    delta = snap(1, ps0, ents0, ents1, 'print "hi %s"\n')
    return [(gamestate, 9, {}, {}), (full, 10, {}, base), (delta, 11, ring, base)]


VALID = _valid_messages()


def parse_with(cls, data, num, ring, baselines):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(serverparse, "BitReader", cls)
        got = outcome(serverparse.parse_server_message, data, num, ring.get, baselines)
    # repr: dataclass equality would call nan != nan; the repr shows every field and float exactly
    return got[:2] + (repr(got[1]),) if got[0] == "ok" else got


def test_valid_messages_parse_the_same_and_whole() -> None:
    for data, num, ring, baselines in VALID:
        got = parse_with(N.BitReader, data, num, ring, baselines)
        assert got[0] == "ok", got
        assert got[2] == parse_with(msg.PyBitReader, data, num, ring, baselines)[2]


@FUZZ
@given(
    st.sampled_from(range(len(VALID))),
    st.lists(st.integers(0, 10**6), max_size=6),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_mutated_messages_parse_the_same(which, flips, cut, truncate) -> None:
    data, num, ring, baselines = VALID[which]
    buf = bytearray(data)
    for f in flips:
        buf[(f >> 3) % len(buf)] ^= 1 << (f & 7)
    if truncate:
        buf = buf[: cut % (len(buf) + 1)]
    a = parse_with(N.BitReader, bytes(buf), num, ring, baselines)
    b = parse_with(msg.PyBitReader, bytes(buf), num, ring, baselines)
    assert a[0] == b[0] and a[-1] == b[-1]
    if a[0] == "err":
        assert a[1] is serverparse.ServerParseError


def test_garbage_flood_only_typed_errors() -> None:
    """Bounded in count and time: random datagrams through the C reader never crash the process."""
    rng = random.Random(7)
    deadline = time.monotonic() + (60.0 if LONG else 10.0)
    count = 0
    for count in range(1, (200_000 if LONG else 20_000) + 1):
        blob = rng.randbytes(rng.randrange(0, 1500))
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(serverparse, "BitReader", N.BitReader)
                serverparse.parse_server_message(blob, rng.randrange(1 << 20), lambda n: None, {})
        except serverparse.ServerParseError:
            pass
        if time.monotonic() > deadline:
            break
    assert count >= 1000


# ------------------------------------------------------------------ the build script


def test_build_is_idempotent_and_says_what_is_missing(monkeypatch) -> None:
    said: list[str] = []
    if not build_native.EXT.stale():
        assert build_native.EXT.build(say=said.append) == build_native.EXT.target()
        assert said and "up to date" in said[0]
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(build_native.EXT.Error, match="gcc not found"):
        build_native.EXT.build(force=True)
