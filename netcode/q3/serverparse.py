"""Server → client message bodies (ioq3 cl_parse.c) into typed results.

`parse_server_message` walks the svc op loop of one reassembled, descrambled netchan payload:
server commands, a gamestate (configstrings, baselines, clientNum, checksumFeed) and snapshots
(playerState and packet entities delta'd against an acknowledged snapshot or the baselines).
It keeps no state: the caller passes the snapshot ring and the baselines and applies the
result in order. Any malformed byte raises ServerParseError (the caller counts a drop).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from . import delta
from .errors import MsgError, ServerParseError as ServerParseError  # re-exported: raised here
from .msg import BitReader

SVC_BAD, SVC_NOP, SVC_GAMESTATE, SVC_CONFIGSTRING, SVC_BASELINE = 0, 1, 2, 3, 4
SVC_SERVERCOMMAND, SVC_DOWNLOAD, SVC_SNAPSHOT, SVC_EOF = 5, 6, 7, 8

MAX_CONFIGSTRINGS = 1024
GENTITYNUM_BITS = 10
MAX_GENTITIES = 1 << GENTITYNUM_BITS
ENTITYNUM_NONE = MAX_GENTITIES - 1
PACKET_BACKUP = 32
MAX_SNAPSHOT_ENTITIES = 256
MAX_AREAMASK = 32
MAX_OPS = 4096  # a 16 kB message cannot hold more ops; bounds a garbage loop

SNAPFLAG_RATE_DELAYED = 1
SNAPFLAG_NOT_ACTIVE = 2
SNAPFLAG_SERVERCOUNT = 4


@dataclass(frozen=True)
class ServerCommandOp:
    seq: int
    text: str


@dataclass(frozen=True)
class Gamestate:
    command_sequence: int
    configstrings: Mapping[int, str]
    baselines: Mapping[int, "delta.EntityState"]
    client_num: int
    checksum_feed: int


@dataclass(frozen=True)
class Snapshot:
    message_num: int
    server_time: int
    delta_num: int  # message number of the base, -1 for a full snapshot
    snap_flags: int
    areamask: bytes
    ps: "delta.PlayerState"
    entities: Mapping[int, "delta.EntityState"] = field(repr=False)
    valid: bool  # False: the base was not in the ring (the data is not usable)


@dataclass(frozen=True)
class ServerMessage:
    reliable_ack: int
    ops: tuple[ServerCommandOp | Gamestate | Snapshot, ...]


SnapshotLookup = Callable[[int], "Snapshot | None"]


def parse_server_message(
    data: bytes, message_num: int, snapshot_at: SnapshotLookup, baselines: Mapping[int, "delta.EntityState"]
) -> ServerMessage:
    """Parse one payload (after the netchan header). `snapshot_at(num)` returns the stored snapshot
    whose message_num is `num`, or None; `baselines` are the current gamestate's."""
    r = BitReader(data)
    try:
        ack = r.read_long()
        ops: list[ServerCommandOp | Gamestate | Snapshot] = []
        for _ in range(MAX_OPS):
            op = r.read_byte()
            if op == SVC_EOF:
                return ServerMessage(ack, tuple(ops))
            if op == SVC_NOP:
                continue
            if op == SVC_SERVERCOMMAND:
                seq = r.read_long()
                ops.append(ServerCommandOp(seq, r.read_string()))
            elif op == SVC_GAMESTATE:
                gs = _gamestate(r)
                baselines = gs.baselines
                ops.append(gs)
            elif op == SVC_SNAPSHOT:
                ops.append(_snapshot(r, message_num, snapshot_at, baselines))
            else:
                # download (never requested) and voip (never enabled) included: we cannot skip them
                raise ServerParseError(f"unexpected svc op {op}")
        raise ServerParseError(f"more than {MAX_OPS} ops")
    except MsgError as exc:
        raise ServerParseError(f"bad bits: {exc}") from exc


def _gamestate(r: BitReader) -> Gamestate:
    seq = r.read_long()
    configstrings: dict[int, str] = {}
    baselines: dict[int, delta.EntityState] = {}
    for _ in range(MAX_OPS):
        op = r.read_byte()
        if op == SVC_EOF:
            break
        if op == SVC_CONFIGSTRING:
            index = r.read_short()
            if not 0 <= index < MAX_CONFIGSTRINGS:
                raise ServerParseError(f"configstring index {index} out of range")
            configstrings[index] = r.read_bigstring()
        elif op == SVC_BASELINE:
            num = r.read_bits(GENTITYNUM_BITS)
            state = delta.read_delta_entity(r, delta.NULL_ENTITY, num)
            if state is not None:
                baselines[num] = state
        else:
            raise ServerParseError(f"bad gamestate op {op}")
    else:
        raise ServerParseError("gamestate without svc_EOF")
    return Gamestate(seq, configstrings, baselines, r.read_long(), r.read_long())


def _snapshot(
    r: BitReader, message_num: int, snapshot_at: SnapshotLookup, baselines: Mapping[int, "delta.EntityState"]
) -> Snapshot:
    server_time = r.read_long()
    delta_back = r.read_byte()
    flags = r.read_byte()
    base: Snapshot | None = None
    if delta_back == 0:
        delta_num, valid = -1, True
    else:
        delta_num = message_num - delta_back
        base = snapshot_at(delta_num)
        valid = base is not None and base.valid and delta_back < PACKET_BACKUP
    n = r.read_byte()
    if n > MAX_AREAMASK:
        raise ServerParseError(f"areamask of {n} bytes (max {MAX_AREAMASK})")
    areamask = r.read_data(n)
    # An invalid base still has to be parsed against something to stay aligned (ioq3 does too);
    # the result is flagged invalid and never stored.
    base_ps = base.ps if base is not None else delta.NULL_PLAYER
    ps = delta.read_delta_playerstate(r, base_ps)
    entities = _packet_entities(r, base.entities if base is not None else {}, baselines)
    return Snapshot(message_num, server_time, delta_num, flags, areamask, ps, entities, valid)


def _packet_entities(
    r: BitReader, old: Mapping[int, "delta.EntityState"], baselines: Mapping[int, "delta.EntityState"]
) -> dict[int, "delta.EntityState"]:
    new: dict[int, delta.EntityState] = {}
    old_nums = sorted(old)
    oi = 0
    last = -1
    while True:
        num = r.read_bits(GENTITYNUM_BITS)
        if num == ENTITYNUM_NONE:
            break
        if num <= last:
            raise ServerParseError(f"entity {num} after {last}: numbers must ascend")
        last = num
        while oi < len(old_nums) and old_nums[oi] < num:
            new[old_nums[oi]] = old[old_nums[oi]]  # unchanged since the base
            oi += 1
        if oi < len(old_nums) and old_nums[oi] == num:
            frm = old[num]
            oi += 1
        else:
            frm = baselines.get(num, delta.NULL_ENTITY)
        state = delta.read_delta_entity(r, frm, num)
        if state is not None:  # None: removed
            new[num] = state
        if len(new) > MAX_SNAPSHOT_ENTITIES:
            raise ServerParseError(f"more than {MAX_SNAPSHOT_ENTITIES} entities in a snapshot")
    for n in old_nums[oi:]:
        new[n] = old[n]
    if len(new) > MAX_SNAPSHOT_ENTITIES:
        raise ServerParseError(f"more than {MAX_SNAPSHOT_ENTITIES} entities in a snapshot")
    return new
