"""One swarm player per protocol: a sans-IO core, its own socket(s), driven from a Script.

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
import random
import socket
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from headcast.app.swarm.motion import Script, Spot
from headcast.app.swarm.observer import Board, Marker, SeqLog
from headcast.netcode.icmp import icmp_error
from headcast.netcode.q3.client import LINKED, ClientConfig, Q3ClientCore
from headcast.netcode.q3.entities import player_entity
from headcast.netcode.q3.events import Disconnected as Q3Disconnected, EnteredWorld, SnapshotReceived
from headcast.netcode.q3.vrhead import yaw_offset

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
    _scheduled: float | None = None
    _fds: tuple[int, ...] = ()

    def __new__(cls, proto: str = "", *args, **kwargs):
        if cls is Player:
            try:
                cls = _CLASSES[proto]
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


class Q3Player(Player):
    """A Quake 3 VR client: Q3ClientCore (60 Hz usercmds, VR userinfo) over its own UDP socket."""

    proto = "q3"
    # Each leave makes ioq3 queue two reliable commands (a print, a configstring) to every other
    # client, and it drops one with more than 64 unacknowledged ("Server command overflow"): 32
    # players leaving in one server frame overflow the ones still to leave. 16 at a time, the
    # others served (acknowledging) in between, leave cleanly.
    LEAVE_BATCH = 16

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        self.core = Q3ClientCore(
            ClientConfig(name=f"hc{index}", vr=True, cmd_rate=RATES["q3"], pure_paks=server.pk3, connect_timeout=15.0)
        )
        self.intents = script.q3(variation.spot)
        self.marker: Marker | None = None  # (a Q3 player's board marker is a Marker)
        self.sock: socket.socket | None = None
        self._attempt_at = 0.0
        self.socket_errors = 0

    def filenos(self) -> list[int]:
        return [self.sock.fileno()] if self.sock is not None else []

    def server_info(self) -> dict:
        info = self.core._serverinfo  # the gamestate's serverinfo configstring
        return {
            "software": info.get("version"),
            "protocol": info.get("protocol"),
            "name": info.get("sv_hostname"),
            "map": info.get("mapname"),
        }

    def start(self, now: float) -> None:
        self.started_at = self._attempt_at = now
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setblocking(False)
            s.bind((self.var.source or "0.0.0.0", 0))
            s.connect((socket.gethostbyname(self.server.host), self.server.port))
        except OSError:
            s.close()
            raise
        self.sock = s
        self.core.connect(now)
        self._send(self.core.datagrams_to_send(now), now)

    def _send(self, dgrams: list[bytes], now: float) -> None:
        sock, metrics, i = self.sock, self.metrics, self.index
        assert sock is not None  # sends only between start and close
        for d in dgrams:
            try:
                sock.send(d)
            except OSError:
                self.socket_errors += 1  # a full buffer, an ICMP error: the protocol resends
                continue
            metrics.sent("q3", i, len(d), now)

    def on_readable(self, now: float) -> None:
        sock, core, metrics, i = self.sock, self.core, self.metrics, self.index
        if sock is None:
            return
        for _ in range(MAX_READS):
            try:
                data = sock.recv(65535)
            except BlockingIOError:
                break
            except OSError as e:
                if icmp_error(e):  # port/host/network unreachable (Windows: a ConnectionResetError)
                    self.socket_errors += 1
                    continue
                raise
            metrics.received("q3", i, len(data), now)
            core.receive_datagram(data, now)
        out = core.datagrams_to_send(now)
        if out:
            self._send(out, now)
        self._events(now)

    def next_deadline(self) -> float | None:
        return self.core._timer

    def on_timer(self, now: float) -> None:
        core = self.core
        timer = core._timer
        if timer is None or now < timer:
            return
        if core._state in LINKED:
            self.metrics.tick("q3", now - timer, now)
            intent = self.intents[self.script.index(self.motion_time(now))]
            angles = intent.angles
            if self.marker is not None:
                angles = (angles[0], self.marker.yaw(now, angles[1]), angles[2])
            head = intent.head
            if head is not None:
                head = (head[0], yaw_offset(head[1], angles[1]))
            core.set_input(angles, intent.forwardmove, intent.rightmove, intent.upmove, intent.user_buttons, 0, head)
        self._send(core.run_due(now, 8), now)
        self._events(now)

    def _events(self, now: float) -> None:
        core = self.core
        events = core.take_events()
        if not events:
            return
        board = self.var.board if self.var.observer else None
        for ev in events:
            if isinstance(ev, SnapshotReceived):
                self.metrics.broadcast("q3", self.index, now)
                if board is not None and board.senders:
                    snap = core._snapshot_at(ev.message_num)
                    if snap is not None:
                        ents = snap.entities
                        for cn in board.senders:
                            es = ents.get(cn)
                            p = player_entity(es) if es is not None else None
                            if p is not None and not p.dead:
                                board.saw_yaw(self.index, cn, p.angles[1], now)
                            else:  # outside the observer's PVS, or a corpse until it respawns
                                board.out_of_sight(self.index, cn)
            elif isinstance(ev, EnteredWorld):
                self._in(now, ev.client_num)
            elif isinstance(ev, Q3Disconnected):
                if not self.closed:
                    self._out(now, ev.reason)

    def close(self, now: float) -> None:
        if self.closed or self.sock is None:
            self.closed = True
            return
        self.closed = True
        self.core.close(now, "swarm stopped")
        self._send(self.core.datagrams_to_send(now), now)
        self.core.take_events()
        self._out(now, None)
        self.sock.close()
        self.sock = None


# ----------------------------------------------------------------------------------- NetSync


class NetSyncPlayer(Player):
    """A NetSync client: NetSyncClientCore over a DEALER (control), a DEALER (transform, protocol
    7+) and a SUB, all in the swarm's one ZeroMQ context (one I/O thread for every player).

    Poses go out at the send rate from the motion; the policy's rate cap is set a little above
    it, so a tick a few milliseconds early of the last one's grid is not skipped. Only an
    observer decodes room broadcasts; the others count them (a full room's broadcast decoded by
    every player would be the swarm's whole budget). Device-ID mappings are decoded until the
    player knows its clientNo."""

    proto = "netsync"
    context = None  # the shared zmq.Context, made on first use
    latency = JoinLatency()  # this process's recent joins: the retries' first wait
    # The loop starts a new NetSync player only while fewer than this many are waiting for their
    # number (loop.SwarmLoop: its join window): each join costs a loaded styly-netsync-server work
    # for every member of the room (network-variable syncs through its 1,024-message control
    # queue); joins faster than it answers overflow that queue and their mappings are dropped.
    JOIN_WINDOW = 8

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        from headcast.netcode.netsync.client import NetSyncClientCore
        from headcast.netcode.netsync.codec import HELLO_PROTOCOL, encode_client_hello

        # Random first: the server logs the first 8 characters of a deviceId.
        self.core = NetSyncClientCore(
            server.room,
            f"{uuid.uuid4().hex[:8]}-headcast-swarm-{index}",
            protocol=server.protocol,
            send_rate=min(60.0, RATES["netsync"] * 1.1),
        )
        self.frames = script.netsync(variation.spot)
        self.period = 1.0 / RATES["netsync"]
        self.marker: SeqLog | None = None  # (a NetSync player's board marker is a SeqLog)
        self._next: float | None = None
        self._attempt_at = 0.0
        self._socks: list = []
        self._last_rx: float | None = None
        self.silent = False
        self._hello = (
            encode_client_hello(self.core.device_id, False, server.protocol)
            if server.protocol >= HELLO_PROTOCOL
            else b""
        )
        self._hello_at = 0.0
        self._join_failed = False  # counted once per attempt
        self._retry_at: float | None = None
        self._retry_wait = 0.0
        self.retries = 0
        self._rng = random.Random(index)

    def filenos(self) -> list[int]:
        import zmq

        return [s.getsockopt(zmq.FD) for s in self._socks]

    def server_info(self) -> dict:
        v = self.core.server_version  # from the server's device-ID mapping
        return {
            "software": None if v is None else "styly-netsync-server " + ".".join(map(str, v)),
            "protocol": self.server.protocol,
            "room": self.server.room,
        }

    def start(self, now: float) -> None:
        import zmq

        if NetSyncPlayer.context is None:
            NetSyncPlayer.context = zmq.Context(io_threads=1)
            # ZeroMQ's default is 1023 sockets per context: 341 players of three sockets each.
            NetSyncPlayer.context.set(zmq.MAX_SOCKETS, ZMQ_MAX_SOCKETS)
        ctx = NetSyncPlayer.context
        self.started_at = self._attempt_at = now
        host, srv = self.server.host, self.server
        room = self.core.room_topic
        self._room = room

        def sock(kind):
            s = ctx.socket(kind)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.RECONNECT_IVL, 100)
            s.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
            self._socks.append(s)
            return s

        self.dealer = sock(zmq.DEALER)
        self.dealer.setsockopt(zmq.SNDHWM, 10)
        self.dealer.setsockopt(zmq.RCVHWM, 10)
        self.dealer.setsockopt(zmq.IMMEDIATE, 1)
        self._control = f"tcp://{host}:{srv.port}"
        self.dealer.connect(self._control)
        self._retry_wait = self.latency.first_retry()
        self._retry_at = now + self._retry_wait * (1.0 + self._rng.uniform(-RETRY_JITTER, RETRY_JITTER))
        self.sub = sock(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, 8)
        self.sub.setsockopt(zmq.SUBSCRIBE, room)
        self.sub.connect(f"tcp://{host}:{srv.pub_port or srv.port + 1}")
        if self.core.uses_transform_lane:
            self.transform = sock(zmq.DEALER)
            self.transform.setsockopt(zmq.SNDHWM, 10)
            self.transform.setsockopt(zmq.IMMEDIATE, 1)
            self.transform.connect(f"tcp://{host}:{srv.transform_port or srv.port + 2}")
        else:
            self.transform = self.dealer
        self._next = now

    def _send(self, sock, msg: bytes, now: float) -> bool:
        import zmq

        try:
            sock.send(self._room, zmq.SNDMORE | zmq.NOBLOCK)
        except zmq.Again:
            return False
        sock.send(msg, zmq.NOBLOCK)
        self.metrics.sent("netsync", self.index, len(msg) + len(self._room), now)
        return True

    def on_readable(self, now: float) -> None:
        import zmq

        if self.closed:
            return
        core, metrics, i = self.core, self.metrics, self.index
        POLLIN = zmq.POLLIN
        for s in (self.dealer, self.sub):
            for _ in range(MAX_READS):
                if not s.getsockopt(zmq.EVENTS) & POLLIN:
                    break
                frames = s.recv_multipart(zmq.NOBLOCK)
                n = sum(len(f) for f in frames)
                metrics.received("netsync", i, n, now)
                self._last_rx = now
                if s is self.sub:
                    metrics.broadcast("netsync", i, now)
                    if self.var.observer:
                        core.receive_broadcast(now, frames)
                elif not self.joined or self.var.observer:
                    core.receive_unicast(now, frames)
        if self.transform is not self.dealer:
            self.transform.getsockopt(zmq.EVENTS)  # the FD's edge: re-armed only once its state is read
        self._events(now)

    def next_deadline(self) -> float | None:
        return self._next

    def on_timer(self, now: float) -> None:
        if self.closed or self._next is None or now < self._next:
            return
        late = now - self._next
        self._next += self.period
        if self._next <= now:
            self._next = now + self.period
        core = self.core
        if self.joined:
            self.metrics.tick("netsync", late, now)
        frame = self.frames[self.script.index(self.motion_time(now))]
        msg = core.pose_message(now, frame)
        if msg is not None:
            if self._send(self.transform, msg, now):
                if self.marker is not None:
                    self.marker.add(core.policy.pose_seq, now)
            else:
                core.send_failed("no server connection or queue full")
        if core.uses_transform_lane and now >= self._hello_at:
            # The hello heartbeat alone: the core's protocol probes (a player not mapped within
            # 2 s asks in every protocol) would add six messages a second per player exactly
            # when a loaded server is slow to map them.
            if self._send(self.dealer, self._hello, now):
                self._hello_at = now + HELLO_PERIOD
        if not self.joined and self._retry_at is not None and now >= self._retry_at:
            self._ask_again(now)
        if not self.joined and not self._join_failed and now - self._attempt_at >= NETSYNC_JOIN_TIMEOUT:
            self._join_failed = True
            self.metrics.join_failed(
                "netsync",
                self.index,
                f"no device-ID mapping within {NETSYNC_JOIN_TIMEOUT:g} s (registered, never told its clientNo)",
                now,
            )
        core.handle_timer(now)
        if self._last_rx is not None:
            silent = now - self._last_rx > core.silence_timeout
            if silent and not self.silent and self.joined:
                self._out(now, f"server silent for {core.silence_timeout:g} s")
            self.silent = silent
        # Sending can consume the sockets' FD edges: read what came meanwhile now.
        self.on_readable(now)

    def _ask_again(self, now: float) -> None:
        """No device-ID mapping yet (a loaded server drops control messages when its queue is
        full, and sends a client its mapping only when it registers): register again on a new
        control connection (ZeroMQ gives it a new identity at the server's ROUTER, which the server
        treats as a reconnect and answers with the mapping), hello at once; the next ask waits
        twice as long."""
        self.retries += 1
        try:
            self.dealer.disconnect(self._control)
        except Exception:  # noqa: BLE001 - not connected yet: connecting again is what we want
            pass
        self.dealer.connect(self._control)
        self._hello_at = now
        self._retry_wait = min(RETRY_MAX, self._retry_wait * 2.0)
        self._retry_at = now + self._retry_wait * (1.0 + self._rng.uniform(-RETRY_JITTER, RETRY_JITTER))

    def _events(self, now: float) -> None:
        from headcast.netcode.netsync.client import Joined, PeerPose, ProtocolMismatch

        events = self.core.events()
        if not events:
            return
        board = self.var.board if self.var.observer else None
        for ev in events:
            if isinstance(ev, PeerPose):
                if board is not None:
                    board.saw_seq(self.index, ev.client_no, ev.body.pose_seq, now)
            elif isinstance(ev, Joined):
                if not self.joined:
                    if self._retry_at is not None:  # the first number of this start: a join's latency
                        self.latency.add(now - self._attempt_at)
                    self._retry_at = None
                    self._in(now, ev.client_no)
                    self._join_failed = False  # a later attempt (after a kick) counts its own
            elif isinstance(ev, ProtocolMismatch):
                self._out(now, ev.message)

    def close(self, now: float) -> None:
        if self.closed:
            return
        self.closed = True
        self._out(now, None)
        for s in self._socks:
            s.close(linger=0)
        self._socks = []


# ------------------------------------------------------------------------------- Sauerbraten


class SauerPlayer(Player):
    """A Sauerbraten client: SauerClientCore over its own ENet host (one peer, 3 channels).
    N_POS at 30 Hz while alive; only an observer parses the relayed positions, the others count
    the position packets (the core's liveness still sees them)."""

    proto = "sauer"

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        from headcast.netcode.sauer.client import SauerClientCore

        self.core = SauerClientCore(name=f"hc{index}"[:15])
        self.poses = script.sauer(variation.spot)
        self.marker: Marker | None = None  # (a Sauerbraten player's board marker is a Marker)
        self.host: Any = None  # an enet.Host (pyenet has no types)
        self.peer = None
        self._connected = False
        self._attempt_at = 0.0
        self._service_at = 0.0

    def filenos(self) -> list[int]:
        return [self.host.socket.fileno()] if self.host is not None else []

    def server_info(self) -> dict:
        from headcast.netcode.sauer.protocol import PROTOCOL_VERSION

        return {
            "protocol": PROTOCOL_VERSION,  # the client stops on any other (N_SERVINFO)
            "name": self.core.description,
        }

    def start(self, now: float) -> None:
        import enet

        self.started_at = self._attempt_at = now
        bind = enet.Address(self.var.source.encode(), 0) if self.var.source else None
        self.host = enet.Host(bind, 1, 3, 0, 0)
        self._address = enet.Address(self.server.host.encode("idna"), self.server.port)
        self.on_timer(now)

    def _service(self, now: float) -> None:
        import enet

        from headcast.netcode.sauer.protocol import CHAN_POS

        core, host, metrics, i = self.core, self.host, self.metrics, self.index
        observer = self.var.observer
        for _ in range(MAX_READS):
            ev = host.service(0)
            kind = ev.type
            if kind == enet.EVENT_TYPE_NONE:
                break
            if kind == enet.EVENT_TYPE_RECEIVE:
                data = ev.packet.data
                metrics.received("sauer", i, len(data), now)
                if ev.channelID == CHAN_POS:
                    metrics.broadcast("sauer", i, now)
                    if not observer:
                        data = b""  # counted, not parsed: the core still sees the server alive
                core.receive(ev.channelID, data, now)
            elif kind == enet.EVENT_TYPE_CONNECT:
                self._connected = True
                core.connection_made(now)
            elif kind == enet.EVENT_TYPE_DISCONNECT:
                was, self.peer, self._connected = self._connected, None, False
                core.connection_lost(ev.data if was else None, now)
        self._service_at = now

    def _flush(self, now: float) -> None:
        import enet

        core = self.core
        if self.peer is None and core.connect_due(now):
            self.peer = self.host.connect(self._address, 3, 0)
            self._connected = False
            core.connection_started(now)
        due = core.position_due_at
        if due is not None and now >= due and self.joined:
            self.metrics.tick("sauer", now - due, now)
            pose = self.poses[self.script.index(self.motion_time(now))]
            if pose is not None and self.marker is not None:
                pose = replace(pose, yaw=self.marker.yaw(now, pose.yaw))
            core.pose = pose
        out = core.packets_to_send(now)
        if core.take_drop() is not None:
            self._drop()
        peer = self.peer
        if peer is not None and self._connected and out:
            for o in out:
                peer.send(o.channel, enet.Packet(o.data, enet.PACKET_FLAG_RELIABLE if o.reliable else 0))
                self.metrics.sent("sauer", self.index, len(o.data), now)
            self.host.flush()
        self._events(now)

    def _drop(self) -> None:
        peer, self.peer, self._connected = self.peer, None, False
        if peer is not None:
            peer.disconnect_now(0)
            self.host.flush()

    def on_readable(self, now: float) -> None:
        if self.host is None:
            return
        self._service(now)
        self._flush(now)

    def next_deadline(self) -> float | None:
        if self.host is None:
            return None
        t = self.core.get_timer()
        if not self.joined:  # ENet's handshake resends need servicing too
            t = min(t, self._service_at + JOIN_TICK) if t is not None else self._service_at + JOIN_TICK
        return t

    def on_timer(self, now: float) -> None:
        if self.host is None:
            return
        self._service(now)
        self._flush(now)

    def _events(self, now: float) -> None:
        from headcast.netcode.sauer.client import Disconnected, Spawned

        core = self.core
        board = self.var.board if self.var.observer else None
        while (ev := core.next_event()) is not None:
            if isinstance(ev, Spawned):
                if not self.joined:
                    self._in(now, core.cn)
            elif isinstance(ev, Disconnected):
                if not self.closed:
                    self._out(now, ev.text)
        if board is not None and board.senders:
            for cn in board.senders:
                p = core.players.get(cn)
                if p is not None and p.record is not None and p.record_at == now:
                    board.saw_yaw(self.index, cn, p.record.yaw, now)

    def close(self, now: float) -> None:
        if self.closed:
            return
        self.closed = True
        if self.host is None:
            return
        self.core.close(now)
        self._drop()
        while self.core.next_event() is not None:
            pass
        self._out(now, None)
        self.host = None


_CLASSES = {"q3": Q3Player, "netsync": NetSyncPlayer, "sauer": SauerPlayer}


def close_context() -> None:
    """End the NetSync players' shared ZeroMQ context (after every player closed)."""
    if NetSyncPlayer.context is not None:
        NetSyncPlayer.context.term()
        NetSyncPlayer.context = None
