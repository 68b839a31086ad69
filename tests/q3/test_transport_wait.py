"""Q3Client's own wake policy: `wait` sleeps to the command tick, and in game the socket is
read only at ticks (snapshots wait in the kernel buffer for at most one tick)."""

from __future__ import annotations

import select
import time

import pytest

from headcast.netcode.q3.client import ClientConfig, State
from headcast.netcode.q3.localserver import pk3_files
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.transport import Q3Client

from support import free_port

PAKS = tuple(pk3_files())


def enter(client: Q3Client, timeout: float = 15.0) -> None:
    client.start(time.monotonic())
    end = time.monotonic() + timeout
    while client.state is not State.ACTIVE:
        assert time.monotonic() < end, f"did not enter the world: {client.status}"
        client.poll(time.monotonic())
        client.wait(time.monotonic(), time.monotonic() + 0.05)


@pytest.mark.live
def test_dedicated_poll_wait_loop_wakes_per_tick_and_keeps_the_rates(oa_server) -> None:
    with Q3Client(
        oa_server.address, ClientConfig(name="waiter", family=Family.LEGACY71, pure_paks=PAKS), bind=("127.0.0.1", 0)
    ) as client:
        enter(client)
        c = client.core.counters
        cmds0, snaps0 = c["usercmds"], c["snapshots"]
        t0 = time.monotonic()
        wakes = 0
        while (now := time.monotonic()) - t0 < 2.0:
            wakes += 1
            client.poll(now)
            client.wait(time.monotonic(), t0 + 2.0)
        elapsed = time.monotonic() - t0
        cmds, snaps = c["usercmds"] - cmds0, c["snapshots"] - snaps0
        # One wake per tick (plus the final one), not one per snapshot or per millisecond.
        assert wakes <= cmds + 3, (wakes, cmds)
        assert cmds >= 45 * elapsed, cmds  # 60 Hz, with slack for a loaded machine
        assert snaps >= 10 * elapsed, snaps  # 20 Hz snapshots all consumed at the ticks
        assert client.state is State.ACTIVE and not client.status.drops
        client.close(time.monotonic())


@pytest.mark.live
def test_in_game_the_socket_is_read_at_ticks_only(oa_server) -> None:
    with Q3Client(
        oa_server.address, ClientConfig(name="ticker", family=Family.LEGACY71, pure_paks=PAKS), bind=("127.0.0.1", 0)
    ) as client:
        enter(client)
        client.poll(client.core.get_timer())  # a tick: drains what has arrived
        counters = client.core.counters
        before = counters["packets_in"]
        between = client.core.get_timer() - 0.001
        readable, _, _ = select.select([client], [], [], 5.0)  # the next snapshot arrives...
        assert readable, "no snapshot within 5 s"
        assert client.poll(between) == [] and counters["packets_in"] == before  # ...and waits
        client.poll(client.core.get_timer())
        assert counters["packets_in"] > before
        client.close(time.monotonic())


def test_wait_returns_at_once_without_a_timer_and_honours_until() -> None:
    with Q3Client(("127.0.0.1", free_port()), ClientConfig(name="idle")) as client:
        assert client.core.get_timer() is None  # never started
        t = time.monotonic()
        client.wait(t)
        assert time.monotonic() - t < 0.5
        client.wait(time.monotonic(), time.monotonic() + 0.05)  # nothing arrives: sleeps to `until`
        assert 0.04 <= time.monotonic() - t < 2.0
