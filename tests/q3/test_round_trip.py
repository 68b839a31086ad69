"""The round trip (Q3ClientCore.latency_ms, the far side's `ping`) when the snapshot that ran a
usercmd is read in the very tick that sent it.

A tick sends its usercmd at the tick's `now`, then reads the socket; whatever it reads is handed to
the core at that same `now` (the timers keep it). When the server's frame falls between the send
and the read (our thread preempted on a loaded machine: a CI run saw it), the first snapshot whose
commandTime covers the new usercmd is read in the same tick, and `now - sent_at` is exactly 0. The
round trip's end is the read itself: the pump stamps each read with its lag after `now`
(Pump.take's lags, the snapshot log's lag), the Python tick sets core.read_lag around its reads.
Each path below would give 0.0 without that.

No live server: tests/q3/test_pump.py's Rig (a Q3Client on 127.0.0.1 with our own scripted server
behind a UDP socket): only a scripted server can put a snapshot covering a usercmd in the socket
before that usercmd is sent, which is what a preempted read looks like to the client.
"""

from __future__ import annotations

import pytest

from headcast.netcode.q3.delta import PlayerState
from headcast.netcode.q3.transport import Q3Client

from q3.test_pump import READABLE, Rig, in_game_rig, native, sent, step, tk

AHEAD = PlayerState.from_dict({"commandTime": 10**6})  # covers every usercmd sent so far and the next


def check(rig: Rig, before: int, at: float) -> None:
    core = rig.core
    assert core.counters["snapshots"] == before + 1, "the covering snapshot was not read at this tick"
    sent_at = core._out_packets[-1][0]
    assert sent_at == at  # the usercmd it ran went out at this very tick
    # Before the read lag this was exactly 0.0; it is the few microseconds from send to read.
    assert core.latency_ms is not None and 0.0 < core.latency_ms < 1000.0, core.latency_ms


def test_the_python_tick_stamps_its_reads_after_the_send():
    rig = in_game_rig(batch=0.0, pumped=False)
    try:
        before = rig.core.counters["snapshots"]
        rig.server.snapshot(tk(0), 2000, AHEAD)  # in the socket before the tick's send
        rig.client._poll(tk(0), read_after=True)
        sent(rig)
        check(rig, before, tk(0))
        assert rig.core.read_lag == 0.0  # only around the reads
    finally:
        rig.close()


@native
def test_a_datagram_the_pump_queued_keeps_its_read_lag_to_the_core():
    rig = in_game_rig(batch=0.0)
    try:
        before = rig.core.counters["snapshots"]
        rig.server.snapshot(tk(0), 2000, AHEAD)
        assert step(rig, tk(0)) == READABLE
        taken = rig.pump.take()
        assert taken[10] == (tk(0),) and len(taken[11]) == 1 and taken[11][0] > 0.0  # arrival, lag
        rig.absorb(taken)
        sent(rig)
        check(rig, before, tk(0))
        assert rig.core._last_snap_time == tk(0)  # the timers keep the tick's time
    finally:
        rig.close()


@native
@pytest.mark.parametrize("decoded_in_c", [False, True], ids=["held", "decoded in C"])
def test_the_links_step_then_receive_at_the_same_now(decoded_in_c):
    """app/sinks/q3/link.py: step(now) ticks and reads (held, or decoded in C with step_absorb),
    then receive(now) hands them to the core, at the same `now` when polled in the same frame."""
    rig = in_game_rig(batch=0.0)
    client: Q3Client = rig.client
    try:
        if decoded_in_c:
            client.step_absorb = 0.25
        client.step(tk(0))  # a first tick: the server sees the gamestate's commands acknowledged
        client.receive(tk(0))
        rig.untaken = 0
        sent(rig)
        before = rig.core.counters["snapshots"]
        rig.server.snapshot(tk(1), 2000, AHEAD)  # so this starts with the snapshot op (C can decode it)
        client.step(tk(1))
        client.receive(tk(1))
        assert client.native_ticks >= 2  # the pump ticked, not the core
        assert (client.native_snapshots == 1) is decoded_in_c
        sent(rig)
        check(rig, before, tk(1))
    finally:
        rig.close()


@native
@pytest.mark.parametrize("path", ["held", "hand-over"])
def test_a_read_the_core_raises_on_leaves_no_read_lag_behind(path):
    """A datagram the core raises on (ServerMisbehaved: it closes; a driver may start it again)
    while its read lag is set must not leave that lag to the reads that follow (the Python tick's
    own reads reset it; these two paths did not): the next snapshot read would count it in its
    round trip. The raise is injected: a real one takes 65 pure gamestates (test_hostile_server)."""
    from headcast.netcode.q3.client import ServerMisbehaved

    rig = in_game_rig(batch=0.0)
    client: Q3Client = rig.client
    core = rig.core
    try:
        client.step(tk(0))
        client.receive(tk(0))
        rig.untaken = 0
        sent(rig)
        rig.server.snapshot(tk(1), 2000, AHEAD)

        def refuse(data: bytes, now: float) -> None:
            assert core.read_lag > 0.0  # set for this read
            raise ServerMisbehaved("injected")

        core.receive_datagram = refuse  # type: ignore[method-assign]
        with pytest.raises(ServerMisbehaved):
            if path == "held":
                client.step(tk(1))  # the pump's tick and read: held for receive
                client.receive(tk(1))
            else:
                assert step(rig, tk(1)) == READABLE
                rig.absorb(rig.pump.take())  # Q3Client._pump_datagrams, run()'s hand-over
        assert core.read_lag == 0.0
    finally:
        rig.close()
