"""One selector and one timer heap over every player of a swarm: no thread per player.

Each player says when it next needs `on_timer` (`next_deadline()`) and which descriptors to
watch (`filenos()`); the loop sleeps in the selector until the earliest deadline (plus
TIMER_SLACK, so the timers due close together share a wake-up) or a readable socket, runs what
is due, and asks the player again after every call. The heap holds
(deadline, n, player) entries; a player whose deadline moved leaves its old entry behind, which
is skipped when it comes up (its `scheduled_at` no longer matches), so no entry is ever searched
for or removed.

Players start over a ramp (`add(player, start_at)`), in order, and within a join window: a
protocol whose players set `JOIN_WINDOW` (NetSync) starts its next player only while fewer than
that many of its players started in the last `WINDOW_HOLD` s are still waiting to get in, so the
ramp slows to the pace the server answers at (a player due meanwhile is held, in order, and
started as soon as one gets in). `run` returns at `until`, or
when `should_stop()` says so (a stop signal: app/run/stop.py sets it, the loop notices within one
wake-up, at most `MAX_SLEEP`); `close_all` then leaves the server cleanly for every player.
A player that raises is closed and counted (`errors`), never the end of the swarm.
"""

from __future__ import annotations

import heapq
import selectors
import time
import traceback
from collections import deque
from typing import TYPE_CHECKING, Callable

from headcast.app.swarm.metrics import LogHistogram

if TYPE_CHECKING:
    from headcast.app.swarm.players import Player

MAX_SLEEP = 0.1  # the longest select: a stop request is seen within this
MAX_DUE_PER_WAKE = 100_000  # timers run per wake-up before the selector is looked at again
LEAVE_PAUSE = 0.1  # between two batches of leaving players (close_all)
WINDOW_HOLD = 10.0  # s a player waiting to get in holds its place in the join window
HELD_RECHECK = 0.02  # s between two looks at the join window while players are held
# A timer may run this late so one wake-up serves the timers due close together: 64 Q3 players
# on their own 60 Hz grids are 3,840 timers a second, and a wake-up costs tens of µs before any
# work (the selector's syscall, the loop's cold code): with the slack about 1/TIMER_SLACK
# wake-ups a second serve them, each running a few ticks warm. Far below a tick's slip (a whole
# period late: 16.7 ms at 60 Hz).
TIMER_SLACK = 0.002


class SwarmLoop:
    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.selector = selectors.DefaultSelector()
        self._heap: list[tuple[float, int, Player]] = []
        self._n = 0
        self._ramp: deque[tuple[float, Player]] = deque()
        self._held: dict[str, deque[Player]] = {}  # per protocol: due players waiting for the window
        self._joining: dict[str, list] = {}  # per protocol: (started at, player) in the window
        self.players: list = []  # started, in start order
        self.errors: list[str] = []  # players closed for an exception: what it was
        self.wakeups = 0
        # The loop's own work, in its thread's CPU time (preemption by other processes left
        # out): seconds in all, and per wake-up (a burst longer than a protocol's tick period
        # is a tick the swarm itself made late, whatever else the machine runs).
        self.busy = 0.0
        self.bursts = LogHistogram()

    def add(self, player, start_at: float) -> None:
        """Start `player` at `start_at` (players must be added in start order)."""
        self._ramp.append((start_at, player))

    @property
    def waiting(self) -> int:
        """Players added and not started yet."""
        return len(self._ramp) + sum(len(q) for q in self._held.values())

    def _window_open(self, p, now: float) -> bool:
        size = getattr(p, "JOIN_WINDOW", None)
        if size is None:
            return True
        joining = self._joining.get(p.proto)
        if joining is None:
            return True
        joining[:] = [(t, q) for t, q in joining if not (q.got_in or q.closed or now - t >= WINDOW_HOLD)]
        return len(joining) < size

    def _schedule(self, p) -> None:
        d = p.next_deadline()
        if d is not None and d != p.scheduled_at:
            p.scheduled_at = d
            self._n += 1
            heapq.heappush(self._heap, (d, self._n, p))

    def _failed(self, p, now: float, what: str) -> None:
        self.errors.append(f"{p.proto} player {p.index}: {what}: {traceback.format_exc(limit=-1).strip()}")
        try:
            self._unregister(p)
            p.close(now)
        except Exception:  # noqa: BLE001 - a broken player must not take the swarm down
            pass

    def _unregister(self, p) -> None:
        for fd in getattr(p, "registered_fds", ()):
            try:
                self.selector.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass
        p.registered_fds = ()

    def _start_due(self, now: float) -> None:
        for proto, held in self._held.items():  # the held first, in their order
            while held and self._window_open(held[0], now):
                self._start(held.popleft(), now)
        ramp = self._ramp
        while ramp and ramp[0][0] <= now:
            _, p = ramp.popleft()
            waiting = self._held.get(p.proto)
            if waiting or not self._window_open(p, now):
                self._held.setdefault(p.proto, deque()).append(p)
                continue
            self._start(p, now)

    def _start(self, p, now: float) -> None:
        if getattr(p, "JOIN_WINDOW", None) is not None:
            self._joining.setdefault(p.proto, []).append((now, p))
        p.scheduled_at = None
        p.registered_fds = ()
        try:
            p.start(now)
            fds = tuple(p.filenos())
            for fd in fds:
                self.selector.register(fd, selectors.EVENT_READ, p)
            p.registered_fds = fds
        except Exception:  # noqa: BLE001
            self._failed(p, now, "start")
            return
        self.players.append(p)
        self._schedule(p)

    def run(
        self,
        until: float,
        should_stop: Callable[[], bool] = lambda: False,
        on_status: Callable[[float], None] | None = None,
        status_every: float = 0.5,
    ) -> None:
        clock, heap, select = self.clock, self._heap, self.selector.select
        next_status = clock() + status_every if on_status is not None else None
        cpu = time.thread_time
        woke = cpu()
        while True:
            now = clock()
            if now >= until or should_stop():
                return
            held = any(self._held.values())
            if held or (self._ramp and self._ramp[0][0] <= now):
                self._start_due(now)
            for _ in range(MAX_DUE_PER_WAKE):
                if not heap or heap[0][0] > now:
                    break
                d, _, p = heapq.heappop(heap)
                if p.scheduled_at != d or p.closed:
                    continue  # superseded by a later entry
                p.scheduled_at = None
                try:
                    p.on_timer(now)
                except Exception:  # noqa: BLE001
                    self._failed(p, now, "timer")
                    continue
                self._schedule(p)
            if on_status is not None and next_status is not None and now >= next_status:
                on_status(now)
                next_status = now + status_every
            wake = min(until, now + MAX_SLEEP)
            if heap and heap[0][0] + TIMER_SLACK < wake:
                wake = heap[0][0] + TIMER_SLACK
            if self._ramp and self._ramp[0][0] < wake:
                wake = self._ramp[0][0]
            if held and now + HELD_RECHECK < wake:
                wake = now + HELD_RECHECK
            if next_status is not None and next_status < wake:
                wake = next_status
            burst = cpu() - woke  # the last wake-up's reads, then this one's timers
            self.busy += burst
            self.bursts.add(burst)
            ready = select(max(0.0, wake - clock()))
            woke = cpu()
            self.wakeups += 1
            if ready:
                now = clock()
                for key, _ in ready:
                    p = key.data
                    if p.closed:
                        continue
                    try:
                        p.on_readable(now)
                    except Exception:  # noqa: BLE001
                        self._failed(p, now, "read")
                        continue
                    self._schedule(p)

    def close_all(self, pause: float = LEAVE_PAUSE) -> None:
        """Every started player leaves the server (each gets its protocol's clean leave). A
        protocol whose players set `LEAVE_BATCH` leaves that many at a time, the loop serving the
        others for `pause` seconds in between (they go on acknowledging what the server sends)."""
        self._ramp.clear()
        self._held.clear()
        batches: list[list] = []
        at_once = []
        for p in self.players:
            size = getattr(p, "LEAVE_BATCH", None)
            if size is None:
                at_once.append(p)
            elif batches and batches[-1][0].proto == p.proto and len(batches[-1]) < size:
                batches[-1].append(p)
            else:
                batches.append([p])
        groups = [at_once] + batches
        for i, group in enumerate(groups):
            for p in group:
                self._unregister(p)
                try:
                    p.close(self.clock())
                except Exception:  # noqa: BLE001
                    self.errors.append(f"{p.proto} player {p.index}: close: {traceback.format_exc(limit=-1).strip()}")
            if group and i < len(groups) - 1:
                self.run(self.clock() + pause)
        self._heap.clear()
        self._ramp.clear()
        self.selector.close()
