"""A live Quake 3 connection for the sink (C2's Q3Client), and HOST[:PORT] parsing.

The client core builds one usercmd per command tick from the latest input. The sink sets
the input and then polls the client in the same frame, so a tick that falls due carries the
pose located this frame (motion-to-wire latency under a millisecond instead of a frame). In game
the tick's snapshots are read at the next frame's poll, so reading them delays no sink's send.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from headcast.app.errors import AppError, RefusedError, UnreachableError, UsageError, usage
from headcast.app.sinks.q3.mapping import Q3Intent
from headcast.netcode import address
from headcast.netcode.pose import angle_subtract
from headcast.netcode.q3 import oob
from headcast.netcode.q3.client import LINKED, ClientConfig, State
from headcast.netcode.q3.delta import player_field
from headcast.netcode.q3.events import (
    Disconnected,
    EnteredWorld,
    FamilyChanged,
    GamestateReceived,
    HeadTracking,
    RateLimited,
    Refused,
    SnapshotReceived,
)
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.refusal import RefusalKind
from headcast.netcode.q3.serverparse import SNAPFLAG_NOT_ACTIVE
from headcast.netcode.q3.transport import Q3Client
from headcast.netcode.q3.vrhead import EF_VR_PLAYER, WireHead, yaw_offset

if TYPE_CHECKING:
    from headcast.app.run.rig import RigState
    from headcast.netcode.q3.entities import SnapshotEntities
    from headcast.xr.frame import Controls

DEFAULT_PORT = 27960
PURE_FAILED = "pure check failed"
REFUSED = "refused"
RATE_LIMITED = "rate-limited"
NO_ANSWER = "no answer"
DISCONNECTED = "disconnected"

STATE_TEXT = {
    State.IDLE: "idle",
    State.CHALLENGING: "connecting",
    State.CONNECTING: "connecting",
    State.CONNECTED: "loading",
    State.PRIMED: "loading",
    State.ACTIVE: "in game",
    State.WAITING: "reconnecting",
    State.CLOSED: "closed",
}
IN_GAME = STATE_TEXT[State.ACTIVE]

# The sent history (`sent`, for the view check): the usercmds of the last SENT_HISTORY ticks at
# least (~4 s at 60/s). A tick adds one; dropping the oldest costs a scan over the dict's deleted
# slots (~3 us cold), so the ticks only bound it (SENT_LIMIT: the oldest goes past it, also in C:
# Pump.send_pose) and poll() trims it back to SENT_HISTORY, off the frame, once it holds
# SENT_TRIM more.
SENT_HISTORY = 256
SENT_TRIM = 64
SENT_LIMIT = 2 * SENT_HISTORY  # (_q3native.c SENT_LIMIT)
# In game with the extension, the snapshot messages are decoded in C as the tick's read finds them
# (the next usercmds use them at once) and reach the core, and this link's view of the server
# (playerState, entities, ping, the view check), in batches at most this long after the first came
# (~2 snapshots at 20/s): the far side sees a spawn's view for "a snapshot or two", as before.
STEP_ABSORB = 0.1
# playerState fields read per snapshot, by index (delta.player_field: no attribute-lookup calls)
_PS_VIEWANGLES = player_field("viewangles")
_PS_EFLAGS = player_field("eFlags")
_PS_DELTA_ANGLES = player_field("delta_angles")
_PS_COMMAND_TIME = player_field("commandTime")
_PS_PM_TYPE = player_field("pm_type")
PM_DEAD = 3  # bg_public.h pmtype_t: PM_DEAD and above (freeze, intermission) keep the view still


@dataclass
class Q3Check:
    """The server's own view (playerState.viewangles) vs the angles of the usercmd it last ran."""

    matched: int = 0
    view_err_max: float = 0.0  # degrees, worst axis
    vr_flag_frames: int = 0  # snapshots with EF_VR_PLAYER set in our playerState
    rebased: int = 0  # skipped: delta_angles changed under the cmd (spawn, teleport)
    frozen: int = 0  # skipped: the view does not follow cmds (pm_type dead, freeze, intermission)


def parse_address(text: str) -> tuple[str, int]:
    """--q3 HOST[:PORT] (default 27960)."""
    host, ports = usage(lambda: address.parse_address(text, DEFAULT_PORT, option="--q3"))
    return host, ports[0]


# What to do about a refusal, after the server's words.
_ADVICE = {
    RefusalKind.BANNED: "this address or player is banned there",
    RefusalKind.GAME: "the server runs another game",
}


# getchallenges answered by ICMP port unreachable before "nothing listens there" is certain.
UNREACHABLE_AFTER = 2


class Q3Link:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        name: str = "headcast",
        vr: bool = True,
        pk3: list[str] | tuple[str, ...] = (),
        protocol: Family | None = None,
        password: str = "",
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.clock = clock
        self.address = f"{host}:{port}"
        self.protocol = protocol  # forced (--q3-protocol), None = auto
        self.password = bool(password)
        try:
            self.client = Q3Client(
                (host, port),
                ClientConfig(
                    name=name, vr=vr, pure_paks=tuple(Path(p) for p in pk3), family=protocol, password=password
                ),
                clock=clock,
            )
        except OSError as e:
            raise UsageError(f"--q3 {host}:{port}: {e.strerror or e}") from None
        except oob.OobError as e:  # a name or model the engine would mangle (the password is checked before)
            raise UsageError(f"q3: {e}") from None
        self.client.step_absorb = STEP_ABSORB
        self.client.start(clock())
        self.view_angles: tuple[float, float, float] | None = None
        self.ps = None  # the latest snapshot's playerState (a VR server's decode of our head is in its stats)
        self.eflags = 0
        self.head_bits = False
        self.head_reason = "no gamestate yet"
        self._detail = f"joining {self.address}"
        self.entered = False
        self.joined_at: float | None = None  # clock time of the first entry into the world
        # Clock time the server last answered anything but a refusal (a first join slowed by
        # loss keeps going while it does: outcome.Outcomes); packets_in counted when it did.
        self.answered_at: float | None = None
        self._answers = 0
        self.closed = False  # close() ran: we left the server
        self._why_at_close = ""
        self._state_at_close = State.IDLE
        self._started = clock()
        self.pure_error = ""
        self.refused: Refused | None = None  # the server's last refusal, until we are let in
        self._retry_at: float | None = None  # when the client tries again after it
        self.snapshots = 0
        self.check = Q3Check()
        self.last_error: float | None = None
        # cmd serverTime → (angles, the delta_angles the cmd was built against), oldest first (a dict
        # keeps insertion order: Pump.send_pose adds to it in C, and Q3Sink.send hands it there)
        self.sent: dict[int, tuple[tuple[float, float, float], tuple]] = {}
        self._armed: object = None  # the client's send_input that _pose_tick was found for
        self._pose_tick: Callable[..., Any] | None = None  # its pump's send_pose
        # the latest snapshot's playerState delta_angles: the next cmd is built against them
        self.delta_angles: tuple = (0, 0, 0)
        self.unread = False  # a tick was sent and what it read is not taken yet: poll() has work
        self._counters = self.client.core.counters  # a live view: Status would copy everything each frame
        self.due_at = -math.inf
        self._linked = False
        self._update_due()

    @property
    def joined(self) -> bool:
        """The server has run our usercmds at least once (in game)."""
        return self.entered

    @property
    def entities(self) -> SnapshotEntities | None:
        """The other players in the server's latest snapshot (None before one)."""
        return self.client.core.entities

    @property
    def player_count(self) -> int | None:
        """How many players the server says it has (its serverinfo; None before the gamestate)."""
        return self.client.core.player_count

    @property
    def last_cmd_time(self) -> int:
        """The serverTime of the last usercmd sent (what a snapshot's commandTime names)."""
        self.client.sync()
        return self.client.core.last_cmd_time

    @property
    def ping_ms(self) -> float | None:
        """The client's ping in game (None before, or once closed)."""
        core = self.client.core
        if self.closed or core.state is not State.ACTIVE:
            return None
        return core.latency_ms  # the field itself: `status` would copy the whole client state

    @property
    def unreachable(self) -> bool:
        """Nothing listens at the address: ICMP port unreachable came back for UNREACHABLE_AFTER
        requests and nothing else ever did (app/run/outcome.py ends the run on it at once)."""
        return not self.closed and not self._counters["packets_in"] and self.client.socket_errors >= UNREACHABLE_AFTER

    @property
    def received(self) -> int:
        """Packets received from the server so far (app/run/outcome.py: a joined server gone silent is lost)."""
        return self._counters["packets_in"]

    @property
    def drops(self) -> dict[str, int]:
        """Server messages the client dropped undecoded, reason → count."""
        return self.client.core.drop_counts()  # a new dict; `status` would copy the whole client state

    def _silent(self) -> bool:
        """Nothing at all has come from the server yet and the first request was resent."""
        return (
            not self._counters["packets_in"]
            and self.client.state in (State.CHALLENGING, State.WAITING)
            and self.clock() - self._started >= 1.0
        )

    def _no_answer_text(self) -> str:
        """Why we are not in, while the server has never answered: how long, what we know, what next."""
        why = f"{self.address} silent for {self.clock() - self._started:.0f} s"
        if self.client.socket_errors:
            why += ", port closed (ICMP unreachable)"
        timer = self.client.core.get_timer()
        attempts = self._counters["attempts"]
        if self.client.state is State.WAITING and timer is not None:
            return f"{why}; attempt {attempts} gave up, next in {max(0.0, timer - self.clock()):.0f} s"
        return f"{why}; attempt {attempts}, asking every 1-3 s"

    @property
    def detail(self) -> str:
        if self.closed:
            return f"left {self.address}"
        refused = self.refused
        if refused is not None:
            return f"server refused: {refused.text}" + self._refusal_tail(refused)
        if self.client.core.rate_limited:
            return (
                "the server is rate-limiting this address: it is up but drops our getchallenge "
                "(ioq3 answers 10 requests per address, then one a second); retrying"
            )
        if self._silent():
            return self._no_answer_text()
        if self.pure_error and self.client.state is State.PRIMED:
            return (
                f"pure server (sv_pure 1): {self.pure_error} — pass the server's pk3 files with --pk3 "
                f"(OpenArena: /usr/share/games/openarena/baseoa/*.pk3)"
            )
        if self.client.state is State.WAITING:
            timer = self.client.core.get_timer()
            if timer is not None:
                return f"{self._detail} — retrying in {max(0.0, timer - self.clock()):.0f} s"
        return self._detail  # in game the ping is a number of its own (ping_ms)

    @property
    def state(self) -> str:
        if self.closed:
            return DISCONNECTED
        if self.refused is not None:
            return REFUSED
        if self.client.core.rate_limited:
            return RATE_LIMITED
        state = self.client.state
        if state is State.ACTIVE:  # (neither pure_error's PRIMED nor _silent's CHALLENGING/WAITING)
            return IN_GAME
        if self.pure_error and state is State.PRIMED:
            return PURE_FAILED
        if self._silent():
            return NO_ANSWER
        return STATE_TEXT.get(state, str(state))

    def _refusal_tail(self, refused: Refused) -> str:
        if refused.fatal:
            return f" — {self._advice(refused)}"
        if self.client.state is State.CLOSED:
            return ""
        if self._retry_at is None:
            return " — retrying"
        return f" — retrying in {max(0.0, self._retry_at - self.clock()):.0f} s"

    def _advice(self, refused: Refused) -> str:
        kind = refused.kind
        if kind == RefusalKind.PASSWORD:
            return (
                "the password given (--password) is not the server's"
                if self.password
                else "give the server's password with --password"
            )
        if kind == RefusalKind.PROTOCOL:
            if self.protocol is not None:
                return (
                    f"--q3-protocol {oob.family_option(self.protocol)} is not what the server speaks: leave it at auto"
                )
            return "headcast speaks protocols 68 and 71"
        return _ADVICE.get(RefusalKind(kind), "retrying cannot change that")

    @property
    def failure(self) -> AppError | None:
        """The link stopped for good (a refusal retrying cannot help), or cannot play (a pure
        server without our pk3 files ignores every move): this sink's error."""
        refused = self.refused
        if refused is not None and self.client.state is State.CLOSED:
            return RefusedError(
                f"q3: {self.address} refused the connection: {refused.text} — "
                f"{self._advice(refused) if refused.fatal else 'and reconnecting is off'}"
            )
        if self.pure_error and self.client.state is State.PRIMED:
            return AppError(f"q3: {self.detail}")
        return None

    def join_timeout_error(self, timeout: float) -> AppError:
        """Not in game after `timeout` s of the first join: why, as the run's error (exit 3 only
        when the server never answered at all)."""
        t = f"{timeout:g} s"
        if self.refused is not None:
            return RefusedError(
                f"q3: {self.address} refused the connection: {self.refused.text} (still refused after {t})"
            )
        if self.client.core.rate_limited:
            return RefusedError(
                f"q3: the server at {self.address} is rate-limiting this address: it is up but answered none of "
                f"our getchallenge requests within {t} (ioq3 answers 10 requests per address, then one a "
                "second; other clients or probes from this machine use them up — wait a few seconds)"
            )
        if self._counters["packets_in"]:
            state = self._state_at_close if self.closed else self.client.state
            if state is State.PRIMED:
                detail = "it sent the map but had not put us in game yet"
            elif state is State.CONNECTED:
                detail = "it accepted the connection but sent no map"
            else:
                detail = self._why_at_close if self.closed else self.detail
            return RefusedError(f"q3: {self.address} answered but did not let us in within {t} ({detail})")
        if self.client.socket_errors:
            return UnreachableError(
                f"q3: no answer from {self.address} within {t} (ICMP port unreachable: nothing "
                "listens on that UDP port; is the server running and the port right?)"
            )
        return UnreachableError(
            f"q3: no answer from {self.address} within {t} "
            "(is the server running and the address/port right? firewall?)"
        )

    def poll(self, now: float) -> None:
        """Read the snapshots of the last tick: send() leaves them in the socket, so reading them
        delays no sink's send (motion-to-wire); this is still before the next tick's usercmd. Then
        the sent history trimmed back to SENT_HISTORY, when due (SENT_HISTORY's comment)."""
        if self.unread:
            self.unread = False
            events = self.client.receive(now)
            if events:
                self._handle(events)
            self._update_due()
        history = self.sent
        if len(history) > SENT_HISTORY + SENT_TRIM:
            for cmd_time in list(islice(history, len(history) - SENT_HISTORY)):
                del history[cmd_time]

    def _update_due(self) -> None:
        """`due_at`: from when send() can do anything. In game the client reads and sends only at
        its command tick (60/s against our 90 frames/s); while joining, every frame. Only calls into
        the client move its timer, so it is read after each of them instead of every frame."""
        core = self.client.core
        timer = core.get_timer()
        self._linked = core.state in LINKED
        self.due_at = timer if timer is not None and self._linked else -math.inf

    def send_pose(self, state: RigState, controls: Controls, vr: bool, move_speed: float, now: float) -> tuple | None:
        """Q3Sink.send's command tick in one C call while the pump's send_input is armed: q3_intent,
        send() and send_input on the frame's raw inputs (Pump.send_pose, the same floats and
        bytes). Its tuple when the tick went out: (bytes, sent_at, due_at, cmd_time, attention,
        angles, head, user buttons, forward, right, up). None when it did not (nothing changed):
        the caller then builds the intent and calls send(), the path it always took."""
        fast = self.client.send_input
        if fast is None:
            return None
        if fast is not self._armed:  # re-armed (a hand-over): the same pump, found once per arming
            self._armed = fast
            self._pose_tick = self.pose_tick(fast)
        tick = self._pose_tick
        if tick is None:
            return None
        stage = state.frame
        trig = state.trig
        vx, vz = state.move_world
        r = tick(
            now,
            stage.head,
            stage.right_aim,
            trig[4],
            trig[5],
            state.origin.yaw,
            controls.trigger_right,
            controls.jump,
            vx,
            vz,
            move_speed,
            vr,
            self.sent,
            self.delta_angles,
        )
        if r.__class__ is not tuple:
            return None
        self.due_at = r[2]
        if r[4]:  # datagrams read after the tick (or a read failed): the next poll's
            self.unread = True
        return r

    @staticmethod
    def pose_tick(send_input: Callable[..., Any]) -> Callable[..., Any] | None:
        """The armed client's `send_input` (client.send_input) → its pump's send_pose, which
        send_pose calls with this link's `sent` and `delta_angles` (Q3Sink.send calls it itself)."""
        return getattr(getattr(send_input, "__self__", None), "send_pose", None)

    def send(self, intent: Q3Intent, now: float) -> tuple[int, float] | None:
        fast = self.client.send_input
        if fast is not None:
            # In game with the extension: the input from plain numbers and the tick's datagram in one
            # C call (the core takes the ticks over at the next poll that has something to read).
            angles = intent.angles
            r = fast(
                now, angles, intent.user_buttons, intent.forwardmove, intent.rightmove, intent.upmove, 0, intent.head
            )
            if r.__class__ is tuple:
                nbytes, sent_at, self.due_at, cmd_time, attention = r
                if attention:  # datagrams read after the tick (or a read failed): the next poll's
                    self.unread = True
                history = self.sent
                history[cmd_time] = (angles, self.delta_angles)
                if len(history) > SENT_LIMIT:
                    del history[next(iter(history))]
                return nbytes, sent_at
        return self._send(intent, now)

    def _send(self, intent: Q3Intent, now: float) -> tuple[int, float] | None:
        """send() through the core: out of game, without the extension, or when the pump hands the
        tick to the core."""
        self.client.sync()  # what send_input's ticks left, before the counters are read
        tracked = intent.head  # (pitch, yaw, roll) as tracked; the usercmd's is (pitch, yaw offset)
        head: WireHead | None = None
        if tracked is not None:
            # AngleSubtract in float, as the C clients and the mirror's model (Q3Intent.buttons):
            # in double, head and weapon ~180° apart wrap the other way and pack to the other end.
            head = (tracked[0], yaw_offset(tracked[1], intent.angles[1]))
        client = self.client
        client.set_input(
            intent.angles, intent.forwardmove, intent.rightmove, intent.upmove, intent.user_buttons, 0, head
        )
        counters = self._counters
        before = counters["bytes_out"]
        # In game the tick's usercmd is built against the delta_angles read up to the last tick
        # (poll() reads the socket after the send); while joining the client reads first.
        linked = self._linked  # the state only moves in calls into the client, each followed by _update_due
        delta = self.delta_angles
        events = client.step(now)  # in game: the tick's datagram built and sent in C (the pump)
        if events:
            self._handle(events)  # sends nothing: bytes_out and sent_at stay this send's
        self._update_due()
        if not linked:
            self._note_answer(now)
        sent = counters["bytes_out"] - before
        if sent <= 0:
            return None
        self.unread = linked
        self.sent[client.core.last_cmd_time] = (intent.angles, delta if linked else self.delta_angles)
        if len(self.sent) > SENT_LIMIT:
            del self.sent[next(iter(self.sent))]
        sent_at = client.sent_at  # set by the send that just went out
        return sent, now if sent_at is None else sent_at

    def _note_answer(self, now: float) -> None:
        answers = self._counters["packets_in"]
        if answers != self._answers:
            self._answers = answers
            if self.refused is None:
                self.answered_at = now

    def _handle(self, events) -> None:
        for ev in events:
            if ev.__class__ is SnapshotReceived:
                ps = ev.ps
                self.ps = ps
                self.snapshots += 1
                values = ps.values  # (the fields read by index: PlayerState's attributes cost two calls each)
                pitch, yaw, roll = _PS_VIEWANGLES(values)
                self.view_angles = (float(pitch), float(yaw), float(roll))
                self.eflags = _PS_EFLAGS(values)
                delta_angles = _PS_DELTA_ANGLES(values)
                if not ev.snap_flags & SNAPFLAG_NOT_ACTIVE:
                    # Not active: the server has run none of our usercmds yet (a zeroed playerState,
                    # commandTime 0 — which matched a usercmd sent while joining, at serverTime 0).
                    self._verify(values, delta_angles)
                self.delta_angles = delta_angles
            elif isinstance(ev, HeadTracking):
                self.head_bits = ev.sent
                self.head_reason = ev.reason
                self._detail = ev.reason
            elif isinstance(ev, GamestateReceived):
                self.refused = self._retry_at = None  # let in: what it said before is past
                self._detail = f"map {ev.mapname}, {'vr_support' if ev.vr_support else 'no vr_support'}"
                # Without a valid `cp` a pure server ignores our moves: say so instead of "loading".
                self.pure_error = self.client.status.pure_error
            elif isinstance(ev, EnteredWorld):
                self.entered = True
                if self.joined_at is None:
                    self.joined_at = self.clock()
            elif isinstance(ev, Refused):
                self.refused = ev
                self._retry_at = None if ev.retry_in is None else self.clock() + ev.retry_in
            elif isinstance(ev, RateLimited):
                self.refused = None  # a later attempt: what an earlier one was told is not what happens now
            elif isinstance(ev, FamilyChanged):
                self._detail = f"now {ev.new.description}: {ev.reason}"
            elif isinstance(ev, Disconnected):
                if self.refused is not None and not ev.reason.startswith("server refused"):
                    self.refused = None  # this attempt ended otherwise (silence): the refusal is old news
                self._detail = f"disconnected: {ev.reason}" + (" (reconnecting)" if ev.will_reconnect else "")

    def _verify(self, values: tuple, delta_angles: tuple[int, int, int]) -> None:
        """One snapshot's view check: its playerState's values (PlayerState.values), its delta_angles."""
        sent = self.sent.get(_PS_COMMAND_TIME(values))
        if sent is None or self.view_angles is None:
            return
        angles, delta = sent
        if _PS_PM_TYPE(values) >= PM_DEAD:
            # PM_UpdateViewAngles leaves the view alone (a dead player looks at the killer).
            self.check.frozen += 1
            return
        if delta_angles != delta:
            # Spawn, teleport or the pitch clamp moved delta_angles after the cmd was built:
            # the server's view then differs by design, not by a wire error.
            self.check.rebased += 1
            return
        # Roll is left out: the server's view roll is what we sent only while the head is tracked.
        view = self.view_angles
        err = max(abs(angle_subtract(angles[0], view[0])), abs(angle_subtract(angles[1], view[1])))
        self.last_error = err
        c = self.check
        c.matched += 1
        c.view_err_max = max(c.view_err_max, err)
        if self.eflags & EF_VR_PLAYER:
            c.vr_flag_frames += 1

    def close(self) -> None:
        """Disconnect (three `disconnect` packets when linked, as ioq3); again: nothing."""
        if self.closed:
            return
        now = self.clock()
        try:
            self._handle(self.client.receive(now))  # what the server said meanwhile counts (a first snapshot in game)
        finally:  # bytes the core could not take must not cost the server our disconnect
            self._why_at_close = self.detail  # what join_timeout_error says once we have left
            self._state_at_close = self.client.state
            try:
                self._handle(self.client.close(now))
            finally:  # closed even when receiving or closing raised: a second close is a no-op
                self.closed = True
                self._update_due()
