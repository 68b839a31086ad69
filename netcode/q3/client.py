"""Sans-IO Quake 3 client core: handshake, gamestate, snapshots, reliable commands, usercmds.

Shaped like aioquic's connection: bytes and `now` (seconds, any monotonic origin) go in through
`receive_datagram` / `handle_timer`; datagrams come out of `datagrams_to_send`, events out of
`next_event`. It never reads a clock or touches a socket. `transport.Q3Client` drives it over UDP.

The application sets what it wants every frame with `set_input` (absolute view angles, stick
moves, buttons, optional VR head pitch / yaw offset); the core turns that into one usercmd per
command tick (`cmd_rate`, 60 Hz by default) with angles relative to the server's
`ps.delta_angles`, so the server's view equals the intended one. Packets carry the new cmd plus
the previous one (cl_packetdup 1). Buttons are 32 bits wide only on a VR link: the gamestate's
serverinfo has `vr_support 1` and the userinfo the server executed has `vr\\1`; otherwise 16 bits
and no head bits (a HeadTracking event says why). A VR client's roll is clamped to ±60°, as the VR
clients send it.

Joining takes one connectionless request, `getchallenge` (ioq3 answers 10 of getinfo / getstatus /
getchallenge per source address, then one per second): its answer names the protocol, 71 or 68.
"71" is two wire formats (docs/protocols/quake3.md#netchan): the checksummed netchan (ioq3, Quake3e) is tried first,
and the server's first netchan packet tells which one it speaks — a packet that fails the checksum
but reads as a legacy message is OpenArena's legacy netchan, a legacy guess answered with
checksummed packets is the other way round; the link then switches in place. A server silent
after `connectResponse` gets a `connect` in the other format once its reconnect limit (3 s) has
passed. A refusal (`print`) ends the attempt with the server's words: for good when retrying
cannot help (password, ban, protocol, game), else the client tries again after a jittered backoff.
Unanswered `getchallenge`s are resent with a growing, jittered interval; after two, one `connect`
without a challenge (which ioq3 answers without counting it against the limit) tells a server
that is up but rate-limiting this address from one that is not there.
"""

from __future__ import annotations

import random
import struct
from collections import Counter, deque
from dataclasses import dataclass, field
from enum import StrEnum
from math import isfinite
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..drops import MAX_DROP_REASONS, DropCounter, detail as drop_detail  # noqa: F401 - re-exported
from . import huffman, oob, pure, serverparse
from .delta import EntityState, PlayerState, player_field
from .entities import CS_PLAYERS, MAX_CLIENTS, SnapshotEntities, of_snapshot
from .errors import ClientError as ClientError, IllegalTransition, ServerMisbehaved as ServerMisbehaved
from .events import (
    Connected,
    Disconnected,
    EnteredWorld,
    Event,
    FamilyChanged,
    GamestateReceived,
    HeadTracking,
    RateLimited,
    Refused,
    ServerCommand,
    SnapshotReceived,
)
from .native import NATIVE
from .netchan import FRAGMENT_BIT, Netchan, NetchanMode, netchan_checksum
from .netfields import PLAYER_FIELDS
from .oob import Family
from .refusal import Refusal, RefusalKind, classify
from .usercmd import UserCmd
from .vrhead import ROLL_CLAMP, USER_BUTTON_MASK, WireHead, angle2short, pack_head

MAX_RELIABLE_COMMANDS = 64
PACKET_BACKUP = 32
MAX_PACKET_USERCMDS = 32
CS_SERVERINFO, CS_SYSTEMINFO = 0, 1
# getchallenge / connect resends on silence: 1 s, then x1.5 up to ioq3's RETRANSMIT_TIMEOUT (3 s),
# each jittered: clients started together spread out instead of asking in step.
RESEND_FIRST, RESEND_GROWTH, RESEND_MAX = 1.0, 1.5, 3.0
JITTER = (0.75, 1.25)
LIVENESS_AFTER = 2  # unanswered getchallenges before the challenge-less connect
GAMESTATE_RESEND = 1.0  # CA_CONNECTED: one packet per second until the gamestate arrives
# A server silent after connectResponse gets the other family's connect once this has passed:
# ioq3 and Quake3e ignore a reconnect from the same address within sv_reconnectlimit (3 s).
HANDSHAKE_WAIT = 3.3
WAIT_MARGIN = 0.2  # past a "please wait N seconds"
OTHER_71 = {Family.NEW71: Family.LEGACY71, Family.LEGACY71: Family.NEW71}
DISCONNECT_PACKETS = 3  # ioq3 CL_Disconnect sends the `disconnect` command three times
SILENCE_PROBE = 1.5  # snapshots come at 20 Hz: this much silence from a live link is suspicious
OOB_DISCONNECT_GRACE = 3.0  # ioq3 ignores an OOB disconnect within 3 s of a real packet
FLOOD_INTERVAL = 1.2  # ioq3 runs one game command per second per client (margin for jitter)
URGENT_COMMANDS = ("cp", "userinfo", "disconnect")  # engine commands: bypass the flood pacing
MAX_PENDING_COMMANDS = 32
MAX_EVENTS = 1024
MAX_QUEUED_DATAGRAMS = 256
_PS_DELTA_ANGLES = player_field("delta_angles")  # per snapshot: no attribute-lookup calls
_PS_COMMAND_TIME = player_field("commandTime")
# Where the C snapshot decoder (_q3snap.c) finds delta_angles and commandTime in a playerState.
_PS_IX = {f.name: i for i, f in enumerate(PLAYER_FIELDS)}
_SNAP_DELTA_IX = (_PS_IX["delta_angles[0]"], _PS_IX["delta_angles[1]"], _PS_IX["delta_angles[2]"])
_SNAP_COMMAND_TIME_IX = _PS_IX["commandTime"]
_F32X3 = struct.Struct("<3f")  # three C floats: angle2short's rounding, batched


class _NativeEntities(Mapping[int, EntityState]):
    """A C-decoded snapshot's entities (use_native_snapshots), built from the decoder's ring on
    first use: a snapshot's entities are read, if at all, right after it came (an observer's look,
    a delta base), long before the ring (32 snapshots, 1.6 s at 20/s) moves on."""

    __slots__ = ("_dec", "_num", "_d")

    def __init__(self, dec: Any, num: int) -> None:
        self._dec = dec
        self._num = num
        self._d: dict[int, EntityState] | None = None

    def _load(self) -> dict[int, EntityState]:
        d = self._d
        if d is None:
            got = self._dec.snap_get(self._num)
            if got is None:
                raise LookupError(f"snapshot {self._num}'s entities are no longer held (the C ring moved on)")
            d = self._d = {n: EntityState(n, v) for n, v in got[1].items()}
        return d

    def __getitem__(self, key: int) -> EntityState:
        return self._load()[key]

    def __iter__(self) -> Any:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def _view_shorts(p: float, y: float, r: float) -> tuple[int, int, int]:
    """ANGLE2SHORT of three angles (vrhead.angle2short's result for each, its ValueError for a
    non-finite one): round to single, (x * 65536) / 360 rounded to single, truncated; four struct
    calls instead of 21 calls per tick."""
    if not (isfinite(p) and isfinite(y) and isfinite(r)):
        angle2short(p), angle2short(y), angle2short(r)  # raises its ValueError for the bad one
    fp, fy, fr = _F32X3.unpack(_F32X3.pack(p, y, r))
    sp, sy, sr = _F32X3.unpack(_F32X3.pack(fp * 65536.0 / 360.0, fy * 65536.0 / 360.0, fr * 65536.0 / 360.0))
    return int(sp), int(sy), int(sr)


class State(StrEnum):
    IDLE = "idle"
    CHALLENGING = "challenging"  # getchallenge
    CONNECTING = "connecting"  # connect
    CONNECTED = "connected"  # netchan up, waiting for the gamestate
    PRIMED = "primed"  # gamestate parsed, sending usercmds
    ACTIVE = "active"  # the server runs our usercmds
    WAITING = "waiting"  # reconnect backoff (after a timeout, a drop or a refusal worth retrying)
    CLOSED = "closed"


# Netchan up with the gamestate in: the command timer ticks at cmd_rate.
LINKED = frozenset((State.PRIMED, State.ACTIVE))
NETCHAN_UP = frozenset((State.CONNECTED, State.PRIMED, State.ACTIVE))  # server messages are read
OOB_PREFIX = oob.OOB_PREFIX
_SNAPSHOT, _SERVER_COMMAND = serverparse.Snapshot, serverparse.ServerCommandOp

# The whole state machine: from each state, the states the core may move to (`_enter` refuses any
# other move with IllegalTransition). Why each move happens:
#   IDLE/CLOSED -> CHALLENGING   connect()
#   WAITING -> CHALLENGING       the reconnect backoff ran out: a new attempt
#   CHALLENGING -> CONNECTING    challengeResponse (the family chosen from it)
#   CONNECTING -> CONNECTING     the server named another protocol: connect in that family
#   CONNECTING -> CHALLENGING    "bad challenge": the challenge expired, ask again
#   CONNECTING -> CONNECTED      connectResponse: the netchan is up
#   CONNECTED -> CONNECTING      no gamestate in this netchan of "71": connect in the other one
#   CONNECTED/PRIMED/ACTIVE -> PRIMED   a gamestate (the first, a map change, a map_restart)
#   PRIMED -> ACTIVE             the first snapshot without SNAPFLAG_NOT_ACTIVE
#   any but IDLE/WAITING/CLOSED -> WAITING   a timeout, a drop or a refusal worth retrying
#   any but CLOSED -> CLOSED     close(), a refusal no retry can help, reconnect off
TRANSITIONS: Mapping[State, frozenset[State]] = MappingProxyType(
    {
        State.IDLE: frozenset((State.CHALLENGING, State.CLOSED)),
        State.CHALLENGING: frozenset((State.CONNECTING, State.WAITING, State.CLOSED)),
        State.CONNECTING: frozenset(
            (State.CONNECTING, State.CHALLENGING, State.CONNECTED, State.WAITING, State.CLOSED)
        ),
        State.CONNECTED: frozenset((State.CONNECTING, State.PRIMED, State.WAITING, State.CLOSED)),
        State.PRIMED: frozenset((State.PRIMED, State.ACTIVE, State.WAITING, State.CLOSED)),
        State.ACTIVE: frozenset((State.PRIMED, State.WAITING, State.CLOSED)),
        State.WAITING: frozenset((State.CHALLENGING, State.CLOSED)),
        State.CLOSED: frozenset((State.CHALLENGING,)),
    }
)


@dataclass(frozen=True)
class ClientConfig:
    name: str = "headcast"
    family: Family | None = None  # forced; None: detected from the server's answers (module doc)
    family_guess: Family | None = None  # detection's first try (None: from the challengeResponse)
    password: str = ""  # userinfo `password` (g_password, sv_privatePassword)
    vr: bool = False  # send `vr\1` and head bits where the server supports them
    cmd_rate: float = 60.0  # usercmds (and packets) per second
    rate: int = 25000
    snaps: int = 20
    model: str = "sarge"
    cl_guid: str = field(default_factory=oob.new_guid)
    qport: int = field(default_factory=lambda: random.randrange(1, 0x10000))
    pure_paks: tuple[Path, ...] = ()  # pk3 files (or folders of them) for `cp` on sv_pure servers
    connect_timeout: float = 10.0  # one attempt (getchallenge → gamestate) may take this long
    timeout: float = 10.0  # silence from a connected server before giving up on it
    reconnect: bool = True
    backoff: tuple[float, float] = (0.5, 8.0)  # first and largest reconnect delay


@dataclass(frozen=True)
class Status:
    state: State
    family: Family | None
    server_id: int
    client_num: int
    mapname: str
    sv_pure: bool
    vr_support: bool
    vr_active: bool  # 32-bit buttons with head bits on this link
    head_reason: str
    ps: PlayerState | None  # our playerState from the latest valid snapshot
    server_time: int
    latency_ms: float | None
    counters: dict[str, int]
    drops: dict[str, int]
    last_drop: str
    last_disconnect: str
    pure_error: str  # why no `cp` could be sent to a pure server ("" if fine)
    refusal: str  # the server's last refusal since we were last in ("" if none)
    refusal_fatal: bool  # ... and retrying cannot help: the client has stopped
    rate_limited: bool  # the server is up but drops our getchallenge (this attempt)


# set_input's values, validated: (pitch, yaw, roll, forward, right, up, buttons, weapon, head)
_Input = tuple[float, float, float, int, int, int, int, int, WireHead | None]


class Q3ClientCore:
    # Set by _reset_connection (each attempt), read by methods written above it.
    _resend: float
    _nonce: str
    _last_packet: float
    _next_probe: float
    _last_snap: serverparse.Snapshot | None  # set by _reset_gamestate (absorb_snapshots is above it)

    def __init__(self, config: ClientConfig | None = None) -> None:
        self.config = config or ClientConfig()
        self._state = State.IDLE
        self._family: Family | None = self.config.family
        self._events: deque[Event] = deque()
        self._out: list[bytes] = []
        self._timer: float | None = None
        # set_input's values, validated: (pitch, yaw, roll, forward, right, up, buttons, weapon, head)
        self._input: _Input = (0.0, 0.0, 0.0, 0, 0, 0, 0, 0, None)
        self._counters: Counter[str] = Counter()
        self._counters_view = MappingProxyType(self._counters)
        self._drops: Counter[str] = DropCounter()
        self._last_drop = ""
        self._last_disconnect = ""
        self._backoff = self.config.backoff[0]
        # How long after the `now` given with the datagrams being fed they were read (the driver
        # sets it around reads that follow a send at that same `now`): the round trip only.
        self.read_lag = 0.0
        self._pending: deque[str] = deque()
        self._netchan: Netchan | None = None
        self._userinfo_vr = self.config.vr  # what our userinfo says; set_vr changes it for good
        self._rng = random.Random()  # resend and backoff jitter
        self._known_family: Family | None = None  # the family a gamestate last came in
        self._refusal: Refusal | None = None  # the last refusal since a gamestate
        self._refusal_fatal = False
        self._rate_limited = False  # proven, until a getchallenge is answered
        self._gamestate_gen = 0  # counts _reset_gamestate: what a native snapshot ring belongs to
        self._snap_pump: Any = None  # transport's Pump decoding snapshots in C (attach_snapshots)
        self._snap_pump_gen = -1  # the gamestate generation the pump's ring and baselines are of
        self._snap_pump_num = -1  # the newest snapshot the pump's ring holds
        self._snap_ring_key: tuple[int, int] = (0, -1)  # the reliable command ring the pump holds
        self._inline: Any = None  # use_native_snapshots: a decoder for the messages read here
        self._inline_key: tuple[int, ...] = ()  # what the decoder was last given (attach_snapshots)
        self._reset_connection()
        self._userinfo(0)  # a name or model the engine would mangle raises OobError here, not mid-poll

    # ------------------------------------------------------------------ public API

    @property
    def state(self) -> State:
        return self._state

    @property
    def counters(self) -> Mapping[str, int]:
        """Live read-only view of the counters (no copy; `status.counters` is a snapshot copy)."""
        return self._counters_view

    @property
    def last_cmd_time(self) -> int:
        """serverTime of the newest usercmd built (the one a packet just carried)."""
        return self._last_cmd_time

    @property
    def refusal(self) -> Refusal | None:
        """The server's last refusal since we were last let in (its words, kind, whether retrying
        can help), None if none; `status.refusal_fatal` says whether the client stopped for it."""
        return self._refusal

    @property
    def rate_limited(self) -> bool:
        """The server is up but drops our getchallenge (until one is answered)."""
        return self._rate_limited

    @property
    def serverinfo(self) -> Mapping[str, str]:
        """The serverinfo configstring of the current gamestate as a live read-only view (empty
        before one): `version`, `protocol`, `sv_hostname`, `mapname`, ..."""
        return MappingProxyType(self._serverinfo)

    @property
    def latency_ms(self) -> float | None:
        """Milliseconds from sending a usercmd to the first snapshot that ran it (the newest such
        pair), None before one: the field itself, no copy (`status` copies the whole state)."""
        return self._latency_ms

    @property
    def has_events(self) -> bool:
        """An event is waiting for `next_event` / `take_events`."""
        return bool(self._events)

    @property
    def has_output(self) -> bool:
        """A datagram is waiting for `datagrams_to_send`."""
        return bool(self._out)

    def snapshot_at(self, num: int) -> serverparse.Snapshot | None:
        """The valid snapshot of message `num` if it is still among the last PACKET_BACKUP held,
        else None (what a delta snapshot's base and an observer's look-up need)."""
        snap = self._snapshots[num % PACKET_BACKUP]
        if snap is not None and snap.message_num == num:
            return snap
        pump = self._snap_pump
        if pump is not None and self._snap_pump_gen == self._gamestate_gen:
            return self._native_snapshot(pump.snap_get(num))  # one the pump decoded in C
        return None

    @staticmethod
    def _native_snapshot(got: Any) -> serverparse.Snapshot | None:
        """A serverparse.Snapshot from Pump.snap_get's tuple (None: not held)."""
        if got is None:
            return None
        (num, server_time, delta_num, flags, areamask, ps, _), ents = got
        entities = {n: EntityState(n, v) for n, v in ents.items()}
        return serverparse.Snapshot(num, server_time, delta_num, flags, areamask, PlayerState(*ps), entities, True)

    def attach_snapshots(self, pump: Any, absorb: float) -> None:
        """Let transport's native Pump decode the in-game snapshot messages in C (_q3snap.c) from
        its next run on, handing them over (absorb_snapshots) at most `absorb` s after the first
        came: its ring gets this gamestate's baselines and the newest snapshot decoded here (and,
        for the legacy netchan, our reliable command ring), and it consumes only while this core
        is ACTIVE. Called before each run."""
        last = self._last_snap
        reset = self._snap_pump is not pump or self._snap_pump_gen != self._gamestate_gen
        put = last is not None and (reset or last.message_num != self._snap_pump_num)
        if put:
            # Its entities may be read from this very decoder's ring (_NativeEntities): before a reset.
            assert last is not None
            last_entities = {n: e.values for n, e in last.entities.items()}
        if reset:
            pump.snap_reset({n: e.values for n, e in self._baselines.items()}, _SNAP_DELTA_IX, _SNAP_COMMAND_TIME_IX)
            self._snap_pump, self._snap_pump_gen, self._snap_pump_num = pump, self._gamestate_gen, -1
            self._snap_ring_key = (0, -1)
        if put:
            assert last is not None
            ps = last.ps
            pump.snap_put(
                last.message_num,
                last.server_time,
                last.delta_num,
                last.snap_flags,
                last.areamask,
                ps.values,
                ps.stats,
                ps.persistant,
                ps.ammo,
                ps.powerups,
                last_entities,
            )
            self._snap_pump_num = last.message_num
        # The legacy netchan unscrambles with our reliable command ring: the pump gets it when it changed.
        ring_key = (id(self._reliable), self._reliable_seq)
        ring = self._reliable if ring_key != self._snap_ring_key else None
        self._snap_ring_key = ring_key
        pump.snap_enable(self._state is State.ACTIVE, self._reliable_ack, self._reliable_seq, absorb, ring)

    def use_native_snapshots(self) -> bool:
        """Decode the in-game snapshot messages that reach receive_datagram in C too (the pump's
        decoder, _q3snap.c, without a pump): for a process driving many clients in Python (the
        swarm). The snapshots' entities are built when first read. False without the extension."""
        if NATIVE is None:
            return False
        self._inline = NATIVE.Pump(-1)
        return True

    def _native_message(self, seq: int, payload: bytes, now: float) -> bool:
        """use_native_snapshots: the message `seq` decoded in C if it is a snapshot message, server
        commands before it allowed (_on_message's effects then applied here); False: the Python
        parser's."""
        dec = self._inline
        last = self._last_snap
        key = (
            self._gamestate_gen,
            self._reliable_ack,
            self._reliable_seq,
            last.message_num if last is not None else -1,
        )
        if key != self._inline_key:
            self.attach_snapshots(dec, 0.0)
            self._inline_key = key
        commands = dec.snap_parse_cmds(payload, seq)
        if commands is None:
            return False
        ((_, _, _, head, _),) = dec.snap_take()
        num, server_time, delta_num, flags, areamask, ps_parts, nent = head
        self._server_msg_seq = seq
        self._counters["messages_in"] += 1
        for cmd_seq, text in commands:  # before the snapshot, in order (_on_message)
            self._on_server_command(cmd_seq, text, now)
            if self._state not in NETCHAN_UP:
                return True  # a `disconnect` command ended the link mid-message
        if self._state not in LINKED:
            return True
        ps = PlayerState(*ps_parts)
        snap = serverparse.Snapshot(num, server_time, delta_num, flags, areamask, ps, _NativeEntities(dec, num), True)
        self._snapshots[num % PACKET_BACKUP] = snap
        self._last_snap = snap
        self._snap_pump_num = num
        self._inline_key = key[:3] + (num,)
        self._took_snapshot(num, server_time, delta_num, flags, ps, nent, now, self.read_lag)
        return True

    def absorb_snapshots(self, taken: Sequence[tuple[Any, ...]]) -> None:
        """The snapshot messages the pump consumed (Pump.snap_take, oldest first), as receive_datagram
        would have taken each at its arrival: counters, netchan sequence, the snapshot's effects and
        events; the newest becomes the last snapshot (its entities fetched from the pump's ring)."""
        if not taken:
            return
        netchan = self._netchan
        assert netchan is not None
        counters = self._counters
        last = None
        for seq, at, nbytes, head, lag in taken:
            counters["packets_in"] += 1
            counters["bytes_in"] += nbytes
            dropped = seq - (netchan.incoming_sequence + 1)
            if dropped > 0:
                netchan.drops["lost packets"] += dropped
            netchan.incoming_sequence = seq
            self._last_packet = at
            self._server_msg_seq = seq
            counters["messages_in"] += 1
            if self._state not in LINKED:
                last = None
                continue
            num, server_time, delta_num, flags, areamask, ps_parts, nent = head
            ps = PlayerState(*ps_parts)
            self._took_snapshot(num, server_time, delta_num, flags, ps, nent, at, lag)
            last = (num, server_time, delta_num, flags, areamask, ps)
        if last is not None and self._state in LINKED:
            # The newest becomes the last snapshot; its entities are built from the pump's ring when
            # first read (a delta base, the mirror's look): a hand-over builds no entity records.
            num = last[0]
            snap = serverparse.Snapshot(*last, _NativeEntities(self._snap_pump, num), True)
            self._snapshots[num % PACKET_BACKUP] = snap
            self._last_snap = snap
            self._snap_pump_num = num

    def connect(self, now: float) -> None:
        if self._state not in (State.IDLE, State.CLOSED):
            raise ClientError(f"connect() in state {self._state}")
        self._backoff = self.config.backoff[0]
        self._refusal, self._refusal_fatal = None, False
        self._start_attempt(now)
        self.handle_timer(now)

    def set_input(
        self,
        angles: Sequence[float] = (0.0, 0.0, 0.0),
        forward: int = 0,
        right: int = 0,
        up: int = 0,
        buttons: int = 0,
        weapon: int = 0,
        head: WireHead | None = None,
    ) -> None:
        """What the next usercmds carry. `angles` is the absolute view (pitch, yaw, roll) wanted on
        the server; moves are clamped to ±127; user buttons must stay below bit 12 (head bits).
        `head` is (head pitch, head yaw offset from the view yaw), vrhead.WireHead: a tracked
        head's (pitch, yaw, roll) is refused (ValueError), not read as an offset."""
        p, y, r = angles
        p, y, r = float(p), float(y), float(r)
        if head is not None:
            head_pitch, head_offset = head  # a 3-tuple (a tracked head) raises ValueError here
            head = (float(head_pitch), float(head_offset))
        # Refused here, before the core holds it: a tick would raise on it (out of poll or run(),
        # and in run()'s thread while another thread calls this).
        if not (isfinite(p) and isfinite(y) and isfinite(r)) or (
            head is not None and not (isfinite(head[0]) and isfinite(head[1]))
        ):
            raise ValueError(f"non-finite angle in {(p, y, r)!r} (head {head!r})")
        if self._userinfo_vr:  # a VR client's roll is its head's, within what VR receivers take
            r = max(-ROLL_CLAMP, min(ROLL_CLAMP, r))
        # A plain tuple: this runs every frame, and a frozen dataclass costs several times more.
        # Clamped inline: a function call per move costs more than min/max, cache-cold, every frame.
        self._input = (
            p,
            y,
            r,
            max(-127, min(127, int(forward))),
            max(-127, min(127, int(right))),
            max(-127, min(127, int(up))),
            int(buttons) & USER_BUTTON_MASK,
            int(weapon) & 0xFF,
            head,
        )

    def send_command(self, text: str) -> None:
        """Queue a reliable client command (e.g. `say hi`, `team s`). Game commands are paced one per
        FLOOD_INTERVAL so the server's flood protection does not swallow them."""
        if self._state is State.CLOSED:
            raise ClientError("send_command() on a closed client")
        if len(self._pending) >= MAX_PENDING_COMMANDS:
            raise ClientError(f"{MAX_PENDING_COMMANDS} commands already waiting")
        self._pending.append(text)

    def set_vr(self, enabled: bool) -> None:
        """Switch `vr` in the userinfo mid-session; the button width follows from the first packet
        carrying the new userinfo (the server runs commands before moves)."""
        if enabled == self._userinfo_vr:
            return
        self._userinfo_vr = enabled
        if enabled:  # the roll already given is clamped as set_input now would
            p, y, r, forward, right, up, buttons, weapon, head = self._input
            self._input = (p, y, max(-ROLL_CLAMP, min(ROLL_CLAMP, r)), forward, right, up, buttons, weapon, head)
        if self._state in (State.CONNECTED, State.PRIMED, State.ACTIVE):
            self._add_reliable(f'userinfo "{self._userinfo(None)}"')
            self._update_head_status()

    def close(self, now: float, reason: str = "closed by the application") -> None:
        """Send `disconnect` (three packets, as ioq3) and stop."""
        if self._state in (State.CONNECTED, State.PRIMED, State.ACTIVE):
            if self._reliable_seq - self._reliable_ack >= MAX_RELIABLE_COMMANDS:
                # 64 unacknowledged: the oldest gives way (the server drops us for the gap anyway),
                # so leaving never fails however the server behaved
                self._reliable_ack += 1
            self._add_reliable("disconnect")
            for _ in range(DISCONNECT_PACKETS):
                self._send_packet(now, with_cmds=False)
        self._timer = None
        if self._state is not State.CLOSED:
            self._enter(State.CLOSED)
            self._last_disconnect = reason
            self._emit(Disconnected(reason, False))

    def receive_datagram(self, data: bytes, now: float) -> None:
        counters = self._counters
        counters["packets_in"] += 1
        counters["bytes_in"] += len(data)
        if data[:4] == OOB_PREFIX:
            self._on_oob(data, now)
        elif self._state in NETCHAN_UP:
            self._on_netchan(data, now)
        else:
            self._drop("netchan packet while not connected")

    def datagrams_to_send(self, now: float) -> list[bytes]:
        out, self._out = self._out, []
        return out

    def get_timer(self) -> float | None:
        return self._timer

    def run_due(self, now: float, max_steps: int) -> list[bytes]:
        """`handle_timer` while the timer is due (at most `max_steps` times, catch-up after a stall),
        then `datagrams_to_send`: a driver's per-tick call, one instead of several per step."""
        for _ in range(max_steps):
            timer = self._timer
            if timer is None or timer > now:
                break
            if self._state in LINKED:
                self._linked_timer(now)
            else:
                self.handle_timer(now)
        out, self._out = self._out, []
        return out

    def handle_timer(self, now: float) -> None:
        if self._timer is None or now < self._timer:
            return
        if self._state in LINKED:
            return self._linked_timer(now)  # the cmd_rate path, first
        if self._state is State.WAITING:
            self._start_attempt(now)
        st = self._state
        if st in (State.CHALLENGING, State.CONNECTING, State.CONNECTED):
            if now - self._attempt_start >= self.config.connect_timeout:
                self._refusal = None  # this attempt ended in silence, whatever an earlier one was told
                self._fail(now, self._timeout_reason(st))
                return
        deadline = self._attempt_start + self.config.connect_timeout
        if st is State.CHALLENGING:
            self._send_oob(oob.getchallenge(self._client_challenge))
            self._requests += 1
            if self._requests == LIVENESS_AFTER + 1:
                # Two unanswered: is the server there at all? ioq3 answers a connect without a valid
                # challenge ("No or bad challenge for your address.") without counting it against
                # the address, as it does getchallenge. Sent after the getchallenge: its answer then
                # comes second, and a challengeResponse is not taken for an answer to it.
                self._send_connect(0)
                self._liveness_pending += 1
            self._timer = min(now + self._next_resend(), deadline)
        elif st is State.CONNECTING:
            self._send_connect(self._challenge)
            self._timer = min(now + self._next_resend(), deadline)
        elif st is State.CONNECTED:
            if self._switch_at is not None and now >= self._switch_at:
                # Accepted, then nothing in this netchan: connect in the other one (the server's
                # reconnect limit has passed, and it reuses our slot: same address and qport).
                family = self._family
                assert family is not None  # CONNECTED: the family the connect went out in
                self._switch_family(
                    OTHER_71[family],
                    now,
                    f"no gamestate {HANDSHAKE_WAIT:g} s after connectResponse in {family.description}",
                )
                return
            self._send_packet(now, with_cmds=False)
            self._timer = min(
                now + GAMESTATE_RESEND, deadline, self._switch_at if self._switch_at is not None else deadline
            )

    def _next_resend(self) -> float:
        """The wait before the next getchallenge / connect: growing, jittered (module doc)."""
        delay = self._resend * self._rng.uniform(*JITTER)
        self._resend = min(self._resend * RESEND_GROWTH, RESEND_MAX)
        return delay

    def _timeout_reason(self, st: State) -> str:
        t = f"{self.config.connect_timeout:g} s"
        if st is State.CHALLENGING:
            if self._rate_limited:
                return (
                    f"the server is rate-limiting this address: it is up but answered none of "
                    f"{self._requests} getchallenge requests in {t}"
                )
            return f"no answer to getchallenge ({self._requests} sent) in {t}"
        if st is State.CONNECTING:
            return f"the server answered getchallenge but not connect in {t}"
        tried = ", then ".join(f.description for f in self._tried)
        return f"connectResponse but no gamestate in {t} ({tried})"

    def _linked_timer(self, now: float) -> None:
        """PRIMED / ACTIVE: the link watch, then one usercmd packet per tick."""
        silent = now - self._last_packet
        if silent >= self.config.timeout:
            self._fail(now, f"server silent for {self.config.timeout:.0f} s")
            return
        if silent >= SILENCE_PROBE and now >= self._next_probe:
            # ioq3 ignores packets from clients it does not know (a restarted server) without a
            # word: ask whether the server is up at all; an answer while the netchan stays
            # silent means it has forgotten us, so reconnect without waiting for the timeout.
            self._send_oob(oob.getinfo(self._nonce))
            self._next_probe = now + 1.0
        self._cmds.append(self._make_cmd(now))
        self._counters["usercmds"] += 1
        self._send_packet(now, with_cmds=True)
        # Advance on the grid so the command rate does not drift with late polls.
        period = 1.0 / self.config.cmd_rate
        timer = (now if self._timer is None else self._timer) + period  # (the timer that ran this)
        self._timer = timer if timer > now else now + period

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def take_events(self) -> list[Event]:
        """Every queued event, oldest first, and an empty queue (the driver's per-poll drain)."""
        events = self._events
        if not events:
            return []
        out = list(events)
        events.clear()
        return out

    @property
    def status(self) -> Status:
        return Status(
            state=self._state,
            family=self._family,
            server_id=self._server_id,
            client_num=self._client_num,
            mapname=self._serverinfo.get("mapname", ""),
            sv_pure=self._sv_pure,
            vr_support=self._vr_support,
            vr_active=self._vr_active(),
            head_reason=self._head_reason,
            ps=self._last_snap.ps if self._last_snap else None,
            server_time=self._last_cmd_time,
            latency_ms=self._latency_ms,
            counters=dict(self._counters),
            drops=self.drop_counts(),
            last_drop=self._last_drop,
            last_disconnect=self._last_disconnect,
            pure_error=self._pure_error,
            refusal=self._refusal.text if self._refusal else "",
            refusal_fatal=self._refusal_fatal,
            rate_limited=self._rate_limited,
        )

    # ------------------------------------------------------------------ connection lifecycle

    def _enter(self, state: State) -> None:
        """Move to `state` if TRANSITIONS allows it from the current one; IllegalTransition if not."""
        if state not in TRANSITIONS[self._state]:
            raise IllegalTransition(f"no transition {self._state} -> {state} in the state table")
        self._state = state

    def _retire_netchan(self) -> None:
        if self._netchan is not None:  # keep the old link's netchan drops counted
            for reason, n in self._netchan.drops.items():
                self._drops[f"netchan: {reason}"] += n
        self._netchan = None

    def _reset_connection(self) -> None:
        self._retire_netchan()
        # The handshake of one attempt (module doc).
        self._requests = 0  # getchallenges sent
        self._resend = RESEND_FIRST  # the next resend's wait (before jitter)
        self._liveness_pending = 0  # challenge-less connects not yet answered
        self._protocol_hint: int | None = None  # a protocol the server named refusing one of them
        self._tried: list[Family] = []  # families a connect went out in, in order
        self._shadow: Netchan | None = None  # CONNECTED: the other netchan of protocol 71
        self._switch_at: float | None = None  # CONNECTED, auto: connect in the other family then
        self._challenge = 0
        self._client_challenge = random.randrange(1, 0x7FFFFFFF)
        self._nonce = f"{random.randrange(1 << 30):x}"
        self._attempt_start = 0.0
        self._last_packet = 0.0
        self._next_probe = 0.0
        self._server_commands = [""] * MAX_RELIABLE_COMMANDS
        self._server_cmd_seq = 0
        self._reliable = [""] * MAX_RELIABLE_COMMANDS
        self._reliable_seq = 0
        self._reliable_ack = 0
        self._last_reliable_time = -1e9
        self._reset_gamestate()

    def _reset_gamestate(self) -> None:
        self._gamestate_gen += 1  # a native ring (attach_snapshots) is stale from here on
        self._server_id = 0
        self._client_num = -1
        self._checksum_feed = 0
        self._configstrings: dict[int, str] = {}
        self._serverinfo: dict[str, str] = {}
        self._baselines: dict[int, EntityState] = {}
        self._sv_pure = False
        self._vr_support = False
        self._head_reason = "not connected"
        self._pure_error = ""
        self._bcs = ""
        self._snapshots: list[serverparse.Snapshot | None] = [None] * PACKET_BACKUP
        self._last_snap = None
        self._delta_angles: tuple[int, int, int] = (0, 0, 0)  # the last snapshot's ps.delta_angles
        self._last_snap_time = 0.0
        self._server_msg_seq = 0
        self._cmds: deque[UserCmd] = deque(maxlen=2)  # cl_packetdup 1: the new cmd and the one before
        self._last_cmd_time = 0
        self._out_packets: deque[tuple[float, int]] = deque(maxlen=PACKET_BACKUP)  # (sent at, cmd time)
        self._latency_ms: float | None = None
        self._entered = False

    def _start_attempt(self, now: float) -> None:
        self._reset_connection()
        self._attempt_start = now
        self._counters["attempts"] += 1
        self._family = self.config.family  # auto: named again by this attempt's answers
        self._enter(State.CHALLENGING)
        self._timer = now  # send the first request right away

    def _fail(self, now: float, reason: str, retry: bool = True, delay: float | None = None) -> None:
        """The link is gone: report, then back off (jittered; `delay` instead when given) and start
        again, or stop (`retry` False, or reconnect off)."""
        self._last_disconnect = reason
        again = retry and self.config.reconnect
        self._emit(Disconnected(reason, again))
        self._counters["disconnects"] += 1
        self._shadow = None
        if not again:
            self._enter(State.CLOSED)
            self._timer = None
            return
        if delay is None:
            delay = self._backoff * self._rng.uniform(*JITTER)
            self._backoff = min(self._backoff * 2, self.config.backoff[1])
        self._enter(State.WAITING)
        self._timer = now + delay

    def _first_family(self, protocol: int | None) -> Family | None:
        """The family to connect in first, from what the server said (module doc)."""
        cfg = self.config
        if cfg.family is not None:
            return cfg.family
        if cfg.family_guess is not None:
            return cfg.family_guess
        if self._known_family is not None:
            return self._known_family
        protocol = self._protocol_hint or protocol
        if protocol == 71:
            return Family.NEW71
        if protocol in (68, None):  # None: a server too old to name it (1.32: "challengeResponse N")
            return Family.LEGACY68
        return None

    def _connect_as(self, family: Family, now: float) -> None:
        self._family = family
        self._tried.append(family)
        self._enter(State.CONNECTING)
        self._resend = RESEND_FIRST
        self._timer = now

    def _switch_family(self, family: Family, now: float, why: str) -> None:
        """Auto-detection: connect again in `family` (same challenge, address and qport)."""
        old = self._family
        assert old is not None
        self._retire_netchan()
        self._shadow = self._switch_at = None
        self._counters["family_switches"] += 1
        self._emit(FamilyChanged(old, family, why))
        self._connect_as(family, now)

    def _adopt_shadow(self, now: float, why: str) -> None:
        """Auto-detection: the server speaks the other netchan of protocol 71; go on in it."""
        old, shadow, netchan = self._family, self._shadow, self._netchan
        assert old is not None and shadow is not None and netchan is not None
        shadow.outgoing_sequence = netchan.outgoing_sequence
        self._retire_netchan()
        self._netchan, self._shadow, self._switch_at = shadow, None, None
        self._family = OTHER_71[old]
        self._tried.append(self._family)
        self._counters["family_switches"] += 1
        self._emit(FamilyChanged(old, self._family, why))
        self._timer = now  # a packet it can read right away: it answers with the gamestate

    def _refuse(self, now: float, refusal: Refusal, fatal: bool | None = None) -> None:
        """The server said no: stop when retrying cannot help, else back off and try again."""
        fatal = refusal.fatal if fatal is None else fatal
        self._refusal, self._refusal_fatal = refusal, fatal
        self._counters["refusals"] += 1
        reason = f"server refused: {refusal.text}"
        if fatal or not self.config.reconnect:
            self._emit(Refused(refusal.text, str(refusal.kind), fatal, None))
            self._fail(now, reason, retry=False)
            return
        # Announced before the Disconnected it causes: the wait is the backoff's next step.
        delay = self._backoff * self._rng.uniform(*JITTER)
        self._backoff = min(self._backoff * 2, self.config.backoff[1])
        self._emit(Refused(refusal.text, str(refusal.kind), False, delay))
        self._fail(now, reason, delay=delay)

    def _on_refusal(self, refusal: Refusal, now: float) -> None:
        """A `print` while challenging or connecting (refusal.py sorts them)."""
        st = self._state
        liveness = self._liveness_pending > 0 and refusal.kind in (RefusalKind.CHALLENGE, RefusalKind.PROTOCOL)
        if liveness:
            # The answer to our challenge-less connect: the server is up. Still challenging: it
            # drops our getchallenges, i.e. this address is over its rate limit.
            self._liveness_pending -= 1
            if refusal.kind is RefusalKind.PROTOCOL and self.config.family is None:
                self._protocol_hint = refusal.protocol
            if st is State.CHALLENGING and not self._rate_limited:
                self._rate_limited = True
                self._emit(RateLimited(self._requests))
            if refusal.kind is RefusalKind.CHALLENGE or self.config.family is None:
                return
        elif refusal.kind is RefusalKind.CHALLENGE:
            if st is State.CONNECTING:  # the challenge expired or the server restarted: a new one
                self._client_challenge = random.randrange(1, 0x7FFFFFFF)
                self._enter(State.CHALLENGING)
                self._resend = RESEND_FIRST
                self._timer = now
            return
        if refusal.kind is RefusalKind.WAIT and st is State.CONNECTING:
            # Quake3e's reconnect limit: connect again when it says.
            delay = (refusal.wait or 1.0) + WAIT_MARGIN
            self._refusal, self._refusal_fatal = refusal, False
            self._emit(Refused(refusal.text, str(refusal.kind), False, delay))
            self._timer = now + delay
            return
        if refusal.kind is RefusalKind.PROTOCOL and self.config.family is None and st is State.CONNECTING:
            family = {68: Family.LEGACY68, 71: Family.NEW71}.get(refusal.protocol or 0)
            if family is not None and family not in self._tried:
                return self._switch_family(family, now, f"the server speaks protocol {refusal.protocol}")
        self._refuse(now, refusal)

    # ------------------------------------------------------------------ out-of-band

    def _send_oob(self, packet: bytes) -> None:
        self._queue((packet,))

    def _queue(self, dgrams: Sequence[bytes]) -> None:
        out = self._out
        counters = self._counters
        for dgram in dgrams:
            if len(out) >= MAX_QUEUED_DATAGRAMS:  # nobody drains us: keep the newest, bounded
                del out[0]
                counters["datagrams_discarded"] += 1
            out.append(dgram)
            counters["packets_out"] += 1
            counters["bytes_out"] += len(dgram)

    def _userinfo(self, challenge: int | None) -> str:
        cfg = self.config
        fam = self._family or cfg.family_guess or self._known_family or Family.NEW71
        info = oob.build_userinfo(
            name=cfg.name,
            challenge=challenge or 0,
            qport=cfg.qport,
            protocol=fam.protocol,
            cl_guid=cfg.cl_guid,
            rate=cfg.rate,
            snaps=cfg.snaps,
            model=cfg.model,
            vr=self._userinfo_vr,
            extra={"password": cfg.password} if cfg.password else None,
        )
        if challenge is None:  # a `userinfo` command: the engine adds (and strips) these itself
            pairs = oob.info_parse(info)
            for k in ("protocol", "qport", "challenge"):
                pairs.pop(k, None)
            info = oob.info_build(pairs)
        return info

    def _send_connect(self, challenge: int) -> None:
        self._send_oob(huffman.compress(oob.connect_text(self._userinfo(challenge))))

    def _on_oob(self, data: bytes, now: float) -> None:
        try:
            msg = oob.parse_oob(data)
        except oob.OobError as exc:
            self._drop(f"oob: {exc}")
            return
        st = self._state
        if isinstance(msg, oob.InfoResponse):
            if msg.info.get("challenge") != self._nonce:
                return self._drop("oob: infoResponse to another request")
            if st not in (State.PRIMED, State.ACTIVE):
                return self._drop("oob: unexpected infoResponse")
            if now - self._last_packet >= SILENCE_PROBE:
                self._fail(now, "server is up but no longer talks to this client (restarted?)")
        elif isinstance(msg, oob.ChallengeResponse):
            if st is not State.CHALLENGING:
                return self._drop("oob: challengeResponse while not challenging")
            if msg.client_challenge is not None and msg.client_challenge != self._client_challenge:
                return self._drop("oob: challengeResponse for another client challenge")
            self._challenge = msg.challenge
            self._rate_limited = False
            family = self._first_family(msg.protocol)
            if family is None:
                return self._refuse(
                    now, Refusal(f"the server speaks protocol {msg.protocol}", RefusalKind.PROTOCOL, msg.protocol)
                )
            self._connect_as(family, now)
        elif isinstance(msg, oob.ConnectResponse):
            if st is not State.CONNECTING:
                return self._drop("oob: connectResponse while not connecting")
            if msg.challenge is not None and msg.challenge != self._challenge:
                return self._drop("oob: connectResponse with another challenge")
            family = self._family
            assert family is not None
            self._netchan = self._new_netchan(family)
            other = OTHER_71.get(family)
            # Protocol 71 in either netchan: the server's first packets tell which it speaks.
            self._shadow = self._new_netchan(other) if other is not None else None
            self._switch_at = (
                now + HANDSHAKE_WAIT
                if other is not None and other not in self._tried and self.config.family is None
                else None
            )
            self._enter(State.CONNECTED)
            self._last_packet = now
            self._emit(Connected(family, self._challenge))
            self._timer = now
        elif isinstance(msg, oob.Disconnect):
            if st in (State.CONNECTED, State.PRIMED, State.ACTIVE) and now - self._last_packet >= OOB_DISCONNECT_GRACE:
                self._fail(now, "server sent disconnect (it no longer knows this client)")
            else:
                self._drop("oob: disconnect ignored (recent traffic or not connected)")
        elif isinstance(msg, oob.Print):
            self._counters["prints"] += 1
            if st in (State.CHALLENGING, State.CONNECTING):
                # ioq3 answers a refused getchallenge or connect with a print (refusal.py)
                self._on_refusal(classify(msg.text), now)
        else:
            self._drop("oob: unexpected packet")

    # ------------------------------------------------------------------ netchan in

    def _new_netchan(self, family: Family) -> Netchan:
        mode = NetchanMode.LEGACY if family.legacy_netchan else NetchanMode.NEW71
        return Netchan(mode, challenge=self._challenge, qport=self.config.qport)

    def _other_netchan(self, data: bytes, now: float) -> bool:
        """CONNECTED on one netchan of protocol 71: is this packet in the other? Auto-detection then
        goes on in the other one; with a forced family the attempt ends, naming what the server
        speaks. True when the packet was used up here."""
        netchan, shadow = self._netchan, self._shadow
        assert netchan is not None and shadow is not None
        # A checksummed header is 32 bits no legacy packet carries by chance.
        checksummed = len(data) >= 8 and struct.unpack_from("<i", data, 4)[0] == netchan_checksum(
            netchan.challenge, struct.unpack_from("<I", data)[0] & ~FRAGMENT_BIT
        )
        if checksummed is (netchan.mode is NetchanMode.NEW71):
            return False  # in our own netchan
        msg = None
        sequence = 0
        if shadow.mode is NetchanMode.LEGACY:
            # It fails our checksum: does it read as a legacy message? (Legacy servers answer the
            # packets they cannot read with a gamestate, and send snapshots meanwhile.)
            received = shadow.process(data, self._reliable)
            if received is None:
                return True  # a fragment of one (or a drop the shadow counts)
            sequence = received.sequence
            try:
                msg = serverparse.parse_server_message(
                    received.data, received.sequence, self.snapshot_at, self._baselines
                )
            except serverparse.ServerParseError as exc:
                self._drop(f"parse: {exc}")
                return True
        forced = self.config.family
        if forced is not None:
            self._refuse(
                now,
                Refusal(
                    f"the server speaks {OTHER_71[forced].description}, not {forced.description}",
                    RefusalKind.PROTOCOL,
                    71,
                ),
                fatal=True,
            )
            return True
        self._adopt_shadow(now, "the server's packets are in that netchan")
        if msg is None:
            return False  # the adopted (checksummed) netchan takes it from here
        self._last_packet = now
        self._on_message(sequence, msg, now)
        return True

    def _on_netchan(self, data: bytes, now: float) -> None:
        if self._shadow is not None and self._state is State.CONNECTED and self._other_netchan(data, now):
            return
        assert self._netchan is not None
        received = self._netchan.process(data, self._reliable)
        if received is None:  # a fragment awaiting the rest, or a drop the netchan counted
            return
        self._last_packet = now
        msg_num = received.sequence
        payload = received.data
        if self._inline is not None and self._state is State.ACTIVE and self._native_message(msg_num, payload, now):
            return
        try:
            msg = serverparse.parse_server_message(payload, msg_num, self.snapshot_at, self._baselines)
        except serverparse.ServerParseError as exc:
            self._drop(f"parse: {exc}")
            return
        self._on_message(msg_num, msg, now)

    def _on_message(self, msg_num: int, msg: serverparse.ServerMessage, now: float) -> None:
        self._server_msg_seq = msg_num
        self._counters["messages_in"] += 1
        ack = msg.reliable_ack
        if self._reliable_seq - MAX_RELIABLE_COMMANDS <= ack <= self._reliable_seq:
            self._reliable_ack = max(self._reliable_ack, ack)
        for op in msg.ops:
            if isinstance(op, _SNAPSHOT):  # the common case first: most messages are one snapshot
                if self._state in LINKED:
                    self._on_snapshot(op, now)
            elif isinstance(op, _SERVER_COMMAND):
                self._on_server_command(op.seq, op.text, now)
            else:
                self._on_gamestate(op, now)
            if self._state not in NETCHAN_UP:
                return  # a `disconnect` command ended the link mid-message

    def _on_server_command(self, seq: int, text: str, now: float) -> None:
        if seq <= self._server_cmd_seq:
            return  # the server resends until acked
        if seq > self._server_cmd_seq + MAX_RELIABLE_COMMANDS and self._server_cmd_seq:
            self._drop("server commands lost (ring overrun)")
        self._server_cmd_seq = seq
        self._server_commands[seq % MAX_RELIABLE_COMMANDS] = text
        self._emit(ServerCommand(seq, text))
        self._apply_server_command(text, now)

    def _apply_server_command(self, text: str, now: float) -> None:
        cmd, _, rest = text.partition(" ")
        if cmd == "disconnect":
            self._fail(now, f"server: {rest.strip().strip(chr(34)) or 'disconnected'}")
        elif cmd == "cs":
            index, _, value = rest.partition(" ")
            try:
                i = int(index)
            except ValueError:
                return self._drop("cs command without an index")
            self._set_configstring(i, value.strip().strip('"'))
        elif cmd in ("bcs0", "bcs1", "bcs2"):
            # A big configstring in pieces: bcs0 starts, bcs1 continues, bcs2 ends (cl_cgame.c).
            index, _, value = rest.partition(" ")
            piece = value.strip().strip('"')
            self._bcs = piece if cmd == "bcs0" else (self._bcs + piece)[:8192]
            if cmd == "bcs2":
                try:
                    self._set_configstring(int(index), self._bcs)
                except ValueError:
                    self._drop("bcs command without an index")

    def _set_configstring(self, index: int, value: str) -> None:
        if not 0 <= index < serverparse.MAX_CONFIGSTRINGS:
            return self._drop(f"configstring index {index} out of range")
        self._configstrings[index] = value
        if index == CS_SYSTEMINFO:
            try:  # map_restart: a new sv_serverid arrives this way (cl_cgame.c CL_SystemInfoChanged)
                self._server_id = int(oob.info_parse(value).get("sv_serverid", self._server_id))
            except ValueError:
                self._drop("sv_serverid is not a number")
        elif index == CS_SERVERINFO:
            self._serverinfo = oob.info_parse(value)

    def _on_gamestate(self, gs: serverparse.Gamestate, now: float) -> None:
        keep_cmds = (self._server_commands, self._server_cmd_seq)
        self._reset_gamestate()
        self._server_commands, self._server_cmd_seq = keep_cmds
        # The gamestate's sequence is authoritative: commands inside it are already in the ring.
        self._server_cmd_seq = gs.command_sequence
        self._server_msg_seq = self._netchan.incoming_sequence if self._netchan else 0
        self._configstrings = dict(gs.configstrings)
        self._baselines = dict(gs.baselines)
        self._client_num = gs.client_num
        self._checksum_feed = gs.checksum_feed
        self._serverinfo = oob.info_parse(self._configstrings.get(CS_SERVERINFO, ""))
        sysinfo = oob.info_parse(self._configstrings.get(CS_SYSTEMINFO, ""))
        try:
            self._server_id = int(sysinfo.get("sv_serverid", "0"))
        except ValueError:
            self._server_id = 0
        self._sv_pure = sysinfo.get("sv_pure", "0") not in ("", "0")
        self._vr_support = self._serverinfo.get("vr_support", "0").strip() == "1"
        self._counters["gamestates"] += 1
        self._enter(State.PRIMED)
        # Let in: this family is the first try of any later attempt, and what it was told is past.
        self._known_family = self._family
        self._shadow = self._switch_at = None
        self._refusal, self._refusal_fatal = None, False
        self._emit(
            GamestateReceived(
                self._server_id,
                gs.client_num,
                gs.checksum_feed,
                self._serverinfo.get("mapname", ""),
                self._sv_pure,
                self._vr_support,
                dict(self._serverinfo),
                sysinfo,
            )
        )
        self._update_head_status()
        if self._sv_pure:
            try:
                cp = self._cp_command()
                if self._reliable_seq - self._reliable_ack >= MAX_RELIABLE_COMMANDS:
                    self._server_misbehaved(
                        now,
                        f"the server acknowledged none of our last {MAX_RELIABLE_COMMANDS} "
                        "reliable commands (it keeps sending its gamestate and ignores our "
                        "`cp`): ioq3 would drop us",
                    )
                self._add_reliable(cp)
            except pure.PureError as exc:
                # Without a valid cp a pure ioq3 server ignores our moves: we stay PRIMED and say why.
                self._pure_error = str(exc)
                self._counters["pure_errors"] += 1
        self._timer = now

    def _server_misbehaved(self, now: float, reason: str) -> None:
        """Leave for good (disconnect sent, no reconnect) and raise ServerMisbehaved(reason)."""
        self.close(now, reason)
        raise ServerMisbehaved(reason)

    def _cp_command(self) -> str:
        files = pure.pak_files(self.config.pure_paks)
        if not files:
            raise pure.PureError("sv_pure 1 and no pk3 files configured (ClientConfig.pure_paks)")
        return pure.cp_command(self._server_id, self._checksum_feed, pure.search_order(files))

    def _update_head_status(self) -> None:
        if not self._userinfo_vr:
            sent, reason = False, "client not configured as VR"
        elif not self._vr_support:
            sent, reason = False, "server has no vr_support: 16-bit buttons, head tracking not sent"
        else:
            sent, reason = True, "VR server and vr\\1 userinfo: 32-bit buttons with head bits"
        self._head_reason = reason
        self._emit(HeadTracking(sent, reason))

    def _vr_active(self) -> bool:
        return self._vr_support and self._userinfo_vr

    def _on_snapshot(self, snap: serverparse.Snapshot, now: float) -> None:
        if not snap.valid:
            self._drop("snapshot delta from a base we no longer hold")
            return
        if self._last_snap is not None and snap.message_num <= self._last_snap.message_num:
            return
        self._snapshots[snap.message_num % PACKET_BACKUP] = snap
        self._last_snap = snap
        self._took_snapshot(
            snap.message_num,
            snap.server_time,
            snap.delta_num,
            snap.snap_flags,
            snap.ps,
            len(snap.entities),
            now,
            self.read_lag,
        )

    def _took_snapshot(
        self,
        num: int,
        server_time: int,
        delta_num: int,
        flags: int,
        ps: PlayerState,
        nent: int,
        now: float,
        lag: float = 0.0,
    ) -> None:
        """A new valid snapshot's effects (decoded here or by the pump in C); read `lag` s after
        `now` (the round trip's end: a snapshot read right after the send of the usercmd it ran,
        both at the tick's `now`, took that long, not 0)."""
        self._delta_angles = _PS_DELTA_ANGLES(ps.values)
        self._last_snap_time = now
        self._counters["snapshots"] += 1
        command_time = _PS_COMMAND_TIME(ps.values)
        for sent_at, cmd_time in reversed(self._out_packets):
            if command_time >= cmd_time:
                self._latency_ms = (now + lag - sent_at) * 1000.0
                break
        if not flags & serverparse.SNAPFLAG_NOT_ACTIVE and not self._entered:
            self._entered = True
            self._enter(State.ACTIVE)
            self._backoff = self.config.backoff[0]
            self._emit(EnteredWorld(server_time, self._client_num))
        self._emit(SnapshotReceived(num, server_time, flags, ps, nent, delta_num >= 0))

    # ------------------------------------------------------------------ netchan out

    def _add_reliable(self, text: str) -> None:
        if self._reliable_seq - self._reliable_ack >= MAX_RELIABLE_COMMANDS:
            raise ClientError("64 reliable commands unacknowledged: the server would drop us")
        self._reliable_seq += 1
        self._reliable[self._reliable_seq % MAX_RELIABLE_COMMANDS] = text

    def _release_pending(self, now: float) -> None:
        while self._pending:
            text = self._pending[0]
            urgent = text.split(" ", 1)[0] in URGENT_COMMANDS
            if not urgent and (self._state is not State.ACTIVE or now - self._last_reliable_time < FLOOD_INTERVAL):
                return
            if self._reliable_seq - self._reliable_ack >= MAX_RELIABLE_COMMANDS - 1:
                return
            self._pending.popleft()
            self._add_reliable(text)
            self._last_reliable_time = now

    def _make_cmd(self, now: float) -> UserCmd:
        p, y, r, forward, right, up, buttons, weapon, head = self._input
        s0, s1, s2 = _view_shorts(p, y, r)
        d0, d1, d2 = self._delta_angles
        # The server's view is (short)(cmd.angles + ps.delta_angles): subtract to aim absolutely.
        angles = ((s0 - d0) & 0xFFFF, (s1 - d1) & 0xFFFF, (s2 - d2) & 0xFFFF)
        if head is not None and self._vr_support and self._userinfo_vr:
            buttons = pack_head(buttons, head[0], head[1], 0.0)
        last = self._last_cmd_time
        if self._last_snap is not None:  # the server's time: the last snapshot's plus what passed since
            t = self._last_snap.server_time + int((now - self._last_snap_time) * 1000.0)
        else:
            t = last + int(1000 / self.config.cmd_rate)
        t = max(t, last + 1) & 0xFFFFFFFF
        if t & 0x80000000:  # as int32
            t -= 1 << 32
        self._last_cmd_time = t
        return UserCmd(t, angles, buttons, weapon, forward, right, up)

    def _reliable_in_flight(self) -> Sequence[tuple[int, str]]:
        """Our reliable commands the server has not acknowledged, (sequence, text): every packet carries them."""
        if self._reliable_seq == self._reliable_ack:
            return ()
        return [
            (i, self._reliable[i % MAX_RELIABLE_COMMANDS])
            for i in range(self._reliable_ack + 1, self._reliable_seq + 1)
        ]

    # ------------------------------------------------------------------ the transport's native tick

    def wire_input(self) -> tuple[int, int, int, int, int, int, int, int]:
        """The input as a tick's cmd takes it, before delta_angles: ANGLE2SHORT of the wanted view x3,
        forward, right, up, the buttons with the head bits packed in when a head is given (a non-VR
        link keeps only the user bits, USER_BUTTON_MASK), weapon. For transport's Pump.set_input."""
        p, y, r, forward, right, up, buttons, weapon, head = self._input
        s0, s1, s2 = _view_shorts(p, y, r)
        if head is not None:
            buttons = pack_head(buttons, head[0], head[1], 0.0)
        return s0, s1, s2, forward, right, up, buttons, weapon

    @property
    def roll_clamped(self) -> bool:
        """set_input clamps the roll to ±ROLL_CLAMP (a VR userinfo): so must transport's Pump.send_input."""
        return self._userinfo_vr

    def pump_context(self) -> tuple[Any, ...] | None:
        """Everything of a tick's datagram that only a server message, a command or a setting
        changes, for transport's Pump.configure, in its order: legacy netchan, challenge, qport,
        server id, message ack, command ack, reliable commands in flight, checksum feed, the command
        text that keys the cmds, button bits, move_no_delta, VR link, delta_angles, has a snapshot,
        its server time, when it came, ms per tick before the first snapshot, last packet's time,
        next probe time, SILENCE_PROBE, timeout, tick period, timer, outgoing sequence, the previous
        cmds, the last cmd's time, the netchan's incoming sequence. None when the next tick must run
        here (not in game, or commands waiting for their turn)."""
        netchan = self._netchan
        if self._state not in LINKED or self._pending or self._timer is None or netchan is None:
            return None
        last_snap = self._last_snap
        msg_seq = self._server_msg_seq
        vr = self._vr_support and self._userinfo_vr
        cmd_seq = self._server_cmd_seq
        return (
            netchan.mode is NetchanMode.LEGACY,
            netchan.challenge,
            netchan.qport,
            self._server_id,
            msg_seq,
            cmd_seq,
            self._reliable_in_flight(),
            self._checksum_feed,
            self._server_commands[cmd_seq & (MAX_RELIABLE_COMMANDS - 1)],
            32 if vr else 16,
            not (last_snap is not None and msg_seq == last_snap.message_num),
            vr,
            self._delta_angles,
            last_snap is not None,
            last_snap.server_time if last_snap is not None else 0,
            self._last_snap_time,
            int(1000 / self.config.cmd_rate),
            self._last_packet,
            self._next_probe,
            SILENCE_PROBE,
            self.config.timeout,
            1.0 / self.config.cmd_rate,
            self._timer,
            netchan.outgoing_sequence,
            tuple(self._cmds),
            self._last_cmd_time,
            netchan.incoming_sequence,
        )

    def absorb_ticks(
        self,
        nows: Sequence[float],
        times: Sequence[int],
        cmds: Sequence[tuple[Any, ...]],
        sequence: int,
        last_cmd_time: int,
        timer: float,
        nbytes: int,
    ) -> None:
        """The state the native ticks left (Pump.take), as this core's own ticks would have left it."""
        n = len(nows)
        if not n:
            return
        for c in cmds[-2:]:  # the deque keeps two (cl_packetdup 1): only those are made
            self._cmds.append(UserCmd(*c))
        self._out_packets.extend(zip(nows, times))
        assert self._netchan is not None
        self._netchan.outgoing_sequence = sequence
        self._last_cmd_time = last_cmd_time
        self._timer = timer
        last_snap = self._last_snap
        counters = self._counters
        counters["usercmds"] += n
        counters[
            "move" if last_snap is not None and self._server_msg_seq == last_snap.message_num else "move_nodelta"
        ] += n
        counters["packets_out"] += n
        counters["bytes_out"] += nbytes

    def _send_packet(self, now: float, with_cmds: bool) -> None:
        netchan = self._netchan
        assert netchan is not None
        if self._pending:
            self._release_pending(now)
        cmds = self._cmds if with_cmds else ()
        last_snap = self._last_snap
        msg_seq = self._server_msg_seq
        delta_ok = last_snap is not None and msg_seq == last_snap.message_num
        reliable = self._reliable_in_flight()
        # One call from here to the datagram (native.py): message, usercmd key, netchan header, XOR.
        dgrams = netchan.transmit_client_message(
            self._server_id,
            msg_seq,
            self._server_cmd_seq,
            reliable,
            cmds,
            self._checksum_feed,
            self._server_commands,
            32 if self._vr_support and self._userinfo_vr else 16,
            not delta_ok,
        )
        self._queue(dgrams)
        if cmds:
            self._out_packets.append((now, cmds[-1].server_time))
            self._counters["move" if delta_ok else "move_nodelta"] += 1

    # ------------------------------------------------------------------ bookkeeping

    def drop_counts(self) -> dict[str, int]:
        """Every drop reason and its count, the netchan's included (`netchan: ...`), as a new dict:
        what `status.drops` holds, without copying the rest of the state."""
        drops = Counter(self._drops)
        if self._netchan is not None:
            for reason, n in self._netchan.drops.items():
                drops[f"netchan: {reason}"] += n
        return dict(drops)

    def _emit(self, ev: Event) -> None:
        if len(self._events) >= MAX_EVENTS:
            self._events.popleft()
            self._counters["events_lost"] += 1
        self._events.append(ev)

    def _drop(self, reason: str) -> None:
        self._counters["drops"] += 1
        self._last_drop = drop_detail(reason)
        self._drops[reason] += 1  # a DropCounter: numbers vary, the reason kinds are few (netcode/drops.py)

    @property
    def player_count(self) -> int | None:
        """Clients on the server now, us and bots included — in view or not (a snapshot holds only
        those in our PVS): the non-empty CS_PLAYERS configstrings of the gamestate and its updates
        (the server empties a client's string when it leaves). None before a gamestate."""
        if self._client_num < 0:
            return None
        cs = self._configstrings
        return sum(1 for i in range(MAX_CLIENTS) if cs.get(CS_PLAYERS + i))

    @property
    def entities(self) -> SnapshotEntities | None:
        """The other players in the latest valid snapshot (entities.SnapshotEntities: each player's
        entity state as a frozen record with its VR head from eFlags 0x400 and angles2, plus our own
        origin and view to place them); None before the first snapshot of a gamestate."""
        snap = self._last_snap
        return None if snap is None else of_snapshot(snap, self._client_num, self._configstrings)
