"""entityState / playerState containers and their deltas (ioq3 msg.c `MSG_*DeltaEntity`,
`MSG_*DeltaPlayerstate`), driven by the netField tables in netfields.py.

A state holds its transmitted fields as one flat tuple in table order (floats as the float32
value, ints as ioq3 stores them) and is immutable, so a snapshot can keep states by reference.
Fields are read by table name: `ps["viewangles[1]"]`, `ps["viewangles"]` (a tuple),
`es["pos.trBase"]`, or as attributes where the name has no dot: `ps.commandTime`,
`ps.viewangles`, `ps.stats[7]`, `es.eFlags`, also in snake_case (`ps.command_time`,
`es.e_flags`). `delta_angles` arrive as 0..65535 (ioq3 keeps the
unsigned 16-bit value; interpret as int16).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Mapping

from .errors import MsgError
from .msg import BitReader, BitWriter
from .netfields import (
    ENTITY_FIELDS,
    FLOAT_INT_BIAS,
    FLOAT_INT_BITS,
    GENTITYNUM_BITS,
    MAX_GENTITIES,
    PLAYER_ARRAYS,
    PLAYER_FIELDS,
    NetField,
)

__all__ = [
    "EntityState",
    "PlayerState",
    "NULL_ENTITY",
    "NULL_PLAYER",
    "read_delta_entity",
    "write_delta_entity",
    "read_delta_playerstate",
    "write_delta_playerstate",
    "player_field",
]

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def _f32(x: float) -> float:
    """Round to the nearest float32 value (what the C struct can hold)."""
    value: float = _F32.unpack(_F32.pack(x))[0]
    return value


def _pattern(value: Any, bits: int) -> int:
    """The 32-bit pattern ioq3 compares to decide whether a field changed."""
    if bits == 0:
        pattern: int = _U32.unpack(_F32.pack(value))[0]
        return pattern
    return int(value) & 0xFFFFFFFF


def _lookup(table: tuple[NetField, ...]) -> dict[str, int | tuple[int, ...]]:
    """Field name → index, and array name (`origin`) → the indices of its elements in order."""
    names: dict[str, int | tuple[int, ...]] = {}
    groups: dict[str, dict[int, int]] = {}
    for i, f in enumerate(table):
        names[f.name] = i
        if f.name.endswith("]"):
            base, idx = f.name[:-1].split("[")
            groups.setdefault(base, {})[int(idx)] = i
    for base, members in groups.items():
        names[base] = tuple(members[k] for k in range(len(members)))
    # snake_case aliases for attribute access (`ps.command_time`, `es.e_flags`).
    for name in [n for n in names if "." not in n and "[" not in n]:
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
        names.setdefault(snake, names[name])
    return names


_ENTITY_NAMES = _lookup(ENTITY_FIELDS)
_PLAYER_NAMES = _lookup(PLAYER_FIELDS)
_ENTITY_ZERO_VALUES = tuple(0.0 if f.bits == 0 else 0 for f in ENTITY_FIELDS)
_PLAYER_ZERO_VALUES = tuple(0.0 if f.bits == 0 else 0 for f in PLAYER_FIELDS)
_ARRAY_NAMES = {name: length for name, length, _ in PLAYER_ARRAYS}


def _getters(names: dict[str, int | tuple[int, ...]]) -> dict[str, Any]:
    """Name → index, or an itemgetter building the array's tuple in one C call (every array has
    at least two elements in the netField tables, so itemgetter always returns a tuple)."""
    return {name: ix if isinstance(ix, int) else itemgetter(*ix) for name, ix in names.items()}


_ENTITY_GET = _getters(_ENTITY_NAMES)
_PLAYER_GET = _getters(_PLAYER_NAMES)


def player_field(name: str) -> Any:
    """A C-level reader of one playerState field (or array, e.g. `delta_angles`) from `ps.values`:
    `player_field("command_time")(ps.values)` is `ps.command_time` without the attribute lookup's
    two Python calls, for per-snapshot code."""
    ix = _PLAYER_GET[name]
    if ix.__class__ is int:
        return itemgetter(ix)
    if not isinstance(ix, itemgetter):
        raise KeyError(name)
    return ix


def _get(values: tuple[Any, ...], getters: dict[str, Any], name: str) -> Any:
    ix = getters[name]
    return values[ix] if ix.__class__ is int else ix(values)


def _apply(
    values: list[Any], table: tuple[NetField, ...], names: dict[str, int | tuple[int, ...]], key: str, value: Any
) -> None:
    ix = names[key]
    if isinstance(ix, int):
        values[ix] = _f32(value) if table[ix].bits == 0 else int(value)
        return
    if len(value) != len(ix):
        raise ValueError(f"{key} takes {len(ix)} values, got {len(value)}")
    for j, v in zip(ix, value):
        values[j] = _f32(v) if table[j].bits == 0 else int(v)


@dataclass(frozen=True, slots=True)
class EntityState:
    """`entityState_t`: `number` plus the 51 transmitted fields in ENTITY_FIELDS order."""

    number: int
    values: tuple[Any, ...] = _ENTITY_ZERO_VALUES

    def __getitem__(self, name: str) -> Any:
        if name == "number":
            return self.number
        return _get(self.values, _ENTITY_GET, name)

    def __getattr__(self, name: str) -> Any:
        try:
            return _get(self.values, _ENTITY_GET, name)
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any], base: EntityState | None = None) -> EntityState:
        """A state from `{"number": 5, "pos.trBase": (1, 2, 3), "eType": 1, ...}` over `base` (zero)."""
        values = list(base.values if base is not None else _ENTITY_ZERO_VALUES)
        number = base.number if base is not None else 0
        for key, value in fields.items():
            if key == "number":
                number = int(value)
            else:
                _apply(values, ENTITY_FIELDS, _ENTITY_NAMES, key, value)
        return cls(number, tuple(values))


@dataclass(frozen=True, slots=True)
class PlayerState:
    """`playerState_t`: the 48 transmitted fields in PLAYER_FIELDS order, then the four arrays."""

    values: tuple[Any, ...] = _PLAYER_ZERO_VALUES
    stats: tuple[int, ...] = (0,) * 16
    persistant: tuple[int, ...] = (0,) * 16
    ammo: tuple[int, ...] = (0,) * 16
    powerups: tuple[int, ...] = (0,) * 16

    def __getitem__(self, name: str) -> Any:
        if name.endswith("]"):
            base, idx = name[:-1].split("[")
            if base in _ARRAY_NAMES:
                return getattr(self, base)[int(idx)]
        elif name in _ARRAY_NAMES:
            return getattr(self, name)
        return _get(self.values, _PLAYER_GET, name)

    def __getattr__(self, name: str) -> Any:
        try:
            return _get(self.values, _PLAYER_GET, name)
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any], base: PlayerState | None = None) -> PlayerState:
        """A state from `{"commandTime": 5, "origin": (..), "stats[0]": 100, ...}` over `base` (zero)."""
        base = base if base is not None else NULL_PLAYER
        values = list(base.values)
        arrays = {name: list(getattr(base, name)) for name in _ARRAY_NAMES}
        for key, value in fields.items():
            name, _, idx = key.partition("[")
            if name in arrays:
                if idx:
                    arrays[name][int(idx[:-1])] = int(value)
                else:
                    if len(value) != _ARRAY_NAMES[name]:
                        raise ValueError(f"{name} takes {_ARRAY_NAMES[name]} values")
                    arrays[name] = [int(v) for v in value]
            else:
                _apply(values, PLAYER_FIELDS, _PLAYER_NAMES, key, value)
        return cls(tuple(values), *(tuple(arrays[n]) for n, _, _ in PLAYER_ARRAYS))


NULL_ENTITY = EntityState(0)
NULL_PLAYER = PlayerState()


# --- the generic field walk ---


def _write_float(w: BitWriter, value: float) -> None:
    trunc = int(value) if math.isfinite(value) else None
    if trunc is not None and trunc == value and -FLOAT_INT_BIAS <= trunc < FLOAT_INT_BIAS:
        w.write_bits(0, 1)
        w.write_bits(trunc + FLOAT_INT_BIAS, FLOAT_INT_BITS)
    else:
        w.write_bits(1, 1)
        w.write_bits(_U32.unpack(_F32.pack(value))[0], 32)


def _last_change(table: tuple[NetField, ...], frm: tuple[Any, ...], to: tuple[Any, ...]) -> int:
    lc = 0
    for i, f in enumerate(table):
        if _pattern(frm[i], f.bits) != _pattern(to[i], f.bits):
            lc = i + 1
    return lc


def _write_fields(
    w: BitWriter, table: tuple[NetField, ...], frm: tuple[Any, ...], to: tuple[Any, ...], lc: int, entity: bool
) -> None:
    w.write_byte(lc)
    for i in range(lc):
        bits = table[i].bits
        if _pattern(frm[i], bits) == _pattern(to[i], bits):
            w.write_bits(0, 1)
            continue
        w.write_bits(1, 1)
        value = to[i]
        if bits == 0:
            if entity:
                if value == 0.0:
                    w.write_bits(0, 1)
                    continue
                w.write_bits(1, 1)
            _write_float(w, value)
        elif entity and _pattern(value, bits) == 0:
            w.write_bits(0, 1)
        else:
            if entity:
                w.write_bits(1, 1)
            w.write_bits(value, bits)


# --- entities ---


def read_delta_entity(r: BitReader, base: EntityState, number: int) -> EntityState | None:
    """`MSG_ReadDeltaEntity` after the entity number: None if removed, else the new state."""
    if not 0 <= number < MAX_GENTITIES:
        raise MsgError(f"bad delta entity number {number}")
    values = r.read_entity_delta(base.values)  # the bit walk is the reader's (one C call when built)
    return None if values is None else EntityState(number, values)


def write_delta_entity(w: BitWriter, frm: EntityState | None, to: EntityState | None, force: bool) -> None:
    """`MSG_WriteDeltaEntity`: number, remove bit, delta bit, field changes (to None = remove)."""
    if to is None:
        if frm is not None:
            w.write_bits(frm.number, GENTITYNUM_BITS)
            w.write_bits(1, 1)
        return
    if not 0 <= to.number < MAX_GENTITIES:
        raise ValueError(f"bad entity number {to.number}")
    base = frm.values if frm is not None else _ENTITY_ZERO_VALUES
    lc = _last_change(ENTITY_FIELDS, base, to.values)
    if lc == 0:
        if force:
            w.write_bits(to.number, GENTITYNUM_BITS)
            w.write_bits(0, 1)
            w.write_bits(0, 1)
        return
    w.write_bits(to.number, GENTITYNUM_BITS)
    w.write_bits(0, 1)
    w.write_bits(1, 1)
    _write_fields(w, ENTITY_FIELDS, base, to.values, lc, entity=True)


# --- playerState ---


def read_delta_playerstate(r: BitReader, base: PlayerState | None) -> PlayerState:
    """`MSG_ReadDeltaPlayerstate` against `base` (None = all zero)."""
    base = base if base is not None else NULL_PLAYER
    # the bit walk is the reader's (one C call when built)
    return PlayerState(*r.read_playerstate_delta(base.values, base.stats, base.persistant, base.ammo, base.powerups))


def write_delta_playerstate(w: BitWriter, frm: PlayerState | None, to: PlayerState) -> None:
    """`MSG_WriteDeltaPlayerstate` from `frm` (None = all zero) to `to`."""
    frm = frm if frm is not None else NULL_PLAYER
    lc = _last_change(PLAYER_FIELDS, frm.values, to.values)
    _write_fields(w, PLAYER_FIELDS, frm.values, to.values, lc, entity=False)
    pairs = ((frm.stats, to.stats), (frm.persistant, to.persistant), (frm.ammo, to.ammo), (frm.powerups, to.powerups))
    masks = [sum(1 << i for i, (a, b) in enumerate(zip(old, new)) if a != b) for old, new in pairs]
    if not any(masks):
        w.write_bits(0, 1)
        return
    w.write_bits(1, 1)
    for (_, length, elem_bits), mask, (_, new) in zip(PLAYER_ARRAYS, masks, pairs):
        if not mask:
            w.write_bits(0, 1)
            continue
        w.write_bits(1, 1)
        w.write_bits(mask, length)
        for i in range(length):
            if mask & (1 << i):
                w.write_bits(new[i], elem_bits)
