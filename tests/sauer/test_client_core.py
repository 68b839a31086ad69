"""SauerClientCore without a network: the server's side is scripted here, byte for byte in the
layout of the 2020 Edition's server.cpp (sendservinfo, welcomepacket, sendspawn, the N_CLIENT relay,
the ENet disconnect reasons). The same behaviour against the real server: test_live.py."""

from __future__ import annotations

import pytest

from headcast.netcode import driver
from headcast.netcode.sauer import client as sc, events as se
from headcast.netcode.sauer.client import TRANSITIONS, Incoming, Pose, SauerClientCore, State, Step
from headcast.netcode.sauer.errors import ClientError, IllegalTransition
from headcast.netcode.sauer.messages import build
from headcast.netcode.sauer.npos import decode_npos, encode_npos, make_npos
from headcast.netcode.sauer.protocol import DISC_KICK, DISC_PASSWORD, Msg
from headcast.netcode.sauer.tiger import hash_password

SESSION = 4426286
POSE = Pose(eye=(512.0, 512.0, 526.0), yaw=30.0, pitch=-10.0, roll=5.0, vel=(0.0, 100.0, 0.0), move=1)


def servinfo(cn=0, protocol=260, password=0):
    return build(Msg.N_SERVINFO, cn, protocol, SESSION, password, "test", "")


def spawnstate(cn, ls):
    return build(Msg.N_SPAWNSTATE, cn, ls, 100, 100, 25, 0, 6, 0, 0, 0, 0, 1, 40)


def welcome(cn=0, ls=1, mapname="complex", mode=0):
    return build(
        Msg.N_WELCOME, Msg.N_MAPCHANGE, mapname, mode, 1, Msg.N_TIMEUP, 600, Msg.N_SETTEAM, cn, "good", -1
    ) + spawnstate(cn, ls)


def events(core):
    out = []
    while (ev := core.next_event()) is not None:
        out.append(ev)
    return out


def feed(core, channel, data, t):
    core.receive_datagram(Incoming(channel, data), t)


def step(core, t, positions=True):
    """What the transport does each turn after reading: the timers, then what to send."""
    core.handle_timer(t, positions)
    return core.datagrams_to_send(t)


def connected(core, t=0.0, cn=0, ls=1):
    core.connect(t)
    core.connection_made(t)
    feed(core, 1, servinfo(cn), t)
    feed(core, 1, welcome(cn, ls), t)
    return step(core, t)


def test_handshake_bytes_and_the_spawn_answer():
    core = SauerClientCore("vrA")
    assert core.state is State.IDLE and not core.wants_connection and core.get_timer() is None
    core.connect(0.0)
    assert core.state is State.CONNECTING and core.wants_connection and step(core, 0.0) == []
    core.connection_made(0.01)
    feed(core, 1, servinfo(cn=2), 0.02)
    out = step(core, 0.02)
    # N_CONNECT: docs/protocols/sauerbraten.md#connect
    assert out[0] == sc.Outgoing(1, bytes.fromhex("00 76 72 41 00 00 00 00 00"), True)
    assert out[1].data[0] == Msg.N_PING and not out[1].reliable  # pings from N_SERVINFO on, unreliable
    assert core.state is State.JOINING and core.cn == 2
    feed(core, 1, welcome(cn=2, ls=1), 0.03)
    out = step(core, 0.03)
    assert sc.Outgoing(1, bytes.fromhex("12 01 06"), True) in out  # N_SPAWN lifesequence 1, gun 6
    assert core.state is State.ALIVE and core.lifesequence == 1
    assert [type(e) for e in events(core)] == [se.Welcomed, se.Spawned]


def test_password_is_hashed_with_cn_and_session():
    core = SauerClientCore("vrA", password="secret")
    core.connect(0.0)
    core.connection_made(0.0)
    feed(core, 1, servinfo(cn=3, password=1), 0.0)
    connect = step(core, 0.0)[0].data
    want = build(Msg.N_CONNECT, "vrA", 0, hash_password(3, SESSION, b"secret"), "", "")
    assert connect == want and len(hash_password(3, SESSION, b"secret")) == 48


def test_positions_at_30_hz_carry_cn_and_the_lifesequence_parity():
    core = SauerClientCore("vrA")
    core.pose = POSE
    out = connected(core, cn=5, ls=1)
    recs = [decode_npos(o.data)[0] for o in out if o.channel == 0]
    assert len(recs) == 1 and recs[0].cn == 5 and recs[0].lifebit == 1 and recs[0].move == 1
    sent = []
    t = 0.0
    while t < 1.0:
        t += 1 / 90
        sent += [o for o in step(core, t) if o.channel == 0]
    assert 29 <= len(sent) <= 31 and not any(o.reliable for o in sent)
    core.pose = None  # tracking lost: nothing, not a stale position
    assert [o for o in step(core, t + 0.1) if o.channel == 0] == []


def test_positions_wait_for_the_application_when_asked():
    core = SauerClientCore("vrA")
    core.pose = POSE
    connected(core)
    due = core.position_due_at
    assert [o for o in step(core, due + 0.001, positions=False) if o.channel == 0] == []
    assert [o for o in step(core, due + 0.002) if o.channel == 0] != []


def test_the_tick_alone_is_the_timers_position_and_waits_for_anything_else():
    """take_position (the app's frame-thread send) hands out what handle_timer + datagrams_to_send
    would for a due tick, with the same cadence and counters; None when not due, not alive, or
    other datagrams wait (send_due takes over then)."""
    a, b = SauerClientCore("vrA"), SauerClientCore("vrA")
    for core in (a, b):
        core.pose = POSE
        connected(core, cn=3, ls=1)
    due = a.position_due_at
    assert due is not None and a.take_position(due - 0.001) is None
    t = due
    for i in range(40):
        t += 1 / 90
        a.pose = b.pose = Pose(eye=(512.0 + i, 500.0, 526.0), yaw=i * 9.5, pitch=-10.0, roll=5.0, vel=(0.0, i * 9.0, 0))
        b.handle_timer(t, positions=False)  # what the app's poll leaves: pings and the rest
        a.handle_timer(t, positions=False)
        b.handle_timer(t)
        want = b.datagrams_to_send(t)
        got = a.datagrams_to_send(t)
        tick = a.take_position(t)
        assert got + ([sc.Outgoing(0, tick, False)] if tick else []) == want
        assert a.position_due_at == b.position_due_at and a.last_record == b.last_record
    ca, cb = a.counters, b.counters
    assert (ca.positions_sent, ca.position_bytes, ca.packets_out, ca.bytes_out) == (
        cb.positions_sent,
        cb.position_bytes,
        cb.packets_out,
        cb.bytes_out,
    )
    assert ca.positions_sent > 10
    a.send_message(build(Msg.N_TEXT, "hi"))  # something waits: the tick is send_due's
    assert a.take_position(a.position_due_at + 0.001) is None
    a.datagrams_to_send(t)
    a.pose = None  # tracking lost: the tick passes, nothing is sent
    due = a.position_due_at
    assert a.take_position(due) == b"" and a.position_due_at > due
    a.pose = Pose(eye=(1e9, 0.0, 0.0), yaw=0.0, pitch=0.0, roll=0.0)  # outside the world: counted
    assert a.take_position(a.position_due_at) == b"" and any("position not sent" in k for k in ca.drops)


def test_the_tick_of_bytes_is_take_positions_and_its_record_is_read_back():
    """take_position_data (the app's tick: the bytes built by the sink, npos_bytes) counts, times and
    remembers the tick as take_position does for the same pose; False where take_position gives
    None; the last record is read back from the bytes (equal, and the same object when read again)."""
    a, b = SauerClientCore("vrA"), SauerClientCore("vrA")
    for core in (a, b):
        core.pose = POSE
        connected(core, cn=3, ls=1)
    due, sent = a.position_due_at, a.counters.positions_sent
    assert due is not None and a.take_position_data(due - 0.001, b"x") is None
    assert a.counters.positions_sent == sent and a.position_due_at == due
    t = due
    for i in range(40):
        t += 1 / 90
        b.pose = Pose(eye=(512.0 + i, 500.0, 526.0), yaw=i * 9.5, pitch=-10.0, roll=5.0, vel=(0.0, i * 9.0, 0))
        for core in (a, b):
            core.handle_timer(t, positions=False)
            core.datagrams_to_send(t)
        tick = b.take_position(t)
        data = None if tick is None else encode_npos(b.last_record)
        nxt = a.take_position_data(t, data or b"")
        assert (nxt is not None) == (tick is not None) and (nxt is None or nxt == a.position_due_at)
        assert a.position_due_at == b.position_due_at and a.last_record == b.last_record
        if tick:
            assert data == tick and a.last_record is a.last_record
    ca, cb = a.counters, b.counters
    assert (ca.positions_sent, ca.position_bytes, ca.packets_out, ca.bytes_out) == (
        cb.positions_sent,
        cb.position_bytes,
        cb.packets_out,
        cb.bytes_out,
    )
    assert ca.positions_sent > 10
    a.send_message(build(Msg.N_TEXT, "hi"))  # something waits: the tick is send_due's
    before = a.counters.positions_sent
    assert a.take_position_data(a.position_due_at + 0.001, tick or b"") is None
    assert a.counters.positions_sent == before


def test_death_tryspawn_and_respawn_flip_the_lifebit():
    core = SauerClientCore("vrA")
    core.pose = POSE
    connected(core, cn=0, ls=1)
    feed(core, 1, build(Msg.N_INITCLIENT, 1, "obs", "good", 0), 0.1)
    feed(core, 1, build(Msg.N_DIED, 0, 1, 1, 0), 0.2)
    assert core.state is State.DEAD and any(isinstance(e, se.Killed) and e.by == "obs" for e in events(core))
    assert [o for o in step(core, 0.5) if o.channel == 0] == []  # dead: no positions
    tries = [t for t in (1.1, 1.3, 3.0, 3.3) if build(Msg.N_TRYSPAWN) in [o.data for o in step(core, t)]]
    assert tries == [1.3, 3.3]  # 1 s after the death, then every 2 s while still dead
    feed(core, 1, spawnstate(0, 2), 3.4)
    out = step(core, 3.4)
    assert build(Msg.N_SPAWN, 2, 6) in [o.data for o in out]
    assert [decode_npos(o.data)[0].lifebit for o in out if o.channel == 0] == [0]


def test_map_change_holds_positions_until_the_new_spawn():
    core = SauerClientCore("vrA")
    core.pose = POSE
    connected(core)
    feed(core, 1, build(Msg.N_MAPCHANGE, "dust2", 3, 1), 1.0)
    assert core.state is State.LOADING and core.lifesequence == -1
    assert [o for o in step(core, 1.5) if o.channel == 0] == []
    assert any(isinstance(e, se.MapChanged) and e.map == "dust2" for e in events(core))
    feed(core, 1, spawnstate(0, 2), 1.6)
    assert [decode_npos(o.data)[0].lifebit for o in step(core, 1.6) if o.channel == 0] == [0]
    assert core.mode == 3 and core.mode_name == "instagib"


def test_other_players_records_are_kept_as_the_game_keeps_them():
    core = SauerClientCore("obs")
    connected(core, cn=1)
    feed(core, 1, build(Msg.N_INITCLIENT, 0, "vrA", "good", 0), 0.1)
    rec = lambda bit: make_npos(0, eye=(10.0, 20.0, 30.0), yaw=1, pitch=2, roll=3, lifesequence=bit)  # noqa: E731
    feed(core, 0, encode_npos(rec(1)), 0.2)  # lifesequence 0 (new client): odd parity dropped
    assert core.players[0].record is None and core.players[0].rejected == 1
    relay = build(Msg.N_SPAWN, 3, 100, 100, 0, 0, 6, 0, 0, 0, 0, 1, 40)
    feed(core, 1, build(Msg.N_CLIENT, 0, len(relay)) + relay, 0.3)  # vrA spawned, lifesequence 3
    feed(core, 0, encode_npos(rec(1)) + encode_npos(rec(0)), 0.4)
    p = core.players[0]
    assert p.record == rec(1) and p.records == 1 and p.rejected == 2 and p.lifesequence == 3
    feed(core, 1, build(Msg.N_DIED, 0, 1, 1, 0), 0.5)
    feed(core, 0, encode_npos(rec(1)), 0.6)
    assert p.record is None and p.rejected == 3  # dead: dropped
    feed(core, 1, build(Msg.N_CDIS, 0), 0.7)
    assert 0 not in core.players and any(isinstance(e, se.PlayerLeft) for e in events(core))


def test_a_kick_reconnects_with_backoff_and_the_reason_named():
    core = SauerClientCore("vrA")
    connected(core)
    core.connection_lost(DISC_KICK, 5.0)
    ev = [e for e in events(core) if isinstance(e, se.Disconnected)][0]
    assert ev.text == "server disconnected us: kicked/banned (DISC_KICK)" and ev.was_in_game and ev.retry_in == 1.0
    assert core.state is State.WAITING and not core.wants_connection and core.get_timer() == 6.0
    core.handle_timer(5.9)
    assert core.state is State.WAITING
    waits = []
    for t in (6.0, 20.0, 40.0, 80.0):
        core.handle_timer(t)  # the reconnect falls due
        assert core.state is State.CONNECTING and core.wants_connection
        core.connection_lost(None, t + 1)  # ENet gave up: nothing answered
        waits.append(core.last_disconnect.retry_in)
    assert waits == [2.0, 4.0, 8.0, 15.0] and core.last_disconnect.text.startswith("no answer")
    core.handle_timer(200.0)
    core.connection_made(200.0)
    feed(core, 1, servinfo(), 200.0)
    feed(core, 1, welcome(), 200.0)
    core.connection_lost(DISC_KICK, 201.0)
    assert core.last_disconnect.retry_in == 1.0  # let in since: the shortest wait again


def test_refusals_retrying_cannot_help_stop_the_client():
    core = SauerClientCore("vrA", password="nope")
    core.connect(0.0)
    core.connection_made(0.0)
    feed(core, 1, servinfo(password=1), 0.0)
    core.connection_lost(DISC_PASSWORD, 0.1)
    core.handle_timer(100.0)
    assert core.state is State.CLOSED and not core.wants_connection and core.get_timer() is None
    assert core.last_disconnect.retry_in is None and "invalid password (DISC_PASSWORD)" in core.last_disconnect.text
    other = SauerClientCore("vrA")
    other.connect(0.0)
    other.connection_made(0.0)
    feed(other, 1, servinfo(protocol=259), 0.0)
    assert other.state is State.CLOSED and not other.wants_connection  # the transport drops the peer
    assert other.stop_reason.startswith("the server speaks Sauerbraten protocol 259")


def test_silence_is_reported_then_the_connection_is_dropped_and_made_again():
    core = SauerClientCore("vrA")
    connected(core, t=0.0)
    step(core, 1.9)
    assert events(core)[-1].__class__ is se.Spawned
    step(core, 2.1)
    assert isinstance(events(core)[-1], se.ServerSilent)
    feed(core, 1, build(Msg.N_PONG, 0), 2.5)
    assert events(core)[-1] == se.ServerBack(2.5)
    step(core, 8.6)
    assert not core.wants_connection and core.state is State.WAITING
    assert "went silent" in core.last_disconnect.text


def test_each_phase_has_its_deadline():
    core = SauerClientCore("vrA")
    core.connect(0.0)
    step(core, 6.1)  # ENet never connected
    assert core.last_disconnect.text == "no ENet connection within 6 s" and core.state is State.WAITING
    step(core, 10.0)
    core.connection_made(10.0)
    feed(core, 1, servinfo(), 10.0)
    step(core, 16.1)  # no N_WELCOME
    assert core.last_disconnect.text == "no N_WELCOME within 6 s" and not core.wants_connection


def test_application_messages_only_once_welcomed():
    core = SauerClientCore("vrA")
    with pytest.raises(ClientError, match="disconnect us"):
        core.send_message(build(Msg.N_TEXT, "hi"))
    connected(core)
    core.send_message(build(Msg.N_TEXT, "hi"))
    assert build(Msg.N_TEXT, "hi") in [o.data for o in step(core, 0.1)]


def test_names_the_game_cannot_carry_are_refused():
    with pytest.raises(ClientError, match="1..15"):
        SauerClientCore("x" * 16)
    with pytest.raises(ClientError, match="character set"):
        SauerClientCore("vr€")


def test_the_core_is_a_driver_core_and_counts_as_a_mapping():
    core = SauerClientCore("vrA")
    assert isinstance(core, driver.Core)
    connected(core, cn=2)
    counters = core.counters
    assert counters["packets_in"] == counters.packets_in == 2 and counters["connects"] == 1
    assert dict(counters)["packets_out"] == counters.packets_out > 0 and "drops" in counters
    feed(core, 1, bytes([0x70]), 0.1)  # an unknown message type: dropped, counted
    assert counters["drops"] == sum(counters.drops.values()) == 1


def test_the_state_table_is_the_only_way_the_state_moves():
    """Every state is reachable from IDLE by the table's rows, every state but CLOSED can be
    stopped, CLOSED is final, and a step without a row is refused (the core's own) or ignored
    (the server's)."""
    reached, frontier = {State.IDLE}, [State.IDLE]
    while frontier:
        st = frontier.pop()
        for (frm, _), to in TRANSITIONS.items():
            if frm is st and to not in reached:
                reached.add(to)
                frontier.append(to)
    assert reached == set(State)
    assert all((st, Step.STOP) in TRANSITIONS for st in State if st is not State.CLOSED)
    assert not [k for k in TRANSITIONS if k[0] is State.CLOSED]
    core = SauerClientCore("vrA")
    connected(core)
    with pytest.raises(IllegalTransition, match="connect in state alive"):
        core.connect(1.0)  # one connection at a time
    feed(core, 1, servinfo(cn=9), 1.0)  # N_SERVINFO in game: no row, ignored
    feed(core, 1, build(Msg.N_WELCOME), 1.0)
    assert core.state is State.ALIVE and core.cn == 0
    core.close(2.0)
    assert core.state is State.CLOSED
    core.close(3.0)  # closing twice is harmless
    with pytest.raises(IllegalTransition):
        core.connect(4.0)


def test_a_spectator_stays_one_across_a_map_change_and_comes_back_dead():
    core = SauerClientCore("vrA")
    core.pose = POSE
    connected(core, cn=0)
    feed(core, 1, build(Msg.N_SPECTATOR, 0, 1), 0.1)
    assert core.state is State.SPECTATOR and core.position_due_at is None
    feed(core, 1, build(Msg.N_DIED, 0, 0, 0, 0), 0.2)  # a spectator does not die
    feed(core, 1, build(Msg.N_MAPCHANGE, "dust2", 0, 1), 0.3)
    assert core.state is State.SPECTATOR and core.counters.deaths == 0
    feed(core, 1, build(Msg.N_SPECTATOR, 0, 0), 0.4)
    assert core.state is State.DEAD and core.counters.deaths == 1
    assert build(Msg.N_TRYSPAWN) in [o.data for o in step(core, 1.5)]
