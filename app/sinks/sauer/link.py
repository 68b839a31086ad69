"""A live Sauerbraten connection for the sink (SauerClientCore over ENet), and HOST[:PORT] parsing.

The sink sets the pose and calls `send()` in the same frame, so a position tick that falls due
carries the pose located this frame; `poll()` services ENet every frame (the server drops a
client that stops servicing it after ~5 s) and reads what the server sent. The link reconnects
by itself after a server restart, a kick or silence, with the reason shown; a wrong password
or another protocol stops it for good (`failure`).
"""

from __future__ import annotations

import select
import time
from typing import Callable

from headcast.app.errors import AppError, ProtocolMismatchError, RefusedError, UnreachableError, UsageError, usage
from headcast.netcode import address
from headcast.netcode.sauer import events as se
from headcast.netcode.sauer.client import Pose, SauerClientCore, State
from headcast.netcode.sauer.errors import ClientError, TransportError
from headcast.netcode.sauer.npos import NPos
from headcast.netcode.sauer.protocol import DEFAULT_PORT, DISC_PASSWORD
from headcast.netcode.sauer.transport import SauerClient

NO_ANSWER_AFTER = 1.0  # s without any packet before the status says "no answer"
POLL_EVERY = 0.05  # s: in game, the longest a poll waits without a datagram (the core's timers)
# s: alive, the longest a poll waits without a datagram: the core's next timer (a ping every 250 ms)
# when sooner. Each position's flush (30 Hz) sends ENet's pings and acknowledgements; its resends and
# timeout checks run only in a service, so while reliable data is unacknowledged it is POLL_EVERY.
POLL_ALIVE_EVERY = 0.25

STATE_TEXT = {
    State.IDLE: "connecting",
    State.CONNECTING: "connecting",
    State.HANDSHAKE: "connecting",
    State.JOINING: "joining",
    State.LOADING: "loading",
    State.ALIVE: "in game",
    State.DEAD: "dead",
    State.SPECTATOR: "spectator",
    State.WAITING: "reconnecting",
    State.CLOSED: "stopped",
}


def parse_address(text: str) -> tuple[str, int]:
    """--sauer HOST[:PORT] (default 28785), the port at most 65534: the info port is the next one."""
    host, ports = usage(
        lambda: address.parse_address(
            text, DEFAULT_PORT, option="--sauer", last_port=65534, note=" (the server's info port is the next one)"
        )
    )
    return host, ports[0]


class SauerLink:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        name: str = "headcast",
        model: int = 0,
        password: str = "",
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.clock = clock
        self.address = f"{host}:{port}"
        self.password = bool(password)
        try:
            self.core = SauerClientCore(name, model, password)
            self.client = SauerClient((host, port), self.core, clock=clock)
        except ClientError as e:
            raise UsageError(f"sauer: {e}") from None
        except TransportError as e:
            raise UsageError(f"--sauer {host}:{port}: {e}") from None
        self.counters = self.core.counters
        self.joined_at: float | None = None  # clock time of the first spawn
        self.closed = False
        self._started = clock()
        self._answered = False
        self._detail = f"joining {self.address}"
        self._why_at_close = ""
        self.texts: list[str] = []  # the server's messages (N_SERVMSG), latest last
        self.spawns = 0  # spawns seen (the sink re-anchors the world at each)
        self._in_game = False  # alive or dead at the last poll: polls may wait for a datagram
        self._poll_by = 0.0  # in game, the next poll even without a datagram
        self._readable: select.poll | None = None  # the ENet socket's readiness (where poll() exists)
        if hasattr(select, "poll"):
            self._readable = select.poll()
            for fd in self.client.filenos():
                self._readable.register(fd, select.POLLIN)
        self.last_spawn: tuple[int, str, str] | None = None  # (client number, mode, map) of the latest

    # --- what the sink and the outcome ask ---------------------------------------------------

    @property
    def joined(self) -> bool:
        return self.joined_at is not None

    @property
    def live(self) -> bool:
        """In game now (positions flowing, or dead and respawning)."""
        return not self.closed and self.core.state in (State.ALIVE, State.DEAD)

    @property
    def ping_ms(self) -> float | None:
        return None if self.closed or not self.core.in_game else self.core.ping_ms

    @property
    def received(self) -> int:
        """Packets received from the server so far (app/run/outcome.py: a joined server gone silent is lost)."""
        return self.core.counters.packets_in

    @property
    def drops(self) -> dict[str, int]:
        return dict(self.counters.drops)

    @property
    def others(self) -> dict:
        return self.core.players

    @property
    def position_due_at(self) -> float | None:
        """When the next N_POS goes out (None: none will: not alive)."""
        return self.core.position_due_at

    def _unanswered(self) -> bool:
        return not self._answered and not self.closed and self.clock() - self._started >= NO_ANSWER_AFTER

    @property
    def state(self) -> str:
        if self.closed:
            return "disconnected"
        core = self.core
        if core.state is State.CLOSED:
            return (
                "refused"
                if core.last_disconnect is not None and core.last_disconnect.reason == DISC_PASSWORD
                else "stopped"
            )
        if self._unanswered():
            return "no answer"
        return STATE_TEXT[core.state]

    @property
    def detail(self) -> str:
        if self.closed:
            return f"left {self.address}"
        core = self.core
        st = core.state
        last = core.last_disconnect
        if st is State.CLOSED:
            return core.stop_reason + self._advice()
        if st in (State.WAITING, State.CONNECTING, State.HANDSHAKE, State.IDLE) and last is not None:
            timer = core.get_timer() if st is State.WAITING else None
            when = (
                f" — reconnecting in {max(0.0, timer - self.clock()):.0f} s" if timer is not None else " — reconnecting"
            )
            return f"{last.text}{when} (attempt {core.counters.connects})"
        if self._unanswered():
            return (
                f"{self.address} silent for {self.clock() - self._started:.0f} s (ENet connect, attempt "
                f"{core.counters.connects}); is a Sauerbraten server running there?"
            )
        return self._detail

    def _advice(self) -> str:
        last = self.core.last_disconnect
        if last is not None and last.reason == DISC_PASSWORD:
            return (
                " — the password given (--sauer-password) is not the server's"
                if self.password
                else " — give the server's password with --sauer-password"
            )
        return ""

    @property
    def failure(self) -> AppError | None:
        """Stopped for good: a password refusal, or a server of another protocol."""
        core = self.core
        if self.closed or core.state is not State.CLOSED:
            return None
        last = core.last_disconnect
        if last is not None and last.reason == DISC_PASSWORD:
            return RefusedError(f"sauer: {self.address} refused the connection: {last.text}{self._advice()}")
        return ProtocolMismatchError(f"sauer: {self.address}: {core.stop_reason}")

    def join_timeout_error(self, timeout: float) -> AppError:
        t = f"{timeout:g} s"
        last = self.core.last_disconnect
        if self._answered:
            detail = self._why_at_close if self.closed else self.detail
            if last is not None and last.reason is not None:
                return RefusedError(f"sauer: {self.address} did not let us in within {t}: {last.text}")
            return RefusedError(f"sauer: {self.address} answered but did not let us in within {t} ({detail})")
        return UnreachableError(
            f"sauer: no answer from {self.address} within {t} (is a Sauerbraten server "
            f"running there, UDP port {self.address.rpartition(':')[2]}?)"
        )

    # --- per frame ---------------------------------------------------------------------------

    def set_pose(self, pose: Pose | None) -> None:
        self.core.pose = pose

    def send(self, now: float) -> tuple[int, float] | None:
        """Hand out what is due (a position tick): (position bytes, clock time) or None."""
        if self.closed:
            return None
        client = self.client
        sent = client.send_position(now)  # send_due, the tick alone straight to ENet
        return (sent, client.sent_at) if sent else None

    def poll(self, now: float, full: bool = False) -> bool:
        """Service ENet, run the core's timers and take the events: True when it did. In game, and
        unless `full`, only when the ENet socket has a datagram or POLL_EVERY since the last time
        (the core's timers are pings every 250 ms and silences of seconds; ENet's pings and
        acknowledgements go out with every position's flush); alive, when the core's next timer (the
        position ticks aside: send() takes them) falls due, at most POLL_ALIVE_EVERY apart, or
        POLL_EVERY while reliable data waits for its acknowledgement (ENet resends it, and notices a
        lost peer, only in a service): on most frames a readiness check is all."""
        if self.closed:
            return False
        if not full and self._in_game and now < self._poll_by:
            readable = self._readable
            if readable is not None and not readable.poll(0):
                return False
        client = self.client
        client.poll(now, positions=False)  # send() takes the position tick
        while (ev := client.next_event()) is not None:
            self._handle(ev, now)
        if not self._answered and self.counters.packets_in:
            self._answered = True
        core = self.core
        if core.state is State.ALIVE:  # positions flush ENet 30 times a second: the core's timers only
            timer = core.get_timer(positions=False)
            by = now + (POLL_EVERY if client.resends_pending() else POLL_ALIVE_EVERY)
            self._poll_by = by if timer is None else min(timer, by)
        else:
            self._poll_by = now + POLL_EVERY
        self._in_game = self.live
        return True

    def _handle(self, ev, now: float) -> None:
        if isinstance(ev, se.Spawned):
            self.spawns += 1
            self.last_spawn = (self.core.cn, self.core.mode_name, self.core.map)
            if self.joined_at is None:
                self.joined_at = now
            self._detail = self._where()
        elif isinstance(ev, se.Welcomed):
            self._detail = f"welcomed as client {ev.cn} by {ev.description!r}; {self._where()}"
        elif isinstance(ev, se.MapChanged):
            self._detail = f"map change: {self._where()}"
        elif isinstance(ev, se.Killed):
            self._detail = f"killed{' by ' + ev.by if ev.by else ''}; respawning ({self._where()})"
        elif isinstance(ev, se.ServerSilent):
            self._detail = f"server silent for {ev.silent_for:.0f} s"
        elif isinstance(ev, se.ServerBack):
            self._detail = self._where()
        elif isinstance(ev, se.ServerText):
            self.texts = (self.texts + [ev.text])[-20:]
        elif isinstance(ev, se.Disconnected):
            self._detail = ev.text

    def _where(self) -> str:
        c = self.core
        return f"client {c.cn}, {c.mode_name} on {c.map or '(no map)'}, life {c.lifesequence}"

    def close(self) -> None:
        if self.closed:
            return
        self._why_at_close = self.detail
        self.client.close(self.clock())
        self.closed = True


class SauerWatcher:
    """A second connection to the same server that watches our player as every other client
    does (the game's acceptance rules: known client, lifesequence parity, not dead). The server
    never sends a client its own record back, so this is how the demo sees what it relayed."""

    def __init__(
        self,
        host: str,
        port: int,
        name: str = "headcast-watch",
        password: str = "",
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.core = SauerClientCore(name, password=password)
        self.client = SauerClient((host, port), self.core, clock=clock)
        self._last: NPos | None = None

    def poll(self, now: float) -> None:
        self.client.poll(now)

    def new_record_of(self, cn: int) -> NPos | None:
        """The record of client `cn` received since the last call (None: none new)."""
        p = self.core.players.get(cn)
        rec = None if p is None else p.record
        if rec is None or rec is self._last:
            return None
        self._last = rec
        return rec

    def close(self) -> None:
        self.client.close()
