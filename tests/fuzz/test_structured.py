"""Structure-aware fuzzing (issue 27): Quake 3 gamestates and snapshots, and NetSync room
broadcasts, generated field by field with hypothesis and written with the codecs' own writers —
deep inputs a byte mutator rarely reaches. Each is read back (the reader must give what was
written) and fed to the client core in game (it must take it without raising). The servers are
the scripted ones of tests/q3/test_client_core.py; the real ones give the mutational corpus."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.netsync.client import LANE_CONTROL, LANE_ROOM, Incoming, NetSyncClientCore
from headcast.netcode.netsync.codec import decode_room_pose, encode_body, encode_device_id_mapping, encode_room_pose
from headcast.netcode.netsync.events import OwnPose, PeerPose
from headcast.netcode.netsync.model import DeviceMapping, OriginDelta, PoseFrame, Transform
from headcast.netcode.q3 import oob, serverparse
from headcast.netcode.q3.delta import EntityState, PlayerState, player_field, write_delta_entity
from headcast.netcode.q3.msg import BitWriter
from headcast.netcode.q3.netfields import ENTITY_FIELDS, PLAYER_FIELDS

from q3.test_client_core import make, run as run_timers
from support import LONG

pytestmark = pytest.mark.fuzz
EXAMPLES = int(os.environ.get("HEADCAST_FUZZ_EXAMPLES", 5000 if LONG else 40))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _value(bits: int):
    if bits == 0:  # a float: 13-bit integral on the wire, or a full IEEE single
        return st.one_of(
            st.integers(-4096, 4095).map(float), st.floats(width=32, allow_nan=False, allow_infinity=False).map(_f32)
        )
    if bits < 0:
        return st.integers(-(1 << (-bits - 1)), (1 << (-bits - 1)) - 1)
    if bits == 32:  # a whole int: MSG_ReadBits(32) gives ioq3's C int, signed (2**31 reads as -2**31)
        return st.integers(-(1 << 31), (1 << 31) - 1)
    return st.integers(0, (1 << bits) - 1)


def _fields(table, names_only=None):
    chosen = st.lists(
        st.sampled_from([f for f in table if names_only is None or f.name in names_only]), unique=True, max_size=12
    )
    return chosen.flatmap(lambda fs: st.fixed_dictionaries({f.name: _value(f.bits) for f in fs}))


_key = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters='\\;"%'), min_size=1, max_size=12)
_val = st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='\\;"%'), max_size=24)
_info = st.dictionaries(_key, _val, max_size=8)
_ps_fields = [f.name for f in PLAYER_FIELDS if not f.name.startswith(("stats", "persistant", "ammo", "powerups"))]


@st.composite
def gamestates(draw):
    serverinfo = {"mapname": draw(st.sampled_from(["oa_dm1", "q3dm17", "x" * 40])), **draw(_info)}
    systeminfo = {"sv_serverid": str(draw(st.integers(-(2**31), 2**31 - 1))), "sv_pure": "0", **draw(_info)}
    systeminfo["sv_pure"] = "0"  # a pure server wants pk3s: its path is tests/q3/test_hostile_server.py
    extra = draw(
        st.dictionaries(
            st.integers(2, 1023),
            st.text(max_size=60).map(lambda t: t.encode("utf-8", "replace").decode("latin-1")),
            max_size=6,
        )
    )
    baselines = draw(st.dictionaries(st.integers(0, 1022), _fields(ENTITY_FIELDS), max_size=6))
    return serverinfo, systeminfo, extra, baselines


@st.composite
def snapshots(draw):
    ps = draw(_fields(PLAYER_FIELDS, _ps_fields))
    ents = draw(st.dictionaries(st.integers(0, 1022), _fields(ENTITY_FIELDS), max_size=8))
    return ps, ents, draw(st.integers(0, 255)), draw(st.integers(1, 10**6))


def _write_gamestate(server, gs) -> bytes:
    serverinfo, systeminfo, extra, baselines = gs
    server.add_command('print "structured"')

    def ops(w: BitWriter) -> None:
        w.write_byte(serverparse.SVC_GAMESTATE)
        w.write_long(server.command_seq)
        for index, text in sorted({0: oob.info_build(serverinfo), 1: oob.info_build(systeminfo), **extra}.items()):
            w.write_byte(serverparse.SVC_CONFIGSTRING)
            w.write_short(index)
            w.write_bigstring(text)
        for number, fields in sorted(baselines.items()):
            w.write_byte(serverparse.SVC_BASELINE)
            write_delta_entity(w, None, EntityState.from_dict({"number": number, **fields}), True)
        w.write_byte(serverparse.SVC_EOF)
        w.write_long(3)
        w.write_long(-123456789)

    return server.body(ops)


@SETTINGS
@given(gs=gamestates(), snaps=st.lists(snapshots(), min_size=1, max_size=4))
def test_generated_gamestates_and_snapshots_read_back_and_the_core_takes_them(gs, snaps):
    core, server = make(vr=True, vr_support=True)
    server.handshake(0.0)
    server.read(0.0)
    body = _write_gamestate(server, gs)
    parsed = serverparse.parse_server_message(body, server.seq + 1, lambda n: None, {})
    (g,) = [op for op in parsed.ops if isinstance(op, serverparse.Gamestate)]
    assert oob.info_parse(g.configstrings[0]) == {k: v for k, v in oob.info_parse(oob.info_build(gs[0])).items()}
    assert set(g.baselines) == set(gs[3])
    server.send(body, 0.01)
    run_timers(core, 0.01, 0.05)
    assert core.state.value == "primed"
    now, t = 0.05, 1000
    for ps_fields, ents, flags, dt in snaps:
        t += dt
        now += 0.05
        ps = PlayerState.from_dict({"commandTime": t - 50, **ps_fields})
        ents_states = tuple(EntityState.from_dict({"number": n, **f}) for n, f in sorted(ents.items()))
        server.snapshot(now, t, ps, delta_num=0, flags=flags & ~serverparse.SNAPFLAG_NOT_ACTIVE, entities=ents_states)
        run_timers(core, now, now + 0.02)
        server.read(now)
    last = core.status.ps
    assert last is not None
    for name, v in snaps[-1][0].items():  # the core holds exactly what the server wrote last
        assert player_field(name)(last.values) == v, name


_unit = st.floats(-1.0, 1.0, allow_nan=False)
_pos = st.floats(-1000.0, 1000.0, allow_nan=False)


@st.composite
def rooms(draw, protocol):
    n = draw(st.integers(0, 40))
    entries = []
    for i in range(n):
        frame = PoseFrame.build(
            Transform((draw(_pos), draw(_pos), draw(_pos))),
            delta=OriginDelta(draw(_pos), draw(_pos), draw(st.floats(-720, 720))),
        )
        entries.append(
            (
                draw(st.integers(0, 65535)),
                draw(st.floats(0, 1e6)),
                encode_body(draw(st.integers(0, 2**31)), frame, protocol),
            )
        )
    return entries


@SETTINGS
@given(
    data=st.data(),
    protocol=st.integers(3, 8),
    room_id=st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=20),
)
def test_generated_room_broadcasts_read_back_and_the_core_takes_them(data, protocol, room_id):
    entries = data.draw(rooms(protocol))
    payload = encode_room_pose(room_id, 12.5, entries, protocol)
    room = decode_room_pose(payload, protocol)
    assert room.room_id == room_id and [e.client_no for e in room.entries] == [e[0] for e in entries]
    core = NetSyncClientCore(room_id, "me", protocol=protocol)
    mine = entries[0][0] if entries else 1
    mapping = encode_device_id_mapping((0, 17, 5), [DeviceMapping(mine, "me", False)])
    core.receive_datagram(Incoming(LANE_CONTROL, [room_id.encode(), mapping]), 0.0)
    while core.next_event() is not None:
        pass
    core.receive_datagram(Incoming(LANE_ROOM, [room_id.encode(), payload]), 0.1)
    ev = list(iter(core.next_event, None))
    poses = [e for e in ev if isinstance(e, (OwnPose, PeerPose))]
    assert len(poses) == len(entries)
