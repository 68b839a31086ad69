"""What each far side sees of us, and where those numbers come from: pure data for the mirror.

Every sink that is on gets one or more *views* per frame (`FarSideView`, an immutable record: a
NamedTuple, built at up to 90 Hz where a frozen dataclass costs several times more): what we sent, what the
far side sees, and the source of the second:

- RELAYED: decoded from what the server sent back to us — our NetSync body in the room broadcast
  (matched to the frame sent under its poseSeq), our Quake 3 playerState in the server's snapshot
  (the view angles it ran), our Sauerbraten N_POS as a second client on the server received it.
- MODEL: computed from our own bytes with the receiver's decode, because the server sends nothing
  back: Quake 3 head bits on a vanilla server (it never sees them), Sauerbraten N_POS without a
  watching client (the server relays it to the others only).
- OFFLINE: no server; our bytes encoded and decoded here.

Quake 3 has two views: `q3` (the usercmd's view angles and roll, which every server runs and
echoes in our playerState: RELAYED — on a vanilla server that is the whole of what it carries of
the head: the roll) and `q3.head` (the VR head bits: RELAYED once a VR server's game has echoed its
decode in our playerState — EF_VR_PLAYER, stats 7/8 — else MODEL: not sent to a vanilla server, or
sent and not echoed; OFFLINE without a server).

Transients are named, not reported as error. The one seen at every Quake 3 join: the server's
first in-game snapshot carries the spawn point's view angles (ClientSpawn sets the view and
`delta_angles`; its playerState's commandTime is the spawn's, not one of our usercmds), so the
seen yaw sits at the spawn yaw — ±90–180° off what we aim — until the next snapshot shows the
first usercmd built against the new delta_angles (one snapshot, 50–100 ms). A respawn or a
teleport does the same (delta_angles move under a usercmd already sent). Such samples are marked
`transient` and left out of the error readout, as the link's own check already leaves them out.

Angles are degrees in the Quake sense for every sink (pitch + down, yaw + left in (−180, 180],
roll + when the right side dips); positions are metres in the world named by the sample's `frame`.
The tracker (`FarSideTracker`) keeps the last `plot_seconds` of every view and link figure in
numpy rings; `pause()` freezes a copy for the reader while recording goes on.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

import numpy as np

from headcast.app.run.telemetry import Ring
from headcast.app.sinks.sauer.sink import angle_error
from headcast.netcode.netsync.model import FLAG_HEAD
from headcast.netcode.pose import quake_angles
from headcast.netcode.q3.vrhead import (
    EF_VR_PLAYER,
    HEAD_PITCH_CLAMP,
    HEAD_YAW_CLAMP,
    RECEIVER_NAMES,
    angle2short,
    deg_from_stat,
    view_angle,
    yaw_offset,
)

if TYPE_CHECKING:  # the contract the sinks and links fit (app/sinks/contract.py)
    from headcast.app.sinks.contract import AnyFarSink, FarSink, NetSyncFarSink, Q3FarLink, Q3FarSink, SauerFarSink
    from headcast.app.sinks.q3.mapping import Q3Intent

NAN = float("nan")
MAX_RATE = 160.0  # frames per second the rings are sized for (90–144 Hz headsets)
LINK_PERIOD = 0.1  # seconds between samples of rates and round trips (a status figure)
CMD_HISTORY = 256  # Q3 usercmds remembered for matching a snapshot's commandTime (4 s at 60/s)
VR_STAT_PITCH, VR_STAT_YAW_OFFSET = 7, 8  # Trinity's ps.stats indexes (baseq3 build; docs/protocols/quake3.md#vr-head)

# Names of the frames samples are in (positions; the angle sense is the same everywhere).
Q3_FRAME = "quake 3 view (angles only: the usercmd carries no position)"
UNITY_FRAME = "netsync room (OpenXR axes, metres)"
SAUER_FRAME = "sauerbraten world (metres = cube units / 8)"
XR_FRAME = "rig world (OpenXR axes, metres)"
SAUER_UNITS_PER_METRE = 8.0

# Transients (FarSideView.transient)
JOINING = "joining"
SPAWN = "spawn"
TRACKING_LOST = "tracking lost"
DISCONNECTED = "disconnected"
DEAD = "dead"
SERVER_SILENT = "server silent"
INTERMISSION = "intermission"
# playerState pm_type (bg_public.h) under which the server's view does not follow the usercmd
_FROZEN_VIEW = {3: DEAD, 4: "frozen", 5: INTERMISSION, 6: INTERMISSION}  # PM_DEAD, PM_FREEZE, PM_(SP)INTERMISSION


# Plain words first: each view's `why` and each error `basis` is said in words a user reads; the
# precise term (the protocol's field, the decode's build) is its detail — the mirror's tooltip,
# the demo's summary and --json put it after the plain words (`detail`, `why_with_detail`).
DETAILS: dict[str, str] = {}


def _plain(text: str, detail: str) -> str:
    """`text`, with `detail` registered as its precise term."""
    DETAILS[text] = detail
    return text


def detail(text: str) -> str:
    """The precise term behind a plain `why` or `basis` ("" when it has none)."""
    return DETAILS.get(text, "")


def why_with_detail(text: str) -> str:
    """The plain words, then the precise term in parentheses (the summary, --json)."""
    d = DETAILS.get(text)
    return f"{text} ({d})" if d else text


# Plain names of the Q3 head decode's builds (vrhead.RECEIVER_NAMES are the precise ones)
RECEIVER_PLAIN = {name: ("Trinity" if "Trinity" in text else "native build") for name, text in RECEIVER_NAMES.items()}


class Source(Enum):
    RELAYED = "relayed"
    MODEL = "model"
    OFFLINE = "offline"


class HeadSample(NamedTuple):
    """Head angles in degrees (pitch + down, yaw + left, roll + right side down) and, where the
    protocol carries one, the position in metres in `frame`."""

    pitch: float
    yaw: float
    roll: float
    pos: tuple[float, float, float] | None = None
    frame: str = XR_FRAME


class ErrorReadout(NamedTuple):
    """Sent vs seen, on the pairs that belong together (`basis`), transients left out."""

    basis: str  # what is compared with what
    angle_deg: float | None  # the latest pair's worst angle, degrees
    angle_max_deg: float | None  # the worst over the plotted window
    pos_m: float | None = None
    pos_max_m: float | None = None
    transient_samples: int = 0  # samples of the window left out as transient


class FarSideView(NamedTuple):
    key: str  # "q3", "q3.head", "netsync", "sauer"
    sink: str  # the sink's name
    title: str  # what the view shows, one short line
    source: Source
    why: str  # one short line: where `seen` comes from
    sent: HeadSample | None  # None: nothing sent this frame's way (tracking lost)
    seen: HeadSample | None  # None: nothing seen yet
    transient: str | None  # "joining", "spawn", "tracking lost", "disconnected" …
    head_bits_on_wire: bool | None  # Q3: whether the link carries the VR head bits; else None
    error: ErrorReadout


class LinkFigures(NamedTuple):
    """One sink's link, as of the last sample (None: not measured / nothing yet)."""

    sink: str
    send_hz: float
    bytes_per_s: float
    motion_to_wire_ms: float | None  # pose located → bytes handed to the socket, last send
    round_trip_ms: float | None
    round_trip_basis: str  # what echoes us ("" when nothing does)


# Columns of a view's series ring.
T, SP, SY, SR, SX, SYP, SZ, VP, VY, VR, VX, VYP, VZ, ERR_DEG, ERR_M, TRANSIENT = range(16)
COLUMNS = (
    "t",
    "sent_pitch",
    "sent_yaw",
    "sent_roll",
    "sent_x",
    "sent_y",
    "sent_z",
    "seen_pitch",
    "seen_yaw",
    "seen_roll",
    "seen_x",
    "seen_y",
    "seen_z",
    "err_deg",
    "err_m",
    "transient",
)
# A link's series is sampled every LINK_PERIOD: rates over the last second, the last send's
# motion-to-wire, the latest round trip (NaN: nothing measured yet, or nothing echoes us).
LINK_COLUMNS = ("t", "send_hz", "bytes_per_s", "motion_to_wire_ms", "round_trip_ms")


def wrap180(a: float) -> float:
    return math.remainder(a, 360.0)


def _angle_err(a: HeadSample, b: HeadSample) -> float:
    return max(abs(a.pitch - b.pitch), abs(wrap180(a.yaw - b.yaw)), abs(wrap180(a.roll - b.roll)))


def unity_sample(t) -> HeadSample:
    """A NetSync Transform (Unity: left-handed, +Z forward) as a sample on OpenXR axes."""
    ux, uy, uz, uw = t.rot
    x, y, z = t.pos
    p, yw, r = quake_angles((-ux, -uy, uz, uw))
    return HeadSample(p, yw, r, (x, y, -z), UNITY_FRAME)


def sauer_sample(yaw: float, pitch: float, roll: float, eye) -> HeadSample:
    """Sauerbraten's angles (yaw + left from +y, pitch + up) and eye (cube units) as a sample."""
    k = 1.0 / SAUER_UNITS_PER_METRE
    return HeadSample(-pitch, wrap180(yaw), roll, (eye[0] * k, eye[1] * k, eye[2] * k), SAUER_FRAME)


class _Q3Snapshots:
    """Which of the Q3 link's snapshots show a usercmd of ours: the link's own check counts a
    snapshot matched (its commandTime is a cmd we sent, built against the delta_angles it carries)
    or rebased (spawn, teleport); one that is neither shows the server's placement (the first
    one in game: the spawn point's view). The state holds until the next matched snapshot."""

    def __init__(self) -> None:
        self.snapshots = self.matched = self.rebased = 0
        self.link: Q3FarLink | None = None
        self.transient: str | None = JOINING
        self.fresh_error: float | None = None  # the link's check of the snapshot matched this update
        self.last_error: float | None = None  # ... of the last matched one
        self.last_head_error: float | None = None  # a VR server's echo of our head vs the usercmd it ran
        self.cmds: OrderedDict[int, Any] = OrderedDict()  # usercmd serverTime → the intent it carried

    def sent(self, link: Q3FarLink, intent: Q3Intent) -> None:
        """Note the intent of the usercmd the link last sent (keyed as the snapshots' commandTime)."""
        t = link.client.core.last_cmd_time
        cmds = self.cmds
        if cmds.get(t) is None:
            cmds[t] = intent
            if len(cmds) > CMD_HISTORY:
                cmds.popitem(last=False)

    def update(self, link: Q3FarLink) -> None:
        if link is not self.link:
            _Q3Snapshots.__init__(self)
            self.link = link
        self.fresh_error = None
        n = link.snapshots
        if n == self.snapshots:
            return
        c = link.check
        ps = link.ps
        frozen = None if ps is None else _FROZEN_VIEW.get(ps.pm_type)
        if frozen is not None:
            # PM_UpdateViewAngles leaves the view alone (dead, frozen, intermission): it does not
            # follow our usercmds, so the link's check of it says nothing about the wire.
            self.transient = frozen
        elif c.matched != self.matched and link.last_error is not None:
            # The latest check ran on a matched snapshot (a later unmatched one would not have
            # moved the counter; a rebase after it in the same poll is caught below).
            self.transient = None if c.rebased == self.rebased else SPAWN
            if self.transient is None:
                self.fresh_error = self.last_error = link.last_error
        elif c.rebased != self.rebased:
            self.transient = SPAWN
        else:
            self.transient = JOINING if self.matched == 0 else SPAWN
        self.snapshots, self.matched, self.rebased = n, c.matched, c.rebased


class _Series:
    """One view's rows: the last `size` frames."""

    def __init__(self, size: int) -> None:
        self.ring = Ring(size, len(COLUMNS))
        self.last: FarSideView | None = None
        self._row: tuple = ()  # the last row's sent/seen/transient values (repeated unchanged)

    def add(self, now: float, v: FarSideView, err_deg: float | None, err_m: float | None) -> None:
        s, o = v.sent, v.seen
        sp = (s.pitch, s.yaw, s.roll) if s is not None else (NAN, NAN, NAN)
        spos = s.pos if s is not None and s.pos is not None else (NAN, NAN, NAN)
        op = (o.pitch, o.yaw, o.roll) if o is not None else (NAN, NAN, NAN)
        opos = o.pos if o is not None and o.pos is not None else (NAN, NAN, NAN)
        transient = v.transient is not None
        self._row = (*sp, *spos, *op, *opos)
        self._transient = 1.0 if transient else 0.0
        self.ring.add(
            now,
            *self._row,
            NAN if err_deg is None or transient else err_deg,
            NAN if err_m is None or transient else err_m,
            self._transient,
        )
        self.last = v

    def repeat(self, now: float) -> None:
        """Nothing changed since the last row: the same values at `now`, no new pair compared."""
        self.ring.add(now, *self._row, NAN, NAN, self._transient)


class _Link:
    def __init__(self, size: int, sink: FarSink) -> None:
        self.ring = Ring(size, len(LINK_COLUMNS))
        self.sink = sink
        self.messages = 0
        self.m2w_ms: float | None = None
        self.next_sample = -math.inf
        self.figures: LinkFigures | None = None


class FarSideTracker:
    """The far sides of every sink that is on, over the last `plot_seconds`.

    `update(loop, now)` once per frame, after the sinks have sent and observed (the mirror calls
    it from draw). Readers: `views()`, `series(key)`, `link(sink)`, `link_series(sink)`,
    `error(key)`; `pause()` / `resume()` freeze what they read."""

    def __init__(self, plot_seconds: float = 5.0) -> None:
        self.plot_seconds = plot_seconds
        self._size = int(math.ceil(plot_seconds * MAX_RATE)) + 16
        self._series: dict[str, _Series] = {}
        self._by_sink: dict[str, list[_Series]] = {}
        self._changed: dict[str, tuple] = {}  # sink → the identities of what its views were built from
        self._links: dict[str, _Link] = {}
        self._q3 = _Q3Snapshots()
        self._ns_matched: Any = None
        self._q3_source: tuple = (None, None)
        self._frozen: dict | None = None
        self._memo: dict[int, tuple[Ring, float, np.ndarray]] = {}
        self._now = 0.0

    # --- recording ---------------------------------------------------------------------------

    def update(self, loop, now: float) -> None:
        """Record this frame; `now` is the frame's located time (what the loop passes the mirror)."""
        self._now = now
        changed = self._changed
        for sink in loop.sinks:
            name = sink.name
            key = _inputs(sink)
            if key is None:
                continue
            if changed.get(name) == key:
                # The same sent and seen as the last frame (between Q3 command ticks, NetSync sends
                # and broadcasts, Sauerbraten's 30 Hz): the rows go on, nothing is rebuilt.
                for s in self._by_sink.get(name, ()):
                    s.repeat(now)
            else:
                changed[name] = key
                if name == "q3":
                    self._update_q3(sink, now)
                elif name == "netsync":
                    self._update_netsync(sink, now)
                else:
                    self._update_sauer(sink, now)
            self._update_link(sink, now)

    def _add(self, now: float, v: FarSideView, err_deg: float | None, err_m: float | None = None) -> None:
        s = self._series.get(v.key)
        if s is None:
            s = self._series[v.key] = _Series(self._size)
            self._by_sink.setdefault(v.sink, []).append(s)
        s.add(now, v, err_deg, err_m)

    def _update_q3(self, sink: Q3FarSink, now: float) -> None:
        intent = sink.intent
        if intent is None:
            return
        link = sink.link
        a = intent.angles
        sent_view = HeadSample(a[0], wrap180(a[1]), a[2], None, Q3_FRAME)
        on_wire = sink.head_bits_on_wire
        view_err = None
        seen_view: HeadSample | None
        if link is None:
            p, y, r = (view_angle(angle2short(x)) for x in a)
            seen_view = HeadSample(p, wrap180(y), r, None, Q3_FRAME)
            transient = None
            view_err = _angle_err(sent_view, seen_view)
        else:
            snaps = self._q3
            snaps.update(link)
            snaps.sent(link, intent)
            va = link.view_angles
            seen_view = None if va is None else HeadSample(va[0], wrap180(va[1]), va[2], None, Q3_FRAME)
            state = link.state
            if link.closed:
                transient = DISCONNECTED
            elif state != "in game":
                # not in game (yet, or again): "connecting", "loading" a new map, "reconnecting" ...
                transient = state if link.entered else JOINING
            else:
                transient = snaps.transient
            view_err = snaps.fresh_error
        source, why = q3_view_source(sink)
        title = (
            "view angles and head roll (usercmd → playerState)"
            if on_wire or link is None
            else "view angles and head roll: all of the head a vanilla server carries"
        )
        self._add(
            now,
            FarSideView(
                "q3",
                "q3",
                title,
                source,
                why,
                sent_view,
                seen_view,
                transient,
                on_wire,
                ErrorReadout(
                    BASIS_Q3_VIEW if link is not None else BASIS_LOCAL,
                    view_err if link is None else self._q3.last_error,
                    None,
                ),
            ),
            view_err,
        )
        self._add_q3_head(sink, now, link, transient, on_wire)

    def _add_q3_head(
        self, sink: Q3FarSink, now: float, link: Q3FarLink | None, transient: str | None, on_wire: bool
    ) -> None:
        intent = sink.intent
        assert intent is not None  # _update_q3 returns first without one
        head = intent.head
        sent = None if head is None else HeadSample(head[0], wrap180(head[1]), head[2], None, Q3_FRAME)
        # Its words change only with a snapshot (the build another VR player betrays, the echo)
        # or the link's width: not rebuilt at every usercmd.
        key = (sink, None if link is None else link.snapshots, on_wire)
        if self._q3_source[0] != key:
            self._q3_source = (key, q3_head_source(sink))
        source, why = self._q3_source[1]
        if source is Source.RELAYED:
            seen, err, basis = self._q3_head_relayed(sink, link)
            if seen is None and transient is None:
                transient = TRACKING_LOST  # the server clears EF_VR_PLAYER for a usercmd without head bits
        else:
            seen, err = self._q3_head_model(sink)
            basis = BASIS_Q3_HEAD_MODEL
        if head is None:
            transient = TRACKING_LOST
        self._add(
            now,
            FarSideView(
                "q3.head",
                "q3",
                "VR head (buttons bits 12–25, roll)",
                source,
                why,
                sent,
                seen,
                transient,
                on_wire,
                ErrorReadout(basis, err if source is not Source.RELAYED else self._q3.last_head_error, None),
            ),
            err,
        )

    @staticmethod
    def _q3_head_model(sink: Q3FarSink) -> tuple[HeadSample | None, float | None]:
        far = sink.far_side
        # (pitch, yaw_offset and sent_offset are None together: no head bits in the usercmd)
        if far is None or far.pitch is None or far.yaw_offset is None or far.sent_offset is None:
            return None, None
        weapon_yaw = sink.others_view()[1]
        seen = HeadSample(far.pitch, wrap180(weapon_yaw + far.yaw_offset), far.roll_others, None, Q3_FRAME)
        intent = sink.intent
        head = None if intent is None else intent.head
        if head is None:
            return seen, None
        pitch = max(-HEAD_PITCH_CLAMP, min(HEAD_PITCH_CLAMP, head[0]))
        return seen, max(abs(pitch - far.pitch), abs(far.sent_offset - far.yaw_offset))

    def _q3_head_relayed(self, sink: Q3FarSink, link: Q3FarLink | None) -> tuple[HeadSample | None, float | None, str]:
        """A VR server's decode of our head bits, as its game writes it into our playerState each
        frame (Trinity: stats[7] = pitch, stats[8] = yaw offset, ·182.04 as shorts; reference
        docs/protocols/quake3.md#vr-head), with the view yaw and roll the server ran."""
        basis = BASIS_Q3_HEAD_RELAYED
        if link is None:  # (RELAYED: there is a link)
            return None, None, basis
        ps, va = link.ps, link.view_angles
        if ps is None or va is None or not link.eflags & EF_VR_PLAYER:
            return None, None, basis
        receiver = sink.model_receiver
        pitch = deg_from_stat(ps.stats[VR_STAT_PITCH], receiver)
        offset = deg_from_stat(ps.stats[VR_STAT_YAW_OFFSET], receiver)
        seen = HeadSample(pitch, wrap180(va[1] + offset), va[2], None, Q3_FRAME)
        snaps = self._q3
        if snaps.fresh_error is None:
            return seen, None, basis
        ran = snaps.cmds.get(ps.commandTime)
        if ran is None or ran.head is None:
            return seen, None, basis
        sent_pitch = max(-HEAD_PITCH_CLAMP, min(HEAD_PITCH_CLAMP, ran.head[0]))
        sent_offset = max(-HEAD_YAW_CLAMP, min(HEAD_YAW_CLAMP, yaw_offset(ran.head[1], ran.angles[1])))
        err = max(abs(sent_pitch - pitch), abs(sent_offset - offset))
        snaps.last_head_error = err
        return seen, err, basis

    def _update_netsync(self, sink: NetSyncFarSink, now: float) -> None:
        frame = sink.frame
        if frame is None:
            return
        link = sink.link
        fresh: tuple = (None, None)  # a pair compared this frame (linked: a new match)
        has_head = bool(frame.flags & FLAG_HEAD) and not sink.stealth
        sent = unity_sample(frame.head) if has_head else None
        err_deg = err_m = None
        if link is None:
            body = sink.seen
            seen = unity_sample(body.head) if body is not None and body.head is not None else None
            transient = None
            basis = BASIS_LOCAL
            err_deg = sink.last_error if sent is not None else None
            if seen is not None and sent is not None and seen.pos is not None and sent.pos is not None:
                err_m = math.dist(sent.pos, seen.pos)  # (unity_sample: always a position)
            fresh = (err_deg, err_m)
        else:
            matched = sink.matched
            body = link.own_body
            seen = unity_sample(body.head) if body is not None and body.head is not None else None
            basis = BASIS_NETSYNC
            state = link.state
            transient = (
                DISCONNECTED
                if link.closed
                else JOINING
                if matched is None
                else SERVER_SILENT
                if state == "server silent"
                else None
            )
            if matched is not None:
                f, b, _ = matched
                if f.flags & FLAG_HEAD and b.head is not None:
                    err_deg, err_m = sink.last_error, math.dist(f.head.pos, b.head.pos)
            if matched is not self._ns_matched:
                self._ns_matched = matched
                fresh = (err_deg, err_m)
        if sent is None and transient is None and not sink.stealth:
            transient = TRACKING_LOST
        elif sink.stealth and transient == JOINING:
            transient = None  # never matched: a stealth body is not broadcast
        source, why = netsync_source(sink)
        self._add(
            now,
            FarSideView(
                "netsync",
                "netsync",
                "head (pose body)",
                source,
                why,
                sent,
                seen,
                transient,
                None,
                ErrorReadout(basis, err_deg, None, err_m),
            ),
            *fresh,
        )

    def _update_sauer(self, sink: SauerFarSink, now: float) -> None:
        rec = sink.record
        gp = sink.game
        link = sink.link
        if rec is None and gp is None:
            return
        sent = None
        if gp is not None:
            p = gp.pose
            sent = sauer_sample(p.yaw, p.pitch, p.roll, p.eye)
        err_deg = err_m = None
        relayed = sink.last_relayed
        source, why = sauer_source(sink)
        if link is None:
            seen_rec, transient = rec, None
        elif sink.watcher is not None:
            seen_rec = relayed
            transient = DISCONNECTED if link.closed else JOINING if relayed is None else None
        else:
            seen_rec = rec
            transient = DISCONNECTED if link.closed else None if link.live else JOINING
        seen = (
            None if seen_rec is None else sauer_sample(seen_rec.yaw, seen_rec.pitch, seen_rec.roll_deg, seen_rec.eye())
        )
        if gp is not None and rec is not None:
            err_deg = angle_error(gp, rec)
            err_m = math.dist(gp.pose.eye, rec.eye()) / SAUER_UNITS_PER_METRE
        if sent is None and transient is None:
            transient = TRACKING_LOST
        self._add(
            now,
            FarSideView(
                "sauer",
                "sauer",
                "player (N_POS record)",
                source,
                why,
                sent,
                seen,
                transient,
                None,
                ErrorReadout(BASIS_SAUER, err_deg, None, err_m),
            ),
            err_deg,
            err_m,
        )

    def _update_link(self, sink: AnyFarSink, now: float) -> None:
        name = sink.name
        lk = self._links.get(name)
        if lk is None or lk.sink is not sink:
            lk = self._links[name] = _Link(self._size, sink)
        meter = sink.meter
        if meter.total_messages != lk.messages:
            lk.messages = meter.total_messages
            last = meter.last_time  # (set: a message went out)
            lk.m2w_ms = None if last is None else (last - now) * 1000.0
        if now < lk.next_sample:
            return
        lk.next_sample = now + LINK_PERIOD
        hz, bps = meter.rates(now)
        rtt, basis = _round_trip(sink)
        lk.figures = LinkFigures(name, hz, bps, lk.m2w_ms, rtt, basis)
        lk.ring.add(now, hz, bps, NAN if lk.m2w_ms is None else lk.m2w_ms, NAN if rtt is None else rtt)

    # --- reading -------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return self._frozen is not None

    def pause(self) -> None:
        """Freeze what readers see (recording goes on)."""
        if self._frozen is None:
            self._frozen = {
                "now": self._now,
                "views": self._live_views(),
                "series": {k: self._window(s.ring, self._now) for k, s in self._series.items()},
                "links": {k: self._window(lk.ring, self._now) for k, lk in self._links.items()},
                "figures": {k: lk.figures for k, lk in self._links.items()},
            }

    def resume(self) -> None:
        self._frozen = None

    @property
    def now(self) -> float:
        """The time of what readers see (the frozen time while paused)."""
        return self._now if self._frozen is None else self._frozen["now"]

    def _live_views(self) -> list[FarSideView]:
        out = []
        for key, s in self._series.items():
            v = s.last
            if v is not None:
                out.append(self._with_window_error(v, self._window(s.ring, self._now)))
        return out

    def views(self) -> list[FarSideView]:
        """The latest view of every sink that is on (Q3: view, then head), sink order."""
        return self._frozen["views"] if self._frozen is not None else self._live_views()

    def view(self, key: str) -> FarSideView | None:
        return next((v for v in self.views() if v.key == key), None)

    def keys(self) -> list[str]:
        return [v.key for v in self.views()]

    def series(self, key: str) -> dict[str, np.ndarray]:
        """The last `plot_seconds` of a view: COLUMNS → arrays (NaN where nothing was sent/seen)."""
        if self._frozen is not None:
            rows = self._frozen["series"].get(key)
        else:
            s = self._series.get(key)
            rows = None if s is None else self._window(s.ring, self._now)
        return _columns(COLUMNS, rows)

    def link(self, sink: str) -> LinkFigures | None:
        if self._frozen is not None:
            return self._frozen["figures"].get(sink)
        lk = self._links.get(sink)
        return None if lk is None else lk.figures

    def link_series(self, sink: str) -> dict[str, np.ndarray]:
        if self._frozen is not None:
            rows = self._frozen["links"].get(sink)
        else:
            lk = self._links.get(sink)
            rows = None if lk is None else self._window(lk.ring, self._now)
        return _columns(LINK_COLUMNS, rows)

    def _window(self, ring: Ring, now: float) -> np.ndarray:
        """The rows of the last plot_seconds before `now`, the reader's own (read once per update:
        the views' error readout and the plots ask for the same rows)."""
        memo = self._memo
        hit = memo.get(id(ring))
        if hit is not None and hit[0] is ring and hit[1] == now:
            return hit[2]
        rows = ring.since(now - self.plot_seconds)
        memo[id(ring)] = (ring, now, rows)
        return rows

    @staticmethod
    def _with_window_error(v: FarSideView, rows: np.ndarray) -> FarSideView:
        e = v.error
        if len(rows) == 0:
            return v
        deg, m = rows[:, ERR_DEG], rows[:, ERR_M]
        deg, m = deg[deg == deg], m[m == m]  # the pairs compared (NaN: none, or a transient)
        worst_deg = float(deg.max()) if deg.size else None
        worst_m = float(m.max()) if m.size else None
        transients = int(np.count_nonzero(rows[:, TRANSIENT]))
        return v._replace(error=e._replace(angle_max_deg=worst_deg, pos_max_m=worst_m, transient_samples=transients))


# --- where each view's numbers come from (also the demo's summary) ---------------------------------

BASIS_LOCAL = _plain("sent vs encoded and decoded here (no server)", "local round trip, in this process")
BASIS_Q3_VIEW = _plain(
    "the aim the server ran vs the aim we sent (pitch, yaw)",
    "the server's view vs the usercmd it ran, matched by commandTime (wire only)",
)
BASIS_Q3_HEAD_RELAYED = _plain(
    "the server's own decode of your head vs the head we sent (7-bit steps)",
    "stats 7/8 in our playerState vs the head of the usercmd it ran, matched by commandTime",
)
BASIS_Q3_HEAD_MODEL = _plain(
    "head pitch and turn (up to ±80°) vs their 7-bit decode",
    "head pitch and yaw offset, clamped ±80°, vs the 7-bit decode of our buttons",
)
BASIS_NETSYNC = _plain(
    "your pose as the room sent it back vs the pose we sent (rotation, position)",
    "relayed vs sent under the same poseSeq",
)
BASIS_SAUER = _plain(
    "the game's decode of the record vs the pose we sent",
    "N_POS decode (whole degrees, 1/16 unit) vs the game pose sent",
)

WHY_Q3_OFFLINE = _plain(
    "no server: your aim encoded and decoded here", "the usercmd's angle shorts: ANGLE2SHORT, then SHORT2ANGLE"
)
WHY_Q3_RELAYED = _plain(
    "the aim the server ran, from its snapshot",
    "the view angles in our playerState, matched to our usercmd by commandTime",
)
WHY_Q3_HEAD_RELAYED = _plain(
    "the server's own decode of your head, sent back to us", "EF_VR_PLAYER and stats 7/8 in our playerState"
)
WHY_NETSYNC_OFFLINE = _plain("no server: your pose encoded and decoded here", "the latest NetSync protocol")
WHY_NETSYNC_RELAYED = _plain(
    "your pose as the room sent it back", "our body in the room broadcast, matched to the frame sent under its poseSeq"
)
WHY_SAUER_OFFLINE = _plain("no server: your position record decoded here", "N_POS: whole degrees, 1/16 unit")
WHY_SAUER_RELAYED = _plain(
    "your position as a second client received it", "our N_POS, relayed by the server to a watching client"
)
WHY_SAUER_MODEL = _plain(
    "your position through the game's decode (the server passes it to the others, not back to us)",
    "our N_POS through the game's decode",
)


def q3_view_source(sink: Q3FarSink) -> tuple[Source, str]:
    if sink.link is None:
        return Source.OFFLINE, WHY_Q3_OFFLINE
    return Source.RELAYED, WHY_Q3_RELAYED


def q3_head_source(sink: Q3FarSink) -> tuple[Source, str]:
    link = sink.link
    receiver = RECEIVER_NAMES[sink.model_receiver]
    plain = RECEIVER_PLAIN[sink.model_receiver]
    if link is None:
        return Source.OFFLINE, _plain(
            f"no server: your head as {plain} would decode it, here",
            f"our buttons' head bits through the {receiver} decode",
        )
    if sink.head_bits_on_wire:
        if link.check.vr_flag_frames:
            return Source.RELAYED, WHY_Q3_HEAD_RELAYED
        return Source.MODEL, _plain(
            f"head sent; the server has not shown its decode yet: {plain}'s decode, here",
            f"no EF_VR_PLAYER in our playerState yet; our usercmd through the {receiver} decode",
        )
    return Source.MODEL, _plain(
        f"NOT SENT: this server has no VR support (only the roll goes out); shown: "
        f"what a VR server ({plain}) would see",
        f"no vr_support: 16-bit buttons; the head bits through the {receiver} decode",
    )


def netsync_source(sink: NetSyncFarSink) -> tuple[Source, str]:
    if sink.stealth:
        return (
            Source.OFFLINE if sink.link is None else Source.RELAYED,
            "stealth: no pose of ours in the room broadcast — the others see nothing of us",
        )
    if sink.link is None:
        return Source.OFFLINE, WHY_NETSYNC_OFFLINE
    return Source.RELAYED, WHY_NETSYNC_RELAYED


def sauer_source(sink: SauerFarSink) -> tuple[Source, str]:
    if sink.link is None:
        return Source.OFFLINE, WHY_SAUER_OFFLINE
    if sink.watcher is not None:
        return Source.RELAYED, WHY_SAUER_RELAYED
    return Source.MODEL, WHY_SAUER_MODEL


def sources(sinks) -> list[tuple[str, Source, str]]:
    """(view key, source, why) of every view the sinks give, in the tracker's order; `why` in plain
    words, then its precise term in parentheses."""
    out = []
    for sink in sinks:
        if sink.name == "q3":
            out += [("q3", *q3_view_source(sink)), ("q3.head", *q3_head_source(sink))]
        elif sink.name == "netsync":
            out.append(("netsync", *netsync_source(sink)))
        elif sink.name == "sauer":
            out.append(("sauer", *sauer_source(sink)))
    return [(key, src, why_with_detail(why)) for key, src, why in out]


def _inputs(sink) -> tuple | None:
    """What a sink's views are built from, by identity (the sinks build new objects when anything
    changes); None: not a sink with a far side."""
    name, link = sink.name, sink.link
    if name == "q3":
        if link is None:
            return (sink.intent,)
        return sink.intent, link.snapshots, link.closed, link.entered, link.head_bits
    if name == "netsync":
        if link is None:
            return sink.frame, sink.seen
        return sink.frame, link.own_body, sink.matched, link.closed, link.joined, link.state
    if name == "sauer":
        if link is None:
            return sink.record, sink.game
        return sink.record, sink.game, sink.last_relayed, link.closed, link.live
    return None


def _columns(names: Iterable[str], rows: np.ndarray | None) -> dict[str, np.ndarray]:
    names = tuple(names)
    if rows is None:
        rows = np.zeros((0, len(names)))
    return {n: rows[:, i] for i, n in enumerate(names)}


def _round_trip(sink) -> tuple[float | None, str]:
    """The sink's round trip where its protocol echoes us, and what echoes."""
    link = sink.link
    if link is None:
        return None, ""
    if sink.name == "q3":
        return link.ping_ms, RT_Q3
    if sink.name == "netsync":
        return (sink.relay_ms if link.joined and not link.closed else None, RT_NETSYNC)
    if sink.name == "sauer":
        if sink.watcher is not None:
            return sink.relay_ms, RT_SAUER_RELAY
        return link.ping_ms, RT_SAUER_PING
    return None, ""


# What each round trip is called — the same word in the window, the terminal and --json — and
# what it measures.
RT_Q3 = _plain(
    "ping: the server's snapshot acknowledging what we sent", "the snapshot acknowledging our usercmd (commandTime)"
)
RT_NETSYNC = _plain(
    "relay: your pose back in the room broadcast; includes waiting up to 100 ms for the "
    "server's next broadcast and any time our own loop was late to read it",
    "our body back in the room broadcast, matched by poseSeq",
)
RT_SAUER_RELAY = _plain(
    "relay: your position through the server to a second client",
    "our N_POS relayed to a watching client, the record matched",
)
RT_SAUER_PING = _plain("ping: the game's ping (the server passes your position to the others only)", "N_PING/N_PONG")


def round_trip_name(sink) -> str:
    """What a sink's round trip is called: "relay" (our own pose back through the server) or
    "ping" (the server's acknowledgement)."""
    if sink.name == "netsync" or (sink.name == "sauer" and getattr(sink, "watcher", None) is not None):
        return "relay"
    return "ping"
