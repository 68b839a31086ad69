"""The full client packet (CL_WritePacket body + netchan header) against ioq3's output."""

from __future__ import annotations

import json

import pytest

from headcast.netcode.q3.clientmsg import (
    CLC_MOVE,
    CLC_MOVE_NO_DELTA,
    read_client_message,
    usercmd_key,
    write_client_message,
)
from headcast.netcode.q3.msg import BitReader, MsgError
from headcast.netcode.q3.netchan import Netchan, NetchanMode, netchan_checksum
from headcast.netcode.q3.usercmd import UserCmd, hash_key

from support import VECTORS_FILE

VEC = json.loads(VECTORS_FILE.read_text())["client_packet"]


def cmd(d: dict) -> UserCmd:
    return UserCmd(
        d["serverTime"], tuple(d["angles"]), d["buttons"], d["weapon"], d["forwardmove"], d["rightmove"], d["upmove"]
    )


CMDS = [cmd(c) for c in VEC["cmds"]]
RING = [""] * 64
RING[VEC["serverCommandSequence"] & 63] = VEC["last_server_command"]


def test_key_from_vector_inputs() -> None:
    assert hash_key(VEC["last_server_command"]) == VEC["MSG_HashKey"]
    key = usercmd_key(VEC["checksumFeed"], VEC["serverMessageSequence"], VEC["last_server_command"])
    assert key == VEC["key"]


def test_client_payload_matches_ioq3() -> None:
    payload = write_client_message(
        VEC["serverId"],
        VEC["serverMessageSequence"],
        VEC["serverCommandSequence"],
        [],
        CMDS,
        VEC["key"],
        button_bits=16,
        move_no_delta=False,
    )
    assert payload.hex() == VEC["payload"]
    assert len(payload) == (VEC["bits"] + 7) // 8


def test_netchan_header_and_datagram_match_ioq3() -> None:
    ex = VEC["netchan_example"]
    chan = Netchan(NetchanMode.NEW71, ex["challenge"], ex["qport"])
    chan.outgoing_sequence = ex["outgoingSequence"]
    (datagram,) = chan.transmit(bytes.fromhex(VEC["payload"]))
    assert datagram[:10].hex() == ex["header"]
    assert datagram.hex() == ex["datagram"]
    assert chan.outgoing_sequence == ex["outgoingSequence"] + 1
    assert netchan_checksum(1592594996, 42) == int.from_bytes(bytes.fromhex("bcee09cc"), "little", signed=True)


def test_server_reads_back_what_ioq3_reads() -> None:
    rb = VEC["readback"]
    msg = read_client_message(bytes.fromhex(VEC["payload"]), VEC["checksumFeed"], RING)
    assert (msg.server_id, msg.message_ack, msg.reliable_ack) == (rb["serverId"], rb["ack"], rb["cmdack"])
    assert msg.move_op == rb["op"] == CLC_MOVE
    assert list(msg.cmds) == [cmd(c) for c in rb["cmds"]]
    r = BitReader(bytes.fromhex(VEC["payload"]))
    r.read_long(), r.read_long(), r.read_long()
    assert (r.read_byte(), r.read_byte()) == (rb["op"], rb["count"])


def test_reliable_commands_and_32bit_buttons_round_trip() -> None:
    ring = list(RING)
    key = VEC["key"]
    vr_cmds = [
        UserCmd(60000 + 16 * i, (1000, 2000 + i, 300), (90 << 19) | (70 << 12) | 1, 1, 127, -127, 0) for i in range(3)
    ]
    payload = write_client_message(
        987654,
        1234,
        7,
        [(11, 'userinfo "\\name\\x\\vr\\1"'), (12, "say 100% ok\xe9")],
        vr_cmds,
        key,
        button_bits=32,
        move_no_delta=True,
    )
    msg = read_client_message(payload, VEC["checksumFeed"], ring, button_bits=32)
    assert msg.commands == ((11, 'userinfo "\\name\\x\\vr\\1"'), (12, "say 100. ok."))
    assert msg.move_op == CLC_MOVE_NO_DELTA
    assert list(msg.cmds) == vr_cmds
    # No cmds: no move op at all.
    bare = read_client_message(write_client_message(1, 2, 3, [], [], 0), 0, ring)
    assert bare.move_op is None and bare.cmds == ()
    with pytest.raises(ValueError):
        write_client_message(1, 2, 3, [], [UserCmd(i) for i in range(33)], 0)


def test_reader_rejects_garbage() -> None:
    with pytest.raises(MsgError):
        read_client_message(bytes.fromhex(VEC["payload"])[:20], VEC["checksumFeed"], RING)
    bad_op = write_client_message(1, 2, 3, [], [], 0)[:-1]
    with pytest.raises(MsgError):
        read_client_message(bad_op, 0, RING)
