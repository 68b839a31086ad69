"""Sauerbraten's encodings (src/shared/tools.cpp putint/getint, putuint/getuint, sendstring/getstring,
putfloat/getfloat) and its 8-bit character set (src/shared/stream.cpp cube2unichars).

The game's reader returns 0 past the end of a buffer and flags it; ours raises SauerDecodeError
instead, so a truncated record is never mistaken for one with zero fields.
"""

from __future__ import annotations

import struct

from .errors import SauerDecodeError as SauerDecodeError  # its home is errors.py

_F32 = struct.Struct("<f")

# getuint reads at most 4 bytes and sign-extends bit 28, so this is what survives a round trip.
UINT_MIN = -(1 << 28)
UINT_MAX = (1 << 28) - 1


def put_int(out: bytearray, n: int) -> None:
    """putint: 1 byte for −127 < n < 128, else 0x80 + int16 LE, else 0x81 + int32 LE."""
    if -127 < n < 128:
        out.append(n & 0xFF)
    elif -0x8000 <= n < 0x8000:
        out.append(0x80)
        out += (n & 0xFFFF).to_bytes(2, "little")
    elif -(1 << 31) <= n < (1 << 31):
        out.append(0x81)
        out += (n & 0xFFFFFFFF).to_bytes(4, "little")
    else:
        raise ValueError(f"putint: {n} does not fit in 32 bits")


def put_uint(out: bytearray, n: int) -> None:
    """putuint: 7 bits per byte, low group first, bit 7 = more; n < 0 or ≥ 2²¹ takes 4 bytes."""
    if not UINT_MIN <= n <= UINT_MAX:
        raise ValueError(f"putuint: {n} does not survive getuint (range {UINT_MIN}..{UINT_MAX})")
    if n < 0 or n >= 1 << 21:
        out += bytes((0x80 | (n & 0x7F), 0x80 | ((n >> 7) & 0x7F), 0x80 | ((n >> 14) & 0x7F), (n >> 21) & 0xFF))
    elif n < 1 << 7:
        out.append(n)
    elif n < 1 << 14:
        out += bytes((0x80 | (n & 0x7F), n >> 7))
    else:
        out += bytes((0x80 | (n & 0x7F), 0x80 | ((n >> 7) & 0x7F), n >> 14))


def put_string(out: bytearray, text: str) -> None:
    """sendstring: every character (the cube charset's byte, as a signed char) via putint, then 0.

    Characters the game cannot show are refused (ValueError), as is a NUL (it would end the string).
    """
    for b in encode_cube(text):
        put_int(out, b - 256 if b >= 128 else b)
    out.append(0)


# The cube charset: byte → Unicode code point (stream.cpp cube2unichars); 0 = none.
CUBE2UNI: tuple[int, ...] = (
    0,
    192,
    193,
    194,
    195,
    196,
    197,
    198,
    199,
    9,
    10,
    11,
    12,
    13,
    200,
    201,
    202,
    203,
    204,
    205,
    206,
    207,
    209,
    210,
    211,
    212,
    213,
    214,
    216,
    217,
    218,
    219,
    *range(32, 127),
    220,
    221,
    223,
    224,
    225,
    226,
    227,
    228,
    229,
    230,
    231,
    232,
    233,
    234,
    235,
    236,
    237,
    238,
    239,
    241,
    242,
    243,
    244,
    245,
    246,
    248,
    249,
    250,
    251,
    252,
    253,
    255,
    0x104,
    0x105,
    0x106,
    0x107,
    0x10C,
    0x10D,
    0x10E,
    0x10F,
    0x118,
    0x119,
    0x11A,
    0x11B,
    0x11E,
    0x11F,
    0x130,
    0x131,
    0x141,
    0x142,
    0x143,
    0x144,
    0x147,
    0x148,
    0x150,
    0x151,
    0x152,
    0x153,
    0x158,
    0x159,
    0x15A,
    0x15B,
    0x15E,
    0x15F,
    0x160,
    0x161,
    0x164,
    0x165,
    0x16E,
    0x16F,
    0x170,
    0x171,
    0x178,
    0x179,
    0x17A,
    0x17B,
    0x17C,
    0x17D,
    0x17E,
    0x404,
    0x411,
    0x413,
    0x414,
    0x416,
    0x417,
    0x418,
    0x419,
    0x41B,
    0x41F,
    0x423,
    0x424,
    0x426,
    0x427,
    0x428,
    0x429,
    0x42A,
    0x42B,
    0x42C,
    0x42D,
    0x42E,
    0x42F,
    0x431,
    0x432,
    0x433,
    0x434,
    0x436,
    0x437,
    0x438,
    0x439,
    0x43A,
    0x43B,
    0x43C,
    0x43D,
    0x43F,
    0x442,
    0x444,
    0x446,
    0x447,
    0x448,
    0x449,
    0x44A,
    0x44B,
    0x44C,
    0x44D,
    0x44E,
    0x44F,
    0x454,
    0x490,
    0x491,
)
assert len(CUBE2UNI) == 256
_UNI2CUBE = {u: b for b, u in enumerate(CUBE2UNI) if u}


def encode_cube(text: str) -> bytes:
    """Unicode → the cube charset's bytes; ValueError naming a character the charset lacks."""
    try:
        return bytes(_UNI2CUBE[ord(c)] for c in text)
    except KeyError as e:
        raise ValueError(f"{chr(e.args[0])!r} (U+{e.args[0]:04X}) is not in Sauerbraten's character set") from None


def decode_cube(data: bytes) -> str:
    """The cube charset's bytes → Unicode (a byte with no character becomes U+FFFD)."""
    return "".join(chr(CUBE2UNI[b]) if CUBE2UNI[b] else "\ufffd" for b in data)


def plain_text(text: str) -> str:
    """A name or message without its colour codes (\\f and the character after it), as filtertext."""
    out, skip = [], False
    for c in text:
        if skip:
            skip = False
        elif c == "\f":
            skip = True
        else:
            out.append(c)
    return "".join(out)


MAXTRANS = 5000  # the game's `text` buffer: getstring's default bound
MAXSTRLEN = 260  # a `string`


class Reader:
    """A cursor over received bytes; every read past the end raises SauerDecodeError."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def byte(self, what: str) -> int:
        if self.pos >= len(self.data):
            raise SauerDecodeError(f"truncated: {what} missing", self.pos)
        b = self.data[self.pos]
        self.pos += 1
        return b

    def u16(self, what: str) -> int:
        lo = self.byte(what)
        return lo | self.byte(what) << 8

    def get_int(self, what: str) -> int:
        c = self.byte(what)
        if c == 0x80:
            return int.from_bytes(bytes((self.byte(what), self.byte(what))), "little", signed=True)
        if c == 0x81:
            return int.from_bytes(bytes(self.byte(what) for _ in range(4)), "little", signed=True)
        return c - 256 if c & 0x80 else c

    def get_string(self, what: str, maxlen: int = MAXTRANS) -> str:
        """getstring(text, p, maxlen): putint'd characters up to a 0. As the game, it stops after
        `maxlen` characters without a 0 and leaves the rest of the string unread."""
        chars = bytearray()
        while len(chars) < maxlen:
            c = self.get_int(what) & 0xFF  # stored into a char
            if c == 0:
                return decode_cube(bytes(chars))
            chars.append(c)
        return decode_cube(bytes(chars[:-1]))

    def get_float(self, what: str) -> float:
        value: float = _F32.unpack(bytes(self.byte(what) for _ in range(4)))[0]
        return value

    def skip(self, n: int, what: str) -> bytes:
        """The next `n` bytes (the game's p.subbuf(n) clamps to what is left; so do we)."""
        n = max(0, min(n, self.remaining()))
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(out)

    def get_uint(self, what: str) -> int:
        n = self.byte(what)
        if n & 0x80:
            n += (self.byte(what) << 7) - 0x80
            if n & (1 << 14):
                n += (self.byte(what) << 14) - (1 << 14)
            if n & (1 << 21):
                n += (self.byte(what) << 21) - (1 << 21)
            if n & (1 << 28):
                n |= -1 << 28  # the game's `n |= ~0U << 28` into an int
        return n
