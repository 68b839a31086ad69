"""The swarm players' shared API (the three protocols' players are in q3.py, netsync.py, sauer.py).

The API (what `loop.SwarmLoop` and the Locust user both drive):

    p = Player(proto, index, server, script, metrics, variation)   # "q3" | "netsync" | "sauer"
    p.start(now)             # open the socket(s), first handshake packet out
    p.filenos()              # descriptors to watch for reading (fileno(): the first)
    p.on_readable(now)       # drain the socket(s), feed the core, answer
    p.next_deadline()        # the next time on_timer must run (None: nothing scheduled)
    p.on_timer(now)          # run what is due: the protocol's tick (input from the motion), resends
    p.close(now)             # leave cleanly (Q3: three `disconnect`; Sauerbraten: an ENet
                             # disconnect; NetSync has no leave message: the sockets close)
    p.joined, p.client_number

`now` is one monotonic clock in seconds for every call. Nothing here sleeps, spawns a thread or
blocks. Every message in or out is counted in `metrics` (`SwarmMetrics`); each protocol tick
reports its lateness (`metrics.tick`). A player with `variation.observer` also matches what the
server relays of the marked players (`variation.marked`) on its protocol's `observer.Board`.

Per-player variation: a time offset into the motion, a speed (the motion's clock runs that much
faster), a spot (its rig starts there: position and facing in the room) and, for a server on
loopback, its own source address 127.0.x.y (ioq3 answers 10 getchallenges per address and then
one a second, and lets sv_clientsPerIp clients in from one address).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from headcast.app.swarm.motion import Script, Spot
from headcast.app.swarm.observer import Board, Marker, SeqLog

PROTOCOLS = ("q3", "netsync", "sauer")
RATES = {"q3": 60.0, "netsync": 10.0, "sauer": 30.0}  # the protocols' own send rates
MAX_READS = 256  # datagrams / messages per socket per on_readable: a flood is bounded
JOIN_TICK = 0.05  # service interval before a player is in (handshake resends, ENet)
NETSYNC_JOIN_TIMEOUT = 10.0  # a NetSync player not mapped by then counts a failed join (once)
# A NetSync player whose device-ID mapping has not come asks again (a new control connection:
# the server sends a reconnecting client its mapping). The first ask waits RETRY_FACTOR × the p90
# of this process's recent joins (the server's measured latency), within RETRY_FIRST; each later
# one twice the last, at most RETRY_MAX, ±RETRY_JITTER so the asks of a wave spread out.
RETRY_FACTOR = 4.0
RETRY_FIRST = (1.5, 5.0)
RETRY_MAX = 4.0
RETRY_JITTER = 0.25
HELLO_PERIOD = 1.0  # NetSync protocol 7+: hello once a second (the official heartbeat)
ZMQ_MAX_SOCKETS = 3 * 5000 + 64  # three per NetSync player, for the CLI's most players


@dataclass(frozen=True)
class Server:
    """Where a protocol's server is: Q3 and Sauerbraten host and port; NetSync the control
    (dealer) port, the PUB port and the transform port, the room, the protocol."""

    host: str
    port: int
    pub_port: int | None = None
    transform_port: int | None = None
    room: str = "default_room"
    protocol: int = 8
    pk3: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Variation:
    offset: float = 0.0  # seconds into the motion at start
    speed: float = 1.0  # the motion's clock rate for this player
    spot: Spot = Spot(0.0, 0.0, 0.0)
    source: str | None = None  # local address to send from (None: the kernel's choice)
    observer: bool = False  # match what the server relays of the marked players
    marked: bool = False  # send updates the observers can match (observer.py)
    board: Board | None = None  # the protocol's board (observers and marked players)


class JoinLatency:
    """The server's join latency as this process measured it: the last `keep` joins of a
    protocol (seconds from a player's start to its number). `p90()` is None before any join."""

    def __init__(self, keep: int = 64) -> None:
        self.keep = keep
        self.recent: list[float] = []

    def add(self, seconds: float) -> None:
        self.recent.append(seconds)
        if len(self.recent) > self.keep:
            del self.recent[0]

    def p90(self) -> float | None:
        if not self.recent:
            return None
        ordered = sorted(self.recent)
        return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]

    def first_retry(self) -> float:
        """Seconds an unmapped player waits before it asks again for the first time."""
        p90 = self.p90()
        lo, hi = RETRY_FIRST
        return lo if p90 is None else min(hi, max(lo, RETRY_FACTOR * p90))


def _on_loopback(server_host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(server_host)).is_loopback
    except (OSError, ValueError):
        return False


@functools.lru_cache(maxsize=None)
def bindable(address: str) -> bool:
    """Whether a UDP socket can bind `address` here: Linux and Windows answer on all of 127/8,
    macOS's lo0 only on 127.0.0.1 (and the aliases an administrator added)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((address, 0))
    except OSError:
        return False
    return True


def source_address(index: int, server_host: str) -> str | None:
    """127.0.x.y for player `index` when the server is on loopback (127.0.0.2 upwards), else None;
    None too where that address cannot be bound (macOS): the player sends from 127.0.0.1, on a
    port of its own (loopback_note says what that costs)."""
    if not _on_loopback(server_host):
        return None
    n = 2 + index
    address = f"127.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF}"
    return address if bindable(address) else None


def loopback_note(server_host: str, players: int) -> str | None:
    """A line for the terminal when some of `players` players of a server on loopback cannot have
    their own source address (macOS), else None."""
    if not _on_loopback(server_host):
        return None
    shared = sum(1 for i in range(players) if source_address(i, server_host) is None)
    if not shared:
        return None
    return (
        f"{shared} of {players} players send from 127.0.0.1 (each on its own port): 127.0.0.2 and up cannot "
        "be bound here (macOS: lo0 has only 127.0.0.1; add aliases with `sudo ifconfig lo0 alias 127.0.0.2 "
        "up` and so on). A Quake 3 server lets sv_clientsPerIp of them in and, after 10, answers one "
        "getchallenge a second from one address"
    )


class Player:
    """The base of the three players; `Player(proto, …)` makes the protocol's own."""

    proto = ""
    # The swarm loop's bookkeeping (app/swarm/loop.py): the deadline of this player's heap entry
    # and the descriptors registered for it.
    scheduled_at: float | None = None
    registered_fds: tuple[int, ...] = ()

    def __new__(cls, proto: str = "", *args, **kwargs):
        if cls is Player:
            try:
                from headcast.app.swarm.players import CLASSES

                cls = CLASSES[proto]
            except KeyError:
                raise ValueError(f"protocol {proto!r} is not one of {', '.join(PROTOCOLS)}") from None
        return object.__new__(cls)

    def __init__(self, proto: str, index: int, server: Server, script: Script, metrics, variation: Variation) -> None:
        self.index = index
        self.server = server
        self.script = script
        self.metrics = metrics
        self.var = variation
        self.joined = False
        self.got_in = False  # joined at some time in the run (a full server: never)
        self.client_number: int | None = None
        self.started_at: float | None = None
        self.closed = False
        self.marker: Marker | SeqLog | None = None

    def filenos(self) -> list[int]:
        raise NotImplementedError

    # What each protocol's player does (the driver's calls: the swarm loop, the Locust user).
    def start(self, now: float) -> None:
        raise NotImplementedError

    def on_readable(self, now: float) -> None:
        raise NotImplementedError

    def next_deadline(self) -> float | None:
        raise NotImplementedError

    def on_timer(self, now: float) -> None:
        raise NotImplementedError

    def close(self, now: float) -> None:
        raise NotImplementedError

    def server_info(self) -> dict:
        """What the server said of itself in the handshake: its software and version, the
        protocol, its name (the report names the server it measured)."""
        return {}

    def fileno(self) -> int:
        return self.filenos()[0]

    # The transports' metrics hook (netcode/driver.py): set `client.metrics = self.count` and
    # `self.now` to the time of the call in progress before each call into the client.
    broadcast_counter = ""  # the transport's counter for one relayed update (SwarmMetrics.broadcast)
    now = 0.0
    send_errors = 0  # sends the socket refused (a full buffer, an ICMP error): the protocol resends

    def count(self, name: str, amount: int) -> None:
        """A transport's traffic into the swarm's metrics, at `self.now`."""
        if name == "sent_bytes":
            self.metrics.sent(self.proto, self.index, amount, self.now)
        elif name == "received_bytes":
            self.metrics.received(self.proto, self.index, amount, self.now)
        elif name == self.broadcast_counter:
            self.metrics.broadcast(self.proto, self.index, self.now)
        elif name == "send_errors":
            self.send_errors += amount

    def motion_time(self, now: float) -> float:
        return self.var.offset + (now - (self.started_at or now)) * self.var.speed

    # the board's bookkeeping, shared by the three
    def _in(self, now: float, client_number: int) -> None:
        self.joined = self.got_in = True
        self.client_number = client_number
        self.metrics.joined(self.proto, self.index, now - self._attempt_at, now)
        seen = getattr(self.metrics, "server_seen", None)
        if seen is not None and self.proto not in self.metrics.servers:
            seen(self.proto, self.server_info())
        board = self.var.board
        if board is not None and self.var.marked:
            self.marker = Marker() if self.proto != "netsync" else SeqLog()
            board.register(client_number, self.marker)

    def _out(self, now: float, reason: str | None) -> None:
        """Out of the game: kicked/dropped (`reason`), or left (None)."""
        board = self.var.board
        if board is not None and self.marker is not None and self.client_number is not None:
            board.unregister(self.client_number, self.marker)
        self.marker = None
        if self.joined:
            if reason is None:
                self.metrics.left(self.proto, self.index, now)
            else:
                self.metrics.kicked(self.proto, self.index, reason, now)
        elif reason is not None:
            self.metrics.join_failed(self.proto, self.index, reason, now)
        self.joined = False
        self._attempt_at = now


# ---------------------------------------------------------------------------------------- Q3
