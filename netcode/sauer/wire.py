"""Sauerbraten's integer encodings (src/shared/tools.cpp putint/getint, putuint/getuint).

The game's reader returns 0 past the end of a buffer and flags it; ours raises SauerDecodeError
instead, so a truncated record is never mistaken for one with zero fields.
"""
from __future__ import annotations


class SauerDecodeError(ValueError):
    """The peer's bytes are not a valid message; `offset` is where reading failed."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} (at byte {offset})")
        self.reason = reason
        self.offset = offset


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
