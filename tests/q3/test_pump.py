"""The native in-game pump (`_q3native.Pump`) against the pure-Python core it stands in for.

No live server: the pump sends on one end of a connected UDP pair on 127.0.0.1 and the test reads
the other end. The reference is always the pure-Python send path (`py_write_client_message` +
`Netchan.transmit`, with the C datagram switched off for the reference only), driven by a real
`Q3ClientCore` wherever its state can be reached, so every datagram the pump sends must be
byte-identical to what the core's own tick would have sent. The scripted server is
tests/q3/test_client_core.py's (imported, not copied), here behind a UDP socket.

Tests that need the extension are skipped under HEADCAST_PURE_PYTHON=1 (the extension is absent
by request then); the Python-loop fallback test runs in both modes.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import astuple

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.q3 import netchan as netchan_module, serverparse, transport
from headcast.netcode.q3.client import LINKED, MAX_RELIABLE_COMMANDS, ClientConfig, Q3ClientCore, State
from headcast.netcode.q3.clientmsg import CLC_MOVE, CLC_MOVE_NO_DELTA, py_write_client_message, read_client_message
from headcast.netcode.q3.delta import PlayerState, write_delta_playerstate
from headcast.netcode.q3.msg import BitWriter
from headcast.netcode.q3.native import NATIVE, NATIVE_STATUS, PURE_ENV
from headcast.netcode.q3.netchan import Netchan, NetchanMode, netchan_checksum
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.transport import Q3Client
from headcast.netcode.q3.usercmd import UserCmd
from headcast.netcode.q3.vrhead import USER_BUTTON_MASK, unpack_head

from q3.test_client_core import CHALLENGE, FEED, ScriptedServer, make

PURE = os.environ.get(PURE_ENV, "") not in ("", "0")
# Only a run with the extension switched off by request skips; otherwise a missing or stale build
# fails these tests (test_the_extension_is_in_use_here says why).
native = pytest.mark.skipif(PURE, reason=f"{PURE_ENV}=1: the pump is part of the C extension, switched off by request")

# Pump return codes (the C's PUMP_*; transport.RUN_* names the ones run() returns).
TICKED, READABLE, PYTHON, INTERRUPTED, LOG_FULL, NOT_DUE = -1, 1, 2, 3, 4, 5
assert (transport.RUN_READABLE, transport.RUN_PYTHON, transport.RUN_INTERRUPTED, transport.RUN_LOG_FULL) == (
    READABLE,
    PYTHON,
    INTERRUPTED,
    LOG_FULL,
)
I32 = st.integers(-(2**31), 2**31 - 1)
U31 = st.integers(0, 2**31 - 1)


@contextlib.contextmanager
def pure_python_send():
    """The reference send path: Netchan without the C datagram (py_write_client_message, then
    transmit with the Python XOR), whatever NATIVE is."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(netchan_module, "NATIVE", None)
        mp.setattr(netchan_module, "write_client_message", py_write_client_message)
        yield


@contextlib.contextmanager
def udp_pair():
    """(a, b): connected UDP sockets on 127.0.0.1; the pump sends on a, the test reads b (2 s bound)."""
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        a.connect(b.getsockname())
        b.connect(a.getsockname())
        a.setblocking(False)
        b.settimeout(2.0)
        yield a, b
    finally:
        a.close()
        b.close()


def pending(sock: socket.socket) -> list[bytes]:
    """Every datagram already queued on `sock`, without waiting."""
    out = []
    while select.select([sock], [], [], 0)[0]:
        out.append(sock.recv(65536))
    return out


def snap(message_num: int, server_time: int) -> serverparse.Snapshot:
    return serverparse.Snapshot(message_num, server_time, -1, 0, b"", PlayerState(), {}, True)


def in_game_core(
    legacy=False,
    challenge=CHALLENGE,
    qport=31337,
    server_id=4242,
    msg_seq=10,
    cmd_seq=3,
    key_text='print "welcome"',
    reliable=(),
    reliable_ack=0,
    feed=FEED,
    vr_support=False,
    vr=False,
    delta=(0, 0, 0),
    snapshot=None,
    snap_time=0.0,
    cmd_rate=60.0,
    prev=(),
    last_cmd_time=0,
    timer=0.0,
    sequence=1,
    last_packet=None,
    next_probe=0.0,
    timeout=10.0,
) -> Q3ClientCore:
    """A real core put into game state directly (what a handshake + gamestate + snapshots leave)."""
    core = Q3ClientCore(
        ClientConfig(
            family=Family.LEGACY71 if legacy else Family.NEW71, vr=vr, qport=qport, cmd_rate=cmd_rate, timeout=timeout
        )
    )
    nc = Netchan(NetchanMode.LEGACY if legacy else NetchanMode.NEW71, challenge=challenge, qport=qport)
    nc.outgoing_sequence = sequence
    nc.incoming_sequence = msg_seq
    core._netchan = nc
    core._state = State.ACTIVE
    core._entered = True  # ACTIVE: the first active snapshot came (client.TRANSITIONS)
    core._server_id = server_id
    core._server_msg_seq = msg_seq
    core._server_cmd_seq = cmd_seq
    core._server_commands[cmd_seq % MAX_RELIABLE_COMMANDS] = key_text
    core._reliable_ack = reliable_ack
    core._reliable_seq = reliable_ack + len(reliable)
    for i, text in enumerate(reliable):
        core._reliable[(reliable_ack + 1 + i) % MAX_RELIABLE_COMMANDS] = text
    core._checksum_feed = feed
    core._vr_support = vr_support
    core._delta_angles = tuple(delta)
    core._last_snap = snapshot
    core._last_snap_time = snap_time
    core._cmds = deque(prev, maxlen=2)
    core._last_cmd_time = last_cmd_time
    core._timer = timer
    core._last_packet = timer if last_packet is None else last_packet
    core._next_probe = next_probe
    return core


def cmd_tuples(cmds) -> tuple:
    return tuple(astuple(c) for c in cmds)


# ---------------------------------------------------------------------------------- 1. property

TEXTS = st.one_of(
    st.sampled_from(
        [
            "",
            "%",
            "say 100% sure",
            "\x7f\x80\xff%%",
            "tell 2 \u00fc\u00f1",
            "\u65e5\u672c\u8a9e",
            "a\x00b",
            'cs 1 "\\sv_serverid\\5"',
        ]
    ),
    st.text(st.characters(max_codepoint=0x3FF, blacklist_categories=("Cs",)), max_size=40),
)
ANGLE = st.one_of(
    st.integers(0, 65535).map(lambda s: s * 360.0 / 65536.0),
    st.floats(-1000.0, 1000.0, allow_nan=False),
    st.sampled_from([0.0, -0.0, 359.999, -180.0, 720.0]),
)
INPUTS = st.tuples(
    st.tuples(ANGLE, ANGLE, ANGLE),
    st.integers(-200, 200),
    st.integers(-200, 200),
    st.integers(-200, 200),
    st.integers(0, 0xFFFF),
    st.integers(0, 300),
    st.one_of(st.none(), st.tuples(st.floats(-90.0, 90.0), st.floats(-180.0, 180.0))),
)
PREV_CMD = st.builds(
    UserCmd,
    I32,
    st.tuples(*[st.integers(0, 65535)] * 3),
    st.integers(0, 0x03FFFFFF),
    st.integers(0, 255),
    st.integers(-127, 127),
    st.integers(-127, 127),
    st.integers(-127, 127),
)


@st.composite
def game_states(draw) -> dict:
    """A random in-game core state (kwargs of in_game_core) and the times to tick at."""
    has_snap = draw(st.booleans())
    snap_server_time = draw(st.one_of(I32, st.integers(2**31 - 3000, 2**31 - 1)))
    msg_seq = draw(st.integers(1, 2**31 - 1))
    now = draw(st.floats(0.0, 1e6))
    elapsed = draw(st.floats(0.0, 3.0))
    last_cmd_time = draw(
        st.one_of(
            I32,
            st.sampled_from([2**31 - 1, -(2**31), 0]),
            st.integers(-50, 4000).map(lambda d: max(-(2**31), min(2**31 - 1, snap_server_time + d))),
        )
    )
    n_rel = draw(st.integers(0, 3))
    cmd_rate = draw(st.sampled_from([60.0, 20.0, 125.0, 30.5, 90.0]))
    late = draw(st.floats(0.0, 0.9))
    return dict(
        legacy=draw(st.booleans()),
        challenge=draw(I32),
        qport=draw(st.integers(1, 65535)),
        server_id=draw(I32),
        msg_seq=msg_seq,
        cmd_seq=draw(U31),
        key_text=draw(TEXTS),
        reliable=tuple(draw(st.lists(TEXTS, min_size=n_rel, max_size=n_rel))),
        reliable_ack=draw(st.integers(0, 2**31 - 10)),
        feed=draw(I32),
        vr_support=draw(st.booleans()),
        vr=draw(st.booleans()),
        delta=draw(st.tuples(*[st.integers(-32768, 65535)] * 3)),
        snapshot=snap(msg_seq if draw(st.booleans()) else msg_seq - 1, snap_server_time) if has_snap else None,
        snap_time=now - elapsed,
        cmd_rate=cmd_rate,
        prev=tuple(draw(st.lists(PREV_CMD, max_size=2))),
        last_cmd_time=last_cmd_time,
        timer=now - late / cmd_rate,
        sequence=draw(st.integers(1, 2**31 - 8)),
        last_packet=now - draw(st.floats(0.0, 1.4)),
        next_probe=now + 1.0,
    )


@native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    state=game_states(),
    inputs=st.lists(INPUTS, min_size=1, max_size=3),
    lateness=st.lists(st.floats(0.0, 0.99), min_size=3, max_size=3),
)
def test_pump_ticks_are_the_python_cores_ticks_byte_for_byte(state, inputs, lateness):
    core = in_game_core(**state)
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        pump.configure(core.pump_context())
        assert pump.tick(core._timer - 1e-3) == NOT_DUE
        nows, total = [], 0
        for (angles, forward, right, up, buttons, weapon, head), late in zip(inputs, lateness):
            core.set_input(angles, forward, right, up, buttons, weapon, head)
            pump.set_input(*core.wire_input())
            now = core._timer + late / state["cmd_rate"]
            assert pump.tick(now) == TICKED
            got = b.recv(65536)
            with pure_python_send():
                core.handle_timer(now)
            assert core.datagrams_to_send(now) == [got]
            nows.append(now)
            total += len(got)
        assert pending(b) == []
        taken = pump.take()
    n = len(nows)
    (t_nows, t_times, t_cmds, sequence, last_cmd_time, timer, nbytes, errors, sent_at, dgrams, arrivals, lags) = taken
    assert t_nows == tuple(nows)
    assert t_times == tuple(t for _, t in list(core._out_packets)[-n:])
    assert t_cmds == cmd_tuples(list(core._cmds)[-min(n, 2) :])
    assert (sequence, last_cmd_time, timer) == (core._netchan.outgoing_sequence, core._last_cmd_time, core._timer)
    assert (nbytes, errors, dgrams, arrivals, lags) == (total, 0, (), (), ())
    assert isinstance(sent_at, float)
    # The core takes the ticks back (as the transport does) into the state its own ticks left.
    twin = in_game_core(**state)
    twin.absorb_ticks(t_nows, t_times, t_cmds, sequence, last_cmd_time, timer, nbytes)
    assert twin.pump_context() == core.pump_context()
    assert (list(twin._cmds), list(twin._out_packets)) == (list(core._cmds), list(core._out_packets))
    for k in ("usercmds", "packets_out", "bytes_out", "move", "move_nodelta"):
        assert twin.counters[k] == core.counters[k], k


WIRE = st.tuples(
    st.integers(0, 65535),
    st.integers(0, 65535),
    st.integers(0, 65535),
    st.integers(-127, 127),
    st.integers(-127, 127),
    st.integers(-127, 127),
    st.integers(0, 0x03FFFFFF),
    st.integers(0, 255),
)


@native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=game_states(), wire=st.lists(WIRE, min_size=1, max_size=3))
def test_raw_wire_input_gives_the_cmds_of_the_make_cmd_rules(state, wire):
    # Wire values a core's set_input cannot produce (any short, head bits on a non-VR link): the
    # expected cmd is computed here with client._make_cmd's rules and sent through a pure-Python
    # Netchan with the context's mode, challenge, qport and outgoing sequence.
    core = in_game_core(**state)
    ctx = core.pump_context()
    vr = state["vr"] and state["vr_support"]
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        pump.configure(ctx)
        nc = Netchan(NetchanMode.LEGACY if state["legacy"] else NetchanMode.NEW71, state["challenge"], state["qport"])
        nc.outgoing_sequence = state["sequence"]
        ring = list(core._server_commands)
        cmds = list(state["prev"])
        last, now = state["last_cmd_time"], state["timer"]
        for s0, s1, s2, fwd, right, up, buttons, weapon in wire:
            pump.set_input(s0, s1, s2, fwd, right, up, buttons, weapon)
            d0, d1, d2 = state["delta"]
            if state["snapshot"] is not None:
                t = state["snapshot"].server_time + int((now - state["snap_time"]) * 1000.0)
            else:
                t = last + int(1000 / state["cmd_rate"])
            t = max(t, last + 1) & 0xFFFFFFFF
            t = t - (1 << 32) if t & 0x80000000 else t
            cur = UserCmd(
                t,
                ((s0 - d0) & 0xFFFF, (s1 - d1) & 0xFFFF, (s2 - d2) & 0xFFFF),
                buttons if vr else buttons & USER_BUTTON_MASK,
                weapon,
                fwd,
                right,
                up,
            )
            cmds = (cmds + [cur])[-2:]
            with pure_python_send():
                (want,) = nc.transmit_client_message(
                    state["server_id"],
                    state["msg_seq"],
                    state["cmd_seq"],
                    core._reliable_in_flight(),
                    cmds,
                    state["feed"],
                    ring,
                    32 if vr else 16,
                    ctx[10],
                )
            assert pump.tick(now) == TICKED
            assert b.recv(65536) == want
            last = t
            now += 1.0 / state["cmd_rate"]
        taken = pump.take()
    assert taken[2] == cmd_tuples(cmds[-min(len(wire), 2) :]) and taken[3] == nc.outgoing_sequence


@native
def test_the_link_watch_and_a_fragmenting_message_are_the_cores_ticks():
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        # Silent for SILENCE_PROBE (and the probe due): the probe is the core's, the pump sends nothing.
        for last_packet, next_probe, probes in ((98.5, 100.0, True), (98.5 + 1e-9, 99.0, False), (98.0, 100.1, False)):
            core = in_game_core(timer=100.0, last_packet=last_packet, next_probe=next_probe)
            pump.configure(core.pump_context())
            assert pump.tick(100.0) == (PYTHON if probes else TICKED)
            core.handle_timer(100.0)
            assert core.datagrams_to_send(100.0)[0].startswith(b"\xff\xff\xff\xffgetinfo ") is probes
        # Silent for the timeout: the core fails the link.
        for last_packet, fails in ((90.0, True), (90.0 + 1e-9, False)):
            core = in_game_core(timer=100.0, last_packet=last_packet, next_probe=200.0)
            pump.configure(core.pump_context())
            assert pump.tick(100.0) == (PYTHON if fails else TICKED)
            core.handle_timer(100.0)
            assert (core.state is State.WAITING) is fails
        pending(b)
        pump.take()
        # Reliable commands too long for one datagram: the Python netchan fragments them.
        core = in_game_core(timer=100.0, reliable=("say " + "x" * 1000, "say " + "y" * 1000))
        pump.configure(core.pump_context())
        assert pump.tick(100.0) == PYTHON
        assert pending(b) == [] and pump.take()[0] == ()
        with pure_python_send():
            core.handle_timer(100.0)
        assert len(core.datagrams_to_send(100.0)) == 2  # two fragments
        # A full log (64 ticks without take): the 65th tick waits for the hand-over.
        core = in_game_core(timer=100.0)
        pump.configure(core.pump_context())
        for i in range(64):
            assert pump.tick(100.0 + i / 60 + 1e-6) == TICKED
        assert pump.tick(100.0 + 64 / 60 + 1e-6) == LOG_FULL
        assert len(pump.take()[0]) == 64 and len(pending(b)) == 64
        assert pump.tick(100.0 + 64 / 60 + 1e-6) == TICKED


# ---------------------------------------------------------------------------------- 2. a scripted session


class AckingServer(ScriptedServer):
    """ScriptedServer repeating only the server commands the client has not acknowledged, as ioq3
    does (SV_UpdateServerCommandsToClient): so most of its snapshots start with the snapshot op."""

    acked = 0

    def read(self, now: float, button_bits: int = 16) -> list:
        msgs = super().read(now, button_bits)
        self.acked = max([self.acked] + [m.reliable_ack for m in msgs])
        return msgs

    def resend_from(self) -> int:
        return max(self.acked, self.command_seq - 5)


class Wire:
    """The scripted server's client behind UDP: what the server 'delivers' goes to the client's
    socket; what it reads is what reached its own socket. `expected()` says how many datagrams
    the client has sent so far, so a read waits (bounded) for exactly those."""

    def __init__(self, sock: socket.socket, expected) -> None:
        self.sock = sock
        self.expected = expected
        self.seen = 0
        self.log: list[bytes] = []

    def receive_datagram(self, data: bytes, now: float) -> None:
        self.sock.send(data)
        self.delivered = data

    def datagrams_to_send(self, now: float) -> list[bytes]:
        out = []
        while self.seen < self.expected():
            out.append(self.sock.recv(65536))
            self.seen += 1
        assert not select.select([self.sock], [], [], 0)[0], "more datagrams than the client counted"
        self.log += out
        return out


class Rig:
    """A Q3Client (bound to 127.0.0.1) with make()'s core and ScriptedServer, the server on a UDP
    socket. pumped: the in-game ticks go through a Pump driven with step(), as Q3Client.run drives
    it with run() (configure from pump_context, hand-overs through _pump_datagrams)."""

    def __init__(self, pumped: bool, batch: float = 0.0, acking: bool = False, **make_args) -> None:
        self.core, self.server = make(**make_args)
        if acking:
            self.server = AckingServer(self.core, self.server.vr_support)
        self.ssock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.ssock.bind(("127.0.0.1", 0))
        self.client = Q3Client(self.ssock.getsockname(), bind=("127.0.0.1", 0))
        self.client.core = self.core
        self.client.set_input = self.core.set_input
        self.ssock.connect(self.client.local_address)
        self.ssock.settimeout(2.0)
        self.batch = batch
        self.untaken = 0  # datagrams the pump sent that the core has not absorbed yet
        self.ctx = None
        self.pump = None
        self.stepped = ""  # poll(): app/sinks/q3/link.py's calls, by the send call's name
        self.unread = False
        if pumped:
            self.pump = self.client._pump = NATIVE.Pump(self.client.fileno())
            self.pump.set_input(*self.core.wire_input())
            self.client.set_input = self.client._set_input_pumped
        self.wire = Wire(self.ssock, lambda: self.core.counters["packets_out"] + self.untaken)

    def connect(self, now: float) -> None:
        self.server.handshake(now)  # on the core itself: the handshake is not the pump's
        self.server.read(now)
        self.server.core = self.wire
        self.wire.seen = self.core.counters["packets_out"]  # those went to the server directly
        self.handshake_bytes = self.core.counters["bytes_out"]  # random challenge and GUID: lengths vary

    def absorb(self, taken: tuple):
        """Q3Client._pump_datagrams: the core takes the ticks over and reads the datagrams."""
        self.untaken -= len(taken[0])
        return self.client._pump_datagrams(taken)

    def take(self):
        return self.absorb(self.pump.take())

    def command(self, text: str) -> None:
        """Q3Client.send_command: it interrupts run(), which hands the ticks back; the core's turn."""
        self.client.send_command(text)
        if self.pump is not None and self.ctx is not None:
            self.take()
            self.ctx = None

    def poll(self, now: float) -> None:
        """One frame at `now`: Q3Client._poll (Python), or the pump's tick and reads; stepped: as
        app/sinks/q3/link.py drives it (`stepped` names the send call: step, or send_due for the Python
        reference): the socket read at the frame after a tick that sent, then the send call."""
        if self.stepped:
            client, core = self.client, self.core
            if self.unread:
                self.unread = False
                client.receive(now)
            before = core.counters["packets_out"]
            getattr(client, self.stepped)(now)
            self.unread = core.state in LINKED and core.counters["packets_out"] > before
            return
        if self.pump is None:
            self.client._poll(now, read_after=True)
            return
        if self.ctx is None:
            self.ctx = self.core.pump_context()
            if self.ctx is None:
                self.client._poll(now, read_after=True)
                return
            self.pump.configure(self.ctx)
        for _ in range(4):
            r = self.pump.step(now, self.batch)
            if r == NOT_DUE:
                return
            if r in (TICKED, READABLE):
                self.untaken += 1
            if r == READABLE or r == LOG_FULL:
                self.ctx = self.take()
                if self.ctx is not None:
                    self.pump.configure(self.ctx)
                if r == READABLE or self.ctx is None:
                    # A tick the datagrams made due (a gamestate sets the timer to its arrival) is the
                    # next frame's, as in the Python loop, which ticks before it reads.
                    return
            elif r == PYTHON:
                self.take()
                self.ctx = None
                self.client._poll(now, read_after=True)
                return
        raise AssertionError("more than one tick due in a frame")

    def finish(self) -> None:
        if self.pump is not None and self.ctx is not None:
            self.ctx = self.take()

    def close(self) -> None:
        self.client._sock.close()
        self.ssock.close()


def end_state(rig: Rig) -> dict:
    core = rig.core
    counters = {
        k: core.counters[k] for k in ("usercmds", "packets_out", "move", "move_nodelta", "snapshots", "gamestates")
    }
    return dict(
        counters=counters,
        bytes_out=core.counters["bytes_out"] - rig.handshake_bytes,
        sequence=core._netchan.outgoing_sequence,
        last_cmd_time=core._last_cmd_time,
        timer=core._timer,
        cmds=list(core._cmds),
        out_packets=list(core._out_packets),
        state=core.state,
        reliable=(core._reliable_seq, core._reliable_ack),
        server_id=core._server_id,
    )


def frame_input(i: int) -> dict:
    """A different input every frame: view, moves, user buttons, head."""
    return dict(
        angles=((i * 7.3) % 170 - 85, (i * 13.1) % 720 - 360, (i * 3.7) % 120 - 60),
        forward=(i * 37) % 255 - 127,
        right=(i * 53) % 255 - 127,
        up=(i % 3) * 60 - 60,
        buttons=(i * 97) & USER_BUTTON_MASK,
        weapon=i % 11,
        head=((i * 11.0) % 180 - 90, (i * 17.0) % 360 - 180),
    )


def scenario(rig: Rig, frames: list[float]) -> None:
    """~3 s of 60 Hz ticks: gamestate, snapshots every 3rd tick with changing delta_angles, a
    reliable command, a second gamestate (map change)."""
    server = rig.server
    rig.connect(0.0)
    plan = {20: "gamestate", 100: "command", 260: "mapchange"}
    n_snap = 0
    last_snap_at = None
    gs_done = False
    for i, now in enumerate(frames):
        rig.client.set_input(**frame_input(i))
        rig.poll(now)
        what = plan.get(i)
        if what == "gamestate":
            server.gamestate(now)
            gs_done, last_snap_at, after_gs = True, now, True
        elif what == "command":
            rig.command("say hello 100% \u00fc")
        elif what == "mapchange":
            server.read(now, button_bits=32)
            server.server_id = 5151
            server.gamestate(now, mapname="oa_dm2")
            last_snap_at, after_gs = now, True
        if gs_done and now - last_snap_at >= 3 / 60 - 1e-9:
            server.read(now, button_bits=32)
            n_snap += 1
            ps = PlayerState.from_dict(
                {
                    "commandTime": 900 + 50 * n_snap,
                    "delta_angles": ((n_snap * 1000) & 0xFFFF, (n_snap * 7919) & 0xFFFF, 0),
                }
            )
            server.snapshot(
                now,
                1000 + 50 * n_snap,
                ps,
                delta_num=0 if after_gs or n_snap % 4 == 0 else 1,
                flags=serverparse.SNAPFLAG_NOT_ACTIVE if after_gs else 0,
            )
            last_snap_at, after_gs = now, False
    rig.finish()
    server.read(frames[-1], button_bits=32)


@native
def test_a_scripted_session_through_the_pump_equals_the_python_loop():
    frames, now, k = [], 0.004, 0
    while now < 3.0:  # irregular frames, each <= one tick apart (so no tick needs catching up)
        frames.append(now)
        k += 1
        now += 0.002 + (k * 7919 % 13) * 0.001
    a = Rig(pumped=False, vr=True, vr_support=True)
    b = Rig(pumped=True, vr=True, vr_support=True)
    try:
        with pure_python_send():
            scenario(a, frames)
            scenario(b, frames)
        msgs = [m for m in (read_client_message(d[10:], FEED, a.server.commands, 32) for d in a.wire.log) if m.cmds]
        assert len(msgs) > 150 and {m.move_op for m in msgs} == {CLC_MOVE, CLC_MOVE_NO_DELTA}
        assert sum(unpack_head(m.cmds[-1].buttons) is not None for m in msgs) > 150  # 32-bit buttons, head bits
        assert len(a.wire.log) == len(b.wire.log)
        for i, (x, y) in enumerate(zip(a.wire.log, b.wire.log)):
            assert x == y, f"datagram {i} differs"
        assert end_state(a) == end_state(b)
        assert a.core.counters["gamestates"] == 2 and a.core.state is State.ACTIVE and a.core._server_id == 5151
        assert a.server.executed == b.server.executed == ["say hello 100. ."]  # % and > 127 sent as .
        # The pump did the in-game ticks, Python the rest (handshake, commands waiting their turn).
        assert a.client.native_ticks == 0 and b.client.native_ticks > 120
        # The reliable command rode in the pump's packets too (more packets carried it than the
        # core sent itself) until the server acknowledged it.
        carried = [
            m for m in (read_client_message(d[10:], FEED, b.server.commands, 32) for d in b.wire.log) if m.commands
        ]
        assert len(carried) > b.core.counters["usercmds"] - b.client.native_ticks
    finally:
        a.close()
        b.close()


@native
def test_a_scripted_session_stepped_by_the_frame_loop_equals_the_python_loop():
    """Q3Client.step (app/sinks/q3/link.py's path: the pump stepped on the frame's thread, what it read
    handed to the core by receive) sends what the Python loop sends, byte for byte."""
    frames, now, k = [], 0.004, 0
    while now < 3.0:
        frames.append(now)
        k += 1
        now += 0.002 + (k * 7919 % 13) * 0.001
    a = Rig(pumped=False, vr=True, vr_support=True)
    b = Rig(pumped=False, vr=True, vr_support=True)
    a.stepped, b.stepped = "send_due", "step"
    try:
        with pure_python_send():
            scenario(a, frames)
            scenario(b, frames)
        assert len(a.wire.log) == len(b.wire.log) > 150
        for i, (x, y) in enumerate(zip(a.wire.log, b.wire.log)):
            assert x == y, f"datagram {i} differs"
        assert end_state(a) == end_state(b)
        assert a.server.executed == b.server.executed == ["say hello 100. ."]
        assert a.client.native_ticks == 0 and b.client.native_ticks > 120
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------------------------- 3. early acknowledgement


def in_game_rig(batch: float, now: float = 0.0, pumped: bool = True) -> Rig:
    """A rig in game: handshake, gamestate and one snapshot read by the core; pumped: the pump
    configured (else the Python tick, Q3Client._poll)."""
    rig = Rig(pumped=pumped, batch=batch, acking=True)
    rig.connect(now)
    rig.server.core = rig.core
    rig.server.gamestate(now)
    rig.server.snapshot(now, 1000, PlayerState.from_dict({"commandTime": 990}))
    rig.core.datagrams_to_send(now)
    rig.server.core = rig.wire
    rig.wire.seen = rig.core.counters["packets_out"]  # those went to the server directly
    if pumped:
        rig.ctx = rig.core.pump_context()
        rig.pump.configure(rig.ctx)
    return rig


def sent(rig: Rig) -> list:
    """What the server read since the last call (button bits 16: make()'s default link)."""
    return rig.server.read(0.0)


def step(rig: Rig, now: float) -> int:
    r = rig.pump.step(now, rig.batch)
    if r in (TICKED, READABLE):
        rig.untaken += 1
    return r


def tk(k: int, t: float = 1.0) -> float:
    """The k-th tick after t (a hair late, so float sums on the pump's grid never make it not due)."""
    return t + k / 60 + 1e-6


@native
def test_a_queued_server_datagram_is_acknowledged_from_the_next_tick():
    rig = in_game_rig(batch=0.09)
    try:
        seq0 = rig.server.seq
        rig.client.set_input((10.0, 20.0, 30.0))
        shorts = rig.core.wire_input()[:3]
        assert step(rig, tk(0)) == TICKED and sent(rig)[-1].message_ack == seq0
        rig.server.snapshot(tk(0), 2000, PlayerState.from_dict({"commandTime": 1990}))  # before the next tick
        s = rig.server.seq
        assert step(rig, tk(1)) == TICKED  # read after this tick's send, and held (batch 0.09)
        assert sent(rig)[-1].message_ack == seq0
        assert step(rig, tk(2)) == TICKED
        (m,) = sent(rig)
        assert m.message_ack == s and m.move_op == CLC_MOVE
        # The cmds decode to the input only with the key built on the new acknowledge.
        assert [c.angles for c in m.cmds] == [shorts, shorts]
        codes = []
        while len(codes) < 8 and READABLE not in codes:
            codes.append(step(rig, tk(3 + len(codes))))
        assert codes == [TICKED] * 4 + [READABLE]  # at tk(7): 0.1 s >= batch after it was read at tk(1)
        assert all(m.message_ack == s for m in sent(rig))
        taken = rig.pump.take()
        assert len(taken[0]) == 8 and taken[10] == (tk(1),) and struct.unpack_from("<i", taken[9][0])[0] == s
        ctx = rig.absorb(taken)
        assert rig.core._server_msg_seq == s and rig.core.counters["snapshots"] == 2 and ctx[4] == s
        assert rig.core._last_snap_time == tk(1)  # the core reads it at its arrival time
    finally:
        rig.close()


@native
@pytest.mark.parametrize("kind", ["oob", "fragment", "short", "checksum", "commands first", "gamestate"])
def test_urgent_datagrams_are_handed_over_at_once_and_not_acknowledged(kind):
    rig = in_game_rig(batch=0.5)
    try:
        s, server = rig.server.seq, rig.server
        assert step(rig, tk(0)) == TICKED
        sent(rig)
        drops = sum(rig.core.status.drops.values())
        if kind == "commands first":  # a snapshot after a new server command (only the core reads texts)
            server.add_command('cs 5 "x"')
            server.snapshot(tk(0), 2000, PlayerState())
        elif kind == "gamestate":  # a map change: the new serverid is only the core's to learn
            server.server_id = 5151
            server.gamestate(tk(0))
        else:
            rig.wire.receive_datagram(
                {
                    "oob": b"\xff\xff\xff\xffprint\nhello\n",
                    "fragment": struct.pack("<Ii", (s + 1) | 0x80000000, netchan_checksum(CHALLENGE, s + 1))
                    + b"\0\0\x10\0xx",
                    "short": b"\x05\x00",
                    "checksum": struct.pack("<ii", s + 1, netchan_checksum(CHALLENGE, s + 1) ^ 1) + b"\x01\x02\x03",
                }[kind],
                tk(0),
            )
        assert step(rig, tk(1)) == READABLE
        taken = rig.pump.take()
        assert taken[9] == (rig.wire.delivered,) and taken[10] == (tk(1),)
        assert step(rig, tk(2)) == TICKED  # before the hand-over: the pump did not acknowledge it
        assert [m.message_ack for m in sent(rig)] == [s, s]
        ctx = rig.absorb(taken)
        st_ = rig.core.status
        assert st_.state in (State.ACTIVE, State.PRIMED)
        if kind in ("commands first", "gamestate"):  # good messages: the core acknowledges them
            assert rig.core._server_msg_seq == s + 1 and ctx[4] == s + 1 and sum(st_.drops.values()) == drops
            assert st_.server_id == (5151 if kind == "gamestate" else 4242)
        else:
            assert rig.core._server_msg_seq == s and ctx[4] == s
            if kind == "oob":
                assert st_.counters["prints"] == 1
            else:
                assert sum(st_.drops.values()) == drops + 1
    finally:
        rig.close()


@native
@pytest.mark.parametrize("reliable_ack,early", [(0, True), (1, True), (0x7FFFFFFF, True), (0x00F7F7F7, False)])
def test_legacy_snapshots_are_acknowledged_early_when_their_op_precedes_the_scrambling(reliable_ack, early):
    # Legacy netchan: the body is scrambled from its 5th byte (SV_ENCODE_START), so the pump sees
    # the first op only when the acknowledge long and the op take at most 32 Huffman bits (byte
    # 0xF7 takes 11: three of them do not fit; small acknowledges, as in game, always do).
    core = in_game_core(
        legacy=True,
        msg_seq=10,
        snapshot=snap(10, 1000),
        timer=1.0,
        last_packet=1.0,
        reliable=("say hi",),
        reliable_ack=0,
    )
    w = BitWriter()
    w.write_long(reliable_ack)
    w.write_byte(serverparse.SVC_SNAPSHOT)
    w.write_long(2000)
    for byte in (0, 0, 0):  # a full snapshot, no flags, no areamask
        w.write_byte(byte)
    write_delta_playerstate(w, None, PlayerState.from_dict({"commandTime": 1990}))
    w.write_bits(1023, 10)
    w.write_byte(serverparse.SVC_EOF)
    text = core._reliable[reliable_ack % MAX_RELIABLE_COMMANDS]
    dgram = struct.pack("<i", 11) + netchan_module._xor(w.to_bytes(), 4, CHALLENGE ^ 11, text, {})

    def ack(d: bytes, message_ack: int) -> int:  # unscramble as the server does (key from the acknowledge)
        body = netchan_module._xor(d[6:], 12, CHALLENGE ^ 4242 ^ message_ack, core._server_commands[3], {})
        return read_client_message(body, FEED, core._server_commands, 16).message_ack

    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        pump.configure(core.pump_context())
        b.send(dgram)
        assert pump.step(tk(0), 0.5) == (TICKED if early else READABLE)
        assert ack(b.recv(65536), 10) == 10
        assert pump.step(tk(1), 0.5) in (TICKED, READABLE)
        assert ack(b.recv(65536), 11 if early else 10) == (11 if early else 10)
        taken = pump.take()
    core.absorb_ticks(*taken[:7])
    for d, at in zip(taken[9], taken[10]):
        core.receive_datagram(d, at)
    assert core._last_snap.server_time == 2000 and core.pump_context()[4] == 11 and taken[10] == (tk(0),)


@native
def test_duplicate_and_older_sequences_are_not_acknowledged():
    rig = in_game_rig(batch=0.5)
    try:
        s = rig.server.seq
        step(rig, tk(0))
        for seq in (s, s - 1, 0):
            rig.wire.receive_datagram(struct.pack("<ii", seq, netchan_checksum(CHALLENGE, seq)) + b"\x00", tk(0))
        assert step(rig, tk(1)) == TICKED  # nothing urgent: they wait for the batch
        assert step(rig, tk(2)) == TICKED
        assert [m.message_ack for m in sent(rig)] == [s, s, s]
        taken = rig.pump.take()
        assert len(taken[9]) == 3
        before = rig.core.status.drops.get("netchan: out of order or duplicate", 0)
        rig.absorb(taken)
        assert rig.core.status.drops["netchan: out of order or duplicate"] == before + 3
    finally:
        rig.close()


@native
def test_the_queue_is_bounded_and_keeps_arrival_order():
    rig = in_game_rig(batch=1.0)
    try:
        s0 = rig.server.seq
        step(rig, tk(0))
        sent(rig)  # the server learns the client's command acknowledge: its snapshots carry none now
        ps = PlayerState.from_dict({"commandTime": 1000})
        for k in range(3):  # arrivals at three ticks
            rig.server.snapshot(tk(k), 1100 + k, ps)
            assert step(rig, tk(k + 1)) == TICKED
        for k in range(20):  # then a burst: the queue holds 16
            rig.server.snapshot(tk(3), 1200 + k, ps)
        assert step(rig, tk(4)) == READABLE
        first = rig.pump.take()
        assert [struct.unpack_from("<i", d)[0] for d in first[9]] == list(range(s0 + 1, s0 + 17))
        assert first[10] == (tk(1), tk(2), tk(3)) + (tk(4),) * 13
        assert step(rig, tk(5)) == TICKED  # the other 7 are read now
        assert step(rig, tk(6)) == TICKED
        assert [m.message_ack for m in sent(rig)][-3:] == [s0 + 3, s0 + 16, s0 + 23]
        second = rig.pump.take()
        assert [struct.unpack_from("<i", d)[0] for d in second[9]] == list(range(s0 + 17, s0 + 24))
        assert second[10] == (tk(5),) * 7
        rig.absorb(first)
        ctx = rig.absorb(second)
        assert rig.core.counters["snapshots"] == 24 and ctx[4] == s0 + 23 and rig.untaken == 0
    finally:
        rig.close()


@native
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk=st.lists(st.binary(max_size=300), min_size=1, max_size=12), framed=st.booleans())
def test_garbage_through_the_pump_is_counted_and_the_link_survives(junk, framed):
    rig = in_game_rig(batch=0.0)
    try:
        step(rig, tk(0))

        def handled() -> int:
            st_ = rig.core.status
            return sum(st_.drops.values()) + st_.counters.get("messages_in", 0) + st_.counters.get("prints", 0)

        before = handled()
        for blob in junk:
            if framed:
                rig.server.send(blob, tk(0))  # a valid netchan header: the garbage reaches the parser
            else:
                rig.wire.receive_datagram(blob, tk(0))
        n, k = 0, 1
        while n < len(junk):
            assert k < 6, "the pump did not hand the datagrams over"
            if step(rig, tk(k)) == READABLE:
                taken = rig.pump.take()
                n += len(taken[9])
                rig.ctx = rig.absorb(taken)
                assert rig.ctx is not None and rig.core.state is State.ACTIVE
                rig.pump.configure(rig.ctx)
            k += 1
        assert n == len(junk) and handled() == before + len(junk)
        rig.server.snapshot(tk(k), 5000, PlayerState.from_dict({"commandTime": 4990}))
        s = rig.server.seq
        assert step(rig, tk(k + 1)) == READABLE
        rig.ctx = rig.take()
        assert rig.core._last_snap.server_time == 5000 and rig.ctx[4] == s
        rig.pump.configure(rig.ctx)
        assert step(rig, tk(k + 2)) == TICKED and sent(rig)[-1].message_ack == s
    finally:
        rig.close()


@native
def test_early_acks_never_make_an_ioq3_server_resend_the_gamestate():
    # ioq3 SV_ExecuteClientMessage: a message with an old serverId whose messageAcknowledge is
    # above the new gamestate's sequence means "the gamestate was dropped": the server sends it
    # again. A client that read the gamestate (ioq3's reads it at once) never sends that.
    rig = in_game_rig(batch=0.1)
    try:
        step(rig, tk(0))
        sent(rig)
        rig.server.server_id = 5151
        rig.server.gamestate(tk(0), mapname="oa_dm2")
        g = rig.server.seq
        msgs = []
        for k in range(1, 9):
            if k == 3:  # 50 ms later: the new map's first snapshot to a primed client (20 Hz)
                rig.server.snapshot(tk(k - 1), 3000, PlayerState(), flags=serverparse.SNAPFLAG_NOT_ACTIVE)
            r = step(rig, tk(k))
            msgs += sent(rig)
            if r == READABLE:
                break
        resend = [(m.server_id, m.message_ack) for m in msgs if m.server_id != 5151 and m.message_ack > g]
        assert resend == [], f"old server id with acknowledges past the gamestate's sequence {g}: {resend}"
        assert r == READABLE
    finally:
        rig.close()


@native
def test_a_vanished_peer_is_counted_as_socket_errors_and_the_ticks_go_on():
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        pump.configure(good_context(timer=1.0))
        b.close()  # port unreachable: the ICMP error comes back on a's next send or read
        codes = [pump.step(tk(k), 0.0) for k in range(6)]
        taken = pump.take()
    assert codes == [TICKED] * 6 and len(taken[0]) == 6
    assert taken[7] >= 1 and taken[9] == ()  # socket errors, no datagrams


# ---------------------------------------------------------------------------------- 4. API errors


def good_context(timer: float = 100.0, **kw) -> tuple:
    return in_game_core(timer=timer, **kw).pump_context()


@native
def test_api_errors_leave_the_pump_usable():
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        for call in (lambda: pump.tick(100.0), lambda: pump.step(100.0), lambda: pump.run(time.monotonic())):
            with pytest.raises(RuntimeError, match="not configured"):
                call()
        ctx = good_context()
        bad = [
            (TypeError, ("x",)),
            (TypeError, list(ctx)),
            (TypeError, ctx[:-1]),
            (ValueError, ctx[:9] + (24,) + ctx[10:]),
            (ValueError, ctx[:6] + (tuple((i, "say") for i in range(1, 66)),) + ctx[7:]),
            (ValueError, ctx[:24] + ((UserCmd(),) * 3,) + ctx[25:]),
            (ValueError, ctx[:6] + (((1, "x" * 1024),),) + ctx[7:]),
            (ValueError, ctx[:21] + (0.0,) + ctx[22:]),
        ]
        for exc, c in bad:
            with pytest.raises(exc):
                pump.configure(c)
            with pytest.raises(RuntimeError):  # still not configured: nothing half-applied
                pump.tick(100.0)
        pump.configure(ctx)
        assert pump.tick(100.0) == TICKED and len(b.recv(65536)) > 10
        for exc, c in bad:  # a configured pump keeps its context after a refused one
            with pytest.raises(exc):
                pump.configure(c)
        assert pump.tick(100.0 + 1 / 60) == TICKED
        assert pump.take()[3] == 3
        for batch in (-0.01, 1.01, math.inf):
            with pytest.raises(ValueError):
                pump.step(200.0, batch)
            with pytest.raises(ValueError):
                pump.run(time.monotonic(), None, batch)
        for call in (pump.tick, pump.step, pump.run):
            with pytest.raises(ValueError, match="NaN"):
                call(math.nan)
        with pytest.raises(TypeError):
            pump.set_input(1, 2, 3)
        assert pump.take()[0] == () and pump.tick(100.0 + 2 / 60) == TICKED


@native
def test_client_run_refuses_a_bad_batch_and_set_input_refuses_nan():
    with udp_pair() as (peer, _):
        client = Q3Client(peer.getsockname(), ClientConfig(family=Family.NEW71), bind=("127.0.0.1", 0))
        try:
            for batch in (2, -0.5):
                with pytest.raises(ValueError, match="batch"):
                    client.run(time.perf_counter() + 1.0, batch=batch)
            client.run(time.perf_counter())  # returns at once: the pump is made
            assert client._pump is not None and client.set_input == client._set_input_pumped
            client.set_input((10.0, 20.0, 30.0), forward=5, buttons=3, head=(10.0, 20.0))
            old = client.core._input
            for angles in ((math.nan, 0.0, 0.0), (0.0, math.inf, 0.0), (0.0, 0.0, -math.inf)):
                with pytest.raises(ValueError):
                    client.set_input(angles, forward=100)
                assert client.core._input == old
        finally:
            client._sock.close()


# ---------------------------------------------------------------------------------- 5. threads


def run_in_thread(pump, until: float, batch: float = 0.0):
    box = {}

    def target():
        box["r"] = pump.run(until, None, batch)
        box["at"] = time.monotonic()

    th = threading.Thread(target=target, daemon=True)
    th.start()
    return th, box


@native
def test_interrupt_from_another_thread_stops_run_at_its_next_wake():
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        now = time.monotonic()
        pump.configure(good_context(timer=now, timeout=30.0))
        start = time.monotonic()
        th, box = run_in_thread(pump, start + 5.0)
        b.recv(65536)  # it ticks
        pump.interrupt()
        th.join(2.0)
        assert not th.is_alive() and box["r"] == INTERRUPTED
        assert box["at"] - start < 1.0
        assert len(pump.take()[0]) >= 1
        # run() with nothing to do returns UNTIL at once; an interrupt is consumed by the run it stopped.
        assert pump.run(time.monotonic() - 1.0) == 0


def test_an_interrupt_just_before_run_stops_it_and_is_consumed():
    """Q3Client.interrupt() before run() starts still stops it (an app loop `while not stop:
    run(...)` must not miss it); the run it stopped consumes it, so the next run runs."""
    client = Q3Client(("127.0.0.1", 9), ClientConfig(name="intr", family=Family.NEW71), bind=("127.0.0.1", 0))
    try:
        client.interrupt()
        start = time.perf_counter()
        client.run(start + 5.0)
        assert time.perf_counter() - start < 1.0
        start = time.perf_counter()
        client.run(start + 0.2)  # not in game: the Python loop, until `until`
        assert 0.19 <= time.perf_counter() - start < 1.0
    finally:
        client.close(time.perf_counter())


@native
def test_set_input_from_another_thread_changes_the_next_datagrams():
    with udp_pair() as (a, b):
        pump = NATIVE.Pump(a.fileno())
        core = in_game_core(timer=time.monotonic(), delta=(100, 200, 300), timeout=30.0)
        pump.configure(core.pump_context())
        th, box = run_in_thread(pump, time.monotonic() + 5.0)
        try:

            def yaw() -> int:
                return read_client_message(b.recv(65536)[10:], FEED, core._server_commands, 16).cmds[-1].angles[1]

            old, new = (0 - 200) & 0xFFFF, (16384 - 200) & 0xFFFF
            assert yaw() == old
            pump.set_input(0, 16384, 0, 0, 0, 0, 0, 0)
            seen = [yaw() for _ in range(8)]
            # datagrams already sent keep the old view; from the first new one on, every one has it
            first = seen.index(new)
            assert set(seen[:first]) <= {old} and seen[first:] == [new] * (8 - first) and first <= 4
        finally:
            pump.interrupt()
            th.join(2.0)
        assert box["r"] == INTERRUPTED


# ---------------------------------------------------------------------------------- 6. in use, and the fallback


def live_client(monkeypatch, native_on: bool) -> tuple[Q3Client, ScriptedServer, socket.socket]:
    """A Q3Client in game on the real clock: handshake and gamestate by the scripted server."""
    ssock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ssock.bind(("127.0.0.1", 0))
    if not native_on:
        monkeypatch.setattr(transport, "NATIVE", None)
    client = Q3Client(ssock.getsockname(), ClientConfig(family=Family.NEW71, qport=31337), bind=("127.0.0.1", 0))
    ssock.connect(client.local_address)
    server = ScriptedServer(client.core)
    now = time.perf_counter()
    server.handshake(now)
    server.read(now)
    server.gamestate(now)
    server.snapshot(now, 1000, PlayerState.from_dict({"delta_angles": (0, 1000, 0)}))
    return client, server, ssock


@pytest.mark.parametrize("native_on", [pytest.param(True, marks=native), False], ids=["pump", "python-loop"])
def test_client_run_in_game_sends_decodable_usercmds(monkeypatch, native_on):
    client, server, ssock = live_client(monkeypatch, native_on)
    try:
        client.set_input((0.0, 90.0, 0.0), forward=127)
        client.run(time.perf_counter() + 0.25)
        assert (client._pump is not None) is native_on
        assert client.native_ticks == (client.core.counters["usercmds"] if native_on else 0)
        assert client.core.counters["usercmds"] >= 5
        got = pending(ssock)
        assert len(got) == client.core.counters["packets_out"] - 2 - 1  # less the connect-phase datagrams
        msgs = [read_client_message(d[10:], FEED, server.commands, 16) for d in got]
        assert all(m.cmds[-1].angles[1] == (16384 - 1000) & 0xFFFF and m.cmds[-1].forwardmove == 127 for m in msgs)
        assert [m.cmds[-1].server_time for m in msgs] == sorted({m.cmds[-1].server_time for m in msgs})
        assert client.core.state is State.ACTIVE and client.socket_errors == 0
    finally:
        client._sock.close()
        ssock.close()


@native
def test_the_extension_is_in_use_here():
    assert NATIVE is not None, f"_q3native is not in use: {NATIVE_STATUS}"
    assert transport.NATIVE is NATIVE and NATIVE_STATUS == "in use" and callable(NATIVE.Pump)
