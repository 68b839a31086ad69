"""Q3Client.send_input (the pump's one C call per command tick from plain numbers, what
app/sinks/q3/link.py calls in game) against the path it stands in for: Q3ClientCore.set_input with
the head as vrhead.yaw_offset makes it, then Q3Client.step.

No live server: tests/q3/test_pump.py's Rig (a Q3Client on 127.0.0.1 with a scripted server behind a
UDP socket, our own stand-in: the scenario needs a server whose every message is chosen) and its
scenario (gamestate, snapshots with changing delta_angles, a reliable command, a map change). Both
rigs read the socket when their tick's read found something (the link's rule); every datagram sent
must be byte-identical and the cores must end in the same state, input included. The last test
runs the link's loop against a real ioq3ded with the snapshots decoded in C (step_absorb).
"""

from __future__ import annotations

import math
import time

import pytest

from headcast.netcode.pose import angle_subtract
from headcast.netcode.q3.client import LINKED, ClientConfig, State
from headcast.netcode.q3.localserver import LocalQ3Server
from headcast.netcode.q3.native import NATIVE
from headcast.netcode.q3.transport import Q3Client
from headcast.netcode.q3.vrhead import yaw_offset

from q3.test_pump import Rig, end_state, native, pure_python_send, scenario


class LinkRig(Rig):
    """A Rig driven as Q3Link drives its client. `fast`: send_input while it is armed, else
    set_input + step; otherwise always set_input + step. The scenario's set_input gives the
    input (its head read as the tracked head: pitch, absolute yaw), varied beyond what the core
    keeps (roll past ±60, moves past ±127, buttons past bit 11, no head every 7th frame)."""

    def __init__(self, fast: bool) -> None:
        super().__init__(pumped=False, vr=True, vr_support=True)
        self.fast = fast
        self.fast_ticks = 0
        self.given: tuple = ()
        self.frame = 0
        self.client.set_input = self.give  # what scenario() calls
        # the server reads what the client sent: send_input's ticks counted once the core took them over
        self.wire.expected = lambda: (self.client.sync(), self.core.counters["packets_out"])[1]

    def give(self, angles, forward, right, up, buttons, weapon, head) -> None:
        i = self.frame = self.frame + 1
        p, y, r = angles
        self.given = (
            (p, y, r * 1.6),
            forward * 2,
            right,
            up,
            buttons | (0xABC000 if i % 5 == 0 else 0),
            weapon,
            None if i % 7 == 0 else (head[0], head[1], 0.0),
        )

    def poll(self, now: float) -> None:
        client, core = self.client, self.core
        if self.unread:
            self.unread = False
            client.receive(now)
        angles, forward, right, up, buttons, weapon, head = self.given
        fast = client.send_input
        if self.fast and fast is not None:
            r = fast(now, angles, buttons, forward, right, up, weapon, head)
            if r.__class__ is tuple:
                self.fast_ticks += 1
                self.unread = r[4]
                return
        client.sync()
        wire_head = None if head is None else (head[0], yaw_offset(head[1], angles[1]))
        real = core.set_input if client._pump is None else client._set_input_pumped  # what Q3Client binds
        real(angles, forward, right, up, buttons, weapon, wire_head)
        before = core.counters["packets_out"]
        pumped = client._pump is not None and client.send_input is not None
        client.step(now)
        client.set_input = self.give  # (step rebinds it when it makes its pump)
        if pumped and client.send_input is not None:  # the pump ticked: read when its read found something
            self.unread = bool(client._held)
        else:
            self.unread = core.state in LINKED and core.counters["packets_out"] > before


def frames() -> list[float]:
    out, now, k = [], 0.004, 0
    while now < 3.0:
        out.append(now)
        k += 1
        now += 0.002 + (k * 7919 % 13) * 0.001
    return out


@native
def test_a_scripted_session_through_send_input_equals_set_input_and_step():
    a, b = LinkRig(fast=False), LinkRig(fast=True)
    a.stepped = b.stepped = "link"
    try:
        with pure_python_send():
            scenario(a, frames())
            scenario(b, frames())
        assert len(a.wire.log) == len(b.wire.log) > 150
        for i, (x, y) in enumerate(zip(a.wire.log, b.wire.log)):
            assert x == y, f"datagram {i} differs"
        b.client.sync()
        assert end_state(a) == end_state(b)
        assert a.core._input == b.core._input  # the core took send_input's input over, as set_input gives it
        assert a.server.executed == b.server.executed == ["say hello 100. ."]
        assert a.fast_ticks == 0 and b.fast_ticks > 100
        assert b.client.native_ticks >= b.fast_ticks and a.client.native_ticks > 100
    finally:
        a.close()
        b.close()


@native
def test_send_input_refuses_what_set_input_refuses_and_keeps_the_input():
    rig = LinkRig(fast=True)
    try:
        with pure_python_send():
            scenario(rig, frames()[:120])  # in game, armed
        client = rig.client
        fast = client.send_input
        assert fast is not None
        kept = client._pump.take_input()
        for angles, head in (((math.nan, 0.0, 0.0), None), ((0.0, 0.0, 0.0), (0.0, math.inf))):
            with pytest.raises(ValueError, match="non-finite angle"):
                fast(1e9, angles, 0, 0, 0, 0, 0, head)
            assert client._pump.take_input() is None
        with pytest.raises(OverflowError):
            fast(1e9, (1e39, 0.0, 0.0), 0, 0, 0, 0, 0, None)
        with pytest.raises(TypeError):
            fast(1e9, (0.0, 0.0), 0, 0, 0, 0, 0, None)
        assert fast(-1.0, (0.0, 0.0, 0.0), 0, 0, 0, 0, 0, None) == 5  # not due: nothing sent, nothing kept
        assert client._pump.take_input() is None and kept is None or kept is not None
    finally:
        rig.close()


def test_send_input_is_none_without_the_pump():
    """Without the extension (or before a tick in game) the link takes the core's path."""
    rig = LinkRig(fast=True)
    try:
        assert rig.client.send_input is None
        if NATIVE is None:
            with pure_python_send():
                scenario(rig, frames()[:200])
            assert rig.client.send_input is None and rig.fast_ticks == 0
            assert rig.core.counters["usercmds"] > 50
    finally:
        rig.close()


@native
@pytest.mark.live
def test_send_input_with_the_snapshots_decoded_in_c_streams_to_ioq3_and_hands_over_in_batches():
    """Against a real ioq3ded: Q3Link's loop at 90 Hz (send_input at each tick, receive when a tick's
    read asks for it) with step_absorb 0.25: the server runs our view, the snapshots are decoded in
    C and reach the core a few times a second, not once per snapshot."""
    with LocalQ3Server(kind="ioq3", pure=False) as server:
        clock = time.perf_counter
        client = Q3Client(server.address, ClientConfig(name="sendinput"), clock=clock)
        client.step_absorb = 0.25
        angles, head = (-12.0, 33.0, 0.0), (5.0, 50.0, 0.0)
        unread, hand_overs, fast, in_game_at = False, 0, 0, None
        try:
            client.start(clock())
            end = time.monotonic() + 25.0
            while time.monotonic() < end:
                time.sleep(1 / 90)
                now = clock()
                if unread:
                    unread = False
                    hand_overs += in_game_at is not None
                    client.receive(now)
                send = client.send_input
                if send is not None:
                    r = send(now, angles, 0, 0, 0, 0, 0, head)
                    if r.__class__ is tuple:
                        fast += 1
                        unread = r[4]
                        continue
                client.sync()
                client.set_input(angles, 0, 0, 0, 0, 0, (head[0], yaw_offset(head[1], angles[1])))
                before = client.core.counters["packets_out"]
                client.step(now)
                unread = client.state in LINKED and client.core.counters["packets_out"] > before
                if in_game_at is None and client.state is State.ACTIVE:
                    in_game_at = time.monotonic()
                if in_game_at is not None and time.monotonic() - in_game_at > 4.0:
                    break
            client.sync()
            ran = time.monotonic() - (in_game_at or end)
            assert in_game_at is not None, f"not in game: {client.state}"
            assert fast > 120 and client.native_snapshots > 30, (fast, client.native_snapshots)
            assert hand_overs <= 8 * ran, (hand_overs, ran)  # ~4/s at 0.25 s, not 20/s
            ps = client.status.ps
            assert ps is not None
            for axis in (0, 1):  # the server ran our view (roll: the head's, not checked here)
                assert abs(angle_subtract(ps.viewangles[axis], angles[axis])) < 0.02, ps.viewangles
        finally:
            client.close(clock())
