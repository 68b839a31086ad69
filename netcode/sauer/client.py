"""The Sauerbraten client as a sans-IO state machine (docs/protocols/sauerbraten.md#connect, #staying),
in the shape of netcode/driver.py's `Core`.

The core never touches a socket or the clock. `connect(now)` starts it; the transport feeds it what
ENet did (`connection_made(now)`, `receive_datagram(Incoming(channel, data), now)`,
`connection_lost(reason, now)`), takes what to send (`datagrams_to_send(now)`: `Outgoing(channel,
data, reliable)`), calls `handle_timer(now)` at `get_timer()`, and reads `next_event()`
(events.py). Whether an ENet connection should exist follows from `state` alone
(`wants_connection`): the transport opens one in CONNECTING and drops its peer in WAITING or
CLOSED (the core has then already reported why).

One connection:
  ENet connect → N_SERVINFO (our client number, protocol 260, session id, password needed?) →
  N_CONNECT (name, model, password hashed with cn and session id) → N_WELCOME … N_SPAWNSTATE →
  N_SPAWN (the lifesequence as received) → N_POS on channel 0 at 30 Hz while alive.
Every N_SPAWNSTATE for our client number (the first one, a map change, a respawn after a death)
sets the lifesequence whose parity each N_POS carries; after a death we ask for a spawn
(N_TRYSPAWN) until the server sends one. N_PING goes out every 250 ms from N_SERVINFO on (the
game's rate); its N_PONG gives the ping. A server that goes silent is dropped and reconnected;
so is a connection the server closes (its reason, DISC_*, is reported), with backoff; a refusal
retrying cannot change (a wrong password, another protocol) stops the client.

Every change of `state` is a row of TRANSITIONS (what happened → the next state); a message that
has no row in the current state is ignored, as the game ignores it.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from ..counters import CoreCounters
from ..drops import DropCounter
from . import messages as m
from .errors import ClientError, IllegalTransition
from .events import (
    Disconnected,
    Event,
    Killed,
    MapChanged,
    PlayerJoined,
    PlayerLeft,
    ServerBack,
    ServerSilent,
    ServerText,
    Spawned,
    Welcomed,
)
from .npos import NPos, Pose as Pose, pose_record, record_of  # Pose: re-exported (its home is npos.py)
from .protocol import (
    CHAN_MSG,
    CHAN_POS,
    CS_ALIVE,
    CS_DEAD,
    CS_EDITING,
    CS_SPAWNING,
    CS_SPECTATOR,
    DISC_NONE,
    DISC_PASSWORD,
    MAXNAMELEN as MAXNAMELEN,  # re-exported: its home is protocol.py (cheap for the config check)
    PROTOCOL_VERSION,
    disconnect_text,
    mode_name,
)
from .tiger import hash_password
from .wire import encode_cube

POS_INTERVAL = 1 / 30  # the game sends its position at most every 33 ms
PING_INTERVAL = 0.25  # and N_PING every 250 ms
SILENT_AFTER = 2.0  # no packet for this long (pongs come 4 times a second): "server silent"
MAX_PLAYERS = 256  # the game's 128 clients and its bots, with room: client numbers are the server's
MAX_EVENTS = 4096  # events kept for a caller that does not drain them
LOST_AFTER = 6.0  # ...and for this long (the server drops an unserviced client after ~5.5 s): reconnect
CONNECT_TIMEOUT = 6.0  # ENet connect, then N_SERVINFO and N_WELCOME, each within this
TRYSPAWN_AFTER = 1.0  # after our death, ask for a spawn this long after…
TRYSPAWN_EVERY = 2.0  # …and again while still dead (ctf and co. make us wait)
BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0)


class State(Enum):
    IDLE = "idle"  # not started (connect() not called)
    CONNECTING = "connecting"  # ENet connecting
    HANDSHAKE = "handshake"  # ENet up, waiting for N_SERVINFO
    JOINING = "joining"  # N_CONNECT sent, waiting for N_WELCOME
    LOADING = "loading"  # welcomed, no spawn yet (or a map change)
    ALIVE = "alive"  # spawned: positions go out
    DEAD = "dead"  # asking for a spawn
    SPECTATOR = "spectator"
    WAITING = "waiting"  # disconnected, reconnecting later
    CLOSED = "closed"  # stopped for good


class Step(Enum):
    """What moves the state machine (the columns of TRANSITIONS)."""

    CONNECT = "connect"  # connect(), or a reconnect falling due
    ENET_UP = "ENet connected"
    SERVINFO = "N_SERVINFO"  # of our protocol: N_CONNECT answers it
    WELCOME = "N_WELCOME"
    MAPCHANGE = "N_MAPCHANGE"
    SPAWN = "N_SPAWNSTATE"  # for us: N_SPAWN answers it
    DIE = "died"  # N_DIED / N_FORCEDEATH for us
    SPECTATE = "spectator on"
    UNSPECTATE = "spectator off"  # back in the game, dead until a spawn
    LOST = "lost"  # the connection ended, a reconnect scheduled
    STOP = "stop"  # ended for good: a refusal retrying cannot change, or close()


IN_GAME = (State.ALIVE, State.DEAD, State.SPECTATOR, State.LOADING)
# States in which an ENet connection exists (or is being opened).
WITH_CONNECTION = (State.CONNECTING, State.HANDSHAKE, State.JOINING, *IN_GAME)
_PLAYING = (State.LOADING, State.ALIVE, State.DEAD)

S = State
# (state, what happened) → the next state. The one place the state changes (SauerClientCore._go).
TRANSITIONS: dict[tuple[State, Step], State] = {
    (S.IDLE, Step.CONNECT): S.CONNECTING,
    (S.WAITING, Step.CONNECT): S.CONNECTING,
    (S.CONNECTING, Step.ENET_UP): S.HANDSHAKE,
    (S.HANDSHAKE, Step.SERVINFO): S.JOINING,
    (S.JOINING, Step.WELCOME): S.LOADING,
    **{(st, Step.MAPCHANGE): S.LOADING for st in _PLAYING},
    (S.SPECTATOR, Step.MAPCHANGE): S.SPECTATOR,
    **{(st, Step.SPAWN): S.ALIVE for st in IN_GAME},
    **{(st, Step.DIE): S.DEAD for st in _PLAYING},
    **{(st, Step.SPECTATE): S.SPECTATOR for st in IN_GAME},
    (S.SPECTATOR, Step.UNSPECTATE): S.DEAD,
    **{(st, Step.LOST): S.WAITING for st in WITH_CONNECTION},
    **{(st, Step.STOP): S.CLOSED for st in State if st is not S.CLOSED},
}
del S


@dataclass(frozen=True, slots=True)
class Incoming:
    """What ENet received: `data` on `channel` (0 positions, 1 messages, 2 files)."""

    channel: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Outgoing:
    """What to hand ENet: `data` on `channel`, reliable or not."""

    channel: int
    data: bytes
    reliable: bool


# --- other players ----------------------------------------------------------------------------


@dataclass
class RemotePlayer:
    """Another client (or bot) as the game tracks it: its records are accepted only while its
    lifesequence is known (≥ 0), matches the record's parity, and it is not dead."""

    cn: int
    name: str = ""
    team: str = ""
    model: int = 0
    lifesequence: int = 0
    state: int = CS_ALIVE
    bot: bool = False
    ping: int = 0
    record: NPos | None = None  # the latest accepted record
    record_at: float | None = None
    records: int = 0  # accepted
    rejected: int = 0  # dropped as the game drops them (unknown parity, dead)


@dataclass(eq=False)
class Counters(CoreCounters):
    """What the core counted (`counters["packets_in"]` as well as `counters.packets_in`)."""

    packets_in: int = 0
    packets_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    positions_sent: int = 0
    position_bytes: int = 0
    connects: int = 0
    spawns: int = 0
    deaths: int = 0
    drops: Counter[str] = field(default_factory=DropCounter)  # normalised, capped (netcode/drops.py)


class SauerClientCore:
    """`name` as the game keeps it (≤ 15 characters of the cube charset), `model` the player model
    number, `password` the server's (serverpass), `reconnect` whether a lost connection is made
    again. `read_positions` False: the other players' positions (channel 0) are counted and keep
    the server alive, not parsed (a load generator's player that watches no one)."""

    def __init__(
        self,
        name: str = "headcast",
        model: int = 0,
        password: str = "",
        *,
        reconnect: bool = True,
        read_positions: bool = True,
    ) -> None:
        try:
            encode_cube(name)
            self._password = encode_cube(password)
        except ValueError as e:
            raise ClientError(str(e)) from None
        if not name or len(name) > MAXNAMELEN:
            raise ClientError(f"a Sauerbraten name has 1..{MAXNAMELEN} characters: {name!r}")
        self.name, self.model, self.reconnect = name, model, reconnect
        self.read_positions = read_positions
        self._state = State.IDLE
        self._counters = Counters()
        self.cn = -1
        self.sessionid = 0
        self.description = ""
        self.server_has_password = False
        self.map = ""
        self.mode = 0
        self.lifesequence = -1
        self.ping_ms: float | None = None
        self.players: dict[int, RemotePlayer] = {}
        self.pose: Pose | None = None  # None: nothing to send (tracking lost)
        self._last_record: NPos | None = None  # last_record, once read (None: not yet, or none sent)
        self._last_data: bytes | None = None  # the bytes of our last record (last_record is read from them)
        self.last_disconnect: Disconnected | None = None
        self.stop_reason = ""
        self._events: deque[Event] = deque(maxlen=MAX_EVENTS)  # an undrained core keeps the newest
        self._out: list[Outgoing] = []
        self._connect_at: float | None = None  # WAITING: when the next attempt is due
        self._attempt = 0
        self._phase_deadline: float | None = None
        self._next_ping: float | None = None
        self._next_pos: float | None = None
        self._next_tryspawn: float | None = None
        self._last_rx: float | None = None
        self._silent = False
        self._spawned_here = False  # spawned at least once in this connection
        self._welcomed = False  # N_WELCOME seen, its N_MAPCHANGE not yet
        self._killer = ""

    # --- the driver API (netcode/driver.py Core) ----------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    @property
    def counters(self) -> Counters:
        return self._counters

    @property
    def wants_connection(self) -> bool:
        """Whether an ENet connection should exist now (the transport opens one in CONNECTING and
        drops the one it has otherwise)."""
        return self._state in WITH_CONNECTION

    def connect(self, now: float) -> None:
        """Start: the transport opens the ENet connection (3 channels) now."""
        self._go(Step.CONNECT)
        self._connection_started(now)

    def connection_made(self, now: float) -> None:
        """ENet's CONNECT event: the server took the connection; N_SERVINFO comes next."""
        if self._allowed(Step.ENET_UP):
            self._go(Step.ENET_UP)
            self._last_rx = now
            self._phase_deadline = now + CONNECT_TIMEOUT

    def connection_lost(self, reason: int | None, now: float) -> None:
        """ENet's DISCONNECT event: `reason` the server's DISC_* code (the event's data), or None
        when a connect attempt ran out (nothing answered)."""
        if self._state not in WITH_CONNECTION:
            return
        if reason is None:
            text = "no answer (ENet connect timed out)"
        elif self._state in (State.CONNECTING, State.HANDSHAKE) and reason == DISC_NONE:
            text = "the server closed the connection"
        else:
            text = f"server disconnected us: {disconnect_text(reason)}"
        # a password refusal stays one however often we ask (the server's password is not ours)
        self._end(now, text, reason, fatal=reason == DISC_PASSWORD)

    def get_timer(self, positions: bool = True) -> float | None:
        """When handle_timer next has something to do; `positions` False: leaving the position
        ticks out (an application that sends them itself, take_position: its polls wait for the
        pings, spawn requests and silences only)."""
        timers = [
            t
            for t in (
                self._connect_at if self._state is State.WAITING else None,
                self._phase_deadline,
                self._next_ping,
                self._next_pos if positions else None,
                self._next_tryspawn,
                None if self._last_rx is None else self._last_rx + (LOST_AFTER if self._silent else SILENT_AFTER),
            )
            if t is not None
        ]
        return min(timers) if timers else None

    def handle_timer(self, now: float, positions: bool = True) -> None:
        """Run what is due. `positions` False leaves a due N_POS for a later call (an application
        that sets the pose just before it sends polls first with False: the record then carries
        this frame's pose, not the last one's)."""
        st = self._state
        if st is State.WAITING and self._connect_at is not None and now >= self._connect_at:
            self.connect(now)
            return
        if st not in WITH_CONNECTION:
            return
        if self._phase_deadline is not None and now >= self._phase_deadline:
            what = {
                State.CONNECTING: "no ENet connection",
                State.HANDSHAKE: "no N_SERVINFO",
                State.JOINING: "no N_WELCOME",
            }.get(st, "no answer")
            self._drop_connection(now, f"{what} within {CONNECT_TIMEOUT:g} s")
            return
        if self._last_rx is not None:
            quiet = now - self._last_rx
            if quiet >= LOST_AFTER:
                self._drop_connection(now, f"the server went silent ({quiet:.1f} s without a packet)")
                return
            if quiet >= SILENT_AFTER and not self._silent:
                self._silent = True
                self._events.append(ServerSilent(quiet))
        if self._next_ping is not None and now >= self._next_ping:
            self._send(m.ping_message(_millis(now)), reliable=False)
            self._next_ping = max(self._next_ping + PING_INTERVAL, now)
        if self._next_tryspawn is not None and now >= self._next_tryspawn:
            self._send(m.tryspawn_message())
            self._next_tryspawn = now + TRYSPAWN_EVERY
        if positions and self._next_pos is not None and now >= self._next_pos:
            # The game's cadence: at most every 33 ms, never a burst to catch up.
            self._next_pos = max(self._next_pos + POS_INTERVAL, now)
            self._send_position()

    def take_position(self, now: float) -> bytes | None:
        """The position tick alone, when it is all there is to send: the N_POS datagram for
        channel 0 (unreliable), counted as sent and out of the queue (datagrams_to_send will not
        hand it out). None when the tick is not due, not alive, or other datagrams wait (call
        handle_timer and datagrams_to_send then). b"" when the tick fell due with nothing to send
        (no pose, or a position outside the world: counted as a drop)."""
        nxt = self._next_pos
        if nxt is None or now < nxt or self._out or self._state is not State.ALIVE:
            return None
        self._next_pos = max(nxt + POS_INTERVAL, now)  # handle_timer's cadence
        pose = self.pose
        if pose is None:
            return b""
        try:
            rec, data = pose_record(self.cn, pose, self.lifesequence)
        except ValueError as e:  # outside the 24-bit world, non-finite: not sent, counted
            self._counters.drops[f"position not sent: {e}"] += 1
            return b""
        self._last_record, self._last_data = rec, data
        c = self._counters
        n = len(data)
        c.positions_sent += 1
        c.position_bytes += n
        c.packets_out += 1  # datagrams_to_send's count
        c.bytes_out += n
        return data

    def take_position_data(self, now: float, data: bytes) -> float | None:
        """take_position for an application that builds the tick's N_POS bytes itself (the app's
        Sauerbraten sink, on the frame thread: npos_bytes of the pose, for this client's `cn` and
        `lifesequence`): when the tick is due, alive and all there is to send, `data` is counted
        as sent and is our last record (read from the bytes when asked), and the next tick's time
        (position_due_at) is returned; None (nothing changed) otherwise: take_position's None."""
        nxt = self._next_pos
        if nxt is None or now < nxt or self._out or self._state is not State.ALIVE:
            return None
        self._next_pos = nxt = max(nxt + POS_INTERVAL, now)  # handle_timer's cadence
        self._last_record, self._last_data = None, data
        c = self._counters
        n = len(data)
        c.positions_sent += 1
        c.position_bytes += n
        c.packets_out += 1  # datagrams_to_send's count
        c.bytes_out += n
        return nxt

    @property
    def last_record(self) -> NPos | None:
        """Our last record sent (None: none yet)."""
        rec = self._last_record
        if rec is None and self._last_data is not None:
            rec = self._last_record = record_of(self._last_data)
        return rec

    def datagrams_to_send(self, now: float) -> list[Outgoing]:
        """What to hand ENet now (what handle_timer and the messages received queued)."""
        out, self._out = self._out, []
        c = self._counters
        for o in out:
            c.packets_out += 1
            c.bytes_out += len(o.data)
        return out

    def send_message(self, data: bytes, reliable: bool = True) -> None:
        """Queue game messages of the application's own (chat, votes, admin commands) on channel 1,
        built with messages.build; they go out with the next datagrams_to_send. Only once the
        server has welcomed us: before that it disconnects a client for anything but
        N_CONNECT/N_PING."""
        if self._state not in IN_GAME:
            raise ClientError(f"not in game ({self._state.value}): the server would disconnect us for it")
        self._send(data, reliable)

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def close(self, now: float) -> None:
        """Stop for good (the transport disconnects the peer)."""
        if self._state is not State.CLOSED:
            self._reset_connection()
            self._go(Step.STOP)
            self._connect_at = None
            self.stop_reason = self.stop_reason or "closed"

    # --- data in ------------------------------------------------------------------------------

    def receive_datagram(self, data: Incoming, now: float) -> None:
        if self._state not in WITH_CONNECTION or self._state is State.CONNECTING:
            return
        c = self._counters
        payload = data.data
        c.packets_in += 1
        c.bytes_in += len(payload)
        if self._silent:
            self._silent = False
            self._events.append(ServerBack(now if self._last_rx is None else now - self._last_rx))
        self._last_rx = now
        channel = data.channel
        if channel == CHAN_POS:
            if self.read_positions:
                self._positions(payload, now)
        elif channel == CHAN_MSG:
            result = m.parse_messages(payload, self.mode)
            if result.stopped:
                c.drops[f"channel 1: {result.stopped}"] += 1
            for msg in result.messages:
                self._message(msg, now)
                if self._state not in WITH_CONNECTION:
                    return
        # channel 2 carries maps and demos we never asked for

    def _positions(self, data: bytes, now: float) -> None:
        records, stopped = m.parse_positions(data)
        if stopped:
            self._counters.drops[f"channel 0: {stopped}"] += 1
        for rec in records:
            if not isinstance(rec, NPos):
                continue
            p = self.players.get(rec.cn)
            if p is None or p.lifesequence < 0 or rec.lifebit != (p.lifesequence & 1) or p.state == CS_DEAD:
                if p is not None:
                    p.rejected += 1
                self._counters.drops["position of an unknown, dead or respawned player"] += 1
                continue
            p.record, p.record_at = rec, now
            p.records += 1
            if p.state == CS_SPAWNING:
                p.state = CS_ALIVE

    def _message(self, msg: object, now: float) -> None:
        handler = _DISPATCH.get(type(msg))
        if handler is not None:
            handler(self, msg, now)

    def _on_servinfo(self, msg: m.ServInfo, now: float) -> None:
        if not self._allowed(Step.SERVINFO):
            return
        if msg.protocol != PROTOCOL_VERSION:
            self.stop_reason = (
                f"the server speaks Sauerbraten protocol {msg.protocol}; headcast speaks "
                f"{PROTOCOL_VERSION} (the 2020 Edition)"
            )
            self._drop_connection(now, self.stop_reason, fatal=True)
            return
        self.cn, self.sessionid = msg.cn, msg.sessionid
        self.description, self.server_has_password = msg.description, msg.haspassword
        pw = hash_password(msg.cn, msg.sessionid, self._password) if self._password else ""
        self._send(m.connect_message(self.name, self.model, pw))
        self._go(Step.SERVINFO)
        self._phase_deadline = now + CONNECT_TIMEOUT
        self._next_ping = now  # sendmessages pings from here on (the server takes N_PING before N_CONNECT)

    def _on_welcome(self, msg: m.Welcome, now: float) -> None:
        if not self._allowed(Step.WELCOME):
            return
        self._go(Step.WELCOME)
        self._phase_deadline = None
        self._attempt = 0  # let in: the next reconnect starts from the shortest wait
        self._welcomed = True  # the welcome packet's N_MAPCHANGE completes it
        self.players.clear()

    def _on_mapchange(self, msg: m.MapChange, now: float) -> None:
        if not self._allowed(Step.MAPCHANGE):
            return
        first, self._welcomed = self._welcomed, False
        self.map, self.mode = msg.map, msg.mode
        # startgame: every player's lifesequence is unknown until their next spawn
        for p in self.players.values():
            p.lifesequence = -1
            p.record = None
        self.lifesequence = -1
        self._next_pos = None
        self._next_tryspawn = None
        self._go(Step.MAPCHANGE)
        if first:
            self._events.append(Welcomed(self.cn, self.description, msg.map, msg.mode))
        else:
            self._events.append(MapChanged(msg.map, msg.mode))

    def _on_spawnstate(self, msg: m.SpawnState, now: float) -> None:
        if msg.cn != self.cn or not self._allowed(Step.SPAWN):
            return  # (another cn: a bot of ours would be spawned here; we own none)
        st = msg.state
        self.lifesequence = st.lifesequence
        self._send(m.spawn_message(st.lifesequence, st.gunselect))
        first = not self._spawned_here
        self._spawned_here = True
        self._go(Step.SPAWN)
        self._next_tryspawn = None
        self._next_pos = now  # the first record goes out with the answer
        self._counters.spawns += 1
        self._events.append(Spawned(st.lifesequence, self.map, self.mode, first))

    def _on_died(self, msg: m.Died, now: float) -> None:
        victim = self.players.get(msg.victim)
        if victim is not None:
            victim.state = CS_DEAD
            victim.record = None
        if msg.victim == self.cn:
            self._killer = "" if msg.actor == self.cn else self._name_of(msg.actor)
            self._die(now)

    def _on_forcedeath(self, msg: m.ForcedDeath, now: float) -> None:
        p = self.players.get(msg.cn)
        if p is not None:
            p.state = CS_DEAD
        if msg.cn == self.cn:
            self._killer = ""
            self._die(now)

    def _die(self, now: float, step: Step = Step.DIE) -> None:
        """Dead (killed, or back from spectating): no positions, ask for a spawn soon."""
        if not self._allowed(step):
            return
        self._go(step)
        self._next_pos = None
        self._next_tryspawn = now + TRYSPAWN_AFTER
        self._counters.deaths += 1
        self._events.append(Killed(self._killer))

    def _on_spectator(self, msg: m.Spectator, now: float) -> None:
        if msg.cn == self.cn:
            if msg.on and self._allowed(Step.SPECTATE):
                self._go(Step.SPECTATE)
                self._next_pos = self._next_tryspawn = None
            elif not msg.on:
                self._killer = ""
                self._die(now, Step.UNSPECTATE)
            return
        p = self._player(msg.cn)
        if msg.on:
            p.state = CS_SPECTATOR
        elif p.state == CS_SPECTATOR:
            p.state = CS_DEAD

    def _on_editmode(self, msg: m.EditMode, now: float) -> None:
        p = self.players.get(msg.cn)
        if p is not None:
            p.state = CS_EDITING if msg.on else CS_ALIVE

    def _on_initclient(self, msg: m.InitClient, now: float) -> None:
        if msg.cn == self.cn:
            return
        known = msg.cn in self.players and self.players[msg.cn].name
        p = self._player(msg.cn)
        p.name, p.team, p.model = msg.name or "unnamed", msg.team, msg.model
        if not known:
            self._events.append(PlayerJoined(msg.cn, p.name))

    def _on_initai(self, msg: m.InitAI, now: float) -> None:
        p = self._player(msg.cn)
        p.name, p.team, p.model, p.bot = msg.name, msg.team, msg.model, True

    def _on_left(self, msg: m.ClientLeft, now: float) -> None:
        p = self.players.pop(msg.cn, None)
        if p is not None:
            self._events.append(PlayerLeft(msg.cn, p.name))

    def _on_spawned(self, msg: m.Spawned, now: float) -> None:
        if msg.cn == self.cn:
            return
        p = self._player(msg.cn)
        p.lifesequence = msg.state.lifesequence
        p.state = CS_SPAWNING
        p.record = None

    def _on_resume(self, msg: m.Resume, now: float) -> None:
        for e in msg.entries:
            if e.cn == self.cn:
                continue
            p = self._player(e.cn)
            p.state, p.lifesequence = e.state, e.player.lifesequence

    def _on_switchname(self, msg: m.SwitchName, now: float) -> None:
        p = self.players.get(msg.cn)
        if p is not None:
            p.name = msg.name or "unnamed"

    def _on_switchmodel(self, msg: m.SwitchModel, now: float) -> None:
        p = self.players.get(msg.cn)
        if p is not None:
            p.model = msg.model

    def _on_setteam(self, msg: m.SetTeam, now: float) -> None:
        p = self.players.get(msg.cn)
        if p is not None:
            p.team = msg.team

    def _on_clientping(self, msg: m.ClientPing, now: float) -> None:
        p = self.players.get(msg.cn)
        if p is not None:
            p.ping = msg.ping

    def _on_pong(self, msg: m.Pong, now: float) -> None:
        rtt = _millis(now) - msg.millis
        if 0 <= rtt < 60_000:
            # the game's smoothing (player1->ping*5 + rtt)/6; it tells the server with N_CLIENTPING
            self.ping_ms = float(rtt) if self.ping_ms is None else (self.ping_ms * 5 + rtt) / 6
            self._send(m.clientping_message(int(self.ping_ms)), reliable=False)

    def _on_servmsg(self, msg: m.ServMsg, now: float) -> None:
        self._events.append(ServerText(msg.text))

    # --- helpers ------------------------------------------------------------------------------

    def _player(self, cn: int) -> RemotePlayer:
        p = self.players.get(cn)
        if p is None:
            p = RemotePlayer(cn)
            if len(self.players) >= MAX_PLAYERS:  # client numbers come from the server: keep memory bounded
                self._counters.drops["player: too many client numbers"] += 1
                return p  # read, not kept
            self.players[cn] = p
        return p

    def _name_of(self, cn: int) -> str:
        p = self.players.get(cn)
        return p.name if p is not None else ""

    def _send(self, data: bytes, reliable: bool = True, channel: int = CHAN_MSG) -> None:
        self._out.append(Outgoing(channel, data, reliable))

    def _send_position(self) -> None:
        pose = self.pose
        if pose is None or self._state is not State.ALIVE:
            return
        try:
            rec, data = pose_record(self.cn, pose, self.lifesequence)  # make_npos + encode_npos in one call
        except ValueError as e:  # outside the 24-bit world, non-finite: not sent, counted
            self._counters.drops[f"position not sent: {e}"] += 1
            return
        self._last_record, self._last_data = rec, data
        c = self._counters
        c.positions_sent += 1
        c.position_bytes += len(data)
        self._out.append(Outgoing(CHAN_POS, data, False))

    def _allowed(self, step: Step) -> bool:
        return (self._state, step) in TRANSITIONS

    def _go(self, step: Step) -> None:
        """The one place the state changes: by its row in TRANSITIONS."""
        new = TRANSITIONS.get((self._state, step))
        if new is None:
            raise IllegalTransition(f"{step.value} in state {self._state.value}")
        self._state = new

    def _connection_started(self, now: float) -> None:
        self._connect_at = None
        self._phase_deadline = now + CONNECT_TIMEOUT
        self._counters.connects += 1

    def _reset_connection(self) -> None:
        self._phase_deadline = self._next_ping = self._next_pos = self._next_tryspawn = None
        self._last_rx = None
        self._silent = False
        self._spawned_here = self._welcomed = False
        self._out.clear()
        self.cn = -1
        self.lifesequence = -1
        self.ping_ms = None
        self.map = ""
        self.players.clear()

    def _drop_connection(self, now: float, why: str, fatal: bool = False) -> None:
        """We end the connection (silence, a phase timed out, a protocol we do not speak): the
        state leaves WITH_CONNECTION, so the transport drops its peer."""
        self._end(now, why, None, fatal=fatal)

    def _end(self, now: float, text: str, reason: int | None, *, fatal: bool) -> None:
        was_in_game = self._state in IN_GAME
        self._reset_connection()
        retry_in = None
        if fatal or not self.reconnect:
            self._go(Step.STOP)
            self._connect_at = None
            self.stop_reason = self.stop_reason or text
        else:
            retry_in = BACKOFF[min(self._attempt, len(BACKOFF) - 1)]
            self._attempt += 1
            self._go(Step.LOST)
            self._connect_at = now + retry_in
        ev = Disconnected(reason, text, was_in_game, retry_in)
        self.last_disconnect = ev
        self._events.append(ev)

    @property
    def position_due_at(self) -> float | None:
        """When the next N_POS goes out (None: none will, not alive)."""
        return self._next_pos if self._state is State.ALIVE else None

    @property
    def in_game(self) -> bool:
        return self._state in IN_GAME

    @property
    def mode_name(self) -> str:
        return mode_name(self.mode)


def _millis(now: float) -> int:
    # the game's totalmillis: an int the server echoes back in N_PONG
    return int(now * 1000.0) & 0x3FFFFFFF


# message type -> its handler (the message as its own type: each handler takes one)
_DISPATCH: dict[type, Callable[[SauerClientCore, Any, float], None]] = {
    m.ServInfo: SauerClientCore._on_servinfo,
    m.Welcome: SauerClientCore._on_welcome,
    m.MapChange: SauerClientCore._on_mapchange,
    m.SpawnState: SauerClientCore._on_spawnstate,
    m.Died: SauerClientCore._on_died,
    m.ForcedDeath: SauerClientCore._on_forcedeath,
    m.Spectator: SauerClientCore._on_spectator,
    m.EditMode: SauerClientCore._on_editmode,
    m.InitClient: SauerClientCore._on_initclient,
    m.InitAI: SauerClientCore._on_initai,
    m.ClientLeft: SauerClientCore._on_left,
    m.Spawned: SauerClientCore._on_spawned,
    m.Resume: SauerClientCore._on_resume,
    m.SwitchName: SauerClientCore._on_switchname,
    m.SwitchModel: SauerClientCore._on_switchmodel,
    m.SetTeam: SauerClientCore._on_setteam,
    m.ClientPing: SauerClientCore._on_clientping,
    m.Pong: SauerClientCore._on_pong,
    m.ServMsg: SauerClientCore._on_servmsg,
}
