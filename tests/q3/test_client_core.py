"""Q3ClientCore driven deterministically (injected clock) by a scripted server built from the codecs.

The scripted server speaks protocol 71 on the checksummed netchan and reads our packets with the
server-side reader rules (`read_client_message`, ioq3 `SV_UserMove`), so these tests check what a
server decodes, including 32-bit VR buttons that no packaged server can read.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from headcast.netcode.q3 import huffman, oob, serverparse
from headcast.netcode.q3.client import ClientConfig, Q3ClientCore, State
from headcast.netcode.q3.clientmsg import CLC_MOVE, CLC_MOVE_NO_DELTA, read_client_message
from headcast.netcode.q3.delta import EntityState, PlayerState, write_delta_entity, write_delta_playerstate
from headcast.netcode.q3.events import (
    Connected,
    Disconnected,
    EnteredWorld,
    HeadTracking,
    ServerCommand,
    SnapshotReceived,
)
from headcast.netcode.q3.msg import BitWriter
from headcast.netcode.q3.netchan import netchan_checksum
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.vrhead import angle2short, pack_head, unpack_head

CHALLENGE = 1592594996
FEED = -123456789


class ScriptedServer:
    """The server half of one connection, written from the reference's wire rules."""

    def __init__(self, core: Q3ClientCore, vr_support: bool = False, server_id: int = 4242) -> None:
        self.core = core
        self.vr_support = vr_support
        self.server_id = server_id
        self.seq = 0
        self.commands = [""] * 64  # our (server's) reliable commands to the client
        self.command_seq = 0
        self.client_command_seq = 0  # last client command executed
        self.executed: list[str] = []
        self.base_ps: dict[int, PlayerState] = {}

    def oob(self, text: str, now: float) -> None:
        self.core.receive_datagram(b"\xff\xff\xff\xff" + text.encode(), now)

    def handshake(self, now: float = 0.0) -> None:
        core = self.core
        core.connect(now)
        out = core.datagrams_to_send(now)
        assert len(out) == 1 and out[0].startswith(b"\xff\xff\xff\xffgetchallenge ")
        _, client_challenge, gamename = out[0][4:].decode().split()
        assert gamename == "Quake3Arena"
        self.oob(f"challengeResponse {CHALLENGE} {client_challenge} 71", now)
        core.handle_timer(now)
        (connect,) = core.datagrams_to_send(now)
        text = huffman.decompress(connect)[12:].decode()
        self.userinfo = oob.info_parse(text.strip('"'))
        self.oob(f"connectResponse {CHALLENGE}", now)
        core.handle_timer(now)

    def send(self, body: bytes, now: float) -> None:
        self.seq += 1
        self.core.receive_datagram(struct.pack("<ii", self.seq, netchan_checksum(CHALLENGE, self.seq)) + body, now)

    def body(self, write_ops) -> bytes:
        w = BitWriter()
        w.write_long(self.client_command_seq)
        for i in range(self.resend_from(), self.command_seq):
            w.write_byte(serverparse.SVC_SERVERCOMMAND)
            w.write_long(i + 1)
            w.write_string(self.commands[(i + 1) % 64])
        write_ops(w)
        w.write_byte(serverparse.SVC_EOF)
        return w.to_bytes()

    def resend_from(self) -> int:
        """The first of our commands each message repeats (the last five; ioq3 repeats the unacknowledged)."""
        return self.command_seq - 5 if self.command_seq > 5 else 0

    def add_command(self, text: str) -> None:
        self.command_seq += 1
        self.commands[self.command_seq % 64] = text

    def gamestate(self, now: float, sv_pure: bool = False, mapname: str = "oa_dm1") -> None:
        serverinfo = oob.info_build(
            {"mapname": mapname, "sv_hostname": "scripted", **({"vr_support": "1"} if self.vr_support else {})}
        )
        systeminfo = oob.info_build({"sv_serverid": str(self.server_id), "sv_pure": "1" if sv_pure else "0"})
        self.add_command('print "welcome"')

        def ops(w: BitWriter) -> None:
            w.write_byte(serverparse.SVC_GAMESTATE)
            w.write_long(self.command_seq)
            for index, text in ((0, serverinfo), (1, systeminfo)):
                w.write_byte(serverparse.SVC_CONFIGSTRING)
                w.write_short(index)
                w.write_bigstring(text)
            w.write_byte(serverparse.SVC_BASELINE)
            write_delta_entity(
                w, None, EntityState.from_dict({"number": 7, "eType": 2, "origin": (1.0, 2.0, 3.0)}), True
            )
            w.write_byte(serverparse.SVC_EOF)
            w.write_long(3)  # clientNum
            w.write_long(FEED)  # checksumFeed

        self.send(self.body(ops), now)

    def snapshot(
        self,
        now: float,
        server_time: int,
        ps: PlayerState,
        delta_num: int = 0,
        flags: int = 0,
        entities: tuple[EntityState, ...] = (),
    ) -> None:
        def ops(w: BitWriter) -> None:
            w.write_byte(serverparse.SVC_SNAPSHOT)
            w.write_long(server_time)
            w.write_byte(delta_num)
            w.write_byte(flags)
            w.write_byte(0)  # areamask length
            base = self.base_ps.get(self.seq + 1 - delta_num) if delta_num else None
            write_delta_playerstate(w, base, ps)
            for e in entities:
                write_delta_entity(w, None, e, True)
            w.write_bits(1023, 10)

        self.send(self.body(ops), now)
        self.base_ps[self.seq] = ps

    def read(self, now: float, button_bits: int = 16) -> list:
        """Decode every netchan datagram the client produced, as ioq3's server would."""
        msgs = []
        for d in self.core.datagrams_to_send(now):
            if d.startswith(b"\xff\xff\xff\xff"):
                continue
            seq, qport, chk = struct.unpack_from("<iHi", d)
            assert chk == netchan_checksum(CHALLENGE, seq)
            m = read_client_message(d[10:], FEED, self.commands, button_bits)
            for cseq, text in m.commands:
                if cseq == self.client_command_seq + 1:
                    self.client_command_seq = cseq
                    self.executed.append(text)
            msgs.append(m)
        return msgs


def make(vr: bool = False, vr_support: bool = False, **cfg) -> tuple[Q3ClientCore, ScriptedServer]:
    core = Q3ClientCore(ClientConfig(family=Family.NEW71, vr=vr, qport=31337, **cfg))
    server = ScriptedServer(core, vr_support=vr_support)
    return core, server


def run(core: Q3ClientCore, t0: float, t1: float) -> float:
    """Fire the core's timer until t1 (what the transport does each frame)."""
    now = t0
    while (timer := core.get_timer()) is not None and timer <= t1:
        now = max(now, timer)
        core.handle_timer(now)
    return t1


def events(core: Q3ClientCore) -> list:
    out = []
    while (e := core.next_event()) is not None:
        out.append(e)
    return out


class ScriptedQ3Client:
    """Stands in for netcode's Q3Client (e.g. under app/sinks/q3/link.py's Q3Link): a real Q3ClientCore
    and the scripted server above, a VR-aware one (vr_support 1). No socket: each send_due runs
    the core's timers up to `now`; the test reads what the server got with `self.server`."""

    send_input = None  # Q3Client's native tick from plain numbers: never armed here (the core runs every tick)

    def __init__(self, address=None, config=None, clock=None, **_):
        self.core, self.server = make(vr=True, vr_support=True)
        self.sent_at: float | None = None
        self.now = 0.0
        self.server_time = 1000
        self.socket_errors = 0

    @property
    def state(self):
        return self.core.state

    @property
    def status(self):
        return self.core.status

    def start(self, now: float) -> None:
        self.server.handshake(now)
        self.server.read(now)
        self.server.gamestate(now)

    def set_input(self, *args) -> None:
        self.core.set_input(*args)

    def sync(self) -> None:
        """Q3Client.sync: nothing is left in a pump here."""

    def send_due(self, now: float) -> list:
        run(self.core, self.now, now)
        self.now = self.sent_at = now
        return events(self.core)

    def step(self, now: float) -> list:
        """Q3Client.step: send_due with the in-game tick in C; here the core runs every tick."""
        return self.send_due(now)

    def receive(self, now: float) -> list:
        return []

    def close(self, now: float) -> list:
        return []


def test_handshake_userinfo_and_connect_resend_timing():
    core, server = make(vr=True)
    server.handshake(0.0)
    assert server.userinfo["vr"] == "1" and server.userinfo["protocol"] == "71"
    assert server.userinfo["qport"] == "31337" and server.userinfo["challenge"] == str(CHALLENGE)
    assert len(server.userinfo["cl_guid"]) == 32
    assert core.state is State.CONNECTED
    assert isinstance(events(core)[0], Connected)
    # CA_CONNECTED: one packet right away, then one per second until the gamestate arrives.
    assert len(server.read(0.0)) == 1
    run(core, 0.0, 0.99)
    assert server.read(0.99) == []
    run(core, 0.99, 1.0)
    assert len(server.read(1.0)) == 1


def test_the_attempt_times_out_into_a_jittered_backoff():
    core = Q3ClientCore(ClientConfig(family=Family.NEW71, connect_timeout=7.0, backoff=(0.5, 2.0)))
    core.connect(0.0)
    assert len(core.datagrams_to_send(0.0)) == 1
    run(core, 0.0, 7.0)
    ev = events(core)
    assert isinstance(ev[-1], Disconnected) and ev[-1].will_reconnect
    assert core.state is State.WAITING and 7.0 + 0.5 * 0.75 <= core.get_timer() <= 7.0 + 0.5 * 1.25
    run(core, 7.0, 7.7)
    assert core.state is State.CHALLENGING


@pytest.mark.parametrize(
    "vr,vr_support,roll,sent",
    [
        (True, True, 70.0, 60.0),
        (True, True, -95.5, -60.0),
        (True, True, 42.0, 42.0),
        (True, False, 70.0, 60.0),  # a VR client on a vanilla server: roll as the VR clients send it
        (False, False, 70.0, 70.0),
        (False, True, -95.5, -95.5),
    ],
)  # a flat client's roll is its own
def test_a_vr_clients_roll_is_clamped_to_60_degrees_in_the_library(vr, vr_support, roll, sent):
    core, server = make(vr=vr, vr_support=vr_support)
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.01)
    core.set_input((5.0, 20.0, roll), head=(0.0, 0.0))
    run(core, 0.01, 0.1)
    cmds = [c for m in server.read(0.1, button_bits=32 if vr and vr_support else 16) for c in m.cmds]
    assert cmds and {c.angles[2] for c in cmds} == {angle2short(sent)}  # delta_angles are 0 here
    assert core.wire_input()[2] & 0xFFFF == angle2short(sent)  # the native tick's input (transport.run)


def test_switching_to_vr_clamps_the_roll_already_given():
    core, server = make(vr=False)
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.01)
    core.set_input((0.0, 0.0, 75.0))
    core.set_vr(True)
    assert core.wire_input()[2] == angle2short(60.0)
    core.set_vr(False)
    core.set_input((0.0, 0.0, 75.0))
    assert core.wire_input()[2] == angle2short(75.0)


@pytest.mark.parametrize("vr,vr_support,bits", [(True, True, 32), (True, False, 16), (False, True, 16)])
def test_button_width_gating_and_head_bits(vr, vr_support, bits):
    core, server = make(vr=vr, vr_support=vr_support)
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.01)
    ev = events(core)
    ht = [e for e in ev if isinstance(e, HeadTracking)]
    assert ht[-1].sent is (bits == 32) and core.status.vr_active is (bits == 32)
    core.set_input((10.0, 50.0, 5.0), buttons=1, head=(-30.0, 25.0))
    run(core, 0.01, 0.2)
    msgs = server.read(0.2, button_bits=bits)
    cmds = [c for m in msgs for c in m.cmds]
    assert cmds
    for c in cmds:
        if bits == 32:
            # The server reads 32 bits and the game unpacks the head (7-bit, 1.417° steps).
            assert c.buttons == pack_head(1, -30.0, 25.0, 0.0)
            pitch, yaw_off = unpack_head(c.buttons)
            assert abs(pitch - -30.0) < 1.42 and abs(yaw_off - 25.0) < 1.42
        else:
            assert c.buttons == 1 and unpack_head(c.buttons) is None
    if bits == 32:
        # The same bytes read with the vanilla 16-bit rule do not give these cmds: the width
        # must match the server's, which is why it is gated.
        server2_cmds = []
        core2, server2 = make(vr=vr, vr_support=vr_support)
        server2.handshake(0.0)
        server2.read(0.0)
        server2.gamestate(0.01)
        core2.set_input((10.0, 50.0, 5.0), buttons=1, head=(-30.0, 25.0))
        run(core2, 0.01, 0.2)
        for d in core2.datagrams_to_send(0.2):
            try:
                server2_cmds += read_client_message(d[10:], FEED, server2.commands, 16).cmds
            except ValueError:
                server2_cmds.append(None)
        assert server2_cmds != cmds


def test_cmds_are_relative_to_delta_angles_time_tracks_server_and_move_vs_nodelta():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    intended = (-10.0, 30.0, 20.0)
    core.set_input(intended, forward=127, right=-128)
    run(core, 0.0, 0.05)
    first = server.read(0.05)
    assert all(m.move_op == CLC_MOVE_NO_DELTA for m in first if m.cmds)  # no snapshot yet
    ps = PlayerState.from_dict({"commandTime": 900, "delta_angles": (1820, 40000, 65000)})
    server.snapshot(0.06, server_time=1000, ps=ps, flags=serverparse.SNAPFLAG_NOT_ACTIVE)
    run(core, 0.05, 0.10)
    msgs = server.read(0.10)
    assert msgs[-1].move_op == CLC_MOVE  # the last message carried a valid snapshot
    c = msgs[-1].cmds[-1]
    for i in range(3):
        assert (c.angles[i] + ps.delta_angles[i]) & 0xFFFF == angle2short(intended[i])
    assert c.forwardmove == 127 and c.rightmove == -127
    # serverTime = snapshot time + time since it arrived, strictly increasing, dup cmd included.
    assert abs(c.server_time - (1000 + 40)) <= 17
    times = [c.server_time for m in first + msgs for c in m.cmds]
    assert all(b > a for a, b in zip(times, times[1:]) if a != b)
    assert all(len(m.cmds) <= 2 for m in msgs)
    assert core.state is State.PRIMED
    # A snapshot delta'd from a message we never stored: counted, and the client asks for a full one.
    server.snapshot(0.11, server_time=1050, ps=ps, delta_num=3)
    assert core.status.drops
    run(core, 0.10, 0.13)
    assert server.read(0.13)[-1].move_op == CLC_MOVE_NO_DELTA
    server.snapshot(0.14, server_time=1100, ps=ps)
    ev = events(core)
    assert any(isinstance(e, EnteredWorld) for e in ev) and core.state is State.ACTIVE
    assert [e.server_time for e in ev if isinstance(e, SnapshotReceived)] == [1000, 1100]


def test_delta_snapshot_against_acknowledged_one_carries_entities_over():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    ps1 = PlayerState.from_dict({"commandTime": 100, "origin": (1.0, 2.0, 3.0)})
    ents = (
        EntityState.from_dict({"number": 7, "eType": 2, "origin": (5.0, 6.0, 7.0)}),
        EntityState.from_dict({"number": 9, "eType": 1}),
    )
    server.snapshot(0.01, 1000, ps1, entities=ents)
    ps2 = PlayerState.from_dict({"commandTime": 150}, base=ps1)
    server.snapshot(0.06, 1050, ps2, delta_num=1)  # no entity changes: both copied from the base
    snaps = [e for e in events(core) if isinstance(e, SnapshotReceived)]
    assert [s.num_entities for s in snaps] == [2, 2] and snaps[1].delta
    assert snaps[1].ps.origin == (1.0, 2.0, 3.0) and snaps[1].ps.command_time == 150


def test_reliable_commands_retransmit_until_acked_and_game_commands_are_paced():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    server.snapshot(0.0, 1000, PlayerState())
    core.send_command("say one")
    core.send_command("say two")
    run(core, 0.0, 0.1)
    msgs = server.read(0.1)
    assert all([t for _, t in m.commands] == ["say one"] for m in msgs)
    assert server.executed == ["say one"]
    run(core, 0.1, 1.0)
    assert all([t for _, t in m.commands] == ["say one"] for m in server.read(1.0))  # not acked yet
    server.snapshot(1.0, 2000, PlayerState())  # carries reliable ack 1
    run(core, 1.0, 1.1)
    assert all(m.commands == () for m in server.read(1.1))
    run(core, 1.1, 1.3)
    server.read(1.3)
    assert server.executed == ["say one", "say two"]  # ≥ FLOOD_INTERVAL after the first


def test_server_commands_in_the_gamestate_key_the_usercmds():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.add_command('cs 5 "sv_hostname\\\\VR test"')
    server.gamestate(0.0)  # the ring now ends with commands that came inside the gamestate message
    assert core.status.server_id == 4242
    texts = [e.text for e in events(core) if isinstance(e, ServerCommand)]
    assert texts == ['cs 5 "sv_hostname\\\\VR test"', 'print "welcome"']
    core.set_input((0.0, 90.0, 0.0))
    run(core, 0.0, 0.05)
    cmds = [c for m in server.read(0.05) for c in m.cmds]  # decodes only with the right key
    assert cmds and all(c.angles[1] == angle2short(90.0) for c in cmds)


def test_map_restart_serverid_from_systeminfo_cs_command():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    server.add_command('cs 1 "\\sv_serverid\\5000\\sv_pure\\0"')
    server.add_command("map_restart")
    server.snapshot(0.01, 1000, PlayerState())
    assert core.status.server_id == 5000
    run(core, 0.01, 0.05)
    assert all(m.server_id == 5000 for m in server.read(0.05))


def test_server_disconnect_command_and_oob_disconnect_grace():
    core, server = make(backoff=(1.0, 4.0))
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    server.oob("disconnect", 1.0)  # within 3 s of real traffic: ignored (anti-spoof, as ioq3)
    assert core.state is State.PRIMED
    server.oob("disconnect", 3.5)
    ev = events(core)
    assert isinstance(ev[-1], Disconnected) and ev[-1].will_reconnect and core.state is State.WAITING
    core2, server2 = make()
    server2.handshake(0.0)
    server2.read(0.0)
    server2.gamestate(0.0)
    server2.add_command('disconnect "kicked by admin"')
    server2.snapshot(0.1, 1000, PlayerState())
    ev = events(core2)
    assert isinstance(ev[-1], Disconnected) and "kicked by admin" in ev[-1].reason


def test_silence_times_out_and_reconnects_with_backoff():
    core, server = make(timeout=2.0, backoff=(0.5, 1.0))
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    run(core, 0.0, 2.05)
    assert core.state is State.WAITING
    run(core, 2.05, 2.7)  # 0.5 s, jittered by at most a quarter
    assert core.state is State.CHALLENGING
    run(core, 2.7, 12.7)  # each failed attempt doubles the wait, capped
    discs = [e for e in events(core) if isinstance(e, Disconnected)]
    assert len(discs) >= 2 and all(d.will_reconnect for d in discs)


def test_silent_link_probes_with_getinfo_and_reconnects_when_the_server_forgot_us():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    run(core, 0.0, 1.4)
    assert not [d for d in core.datagrams_to_send(1.4) if d.startswith(b"\xff\xff\xff\xffgetinfo")]
    run(core, 1.4, 1.6)
    probes = [d for d in core.datagrams_to_send(1.6) if d.startswith(b"\xff\xff\xff\xffgetinfo")]
    assert len(probes) == 1
    nonce = probes[0][4:].decode().split()[1]
    server.oob(f"infoResponse\n\\protocol\\68\\challenge\\{nonce}", 1.61)
    ev = events(core)
    assert isinstance(ev[-1], Disconnected) and "restarted" in ev[-1].reason and core.state is State.WAITING


def test_close_sends_disconnect_three_times():
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    core.close(0.1)
    msgs = server.read(0.1)
    assert len(msgs) == 3 and all(m.commands[-1][1] == "disconnect" for m in msgs)
    assert core.state is State.CLOSED and core.get_timer() is None
    ev = events(core)
    assert isinstance(ev[-1], Disconnected) and not ev[-1].will_reconnect


def test_pure_server_gets_cp_from_configured_pk3s(tmp_path):
    import zipfile

    pk3 = tmp_path / "pak0.pk3"
    with zipfile.ZipFile(pk3, "w") as z:
        z.writestr("vm/cgame.qvm", b"c")
        z.writestr("vm/ui.qvm", b"u")
    core, server = make(pure_paks=(tmp_path,))
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0, sv_pure=True)
    run(core, 0.0, 0.02)
    server.read(0.02)
    from headcast.netcode.q3 import pure

    pak = pure.load_pak(pk3)
    assert server.executed == [f"cp 4242 {pak.pure_checksum(FEED)} {pak.pure_checksum(FEED)} @ {FEED}"]
    core2, server2 = make()
    server2.handshake(0.0)
    server2.read(0.0)
    server2.gamestate(0.0, sv_pure=True)
    assert "no pk3" in core2.status.pure_error


@settings(max_examples=60, deadline=None)
@given(junk=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=30), fresh_seq=st.booleans())
def test_garbage_datagrams_are_counted_drops_and_the_link_survives(junk, fresh_seq):
    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    server.snapshot(0.01, 1000, PlayerState.from_dict({"commandTime": 990}))
    before = sum(core.status.drops.values()) + core.status.counters.get("messages_in", 0)
    for i, blob in enumerate(junk):
        if fresh_seq:
            server.send(blob, 0.02)  # a valid netchan header: the garbage reaches the parser
        else:
            core.receive_datagram(blob, 0.02)
    st_ = core.status
    assert st_.state is State.ACTIVE
    # Every datagram is either a counted drop (almost all) or a message that parsed cleanly.
    assert sum(st_.drops.values()) + st_.counters.get("messages_in", 0) == before + len(junk)
    # A real snapshot after the storm is still understood (a full one: the ring may hold garbage-free bases only).
    server.snapshot(0.03, 1100, PlayerState.from_dict({"commandTime": 1090}))
    snaps = [e for e in events(core) if isinstance(e, SnapshotReceived)]
    assert snaps[-1].server_time == 1100 and snaps[-1].ps.command_time == 1090


def test_an_undrained_core_stays_bounded():
    core, server = make(timeout=1000.0)
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    for i in range(1500):  # 1500 snapshots and 60 s of ticks, nobody draining datagrams or events
        server.snapshot(i * 0.04, 1000 + i * 40, PlayerState.from_dict({"commandTime": 1000 + i * 40}))
        run(core, i * 0.04, (i + 1) * 0.04)
    assert core.counters["datagrams_discarded"] > 0
    assert len(core.datagrams_to_send(60.0)) <= 256
    assert len(events(core)) <= 1024 and core.counters["events_lost"] > 0


def test_switching_vr_mid_game_changes_the_width_from_the_packet_carrying_the_userinfo():
    core, server = make(vr=False, vr_support=True)
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.0)
    core.set_input((0.0, 10.0, 0.0), head=(20.0, -10.0))
    run(core, 0.0, 0.05)
    assert all(c.buttons == 0 for m in server.read(0.05, button_bits=16) for c in m.cmds)
    core.set_vr(True)
    assert core.status.vr_active and [e for e in events(core) if isinstance(e, HeadTracking)][-1].sent
    run(core, 0.05, 0.1)
    msgs = server.read(0.1, button_bits=32)  # the server runs the userinfo first, then reads 32 bits
    assert msgs and all(m.commands and m.commands[-1][1].startswith('userinfo "') for m in msgs)
    info = oob.info_parse(msgs[0].commands[-1][1][len('userinfo "') : -1])
    assert info["vr"] == "1" and "challenge" not in info and "qport" not in info
    # Every cmd built after the switch carries head bits (the dup of an older cmd need not).
    assert all(unpack_head(m.cmds[-1].buttons) is not None for m in msgs)


def test_a_config_the_engine_would_mangle_is_refused_up_front():
    with pytest.raises(oob.OobError):
        Q3ClientCore(ClientConfig(name='bad"name'))
