"""The swarm loop (app/swarm/loop.py) with scripted players over socketpairs: timers run in
deadline order, a moved deadline leaves no stale call, readable sockets reach their player, a
player that raises is closed and counted without stopping the others, every player closes."""

from __future__ import annotations

import socket
import time

from headcast.app.swarm.loop import SwarmLoop


class FakePlayer:
    proto = "fake"

    def __init__(self, index: int, period: float, log: list) -> None:
        self.index, self.period, self.log = index, period, log
        self.closed = False
        self.a, self.b = socket.socketpair()
        self.a.setblocking(False)
        self.deadline = None
        self.reads = 0
        self.fail_at: int | None = None

    def start(self, now):
        self.deadline = now + self.period

    def filenos(self):
        return [self.a.fileno()]

    def next_deadline(self):
        return self.deadline

    def on_timer(self, now):
        self.log.append((self.index, self.deadline, now))
        if self.fail_at is not None and len([e for e in self.log if e[0] == self.index]) >= self.fail_at:
            raise RuntimeError("boom")
        self.deadline += self.period

    def on_readable(self, now):
        while True:
            try:
                self.a.recv(100)
            except BlockingIOError:
                break
            self.reads += 1
        self.deadline = now  # something to answer: a timer at once (moved earlier)

    def close(self, now):
        self.closed = True
        self.a.close()
        self.b.close()


def test_timers_in_order_reads_and_failures_isolated():
    log: list = []
    loop = SwarmLoop()
    t0 = time.monotonic()
    players = [FakePlayer(i, 0.02 + 0.01 * i, log) for i in range(4)]
    players[3].fail_at = 3
    for i, p in enumerate(players):
        loop.add(p, t0 + 0.01 * i)
    assert loop.waiting == 4
    ticks = [0]

    def status(now):
        ticks[0] += 1
        if ticks[0] == 3:
            players[1].b.send(b"x")

    loop.run(t0 + 0.6, on_status=status, status_every=0.05)
    assert loop.waiting == 0 and len(loop.players) == 4
    # each player's calls come at or after its deadlines, in deadline order, never twice for one
    for i in range(3):
        mine = [(d, now) for j, d, now in log if j == i]
        assert all(now >= d for d, now in mine)
        assert [d for d, _ in mine] == sorted(d for d, _ in mine)
        assert len({d for d, _ in mine}) == len(mine)
        assert len(mine) >= int(0.5 / players[i].period) - 2
    assert players[1].reads == 1
    assert players[3].closed and len(loop.errors) == 1 and "boom" in loop.errors[0]
    calls_of_3 = len([e for e in log if e[0] == 3])
    assert calls_of_3 == 3  # closed at its failure: no call after
    loop.close_all()
    assert all(p.closed for p in players)


def test_should_stop_ends_the_run_within_a_wakeup():
    loop = SwarmLoop()
    t0 = time.monotonic()
    loop.add(FakePlayer(0, 10.0, []), t0)
    stop_at = t0 + 0.1
    loop.run(t0 + 30.0, should_stop=lambda: time.monotonic() >= stop_at)
    assert time.monotonic() - stop_at < 0.5
    loop.close_all()


class JoiningPlayer(FakePlayer):
    """A player of a protocol with a join window (as NetSync's): in once `admit` says so."""

    proto = "joining"
    JOIN_WINDOW = 2

    def __init__(self, index: int, log: list) -> None:
        super().__init__(index, 0.05, log)
        self.got_in = False
        self.started_at = None

    def start(self, now):
        super().start(now)
        self.started_at = now


def test_join_window_holds_the_ramp_until_players_get_in():
    """At most JOIN_WINDOW players wait to get in at once: the others, due meanwhile, are held in
    their order and start as soon as one gets in; players of other protocols are not held."""
    log: list = []
    loop = SwarmLoop()
    t0 = time.monotonic()
    joining = [JoiningPlayer(i, log) for i in range(5)]
    other = FakePlayer(9, 0.05, log)
    for i, p in enumerate(joining):
        loop.add(p, t0 + 0.01 * i)
    loop.add(other, t0 + 0.05)
    try:
        loop.run(t0 + 0.2)
        assert [p.started_at is not None for p in joining] == [True, True, False, False, False]
        assert other.deadline is not None  # behind the held ones in the ramp, started anyway
        assert loop.waiting == 3
        joining[1].got_in = True  # one gets in: the next in order starts
        loop.run(time.monotonic() + 0.1)
        assert [p.started_at is not None for p in joining] == [True, True, True, False, False]
        joining[0].closed = True  # one gives up (closed): its place frees too
        joining[2].got_in = True
        loop.run(time.monotonic() + 0.1)
        assert all(p.started_at is not None for p in joining) and loop.waiting == 0
        assert joining[3].started_at <= joining[4].started_at
    finally:
        loop.close_all(pause=0.0)
