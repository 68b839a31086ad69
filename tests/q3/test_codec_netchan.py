"""Netchan framing, fragments, sequencing, drops and legacy XOR scrambling.

The server side here is written from docs/protocols/quake3.md#netchan directly (ioq3 sv_net_chan.c /
net_chan.c behaviour), independent of the module's helpers.
"""

from __future__ import annotations

import struct

import pytest

from headcast.netcode.q3.clientmsg import read_client_message, write_client_message
from headcast.netcode.q3.msg import BitReader, BitWriter
from headcast.netcode.q3.netchan import FRAGMENT_SIZE, Netchan, NetchanMode, Received
from headcast.netcode.q3.usercmd import UserCmd

from q3_spec import xor_from_spec

CHALLENGE = 1592594996
QPORT = 31337


def chk(seq: int, challenge: int = CHALLENGE) -> int:
    v = (challenge ^ (seq * challenge)) & 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def server_packets(seq: int, body: bytes, mode: NetchanMode) -> list[bytes]:
    """S→C datagrams as Netchan_Transmit frames them (no qport)."""

    def head(s: int) -> bytes:
        h = struct.pack("<I", s)
        if mode is NetchanMode.NEW71:
            h += struct.pack("<i", chk(seq))
        return h

    if len(body) < FRAGMENT_SIZE:
        return [head(seq) + body]
    out, start = [], 0
    while True:
        n = min(FRAGMENT_SIZE, len(body) - start)
        out.append(head(seq | 1 << 31) + struct.pack("<hh", start, n) + body[start : start + n])
        start += n
        if start == len(body) and n != FRAGMENT_SIZE:
            return out


def server_body(reliable_ack: int, filler: int) -> bytes:
    w = BitWriter()
    w.write_long(reliable_ack)
    for i in range(filler):
        w.write_byte((i * 37) & 0xFF)
    w.write_byte(8)  # svc_EOF
    return w.to_bytes()


@pytest.mark.parametrize("mode", list(NetchanMode))
def test_in_sequence_messages_and_drop_accounting(mode: NetchanMode) -> None:
    chan = Netchan(mode, CHALLENGE, QPORT)
    ring = [f"cmd {i}" for i in range(64)]
    body = server_body(0, 40)

    def send(seq: int, b: bytes = body) -> Received | None:
        (pkt,) = server_packets(
            seq, xor_from_spec(b, 4, CHALLENGE ^ seq, ring[0]) if mode is NetchanMode.LEGACY else b, mode
        )
        return chan.process(pkt, ring)

    got = send(1)
    assert got == Received(1, body, 0)
    assert send(1) is None and chan.drops["out of order or duplicate"] == 1
    got = send(4)
    assert got is not None and got.dropped == 2 and chan.drops["lost packets"] == 2
    assert send(3) is None and chan.drops["out of order or duplicate"] == 2
    assert chan.process(b"\x01\x00", ring) is None and chan.drops["truncated header"] == 1
    assert chan.process(b"\xff\xff\xff\xffprint\n", ring) is None
    assert chan.incoming_sequence == 4


def test_bad_checksum_is_dropped_silently() -> None:
    chan = Netchan(NetchanMode.NEW71, CHALLENGE, QPORT)
    pkt = struct.pack("<Ii", 1, chk(1) ^ 1) + server_body(0, 4)
    assert chan.process(pkt) is None
    assert chan.drops["bad checksum"] == 1 and chan.incoming_sequence == 0


@pytest.mark.parametrize("size,pieces", [(FRAGMENT_SIZE - 1, 1), (FRAGMENT_SIZE, 2), (2 * FRAGMENT_SIZE, 3), (5500, 5)])
def test_fragmenting_both_ways(size: int, pieces: int) -> None:
    body = bytes((i * 7) & 0xFF for i in range(size))
    chan = Netchan(NetchanMode.NEW71, CHALLENGE, QPORT)
    out = chan.transmit(body)
    assert len(out) == pieces and chan.outgoing_sequence == 2
    if pieces > 1:
        seq, qport, c, start, n = struct.unpack_from("<IHihh", out[-1])
        assert seq == 1 | 1 << 31 and qport == QPORT and c == chk(1)
        assert start == FRAGMENT_SIZE * (pieces - 1) and n == size - start
    assert b"".join(p[10 + (4 if pieces > 1 else 0) :] for p in out) == body
    assert all(len(p) <= 1400 for p in out)

    rx = Netchan(NetchanMode.NEW71, CHALLENGE, QPORT)
    packets = server_packets(7, body, NetchanMode.NEW71)
    assert len(packets) == pieces
    results = [rx.process(p) for p in packets]
    assert results[:-1] == [None] * (pieces - 1)
    assert results[-1] == Received(7, body, 6)


def test_fragment_gaps_and_bounds() -> None:
    body = bytes(range(256)) * 12  # 3072 bytes: 3 fragments
    packets = server_packets(2, body, NetchanMode.NEW71)
    rx = Netchan(NetchanMode.NEW71, CHALLENGE, QPORT)
    assert rx.process(packets[0]) is None
    assert rx.process(packets[2]) is None and rx.drops["fragment out of order"] == 1
    # The part we had is kept: the missing piece then the last complete the message.
    assert rx.process(packets[1]) is None
    assert rx.process(packets[2]) == Received(2, body, 1)
    # A fragment claiming more bytes than the packet holds.
    bad = packets[0][:8] + struct.pack("<hh", 0, 1200) + b"x" * 10
    rx2 = Netchan(NetchanMode.NEW71, CHALLENGE, QPORT)
    assert rx2.process(bad) is None
    assert rx2.drops["illegal fragment length"] == 1
    # A fragment bit with no room for fragStart/fragLen.
    assert rx2.process(server_packets(3, body, NetchanMode.NEW71)[0][:10]) is None
    assert rx2.drops["truncated fragment header"] == 1
    assert rx2.incoming_sequence == 0


def test_reassembly_is_bounded_by_max_msglen() -> None:
    rx = Netchan(NetchanMode.LEGACY, CHALLENGE, QPORT)
    ring = [""] * 64
    piece = b"\0" * FRAGMENT_SIZE
    start = 0
    for _ in range(13):  # 16900 bytes would exceed 16384
        pkt = struct.pack("<Ihh", 5 | 1 << 31, start, FRAGMENT_SIZE) + piece
        assert rx.process(pkt, ring) is None
        start += FRAGMENT_SIZE
    assert rx.drops["illegal fragment length"] == 1
    assert len(rx._frag_buffer) <= 16384


def test_legacy_client_to_server_scrambling() -> None:
    server_commands = [""] * 64
    server_commands[7] = 'cs 5 "sv_hostname\\\\VR 100%"'
    cmds = [UserCmd(50000 + 8 * i, (64626, 22464 + i, 0), 0, 1) for i in range(3)]
    body = write_client_message(987654, 1234, 7, [(3, "say hi")], cmds, 99)
    chan = Netchan(NetchanMode.LEGACY, CHALLENGE, QPORT)
    chan.outgoing_sequence = 42
    (pkt,) = chan.transmit(body, server_commands)
    assert pkt[:6] == struct.pack("<IH", 42, QPORT)  # no checksum on the legacy netchan
    scrambled = pkt[6:]
    assert scrambled[:12] == body[:12] and scrambled != body
    # The server reads its key from the first two longs and its string from the third.
    assert scrambled == xor_from_spec(body, 12, (CHALLENGE ^ 987654 ^ 1234) & 0xFF, server_commands[7])
    plain = xor_from_spec(scrambled, 12, (CHALLENGE ^ 987654 ^ 1234) & 0xFF, server_commands[7])
    assert read_client_message(plain, 0, server_commands).commands == ((3, "say hi"),)
    # A message of at most 12 bytes is sent as is.
    assert chan.transmit(body[:12], server_commands)[0][6:] == body[:12]
    with pytest.raises(ValueError):
        chan.transmit(body, [""] * 3)


def test_legacy_server_to_client_unscrambling() -> None:
    ring = [f"userinfo {i}" for i in range(64)]
    ring[5] = "say %d \xff"
    for ack, seq in ((5, 9), (69, 10), (0, 11)):
        body = server_body(ack, 30)
        # The server scrambles from message byte 4 with challenge ^ seq and its last executed command.
        scrambled = xor_from_spec(body, 4, (CHALLENGE ^ seq) & 0xFF, ring[ack & 63])
        chan = Netchan(NetchanMode.LEGACY, CHALLENGE, QPORT)
        got = chan.process(server_packets(seq, scrambled, NetchanMode.LEGACY)[0], ring)
        assert got is not None and got.data == body
        assert BitReader(got.data).read_long() == ack


def test_legacy_ack_is_read_from_the_scrambled_buffer() -> None:
    """An ack whose Huffman code runs past byte 4 is read from scrambled bytes, as ioq3 does."""
    ring = [f"c{i}" for i in range(64)]
    seq = 3
    for ack in range(0x10101, 1 << 24, 0x10101):
        w = BitWriter()
        w.write_long(ack)
        if w.bit_length > 32:
            break
    else:
        pytest.fail("no ack with a code longer than 4 bytes")
    body = server_body(ack, 30)
    chan = Netchan(NetchanMode.LEGACY, CHALLENGE, QPORT)
    scrambled = xor_from_spec(body, 4, (CHALLENGE ^ seq) & 0xFF, ring[ack & 63])
    got = chan.process(server_packets(seq, scrambled, NetchanMode.LEGACY)[0], ring)
    assert got is not None
    # Whether the garbled read lands on the right slot decides whether the body survives; the
    # module must agree with a read of the scrambled bytes, not of the clean ones.
    from headcast.netcode.q3.netchan import _ioq3_read_longs

    (seen,) = _ioq3_read_longs(scrambled, 0, 1)
    expect = xor_from_spec(scrambled, 4, (CHALLENGE ^ seq) & 0xFF, ring[seen & 63])
    assert got.data == expect


def test_ioq3_lenient_long_read() -> None:
    from headcast.netcode.q3.netchan import _ioq3_read_longs

    w = BitWriter()
    w.write_long(123456)
    w.write_long(-5)
    data = w.to_bytes()
    assert _ioq3_read_longs(data + b"\0", 0, 2) == [123456, -5]
    # Overread gives -1, and so does every read after it.
    assert _ioq3_read_longs(data[:2], 0, 2) == [-1, -1]
