"""Static and adaptive Huffman, and message bit I/O, against ioq3's own encoder output."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from headcast.netcode.q3 import huffman
from headcast.netcode.q3.msg import BitReader, BitWriter, MsgError

from support import VECTORS_FILE

VECTORS = json.loads(VECTORS_FILE.read_text())
STATIC = VECTORS["huffman_static"]
ADAPTIVE = VECTORS["huffman_adaptive"]["vectors"]


def _wire_bits(code: int, length: int) -> str:
    return "".join(str((code >> i) & 1) for i in range(length))


def test_all_256_static_codes_match_ioq3() -> None:
    assert len(STATIC["codes"]) == 256
    for entry in STATIC["codes"]:
        b = entry["byte"]
        assert huffman.ENCODE_LEN[b] == entry["len"], b
        assert _wire_bits(huffman.ENCODE_CODE[b], huffman.ENCODE_LEN[b]) == entry["bits"], b


def test_static_check_values_from_reference() -> None:
    expected = {0: "01", 1: "11011", 2: "0001001", 3: "0011011", 4: "10000101"}
    for b, bits in expected.items():
        assert _wire_bits(huffman.ENCODE_CODE[b], huffman.ENCODE_LEN[b]) == bits
    # Quake3e huffman_static.c HuffmanEncoderTable uses the same (code << 4) | len packing.
    assert huffman.STATIC_CODES[0] == 34 and huffman.STATIC_CODES[1] == 437
    hist = Counter(huffman.ENCODE_LEN)
    assert hist == {2: 1, 5: 2, 6: 7, 7: 24, 8: 43, 9: 49, 10: 129, 11: 1}
    assert huffman.STATIC_CODES[huffman.NYT] & 15 == 11
    assert sum(huffman.MSG_HDATA) == 1_053_340


def test_committed_code_table_is_the_replay_of_msg_hdata() -> None:
    derived = huffman.derive_static_codes()
    assert tuple((c << 4) | n for c, n in derived) == huffman.STATIC_CODES


def test_decode_table_inverts_every_code() -> None:
    for b in range(256):
        code, length = huffman.ENCODE_CODE[b], huffman.ENCODE_LEN[b]
        for high in (0, (1 << (huffman.DECODE_BITS - length)) - 1):
            entry = huffman.DECODE[code | (high << length)]
            assert entry == (b << 4) | length


@pytest.mark.parametrize("stream", STATIC["streams"], ids=lambda s: f"{s['op']}:{s.get('value', s.get('input_hex'))}")
def test_bitstream_ops_match_ioq3(stream: dict) -> None:
    w = BitWriter()
    op = stream["op"]
    if op == "MSG_WriteString":
        w.write_string(bytes.fromhex(stream["input_hex"]))
    elif op == "MSG_WriteLong":
        w.write_long(stream["value"])
    elif op == "MSG_WriteBits":
        w.write_bits(stream["value"], stream["nbits"])
    else:
        pytest.fail(f"unknown op {op}")
    assert w.bit_length == stream["bits"]
    assert w.to_bytes().hex() == stream["bytes"]

    r = BitReader(bytes.fromhex(stream["bytes"]))
    if op == "MSG_WriteString":
        assert r.read_string().encode() == bytes.fromhex(stream["readback_hex"])
    elif op == "MSG_WriteLong":
        assert r.read_long() == stream["value"]
    else:
        n = stream["nbits"]
        assert r.read_bits(n) == stream["value"] & ((1 << n) - 1)
    assert r.bit == stream["bits"]


@pytest.mark.parametrize("vec", ADAPTIVE, ids=lambda v: f"len{v['input_len']}")
def test_adaptive_connect_compression(vec: dict) -> None:
    packet = bytes.fromhex(vec["input_hex"])
    ioq3_out = bytes.fromhex(vec["output_hex"])
    if vec["decompress_roundtrip_ok"]:
        assert huffman.compress(packet).hex() == vec["output_hex"]
        assert len(ioq3_out) == vec["output_len"]
        assert huffman.decompress(ioq3_out) == packet
    else:
        # ioq3 truncates a payload that does not shrink; we refuse to build it, and its bytes
        # run out before the announced length.
        with pytest.raises(MsgError, match="does not compress"):
            huffman.compress(packet)
        with pytest.raises(MsgError):
            huffman.decompress(ioq3_out)


def test_adaptive_check_value() -> None:
    packet = b"\xff\xff\xff\xffconnect " + b'"' + b"a" * 20 + b'"'
    assert huffman.compress(packet)[12:].hex() == "0016440cfdff5f"


def test_adaptive_rejects_oversized_length() -> None:
    packet = b"\xff\xff\xff\xffconnect " + bytes((0xFF, 0xFF)) + b"\0" * 8
    with pytest.raises(MsgError, match="exceeds"):
        huffman.decompress(packet)


def test_string_character_rules() -> None:
    w = BitWriter()
    w.write_string(b"a%b\x80c\xffd\0ignored")
    w.write_string("")
    w.write_bigstring("x" * 2000)
    r = BitReader(w.to_bytes())
    assert r.read_string() == "a.b.c.d"
    assert r.read_string() == ""
    assert r.read_bigstring() == "x" * 2000
    with pytest.raises(ValueError):
        BitWriter().write_string("y" * 1024)


def test_reader_keeps_1023_chars_like_ioq3() -> None:
    w = BitWriter()
    w.write_data(b"z" * 1100 + b"\0")
    r = BitReader(w.to_bytes())
    assert r.read_string() == "z" * 1023
    # ioq3 consumed one more char and stopped; the rest stays in the stream.
    assert r.read_byte() == ord("z")


def test_signed_and_sized_reads() -> None:
    w = BitWriter()
    w.write_short(-2)
    w.write_bits(-50, -16)
    w.write_bits(-3, -8)
    w.write_long(-1)
    w.write_byte(200)
    r = BitReader(w.to_bytes())
    assert r.read_short() == -2
    assert r.read_bits(-16) == -50
    assert r.read_bits(-8) == -3
    assert r.read_long() == -1
    assert r.read_byte() == 200


def test_overread_and_nyt_raise_msgerror() -> None:
    with pytest.raises(MsgError, match="overread"):
        BitReader(b"").read_bits(1)
    r = BitReader(bytes.fromhex("aa"))
    assert r.read_long() == 0
    with pytest.raises(MsgError, match="overread"):
        r.read_byte()
    nyt_code = huffman.STATIC_CODES[huffman.NYT] >> 4
    with pytest.raises(MsgError, match="NYT"):
        BitReader(nyt_code.to_bytes(2, "little")).read_byte()
    with pytest.raises(ValueError):
        BitWriter().write_bits(0, 0)
