"""Entity and playerState deltas against ioq3's MSG_WriteDelta* output, and the generic walk."""

from __future__ import annotations

import json

import pytest

from headcast.netcode.q3.delta import (
    NULL_ENTITY,
    NULL_PLAYER,
    EntityState,
    PlayerState,
    read_delta_entity,
    read_delta_playerstate,
    write_delta_entity,
    write_delta_playerstate,
)
from headcast.netcode.q3.msg import BitReader, BitWriter, MsgError
from headcast.netcode.q3.netfields import ENTITY_FIELDS, PLAYER_FIELDS

from support import VECTORS_FILE

VECTORS = json.loads(VECTORS_FILE.read_text())


def test_tables_match_reference_shape() -> None:
    assert len(ENTITY_FIELDS) == 51 and len(PLAYER_FIELDS) == 48
    assert ENTITY_FIELDS[17] == ("eFlags", 19) and PLAYER_FIELDS[22] == ("eFlags", 16)
    assert [f.name for f in ENTITY_FIELDS][:3] == ["pos.trTime", "pos.trBase[0]", "pos.trBase[1]"]
    assert PLAYER_FIELDS[8] == ("weaponTime", -16) and PLAYER_FIELDS[28] == ("viewheight", -8)
    assert PLAYER_FIELDS[-1] == ("loopSound", 16) and ENTITY_FIELDS[-1] == ("frame", 16)
    assert len({f.name for f in ENTITY_FIELDS}) == 51 and len({f.name for f in PLAYER_FIELDS}) == 48


def test_entity_delta_matches_ioq3() -> None:
    vec = VECTORS["entity_delta"]
    to = EntityState.from_dict(vec["to"])
    w = BitWriter()
    write_delta_entity(w, NULL_ENTITY, to, force=True)
    assert w.bit_length == vec["bits"]
    assert w.to_bytes().hex() == vec["bytes"]

    r = BitReader(bytes.fromhex(vec["bytes"]))
    number = r.read_bits(10)
    got = read_delta_entity(r, NULL_ENTITY, number)
    rb = vec["readback"]
    assert got is not None and got.number == rb["number"]
    assert got["pos.trBase"] == tuple(rb["trBase"])
    assert got["apos.trBase[1]"] == rb["apos1"] and got.event == rb["event"]
    assert got.eType == 1 and got.clientNum == 3 and got["pos.trType"] == 1
    assert got == to
    assert r.bit == vec["bits"]


def test_playerstate_delta_matches_ioq3() -> None:
    vec = VECTORS["playerstate_delta"]
    to = PlayerState.from_dict(vec["to"])
    w = BitWriter()
    write_delta_playerstate(w, None, to)
    assert w.bit_length == vec["bits"]
    assert w.to_bytes().hex() == vec["bytes"]

    r = BitReader(bytes.fromhex(vec["bytes"]))
    got = read_delta_playerstate(r, None)
    rb = vec["readback"]
    assert got.commandTime == rb["commandTime"]
    assert got.origin == tuple(rb["origin"])
    assert got.viewangles[:2] == pytest.approx(rb["viewangles"], abs=1e-4)
    assert got.weaponTime == rb["weaponTime"] and got.viewheight == rb["viewheight"]
    assert got.stats[0] == rb["stats0"] and got["persistant[3]"] == rb["pers3"]
    assert got["events[0]"] == 12 and got.eventSequence == 3
    assert got == to
    assert r.bit == vec["bits"]


def test_entity_remove_nochange_and_float_forms() -> None:
    base = EntityState.from_dict({"number": 9, "origin": (1.5, -4096, 4095), "eFlags": 0x404, "time": -5})
    w = BitWriter()
    write_delta_entity(w, base, None, force=False)  # remove
    write_delta_entity(w, base, base, force=True)  # two bits: no delta
    write_delta_entity(w, base, base, force=False)  # nothing
    to = EntityState.from_dict({"origin": (0.0, 4096.0, -0.5), "eFlags": 0, "angles2": (57.4016, 0, 29.055)}, base)
    write_delta_entity(w, base, to, force=False)
    r = BitReader(w.to_bytes())
    assert r.read_bits(10) == 9 and read_delta_entity(r, base, 9) is None
    assert r.read_bits(10) == 9 and read_delta_entity(r, base, 9) == base
    assert r.read_bits(10) == 9
    got = read_delta_entity(r, base, 9)
    assert got == to and got.origin == (0.0, 4096.0, -0.5) and got.time == -5 and got.eFlags == 0
    assert r.bits_left < 8


def test_playerstate_delta_chain_and_arrays() -> None:
    a = PlayerState.from_dict(
        {
            "commandTime": 100,
            "viewangles": (-9.998, 29.998, 19.995),
            "delta_angles": (65000, 1, 2),
            "pm_time": -3,
            "stats": list(range(16)),
            "powerups[5]": -7,
            "ammo[2]": 200,
        }
    )
    b = PlayerState.from_dict({"commandTime": 150, "stats[7]": -32768, "eFlags": 0x404, "weapon": 31}, a)
    w = BitWriter()
    write_delta_playerstate(w, None, a)
    write_delta_playerstate(w, a, b)
    write_delta_playerstate(w, b, b)
    r = BitReader(w.to_bytes())
    got_a = read_delta_playerstate(r, None)
    got_b = read_delta_playerstate(r, got_a)
    assert (got_a, got_b, read_delta_playerstate(r, got_b)) == (a, b, b)
    assert got_b.stats[7] == -32768 and got_b.powerups[5] == -7 and got_b.delta_angles == (65000, 1, 2)
    assert got_b.pm_time == -3 and got_b["eFlags"] == 0x404


def test_bad_field_counts_raise() -> None:
    w = BitWriter()
    w.write_byte(49)
    with pytest.raises(MsgError, match="field count"):
        read_delta_playerstate(BitReader(w.to_bytes()), None)
    w = BitWriter()
    w.write_bits(0, 1)
    w.write_bits(1, 1)
    w.write_byte(52)
    with pytest.raises(MsgError, match="field count"):
        read_delta_entity(BitReader(w.to_bytes()), NULL_ENTITY, 3)
    with pytest.raises(MsgError):
        read_delta_entity(BitReader(b"\0"), NULL_ENTITY, 1024)
    with pytest.raises(AttributeError):
        NULL_PLAYER.no_such_field
    with pytest.raises(KeyError):
        NULL_ENTITY["nope"]
