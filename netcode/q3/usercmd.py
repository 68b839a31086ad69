"""Quake 3 usercmds on the wire: `MSG_WriteDeltaUsercmdKey` / `MSG_ReadDeltaUsercmdKey` and `MSG_HashKey`.

Each cmd is sent as a delta from the previous one (the first from `NULL_CMD`); changed fields
are XORed with `key ^ serverTime`. `button_bits` is 16 on vanilla servers and 32 on a VR link
(trinity-server with `vr_support 1` and an executed `vr\\1` userinfo); a width mismatch is
silent corruption on both sides, so callers pass it explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .msg import BitReader, BitWriter, sanitize

__all__ = [
    "UserCmd",
    "NULL_CMD",
    "hash_key",
    "write_delta_usercmd_key",
    "delta_usercmd_fields",
    "read_delta_usercmd_key",
]


@dataclass(frozen=True, slots=True)
class UserCmd:
    """`usercmd_t`: angles in 16-bit units (0..65535), moves -127..127, buttons as an int."""

    server_time: int = 0
    angles: tuple[int, int, int] = (0, 0, 0)
    buttons: int = 0
    weapon: int = 0
    forwardmove: int = 0
    rightmove: int = 0
    upmove: int = 0


NULL_CMD = UserCmd()


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def _s8(v: int) -> int:
    v &= 0xFF
    return v - 0x100 if v & 0x80 else v


# Per button width: each field's value mask and wire width with its change flag, in wire order
# (angles 0-2, forward, right, up, buttons, weapon).
_FIELD_MASKS = {b: tuple((1 << n) - 1 for n in (16, 16, 16, 8, 8, 8, b, 8)) for b in (16, 32)}
_FIELD_NBITS = {b: tuple(n + 1 for n in (16, 16, 16, 8, 8, 8, b, 8)) for b in (16, 32)}


@lru_cache(maxsize=128)  # the same last server command keys every packet until the next one arrives
def hash_key(text: str | bytes, maxlen: int = 32) -> int:
    """`MSG_HashKey`: sum of c * (119 + i) over at most `maxlen` chars (`%`, > 127 → `.`), folded."""
    h = 0
    for i, c in enumerate(sanitize(text)[:maxlen]):
        h += c * (119 + i)
    return _s32(h ^ (h >> 10) ^ (h >> 20))


def _check_button_bits(button_bits: int) -> None:
    if button_bits not in (16, 32):
        raise ValueError(f"button_bits must be 16 or 32, not {button_bits}")


def write_delta_usercmd_key(w: BitWriter, key: int, frm: UserCmd, to: UserCmd, button_bits: int = 16) -> None:
    """Append `to` as a delta from `frm` (ioq3 `MSG_WriteDeltaUsercmdKey`, buttons `button_bits` wide)."""
    fields: list[int] = []
    delta_usercmd_fields(fields, key, frm, to, button_bits)
    it = iter(fields)
    for value, nbits in zip(it, it):
        raw = nbits & 7  # a merged flag: its raw bits, then the value's whole bytes
        if raw:
            w.write_bits(value & ((1 << raw) - 1), raw)
        if nbits >> 3:
            w.write_bits(value >> raw, nbits & ~7)


def delta_usercmd_fields(out: list[int], key: int, frm: UserCmd, to: UserCmd, button_bits: int = 16) -> None:
    """Append the delta's `value, nbits` pairs to `out` (see `msg.huffman_bits`); each change
    flag travels merged with what follows it (a flag is raw bits, written first)."""
    if button_bits != 16 and button_bits != 32:  # twice per 60 Hz packet: no call on the good path
        _check_button_bits(button_bits)
    # ioq3 compares the int difference (signed); Quake3e's unsigned test differs only for dt < 0.
    dt = _s32(to.server_time - frm.server_time)
    if dt < 256:
        out += (1 | (dt & 0xFF) << 1, 9)
    else:
        out += ((to.server_time & 0xFFFFFFFF) << 1, 33)
    # The fields as ioq3's struct holds them (int, signed char, byte), for change tests, each
    # masked to its C width: equal masks mean equal C values, and the wire takes the low bits.
    a0, a1, a2 = frm.angles
    old = (
        a0 & 0xFFFFFFFF,
        a1 & 0xFFFFFFFF,
        a2 & 0xFFFFFFFF,
        frm.forwardmove & 0xFF,
        frm.rightmove & 0xFF,
        frm.upmove & 0xFF,
        frm.buttons & 0xFFFFFFFF,
        frm.weapon & 0xFF,
    )
    a0, a1, a2 = to.angles
    new = (
        a0 & 0xFFFFFFFF,
        a1 & 0xFFFFFFFF,
        a2 & 0xFFFFFFFF,
        to.forwardmove & 0xFF,
        to.rightmove & 0xFF,
        to.upmove & 0xFF,
        to.buttons & 0xFFFFFFFF,
        to.weapon & 0xFF,
    )
    if old == new:
        out += (0, 1)
        return
    out += (1, 1)
    k = key ^ to.server_time
    for o, n, mask, nbits in zip(old, new, _FIELD_MASKS[button_bits], _FIELD_NBITS[button_bits]):
        if o == n:
            out += (0, 1)
        else:
            out += (1 | ((n ^ k) & mask) << 1, nbits)


def read_delta_usercmd_key(r: BitReader, key: int, frm: UserCmd, button_bits: int = 16) -> UserCmd:
    """Read a cmd delta'd from `frm` with ioq3's reader rules.

    Values are zero-extended then stored as the struct types: angles 0..65535, moves as signed
    chars with -128 turned into -127, 16-bit buttons masked to 16 bits, weapon 0..255.
    """
    _check_button_bits(button_bits)
    if r.read_flag():
        server_time = _s32(frm.server_time + r.read_bits(8))
    else:
        server_time = r.read_bits(32)
    if not r.read_flag():
        return UserCmd(server_time, frm.angles, frm.buttons, frm.weapon, frm.forwardmove, frm.rightmove, frm.upmove)
    k = key ^ server_time

    def field(old: int, bits: int) -> int:
        if r.read_flag():
            return (r.read_bits(bits) ^ k) & ((1 << bits) - 1)
        return old

    def move(old: int) -> int:
        v = _s8(field(old, 8))
        return -127 if v == -128 else v

    angles = (field(frm.angles[0], 16), field(frm.angles[1], 16), field(frm.angles[2], 16))
    forwardmove = move(frm.forwardmove)
    rightmove = move(frm.rightmove)
    upmove = move(frm.upmove)
    buttons = _s32(field(frm.buttons, button_bits))
    weapon = field(frm.weapon, 8)
    return UserCmd(server_time, angles, buttons, weapon, forwardmove, rightmove, upmove)
