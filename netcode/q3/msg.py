"""Quake 3 message bit I/O (ioq3 msg.c MSG_WriteBits / MSG_ReadBits) with the static Huffman code.

A value of n bits goes out as its low `n mod 8` bits raw (LSB first), then each remaining whole
byte, low byte first, as its static Huffman code. Stream bit k is bit (k & 7) of byte k >> 3.
Negative n means a signed field; the wire form is the same.

Readers are strict where ioq3 is lenient: an overread or the NYT code raises MsgError instead of
returning 0 / -1, so a bad packet becomes a counted drop, never a half-parsed state.
"""

from __future__ import annotations

import array
import struct
from typing import TYPE_CHECKING, Any, Sequence

from .errors import MsgError
from .huffman import DECODE_LENGTH, DECODE_SYMBOL, ENCODE_CODE, ENCODE_LEN, NYT
from .native import NATIVE
from .netfields import ENTITY_WIDTHS, FLOAT_INT_BIAS, FLOAT_INT_BITS, PLAYER_ARRAYS, PLAYER_WIDTHS

__all__ = [
    "MsgError",
    "BitWriter",
    "BitReader",
    "PyBitReader",
    "sanitize",
    "huffman_bits",
    "py_huffman_bits",
    "MAX_MSGLEN",
    "MAX_STRING_CHARS",
    "BIG_INFO_STRING",
    "OOB_MARKER",
    "is_oob",
]

MAX_MSGLEN = 16384
MAX_STRING_CHARS = 1024
BIG_INFO_STRING = 8192
OOB_MARKER = b"\xff\xff\xff\xff"  # sequence -1: a connectionless (out-of-band) packet

_DOT = ord(".")
_PERCENT = ord("%")
_F32 = struct.Struct("<f")
_I32 = struct.Struct("<i")
_SANITIZE = bytes(_DOT if (c > 127 or c == _PERCENT) else c for c in range(256))


def is_oob(packet: bytes) -> bool:
    """True for a connectionless packet (`FF FF FF FF` + text) rather than a netchan one."""
    return packet[:4] == OOB_MARKER


def sanitize(text: str | bytes) -> bytes:
    """ioq3's string rules: stop at NUL; bytes > 127 and `%` become `.`.

    A str is taken as latin-1 (one byte per char); chars beyond it become `?`.
    """
    raw = text.encode("latin-1", errors="replace") if isinstance(text, str) else bytes(text)
    nul = raw.find(0)
    if nul >= 0:
        raw = raw[:nul]
    return raw.translate(_SANITIZE)


def _check_width(nbits: int) -> int:
    n = -nbits if nbits < 0 else nbits
    if n == 0 or n > 32 or nbits == -32:
        raise ValueError(f"bad bit width {nbits} (1..32, or -1..-31 for signed)")
    return n


# Huffman code and length of every byte value, and of every 16-bit value (low byte first), packed
# as `code << 5 | length`: a short takes one lookup, a long two (a 256 kB table, built once, on
# first use: tens of ms that start-up would pay, and a process with the C extension never needs).
_CODE8 = tuple((c << 5) | n for c, n in zip(ENCODE_CODE, ENCODE_LEN))
_CODE16: array.array[int] | None = None


def _code16() -> array.array[int]:
    global _CODE16
    if _CODE16 is None:
        _CODE16 = array.array(
            "I",
            [
                ((ENCODE_CODE[v & 0xFF] | (ENCODE_CODE[v >> 8] << ENCODE_LEN[v & 0xFF])) << 5)
                | (ENCODE_LEN[v & 0xFF] + ENCODE_LEN[v >> 8])
                for v in range(0x10000)
            ],
        )
    return _CODE16


def py_huffman_bits(fields: Sequence[int]) -> bytes:
    """The bitstream of `BitWriter.write_bits(value, nbits)` for each flat pair in `fields`
    (`[value0, nbits0, value1, nbits1, ...]`), as `to_bytes()` would return it.

    The hot path for the 60 Hz client message: one call, one big-int accumulator, table lookups
    per byte or short, no method call or buffer append per field. A field's raw low `n % 8` bits
    go first, so a 1-bit flag followed by an 8k-bit value is one field `(flag | value << 1,
    8k + 1)`; n may thus reach 40 here. Widths are not checked: callers pass constant ones
    (the C twin, `huffman_bits` when the extension is built, takes widths 0..64 only).
    """
    t8 = _CODE8
    t16 = _CODE16 if _CODE16 is not None else _code16()
    acc = 0
    nacc = 0
    it = iter(fields)
    for value, n in zip(it, it):
        raw = n & 7
        if raw:
            acc |= (value & ((1 << raw) - 1)) << nacc
            nacc += raw
            value >>= raw
        nbytes = n >> 3
        if nbytes == 2:
            e = t16[value & 0xFFFF]
            acc |= (e >> 5) << nacc
            nacc += e & 31
        elif nbytes == 1:
            e = t8[value & 0xFF]
            acc |= (e >> 5) << nacc
            nacc += e & 31
        elif nbytes == 4:
            e = t16[value & 0xFFFF]
            acc |= (e >> 5) << nacc
            nacc += e & 31
            e = t16[(value >> 16) & 0xFFFF]
            acc |= (e >> 5) << nacc
            nacc += e & 31
        elif nbytes:
            for _ in range(nbytes):
                e = t8[value & 0xFF]
                value >>= 8
                acc |= (e >> 5) << nacc
                nacc += e & 31
    return acc.to_bytes((nacc + 7) >> 3, "little")


class BitWriter:
    """Builds a Huffman bitstream (`MSG_Init` + `MSG_Bitstream`, starting at bit 0)."""

    __slots__ = ("_buf", "_acc", "_nacc")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._acc = 0  # bits not yet flushed to _buf, stream order from bit 0
        self._nacc = 0

    @property
    def bit_length(self) -> int:
        return (len(self._buf) << 3) + self._nacc

    def to_bytes(self) -> bytes:
        """ceil(bits / 8) bytes (ioq3 would report one spare byte when bits % 8 == 0)."""
        if self._nacc:
            return bytes(self._buf) + bytes((self._acc & 0xFF,))
        return bytes(self._buf)

    def write_flag(self, flag: int) -> None:
        """One raw bit (`MSG_WriteBits(msg, flag, 1)`): the delta code's change flags."""
        self._acc |= (flag & 1) << self._nacc
        self._nacc += 1
        if self._nacc == 8:
            self._buf.append(self._acc)
            self._acc = 0
            self._nacc = 0

    def write_bits(self, value: int, nbits: int) -> None:
        n = nbits if 0 < nbits <= 32 else _check_width(nbits)
        value &= (1 << n) - 1
        acc = self._acc
        nacc = self._nacc
        buf = self._buf
        raw = n & 7
        if raw:
            acc |= (value & ((1 << raw) - 1)) << nacc
            nacc += raw
            value >>= raw
        for _ in range(n >> 3):
            b = value & 0xFF
            value >>= 8
            acc |= ENCODE_CODE[b] << nacc
            nacc += ENCODE_LEN[b]
            while nacc >= 8:
                buf.append(acc & 0xFF)
                acc >>= 8
                nacc -= 8
        while nacc >= 8:
            buf.append(acc & 0xFF)
            acc >>= 8
            nacc -= 8
        self._acc = acc
        self._nacc = nacc

    def write_byte(self, value: int) -> None:
        self.write_bits(value, 8)

    def write_short(self, value: int) -> None:
        self.write_bits(value, 16)

    def write_long(self, value: int) -> None:
        self.write_bits(value, 32)

    def write_data(self, data: bytes) -> None:
        for b in data:
            self.write_bits(b, 8)

    def write_string(self, text: str | bytes) -> None:
        """`MSG_WriteString`: sanitized bytes then NUL; at most MAX_STRING_CHARS - 1 chars."""
        self._write_limited(text, MAX_STRING_CHARS)

    def write_bigstring(self, text: str | bytes) -> None:
        """`MSG_WriteBigString`: as write_string, at most BIG_INFO_STRING - 1 chars."""
        self._write_limited(text, BIG_INFO_STRING)

    def _write_limited(self, text: str | bytes, limit: int) -> None:
        raw = sanitize(text)
        if len(raw) >= limit:
            # ioq3 would silently send an empty string instead; refuse rather than lose the text.
            raise ValueError(f"string of {len(raw)} chars exceeds the {limit - 1}-char limit")
        self.write_data(raw + b"\0")


class PyBitReader:
    """Reads a Huffman bitstream from `data`, starting at byte `start` (e.g. after a netchan header).

    The reference of `_q3native.BitReader` (same values, positions, errors); `BitReader` is
    that C type when the extension is built, else this class.
    """

    __slots__ = ("_words", "_bit", "_end")

    def __init__(self, data: bytes, start: int = 0) -> None:
        if not 0 <= start <= len(data):
            raise MsgError(f"message start {start} outside a {len(data)}-byte packet")
        # _words[i] = bytes i..i+3 as one little-endian int, so any 11-bit window is one lookup
        # and one shift. Windows 0..len(data) exist (zero padded): a Huffman lookup may start at
        # the very end before the overread check. Four strided struct unpacks build the list
        # in C, with no per-byte Python work.
        m = (len(data) >> 2) + 1
        padded = bytes(data) + bytes(4 * m + 3 - len(data))
        words = [0] * (4 * m)
        fmt = f"<{m}I"
        for r in range(4):
            words[r::4] = struct.unpack_from(fmt, padded, r)
        self._words: list[int] = words
        self._bit = start << 3
        self._end = len(data) << 3

    @property
    def bit(self) -> int:
        """Current stream position in bits from the start of `data`."""
        return self._bit

    @property
    def bits_left(self) -> int:
        return self._end - self._bit

    def read_flag(self) -> int:
        """One raw bit (`MSG_ReadBits(msg, 1)`), the delta code's change flags: the hot path."""
        bit = self._bit
        if bit >= self._end:
            raise MsgError(f"overread: 1 raw bit at bit {bit} of {self._end}")
        self._bit = bit + 1
        return (self._words[bit >> 3] >> (bit & 7)) & 1

    def read_bits(self, nbits: int) -> int:
        """`MSG_ReadBits`: unsigned for n < 32, a C int (signed) for 32, sign-extended for negative n."""
        n = nbits if 0 < nbits <= 32 else _check_width(nbits)
        words = self._words
        bit = self._bit
        end = self._end
        raw = n & 7
        value = 0
        if raw:
            if bit + raw > end:
                raise MsgError(f"overread: {raw} raw bits at bit {bit} of {end}")
            value = (words[bit >> 3] >> (bit & 7)) & ((1 << raw) - 1)
            bit += raw
        shift = raw
        for _ in range(n >> 3):
            idx = (words[bit >> 3] >> (bit & 7)) & 0x7FF
            symbol = DECODE_SYMBOL[idx]
            bit += DECODE_LENGTH[idx]
            if bit > end:
                raise MsgError(f"overread: Huffman symbol past the end ({end} bits)")
            if symbol == NYT:
                raise MsgError(f"garbage Huffman code (NYT) at bit {bit - DECODE_LENGTH[idx]}")
            value |= symbol << shift
            shift += 8
        self._bit = bit
        if nbits < 0:
            # ioq3 sign-extends from the byte-aligned part's width only (n - n % 8); every
            # signed field on the wire is -8 or -16, where that is the full width.
            width = n - raw
            if 0 < width < 32 and value & (1 << (width - 1)):
                value |= -1 ^ ((1 << width) - 1)
        if value >= 0x80000000:
            value -= 1 << 32
        return value

    def read_netfields(self, widths: tuple[int, ...], base: tuple[Any, ...], zero_flags: bool) -> tuple[Any, ...]:
        """The netField walk of `MSG_ReadDeltaEntity` / `MSG_ReadDeltaPlayerstate`.

        `widths[i]`: 0 = float, else the int width (negative = signed). Reads the changed-field
        count, then per field a change flag and, if set, the value; unchanged fields keep
        `base[i]`. `zero_flags` (entities) adds a bit before each changed value that is 0 for
        a zero value. Floats come back as Python floats (13-bit integral or 32-bit IEEE).
        Flags are read inline: a method call per flag would dominate a snapshot's parse time.
        """
        lc = self.read_bits(8)
        if lc > len(widths):
            raise MsgError(f"invalid field count {lc} (max {len(widths)})")
        values = list(base)
        words = self._words
        end = self._end
        bit = self._bit
        for i in range(lc):
            if bit >= end:
                raise MsgError(f"overread: field flag at bit {bit} of {end}")
            changed = (words[bit >> 3] >> (bit & 7)) & 1
            bit += 1
            if not changed:
                continue
            if zero_flags:
                if bit >= end:
                    raise MsgError(f"overread: zero flag at bit {bit} of {end}")
                nonzero = (words[bit >> 3] >> (bit & 7)) & 1
                bit += 1
                if not nonzero:
                    values[i] = 0 if widths[i] else 0.0
                    continue
            width = widths[i]
            if width == 0:
                if bit >= end:
                    raise MsgError(f"overread: float form flag at bit {bit} of {end}")
                full = (words[bit >> 3] >> (bit & 7)) & 1
                self._bit = bit + 1
                if full:
                    values[i] = _F32.unpack(_I32.pack(self.read_bits(32)))[0]
                else:
                    values[i] = float(self.read_bits(FLOAT_INT_BITS) - FLOAT_INT_BIAS)
            else:
                self._bit = bit
                values[i] = self.read_bits(width)
            bit = self._bit
        self._bit = bit
        return tuple(values)

    def read_entity_delta(self, base: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """`MSG_ReadDeltaEntity` after the entity number: None if removed, `base` itself if
        unchanged, else ENTITY_FIELDS' values read over it (their errors say `entityState: `)."""
        if self.read_flag():
            return None
        if not self.read_flag():
            return base
        try:
            return self.read_netfields(ENTITY_WIDTHS, base, True)
        except MsgError as e:
            raise MsgError(f"entityState: {e}") from None

    def read_playerstate_delta(
        self,
        base: tuple[Any, ...],
        stats: tuple[int, ...],
        persistant: tuple[int, ...],
        ammo: tuple[int, ...],
        powerups: tuple[int, ...],
    ) -> tuple[tuple[Any, ...], ...]:
        """`MSG_ReadDeltaPlayerstate` over a base state's parts: `(values, stats, persistant, ammo,
        powerups)`, PLAYER_FIELDS' values first (their errors say `playerState: `), then the four
        arrays, each the base's own tuple where unchanged."""
        try:
            values = self.read_netfields(PLAYER_WIDTHS, base, False)
        except MsgError as e:
            raise MsgError(f"playerState: {e}") from None
        arrays = [stats, persistant, ammo, powerups]
        if self.read_flag():
            for k, (_, length, elem_bits) in enumerate(PLAYER_ARRAYS):
                if not self.read_flag():
                    continue
                mask = self.read_bits(length)
                current = list(arrays[k])
                for i in range(length):
                    if mask & (1 << i):
                        current[i] = self.read_short() if elem_bits == 16 else self.read_long()
                arrays[k] = tuple(current)
        return (values, *arrays)

    def read_byte(self) -> int:
        return self.read_bits(8)

    def read_short(self) -> int:
        """`MSG_ReadShort`: 16 bits as a signed short."""
        value = self.read_bits(16)
        return value - 0x10000 if value >= 0x8000 else value

    def read_long(self) -> int:
        return self.read_bits(32)

    def read_data(self, length: int) -> bytes:
        if length < 0 or length > (self._end - self._bit):
            raise MsgError(f"cannot read {length} bytes with {self.bits_left} bits left")
        return bytes(self.read_bits(8) for _ in range(length))

    def read_string(self) -> str:
        """`MSG_ReadString`: up to NUL; `%` and > 127 become `.`; at most 1023 chars."""
        return self._read_limited(MAX_STRING_CHARS)

    def read_bigstring(self) -> str:
        """`MSG_ReadBigString`: as read_string, kept to 8191 chars."""
        return self._read_limited(BIG_INFO_STRING)

    def _read_limited(self, limit: int) -> str:
        out = bytearray()
        keep = limit - 1
        while True:
            c = self.read_bits(8)
            # Like ioq3: the char after a full buffer is consumed and the read stops there.
            if c == 0 or len(out) >= keep:
                break
            out.append(_DOT if (c > 127 or c == _PERCENT) else c)
        return out.decode("ascii")


# The C twins when built (native.py); the Python ones above stay the reference and the fallback.
huffman_bits = NATIVE.huffman_bits if NATIVE is not None else py_huffman_bits
if TYPE_CHECKING:  # the C reader has PyBitReader's methods, values and errors
    BitReader = PyBitReader
else:
    BitReader = NATIVE.BitReader if NATIVE is not None else PyBitReader
