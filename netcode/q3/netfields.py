"""The two Quake 3 netField tables (ioq3 msg.c `entityStateFields`, `playerStateFields`) as data.

Order is the wire order (by change frequency, not struct order). `bits`: 0 = float (13-bit
integral or 32-bit IEEE on the wire), negative = signed int of that width, positive = unsigned.
"""

from __future__ import annotations

from typing import NamedTuple


class NetField(NamedTuple):
    name: str
    bits: int


GENTITYNUM_BITS = 10
MAX_GENTITIES = 1 << GENTITYNUM_BITS
ENTITYNUM_LIST_END = MAX_GENTITIES - 1  # a packet-entities list ends with this number
FLOAT_INT_BITS = 13
FLOAT_INT_BIAS = 1 << (FLOAT_INT_BITS - 1)
MAX_STATS = MAX_PERSISTANT = MAX_WEAPONS = MAX_POWERUPS = 16

ENTITY_FIELDS: tuple[NetField, ...] = tuple(
    NetField(n, b)
    for n, b in (
        ("pos.trTime", 32),
        ("pos.trBase[0]", 0),
        ("pos.trBase[1]", 0),
        ("pos.trDelta[0]", 0),
        ("pos.trDelta[1]", 0),
        ("pos.trBase[2]", 0),
        ("apos.trBase[1]", 0),
        ("pos.trDelta[2]", 0),
        ("apos.trBase[0]", 0),
        ("event", 10),
        ("angles2[1]", 0),
        ("eType", 8),
        ("torsoAnim", 8),
        ("eventParm", 8),
        ("legsAnim", 8),
        ("groundEntityNum", GENTITYNUM_BITS),
        ("pos.trType", 8),
        ("eFlags", 19),
        ("otherEntityNum", GENTITYNUM_BITS),
        ("weapon", 8),
        ("clientNum", 8),
        ("angles[1]", 0),
        ("pos.trDuration", 32),
        ("apos.trType", 8),
        ("origin[0]", 0),
        ("origin[1]", 0),
        ("origin[2]", 0),
        ("solid", 24),
        ("powerups", MAX_POWERUPS),
        ("modelindex", 8),
        ("otherEntityNum2", GENTITYNUM_BITS),
        ("loopSound", 8),
        ("generic1", 8),
        ("origin2[2]", 0),
        ("origin2[0]", 0),
        ("origin2[1]", 0),
        ("modelindex2", 8),
        ("angles[0]", 0),
        ("time", 32),
        ("apos.trTime", 32),
        ("apos.trDuration", 32),
        ("apos.trBase[2]", 0),
        ("apos.trDelta[0]", 0),
        ("apos.trDelta[1]", 0),
        ("apos.trDelta[2]", 0),
        ("time2", 32),
        ("angles[2]", 0),
        ("angles2[0]", 0),
        ("angles2[2]", 0),
        ("constantLight", 32),
        ("frame", 16),
    )
)

PLAYER_FIELDS: tuple[NetField, ...] = tuple(
    NetField(n, b)
    for n, b in (
        ("commandTime", 32),
        ("origin[0]", 0),
        ("origin[1]", 0),
        ("bobCycle", 8),
        ("velocity[0]", 0),
        ("velocity[1]", 0),
        ("viewangles[1]", 0),
        ("viewangles[0]", 0),
        ("weaponTime", -16),
        ("origin[2]", 0),
        ("velocity[2]", 0),
        ("legsTimer", 8),
        ("pm_time", -16),
        ("eventSequence", 16),
        ("torsoAnim", 8),
        ("movementDir", 4),
        ("events[0]", 8),
        ("legsAnim", 8),
        ("events[1]", 8),
        ("pm_flags", 16),
        ("groundEntityNum", GENTITYNUM_BITS),
        ("weaponstate", 4),
        ("eFlags", 16),
        ("externalEvent", 10),
        ("gravity", 16),
        ("speed", 16),
        ("delta_angles[1]", 16),
        ("externalEventParm", 8),
        ("viewheight", -8),
        ("damageEvent", 8),
        ("damageYaw", 8),
        ("damagePitch", 8),
        ("damageCount", 8),
        ("generic1", 8),
        ("pm_type", 8),
        ("delta_angles[0]", 16),
        ("delta_angles[2]", 16),
        ("torsoTimer", 12),
        ("eventParms[0]", 8),
        ("eventParms[1]", 8),
        ("clientNum", 8),
        ("weapon", 5),
        ("viewangles[2]", 0),
        ("grapplePoint[0]", 0),
        ("grapplePoint[1]", 0),
        ("grapplePoint[2]", 0),
        ("jumppad_ent", GENTITYNUM_BITS),
        ("loopSound", 16),
    )
)

# The tables' widths alone, in field order: what the generic walk (msg.BitReader.read_netfields,
# and the C extension, handed them once) needs of them.
ENTITY_WIDTHS: tuple[int, ...] = tuple(f.bits for f in ENTITY_FIELDS)
PLAYER_WIDTHS: tuple[int, ...] = tuple(f.bits for f in PLAYER_FIELDS)

# playerState arrays sent after the fields: (name, length, element bits: short 16 / long 32).
PLAYER_ARRAYS: tuple[tuple[str, int, int], ...] = (
    ("stats", MAX_STATS, 16),
    ("persistant", MAX_PERSISTANT, 16),
    ("ammo", MAX_WEAPONS, 16),
    ("powerups", MAX_POWERUPS, 32),
)
