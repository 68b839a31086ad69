"""The other players in a snapshot, as small frozen records with their VR head (docs/protocols/quake3.md#vr-head).

A snapshot carries every entity the server lets us see; a player is an `ET_PLAYER` entity whose
number is a client slot (corpses are ET_PLAYER copies in higher slots). What the server sends of
a player is its game's `BG_PlayerStateToEntityState`: origin and view angles snapped to whole
units / degrees (SnapVector), and on a VR-aware game (Trinity) `eFlags & EF_VR_PLAYER` with the
head in `angles2`: `[PITCH]` the head pitch, `[ROLL]` the head yaw offset from the view (weapon)
yaw, both as the server's game decoded the 7-bit values; the head roll is the view roll.

Your own entity is never in your own snapshot: `SnapshotEntities` carries your playerState's
origin and view beside the others, to place them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import Mapping

from .delta import EntityState, PlayerState, player_field
from .netfields import ENTITY_FIELDS
from .oob import info_parse
from .serverparse import Snapshot
from .vrhead import EF_VR_PLAYER, Receiver, identify_receiver

ET_PLAYER = 1
MAX_CLIENTS = 64
CS_PLAYERS = 544  # bg_public.h: CS_SOUNDS + MAX_SOUNDS (baseq3, missionpack, OpenArena, Trinity)
EF_DEAD = 0x1

Vec3 = tuple[float, float, float]

_INDEX = {f.name: i for i, f in enumerate(ENTITY_FIELDS)}
_ETYPE = itemgetter(_INDEX["eType"])
_FIELDS = itemgetter(
    *(
        _INDEX[n]
        for n in (
            "pos.trBase[0]",
            "pos.trBase[1]",
            "pos.trBase[2]",
            "pos.trDelta[0]",
            "pos.trDelta[1]",
            "pos.trDelta[2]",
            "apos.trBase[0]",
            "apos.trBase[1]",
            "apos.trBase[2]",
            "eFlags",
            "weapon",
            "angles2[0]",
            "angles2[2]",
        )
    )
)
_PS_ORIGIN = player_field("origin")
_PS_VIEW = player_field("viewangles")


@dataclass(frozen=True, slots=True)
class VRHead:
    """A VR player's head as the server relayed it (RELAYED: these are the bytes' values)."""

    pitch: float  # angles2[PITCH], degrees, + looking down
    yaw_offset: float  # angles2[ROLL]: head yaw minus the view (weapon) yaw
    yaw: float  # the absolute head yaw others draw: apos.trBase[YAW] + yaw_offset
    roll: float  # apos.trBase[ROLL]: the view roll, in whole degrees
    decoded_by: Receiver | None  # the game build whose 7-bit decode gives these values, when they tell


@dataclass(frozen=True, slots=True)
class PlayerEntity:
    """Another player in the latest snapshot. Angles in degrees, positions in Quake units."""

    client_num: int
    name: str  # CS_PLAYERS `n` (colour codes kept), "" before its configstring arrives
    origin: Vec3  # pos.trBase: whole units
    velocity: Vec3  # pos.trDelta
    angles: Vec3  # apos.trBase: view (weapon) pitch, yaw, roll in whole degrees
    eflags: int
    weapon: int
    dead: bool  # EF_DEAD
    head: VRHead | None  # set when eFlags has EF_VR_PLAYER (0x400)
    state: EntityState = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SnapshotEntities:
    """The players of one snapshot, and where we are in it (our own playerState)."""

    message_num: int
    server_time: int
    client_num: int  # our slot
    origin: Vec3  # our playerState origin
    viewangles: Vec3  # our playerState view angles (not snapped)
    players: tuple[PlayerEntity, ...]


@lru_cache(maxsize=128)
def _name(configstring: str) -> str:
    return info_parse(configstring).get("n", "")


def player_entity(es: EntityState, name: str = "") -> PlayerEntity:
    """One player's record from its entityState (any eType: callers filter)."""
    x, y, z, vx, vy, vz, pitch, yaw, roll, eflags, weapon, head_pitch, head_offset = _FIELDS(es.values)
    head = None
    if eflags & EF_VR_PLAYER:
        head = VRHead(
            head_pitch,
            head_offset,
            yaw + head_offset,
            roll,
            identify_receiver(head_pitch) or identify_receiver(head_offset),
        )
    return PlayerEntity(
        es.number, name, (x, y, z), (vx, vy, vz), (pitch, yaw, roll), eflags, weapon, bool(eflags & EF_DEAD), head, es
    )


def players(entities: Mapping[int, EntityState], configstrings: Mapping[int, str]) -> tuple[PlayerEntity, ...]:
    """The players among a snapshot's entities, by client number."""
    out = []
    for number in sorted(entities):
        es = entities[number]
        if number < MAX_CLIENTS and _ETYPE(es.values) == ET_PLAYER:
            cs = configstrings.get(CS_PLAYERS + number)
            out.append(player_entity(es, _name(cs) if cs else ""))
    return tuple(out)


def snapshot_entities(
    message_num: int,
    server_time: int,
    client_num: int,
    ps: PlayerState,
    entities: Mapping[int, EntityState],
    configstrings: Mapping[int, str],
) -> SnapshotEntities:
    return SnapshotEntities(
        message_num,
        server_time,
        client_num,
        _PS_ORIGIN(ps.values),
        _PS_VIEW(ps.values),
        players(entities, configstrings),
    )


_CACHE_SIZE = 16
_cache: dict[int, tuple[object, int, SnapshotEntities]] = {}


def of_snapshot(snap: Snapshot, client_num: int, configstrings: Mapping[int, str]) -> SnapshotEntities:
    """`snapshot_entities` of a parsed snapshot, built once per snapshot (a mirror asks every frame,
    snapshots come 20 times a second): a few cores' latest snapshots are kept by identity. Names
    are those of the configstrings when the snapshot was first asked for."""
    key = id(snap)
    hit = _cache.get(key)
    if hit is not None and hit[0] is snap and hit[1] == client_num:
        return hit[2]
    out = snapshot_entities(snap.message_num, snap.server_time, client_num, snap.ps, snap.entities, configstrings)
    if len(_cache) >= _CACHE_SIZE:
        del _cache[next(iter(_cache))]
    _cache[key] = (snap, client_num, out)  # holding `snap` keeps its id from being reused
    return out
