"""The client→server message body (ioq3 cl_input.c `CL_WritePacket` + `clc_EOF`), and its reader.

The reader is the server's view (sv_client.c `SV_ExecuteClientMessage` / `SV_UserMove`); it lets
tests check what a server decodes from our bytes, and fuzz that path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .errors import MsgError
from .msg import MAX_STRING_CHARS, BitReader, py_huffman_bits, sanitize
from .native import NATIVE
from .usercmd import NULL_CMD, UserCmd, delta_usercmd_fields, hash_key, read_delta_usercmd_key

__all__ = [
    "CLC_BAD",
    "CLC_NOP",
    "CLC_MOVE",
    "CLC_MOVE_NO_DELTA",
    "CLC_CLIENT_COMMAND",
    "CLC_EOF",
    "MAX_PACKET_USERCMDS",
    "MAX_RELIABLE_COMMANDS",
    "usercmd_key",
    "write_client_message",
    "py_write_client_message",
    "ClientMessage",
    "read_client_message",
]

CLC_BAD = 0
CLC_NOP = 1
CLC_MOVE = 2
CLC_MOVE_NO_DELTA = 3
CLC_CLIENT_COMMAND = 4
CLC_EOF = 5

MAX_PACKET_USERCMDS = 32
MAX_RELIABLE_COMMANDS = 64


def usercmd_key(checksum_feed: int, server_message_seq: int, last_server_command: str | bytes) -> int:
    """The usercmd XOR key: `checksumFeed ^ serverMessageSequence ^ MSG_HashKey(cmd, 32)`.

    `last_server_command` is `serverCommands[serverCommandSequence & 63]`, the text of the last
    server command received (the same values as the packet's 2nd and 3rd longs).
    """
    return checksum_feed ^ server_message_seq ^ hash_key(last_server_command, 32)


def py_write_client_message(
    server_id: int,
    server_message_seq: int,
    server_command_seq: int,
    reliable_commands: Sequence[tuple[int, str | bytes]],
    cmds: Sequence[UserCmd],
    key: int,
    button_bits: int = 16,
    move_no_delta: bool = False,
) -> bytes:
    """Build the message body: three longs, unacked reliable commands, usercmds, `clc_EOF`.

    `reliable_commands` are `(seq, text)` for every command not yet acknowledged, oldest first.
    `cmds` (at most 32) are delta'd in order from an all-zero cmd. `move_no_delta` selects
    `clc_moveNoDelta` (ask for a full snapshot) instead of `clc_move`. `write_client_message`
    is its C twin when the extension is built (one call per packet, same bytes and errors).
    """
    if len(cmds) > MAX_PACKET_USERCMDS:
        raise ValueError(f"{len(cmds)} usercmds in one packet (max {MAX_PACKET_USERCMDS})")
    fields = [server_id, 32, server_message_seq, 32, server_command_seq, 32]
    for seq, text in reliable_commands:
        raw = sanitize(text)
        if len(raw) >= MAX_STRING_CHARS:
            # ioq3 would silently send an empty string instead; refuse rather than lose the text.
            raise ValueError(f"string of {len(raw)} chars exceeds the {MAX_STRING_CHARS - 1}-char limit")
        fields += (CLC_CLIENT_COMMAND, 8, seq, 32)
        for c in raw + b"\0":
            fields += (c, 8)
    if cmds:
        fields += (CLC_MOVE_NO_DELTA if move_no_delta else CLC_MOVE, 8, len(cmds), 8)
        prev = NULL_CMD
        for cmd in cmds:
            delta_usercmd_fields(fields, key, prev, cmd, button_bits)
            prev = cmd
    fields += (CLC_EOF, 8)
    return py_huffman_bits(fields)


write_client_message = NATIVE.write_client_message if NATIVE is not None else py_write_client_message


@dataclass(frozen=True, slots=True)
class ClientMessage:
    """What a server reads from one client message."""

    server_id: int
    message_ack: int
    reliable_ack: int
    commands: tuple[tuple[int, str], ...]
    move_op: int | None  # CLC_MOVE, CLC_MOVE_NO_DELTA or None
    cmds: tuple[UserCmd, ...]


def read_client_message(
    data: bytes,
    checksum_feed: int,
    server_commands: Sequence[str | bytes],
    button_bits: int = 16,
) -> ClientMessage:
    """Decode a client message as the server does; `server_commands` is the server's 64-slot ring.

    The key is `checksumFeed ^ messageAcknowledge ^ HashKey(serverCommands[reliableAck & 63])`.
    Raises MsgError on anything a server would reject or could not read.
    """
    r = BitReader(data)
    server_id = r.read_long()
    message_ack = r.read_long()
    reliable_ack = r.read_long()
    commands: list[tuple[int, str]] = []
    move_op: int | None = None
    cmds: list[UserCmd] = []
    while True:
        op = r.read_byte()
        if op == CLC_EOF:
            break
        if op == CLC_CLIENT_COMMAND:
            if len(commands) >= MAX_RELIABLE_COMMANDS:
                raise MsgError(f"more than {MAX_RELIABLE_COMMANDS} client commands in one message")
            seq = r.read_long()
            commands.append((seq, r.read_string()))
        elif op in (CLC_MOVE, CLC_MOVE_NO_DELTA) and move_op is None:
            move_op = op
            count = r.read_byte()
            if count < 1 or count > MAX_PACKET_USERCMDS:
                raise MsgError(f"usercmd count {count} outside 1..{MAX_PACKET_USERCMDS}")
            text = server_commands[reliable_ack & (MAX_RELIABLE_COMMANDS - 1)] if server_commands else ""
            key = checksum_feed ^ message_ack ^ hash_key(text, 32)
            prev = NULL_CMD
            for _ in range(count):
                prev = read_delta_usercmd_key(r, key, prev, button_bits)
                cmds.append(prev)
        else:
            raise MsgError(f"bad client message op {op}")
    return ClientMessage(server_id, message_ack, reliable_ack, tuple(commands), move_op, tuple(cmds))
