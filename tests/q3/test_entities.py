"""`Q3ClientCore.entities`: other players from a scripted server's snapshots (sans-IO), VR heads
as Trinity's game puts them on an entity (eFlags 0x400, angles2 = the 7-bit decode)."""

from __future__ import annotations

import pytest

from headcast.netcode.q3 import entities
from headcast.netcode.q3.delta import EntityState, PlayerState
from headcast.netcode.q3.vrhead import DECODED, EF_VR_PLAYER, Receiver, identify_receiver, pack_head, unpack_head

from q3.test_client_core import make, run

CS_PLAYERS = 544


def in_game(vr_support: bool = True):
    core, server = make(vr=True, vr_support=vr_support)
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.01)
    return core, server


def vr_player(number: int, buttons: int, view=(5.0, 90.0, 29.0), receiver=Receiver.QVM, **extra) -> EntityState:
    """A VR player's entity as ClientEndFrame leaves it: snapped view, head from the decoded bits."""
    pitch, offset = unpack_head(buttons, receiver)
    return EntityState.from_dict(
        {
            "number": number,
            "eType": entities.ET_PLAYER,
            "pos.trBase": (64.0, -32.0, 24.0),
            "apos.trBase": view,
            "eFlags": EF_VR_PLAYER | 0x4,
            "weapon": 5,
            "angles2": (pitch, 3.0, offset),
            **extra,
        }
    )


def test_players_with_vr_heads_names_and_our_own_place():
    core, server = in_game()
    assert core.entities is None  # no snapshot yet
    buttons = pack_head(0, 20.0, 170.0, -170.0)  # offset −20 across ±180
    flat = EntityState.from_dict({"number": 4, "eType": entities.ET_PLAYER, "apos.trBase": (-3.0, 10.0, 0.0)})
    corpse = vr_player(70, buttons)  # CopyToBodyQue: ET_PLAYER beyond the client slots
    item = EntityState.from_dict({"number": 9, "eType": 2})
    server.add_command(f'cs {CS_PLAYERS + 2} "n\\^1Vera\\t\\0\\vr\\1"')
    ps = PlayerState.from_dict({"origin": (1.0, 2.0, 3.0), "viewangles": (0.5, -45.0, 29.998)})
    server.snapshot(0.05, 1000, ps, entities=(vr_player(2, buttons), flat, item, corpse))  # ascending
    ents = core.entities
    assert (ents.server_time, ents.client_num, ents.origin, ents.viewangles) == (
        1000,
        3,
        (1.0, 2.0, 3.0),
        ps.viewangles,
    )
    assert [p.client_num for p in ents.players] == [2, 4]
    vera, other = ents.players
    assert vera.name == "^1Vera" and other.name == ""  # colour codes kept: the raw configstring value
    pitch, offset = unpack_head(buttons)
    assert vera.head == entities.VRHead(
        pitch, offset, 90.0 + offset, 29.0, identify_receiver(pitch) or identify_receiver(offset)
    )
    assert offset == pytest.approx(-20.0, abs=1.42)
    assert vera.angles == (5.0, 90.0, 29.0) and vera.origin == (64.0, -32.0, 24.0) and vera.weapon == 5
    assert other.head is None and other.eflags == 0 and not other.dead
    assert core.entities is ents  # one record per snapshot, however often asked


def test_the_decode_tells_qvm_from_native_when_it_can():
    differ = [p for p in range(128) if DECODED[Receiver.QVM][p] != DECODED[Receiver.NATIVE][p]]
    assert len(differ) == 38
    p = differ[0]
    buttons = 1 << 12 | p << 19  # pitch code 1, yaw offset code p
    for receiver in Receiver:
        es = vr_player(1, buttons, receiver=receiver)
        assert entities.player_entity(es).head.decoded_by is receiver
    same = next(q for q in range(7, 120) if q not in differ)
    head = entities.player_entity(vr_player(1, same << 12 | same << 19)).head
    assert head.decoded_by is None


def test_dead_players_and_a_new_gamestate():
    core, server = in_game(vr_support=False)
    dead = EntityState.from_dict({"number": 1, "eType": entities.ET_PLAYER, "eFlags": 0x1})
    server.snapshot(0.05, 1000, PlayerState(), entities=(dead,))
    (p,) = core.entities.players
    assert p.dead and p.head is None
    server.gamestate(0.1)  # map change: the old snapshot is gone
    assert core.entities is None
    run(core, 0.1, 0.2)
    server.snapshot(0.2, 2000, PlayerState())
    assert core.entities.players == ()
