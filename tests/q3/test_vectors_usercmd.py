"""Usercmd deltas and MSG_HashKey against ioq3's own writer and reader."""

from __future__ import annotations

import json

import pytest

from headcast.netcode.q3.msg import BitReader, BitWriter
from headcast.netcode.q3.usercmd import (
    NULL_CMD,
    UserCmd,
    hash_key,
    read_delta_usercmd_key,
    write_delta_usercmd_key,
)

from support import VECTORS_FILE

VECTORS = json.loads(VECTORS_FILE.read_text())


def cmd(d: dict) -> UserCmd:
    return UserCmd(
        d["serverTime"], tuple(d["angles"]), d["buttons"], d["weapon"], d["forwardmove"], d["rightmove"], d["upmove"]
    )


@pytest.mark.parametrize("vec", VECTORS["usercmd_delta"]["vectors"], ids=lambda v: v["name"])
def test_usercmd_delta_matches_ioq3(vec: dict) -> None:
    w = BitWriter()
    write_delta_usercmd_key(w, vec["key"], cmd(vec["from"]), cmd(vec["to"]), button_bits=16)
    assert w.bit_length == vec["bits"]
    assert w.to_bytes().hex() == vec["bytes"]
    r = BitReader(bytes.fromhex(vec["bytes"]))
    assert read_delta_usercmd_key(r, vec["key"], cmd(vec["from"]), button_bits=16) == cmd(vec["decoded"])
    assert r.bit == vec["bits"]


def test_reference_check_values() -> None:
    key = 0x12345678
    a = UserCmd(1000, (63716, 16384, 0), 1, 2, 127, -127, 0)
    b = UserCmd(1016, (63807, 16611, 0), 1, 2, 127, -127, 0)
    c = UserCmd(1032, b.angles, 1, 2, 127, -127, 0)
    d = UserCmd(1048, b.angles, 0x12801, 2, 127, -127, 0)
    for frm, to, hexed, bits in ((a, b, "4b37b2e6c7f303", 56), (b, c, "4b00", 9), (c, d, "4b813ca300", 33)):
        w = BitWriter()
        write_delta_usercmd_key(w, key, frm, to)
        assert (w.to_bytes().hex(), w.bit_length) == (hexed, bits)
    r = BitReader(bytes.fromhex("4b813ca300"))
    assert read_delta_usercmd_key(r, key, c).buttons == 0x2801


def test_32bit_buttons_round_trip_with_ioq3_reader_rules() -> None:
    """The VR link: head bits 12-25 survive only with 32-bit buttons on both sides."""
    key = -559038737
    frm = UserCmd(5000, (100, 200, 300), 1, 2, 0, 0, 0)
    to = UserCmd(5016, (100, 200, 364), (84 << 19) | (104 << 12) | 1, 2, -128, 64, 127)
    w = BitWriter()
    write_delta_usercmd_key(w, key, frm, to, button_bits=32)
    got = read_delta_usercmd_key(BitReader(w.to_bytes()), key, frm, button_bits=32)
    assert got == UserCmd(5016, (100, 200, 364), to.buttons, 2, -127, 64, 127)
    # A vanilla (16-bit) reader of the same bytes does not see the head bits: silent corruption.
    wrong = read_delta_usercmd_key(BitReader(w.to_bytes()), key, frm, button_bits=16)
    assert wrong.buttons != to.buttons
    # 16 more bits than the stock writer for the same cmd.
    w16 = BitWriter()
    write_delta_usercmd_key(w16, key, frm, to, button_bits=16)
    assert w.bit_length > w16.bit_length


def test_time_only_and_large_time_jump() -> None:
    frm = UserCmd(1000, (1, 2, 3), 0, 1, 0, 0, 0)
    for to in (UserCmd(1255, (1, 2, 3), 0, 1), UserCmd(1256, (1, 2, 3), 0, 1), UserCmd(10**9, (1, 2, 3), 0, 1)):
        w = BitWriter()
        write_delta_usercmd_key(w, 7, frm, to)
        assert read_delta_usercmd_key(BitReader(w.to_bytes()), 7, frm) == to
    with pytest.raises(ValueError):
        write_delta_usercmd_key(BitWriter(), 0, NULL_CMD, NULL_CMD, button_bits=24)


@pytest.mark.parametrize("vec", VECTORS["msg_hashkey"], ids=lambda v: v["input_hex"] or "empty")
def test_hash_key_matches_ioq3(vec: dict) -> None:
    assert hash_key(bytes.fromhex(vec["input_hex"]), vec["maxlen"]) == vec["hash"]


def test_hash_key_check_values() -> None:
    assert hash_key("") == 0
    assert hash_key("a") == 11548
    assert hash_key('print "hello"\n') == 149652
    assert hash_key('cs 5 "sv_hostname\\\\VR test"') == 320241
    # Only the first 32 chars count.
    assert hash_key("x" * 32 + "tail") == hash_key("x" * 32 + "other")
