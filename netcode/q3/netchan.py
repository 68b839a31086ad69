"""Quake 3 netchan, client side, sans-IO (ioq3 net_chan.c, cl_net_chan.c).

Two wire formats share the number "71":

- `NetchanMode.NEW71` (ioq3 / Quake3e protocol 71): C→S header `seq, qport, checksum`, S→C
  `seq, checksum`, with `checksum = challenge ^ (seq * challenge)`; no scrambling.
- `NetchanMode.LEGACY` (protocol 68 and stock OpenArena's "71"): no checksum, and the message
  bytes are XOR-scrambled both ways with a key rolled over a reliable-command text.

Messages of 1300 bytes or more travel as 1300-byte fragments sharing one sequence number;
reassembly is in order only and bounded by MAX_MSGLEN. A packet that cannot be used is dropped
and counted in `drops` under a reason; `process` never raises on peer bytes.
"""

from __future__ import annotations

import enum
import struct
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from .clientmsg import usercmd_key, write_client_message
from .huffman import DECODE
from .msg import MAX_MSGLEN, sanitize
from .native import NATIVE
from .usercmd import UserCmd

__all__ = ["NetchanMode", "Netchan", "Received", "FRAGMENT_SIZE", "FRAGMENT_BIT", "MAX_PACKETLEN", "netchan_checksum"]

MAX_PACKETLEN = 1400
FRAGMENT_SIZE = MAX_PACKETLEN - 100
FRAGMENT_BIT = 1 << 31
# Scrambling starts after the first three longs C→S and after the first 4 message bytes S→C
# (ioq3 CL_ENCODE_START 12 / SV_ENCODE_START 4, both relative to the message body).
_CL_ENCODE_START = 12
_SV_ENCODE_START = 4
_RING = 64
_KEYSTREAM_CACHE = 8  # (text, parity) streams kept per netchan: the key texts change rarely


class NetchanMode(enum.Enum):
    NEW71 = "new71"  # checksummed header, no scrambling
    LEGACY = "legacy"  # no checksum, XOR scrambling both ways


@dataclass(frozen=True, slots=True)
class Received:
    """A complete server message: its netchan sequence and the (unscrambled) body."""

    sequence: int
    data: bytes
    dropped: int  # sequence numbers skipped just before this one (lost or discarded packets)


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def netchan_checksum(challenge: int, sequence: int) -> int:
    """`NETCHAN_GENCHECKSUM`: `challenge ^ (sequence * challenge)` in int32 arithmetic."""
    return _s32(challenge ^ (sequence * challenge))


def _ioq3_read_longs(data: bytes, start: int, count: int) -> list[int]:
    """ioq3's lenient `MSG_ReadLong` (bitstream mode) from byte `start`, as the scramblers use it.

    The scramblers read their key longs from the buffer before (un)scrambling it, so a long
    whose Huffman code runs into the scrambled bytes comes out as garbage; peers agree only
    if that garbage is reproduced. An overread yields -1 and the NYT escape ORs 256 into the
    value, exactly like ioq3.
    """
    size = len(data)
    end = size << 3
    padded = bytes(data) + b"\0\0\0"
    bit = start << 3
    readcount = start
    out = []
    for _ in range(count):
        if readcount > size:
            out.append(-1)
            continue
        value = 0
        for i in range(4):
            j = bit >> 3
            entry = DECODE[((padded[j] | (padded[j + 1] << 8) | (padded[j + 2] << 16)) >> (bit & 7)) & 0x7FF]
            if bit + (entry & 15) > end:
                readcount = size + 1
                break
            value |= (entry >> 4) << (8 * i)
            bit += entry & 15
        else:
            readcount = (bit >> 3) + 1
        out.append(-1 if readcount > size else _s32(value))
    return out


def _keystream(chars: bytes, parity: int, count: int) -> bytes:
    """The text's part of the XOR stream: byte i = XOR of `c_j << ((parity + j) & 1)` for j <= i, mod 256.

    The full key after byte i is `key0 ^ stream[i]`: key0 only XORs a constant into every byte,
    so one stream per (text, parity) serves every packet, whatever its key.
    """
    out = bytearray(count)
    n = len(chars)
    k = 0
    for i in range(count):
        k ^= chars[i % n] << ((parity + i) & 1)
        out[i] = k & 0xFF
    return bytes(out)


def _xor(data: bytes, start: int, key: int, text: str | bytes, cache: dict[tuple[str | bytes, int], bytes]) -> bytes:
    """Roll `key` over `text` (`%` and > 127 read as `.`, wrapping at its end) and XOR from `start`.

    `start` is an index into the message body; the headers before it have even lengths, so the
    `i & 1` shift agrees with ioq3's packet-relative index. `cache` keeps the text streams (see
    `_keystream`); the XOR itself is one big-int operation, cheap at 30 bytes and at 16 kB.
    """
    count = len(data) - start
    if count <= 0:
        return data
    slot = (text, start & 1)
    stream = cache.get(slot)
    if stream is None or len(stream) < count:
        if len(cache) >= _KEYSTREAM_CACHE:
            cache.clear()
        # Round up so a message a few bytes longer than the last does not recompute the stream.
        stream = cache[slot] = _keystream(
            sanitize(text) or b"\0", start & 1, max(count, min(2 * len(stream or b""), MAX_MSGLEN), 64)
        )
    body = (
        int.from_bytes(data[start:], "little")
        ^ int.from_bytes(stream[:count], "little")
        ^ int.from_bytes(bytes((key & 0xFF,)) * count, "little")
    )
    return data[:start] + body.to_bytes(count, "little")


def _ring_text(ring: Sequence[str | bytes], index: int) -> str | bytes:
    if len(ring) != _RING:
        raise ValueError(f"legacy netchan needs a {_RING}-slot command ring, got {len(ring)} slots")
    return ring[index & (_RING - 1)]


class Netchan:
    """One client connection's netchan: `transmit` frames messages, `process` validates packets.

    Sequence numbers start at 1 outgoing and 0 incoming (ioq3 `Netchan_Setup`).
    """

    def __init__(self, mode: NetchanMode, challenge: int, qport: int) -> None:
        self.mode = mode
        self.challenge = _s32(challenge)
        self.qport = qport & 0xFFFF
        self.outgoing_sequence = 1
        self.incoming_sequence = 0
        self.drops: Counter[str] = Counter()
        self._frag_sequence = 0
        self._frag_buffer = bytearray()
        self._keystreams: dict[tuple[str | bytes, int], bytes] = {}

    # --- sending ---

    def transmit(
        self, message: bytes, server_commands: Sequence[str | bytes] = (), longs: tuple[int, int, int] | None = None
    ) -> list[bytes]:
        """Datagrams carrying `message` (a `write_client_message` body), one or more fragments.

        LEGACY mode scrambles the body first; `server_commands` is the 64-slot ring of server
        command texts, indexed by the message's 3rd long (its reliable acknowledge). `longs`, if
        given, are the message's first three longs as written (server id, message and command
        acknowledges), which spares reading them back from its Huffman code.
        """
        if len(message) > MAX_MSGLEN:
            raise ValueError(f"message of {len(message)} bytes exceeds MAX_MSGLEN {MAX_MSGLEN}")
        if self.mode is NetchanMode.LEGACY:
            message = self._scramble(message, server_commands, longs)
        seq = self.outgoing_sequence
        header = struct.pack("<iH", _s32(seq), self.qport)
        if self.mode is NetchanMode.NEW71:
            header += struct.pack("<i", netchan_checksum(self.challenge, seq))
        if len(message) < FRAGMENT_SIZE:
            self.outgoing_sequence += 1
            return [header + message]
        frag_header = struct.pack("<i", _s32(seq | FRAGMENT_BIT)) + header[4:]
        packets = []
        start = 0
        while True:
            length = min(FRAGMENT_SIZE, len(message) - start)
            packets.append(frag_header + struct.pack("<hh", start, length) + message[start : start + length])
            start += length
            # A message that is an exact multiple of FRAGMENT_SIZE ends with an empty fragment.
            if start == len(message) and length != FRAGMENT_SIZE:
                break
        self.outgoing_sequence += 1
        return packets

    def transmit_client_message(
        self,
        server_id: int,
        message_seq: int,
        command_seq: int,
        reliable_commands: Sequence[tuple[int, str | bytes]],
        cmds: Sequence[UserCmd],
        checksum_feed: int,
        server_commands: Sequence[str | bytes],
        button_bits: int = 16,
        move_no_delta: bool = False,
    ) -> list[bytes]:
        """`write_client_message` (keyed with `usercmd_key(checksum_feed, message_seq, text)`, text =
        `server_commands[command_seq & 63]`) then `transmit`, the client's per-tick path: one C call
        when the extension is built and the message fits one datagram, the same bytes either way."""
        if len(server_commands) != _RING:
            _ring_text(server_commands, 0)  # raises its ValueError
        text = server_commands[command_seq & (_RING - 1)]
        if NATIVE is not None:
            dgram = NATIVE.client_datagram(
                self.mode is NetchanMode.LEGACY,
                self.challenge,
                self.outgoing_sequence,
                self.qport,
                server_id,
                message_seq,
                command_seq,
                reliable_commands,
                cmds,
                checksum_feed,
                text,
                button_bits,
                move_no_delta,
            )
            if dgram is not None:
                self.outgoing_sequence += 1
                return [dgram]
        message = write_client_message(
            server_id,
            message_seq,
            command_seq,
            reliable_commands,
            cmds,
            usercmd_key(checksum_feed, message_seq, text),
            button_bits,
            move_no_delta,
        )
        return self.transmit(message, server_commands, (_s32(server_id), _s32(message_seq), _s32(command_seq)))

    def _scramble(
        self, message: bytes, server_commands: Sequence[str | bytes], longs: tuple[int, int, int] | None
    ) -> bytes:
        if len(message) <= _CL_ENCODE_START:
            return message
        # ioq3 reads the longs back from its own clean buffer: the values it wrote.
        server_id, message_ack, reliable_ack = longs or _read_longs(message, 0, 3)
        key = self.challenge ^ server_id ^ message_ack
        text = _ring_text(server_commands, reliable_ack)
        if NATIVE is not None:
            out: bytes = NATIVE.xor(message, _CL_ENCODE_START, key, text)
            return out
        return _xor(bytes(message), _CL_ENCODE_START, key, text, self._keystreams)

    # --- receiving ---

    def process(self, packet: bytes, reliable_commands: Sequence[str | bytes] = ()) -> Received | None:
        """A complete server message from one datagram, or None (fragment pending, or dropped).

        LEGACY mode unscrambles the body with `reliable_commands`, the 64-slot ring of our own
        reliable command texts, indexed by the acknowledge read from the still-scrambled body.
        """
        header = 8 if self.mode is NetchanMode.NEW71 else 4
        if len(packet) < header:
            self.drops["truncated header"] += 1
            return None
        raw_seq = struct.unpack_from("<I", packet)[0]
        if raw_seq == 0xFFFFFFFF:
            self.drops["out-of-band packet on the netchan"] += 1
            return None
        fragmented = bool(raw_seq & FRAGMENT_BIT)
        sequence = raw_seq & ~FRAGMENT_BIT
        if self.mode is NetchanMode.NEW71:
            if struct.unpack_from("<i", packet, 4)[0] != netchan_checksum(self.challenge, sequence):
                self.drops["bad checksum"] += 1
                return None
        if sequence <= self.incoming_sequence:
            self.drops["out of order or duplicate"] += 1
            return None
        if fragmented:
            if len(packet) < header + 4:
                self.drops["truncated fragment header"] += 1
                return None
            frag_start, frag_length = struct.unpack_from("<hh", packet, header)
            body_at = header + 4
            if sequence != self._frag_sequence:
                self._frag_sequence = sequence
                self._frag_buffer = bytearray()
            if frag_start != len(self._frag_buffer):
                # Keep what we have: the missing piece may still arrive (ioq3 does the same).
                self.drops["fragment out of order"] += 1
                return None
            if (
                frag_length < 0
                or body_at + frag_length > len(packet)
                or len(self._frag_buffer) + frag_length > MAX_MSGLEN
            ):
                self.drops["illegal fragment length"] += 1
                return None
            self._frag_buffer += packet[body_at : body_at + frag_length]
            if frag_length == FRAGMENT_SIZE:
                return None
            message = bytes(self._frag_buffer)
            self._frag_buffer = bytearray()
        else:
            message = packet[header:]
            if len(message) > MAX_MSGLEN:
                self.drops["oversized message"] += 1
                return None
        dropped = sequence - (self.incoming_sequence + 1)
        if dropped > 0:
            self.drops["lost packets"] += dropped
        self.incoming_sequence = sequence
        if self.mode is NetchanMode.LEGACY:
            message = self._unscramble(message, sequence, reliable_commands)
        return Received(sequence, message, max(dropped, 0))

    def _unscramble(self, message: bytes, sequence: int, reliable_commands: Sequence[str | bytes]) -> bytes:
        # The acknowledge is Huffman-read from the buffer before it is unscrambled (ioq3
        # CL_Netchan_Decode); its code can reach into scrambled bytes, and the server encoded
        # with whatever it last executed, so reproduce the read exactly.
        if NATIVE is not None:
            clear: bytes = NATIVE.legacy_unscramble(message, self.challenge ^ sequence, reliable_commands)
            return clear
        (ack,) = _ioq3_read_longs(message, 0, 1)
        return _xor(
            bytes(message),
            _SV_ENCODE_START,
            self.challenge ^ sequence,
            _ring_text(reliable_commands, ack),
            self._keystreams,
        )


# The C twin when built (native.py); _ioq3_read_longs stays the reference.
_read_longs = NATIVE.read_longs if NATIVE is not None else _ioq3_read_longs
