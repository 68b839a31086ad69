"""SwarmMetrics that also reports to Locust: every figure a player counts becomes a Locust
request event, so Locust's stats, web UI, CSV and master/worker aggregation show the swarm.

What each Locust row (type = the protocol) means:

| name        | one event per                  | response time               | length | failure                |
|-------------|--------------------------------|-----------------------------|--------|------------------------|
| send        | message a player sent          | 0                           | bytes  | –                      |
| receive     | message a player received      | 0                           | bytes  | –                      |
| broadcast   | snapshot/room broadcast a player received | ms since that player's previous one | 0 | – |
| relay       | update an observer saw relayed | our send → observer's read  | 0      | a lost update           |
| join        | player in the game / room      | connect → in                | 0      | a failed join (reason)  |
| kick        | player kicked or dropped       | 0                           | 0      | always (the reason)     |
| slipped tick (ours) | tick later than `slip_after` | how late             | 0      | – (ours, not the server's) |

Locust's failure % of `relay` is the loss, its `broadcast` percentiles the gaps players see.
Each row's req/s is its own rate (sends, receives, broadcasts per second); Locust's Aggregated
row counts the sends only (locustfile.py: `total_counts_sends`), so the RPS in its header is
the messages the players sent per second, not sends, receives and broadcasts added up.
This module imports nothing from locust: it is handed the `request` event's `fire`, so it can be
used (and tested) without gevent's monkey-patching.
"""

from __future__ import annotations

from typing import Callable

from headcast.app.swarm.metrics import SwarmMetrics


class LostUpdate(Exception):
    """A relayed update an observer should have seen and never did."""


class Kicked(Exception):
    """The server dropped a player; the message is its reason."""


class JoinFailed(Exception):
    """A player did not get in; the message is why."""


SLIPPED_TICK = "slipped tick (ours)"


class LocustMetrics(SwarmMetrics):
    def __init__(
        self, protocols: list[str], started: float, fire: Callable[..., None], slip_after: float = 0.005
    ) -> None:
        super().__init__(protocols, started, slip_after)
        self._fire = fire
        self._last_bc: dict[tuple[str, int], float] = {}

    def _event(self, proto: str, name: str, ms: float = 0.0, length: int = 0, exc: Exception | None = None) -> None:
        self._fire(request_type=proto, name=name, response_time=ms, response_length=length, exception=exc, context={})

    def sent(self, proto, player, nbytes, now):
        super().sent(proto, player, nbytes, now)
        self._event(proto, "send", 0.0, nbytes)

    def received(self, proto, player, nbytes, now):
        super().received(proto, player, nbytes, now)
        self._event(proto, "receive", 0.0, nbytes)

    def broadcast(self, proto, player, now):
        super().broadcast(proto, player, now)
        key = (proto, player)
        prev = self._last_bc.get(key)
        self._last_bc[key] = now
        if prev is not None:  # a player's first broadcast has no gap before it
            self._event(proto, "broadcast", (now - prev) * 1000.0)

    def relay(self, proto, seconds, now=None):
        super().relay(proto, seconds, now)
        self._event(proto, "relay", seconds * 1000.0)

    def lost(self, proto, n=1, now=None):
        super().lost(proto, n, now)
        for _ in range(n):
            self._event(proto, "relay", 0.0, 0, LostUpdate("relayed update never seen by the observer"))

    def tick(self, proto, late, now=None):
        super().tick(proto, late, now)
        if late > self.slip_after:
            self._event(proto, SLIPPED_TICK, late * 1000.0)

    def joined(self, proto, player, seconds, now=None):
        super().joined(proto, player, seconds, now)
        self._event(proto, "join", seconds * 1000.0)

    def join_failed(self, proto, player, reason, now=None):
        super().join_failed(proto, player, reason, now)
        self._event(proto, "join", 0.0, 0, JoinFailed(reason))

    def kicked(self, proto, player, reason, now=None):
        super().kicked(proto, player, reason, now)
        self._last_bc.pop((proto, player), None)
        self._event(proto, "kick", 0.0, 0, Kicked(reason))

    def left(self, proto, player, now=None):
        super().left(proto, player, now)
        self._last_bc.pop((proto, player), None)
