"""The Sauerbraten sink: the VR player as a Cube 2 player (N_POS at 30 Hz), and the players around it.

The mapping to the game's world is app/sinks/sauer/mapping.py. With a server (`link`, app/sinks/sauer/link.py) the
record goes out at the game's rate with the client number and lifesequence of the current spawn,
and the world is re-anchored at every spawn (the first, after a death, after a map change). The
far side: our record as a receiving game decodes it (the server relays it byte for byte), and the
other players as the server relayed them (`others`). Without a server the record is built the same
way (cn 0, first life) only when something shows it (status, demo, mirror).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headcast.app.run.rig import RigState
from headcast.app.run.telemetry import RateMeter, SinkStatus
from headcast.app.sinks.sauer.mapping import (
    Anchor,
    GamePose,
    SauerWorld,
    Tick,
    anchor_at,
    game_pose,
    game_tick,
    pose_of,
)
from headcast.netcode.pose import angle_subtract
from headcast.netcode.sauer.npos import PHYS_FLOOR, NPos, encode_npos, make_npos, npos_bytes, record_of
from headcast.xr.frame import TrackingFrame

if TYPE_CHECKING:
    from headcast.app.sinks.sauer.link import SauerLink, SauerWatcher

SEND_RATE = 30.0  # the game sends N_POS at most 30 times a second (docs/protocols/sauerbraten.md#connect)
CAP_SHOWN_FOR = 1.0  # s the status keeps saying the speed cap bit
SENT_HISTORY = 64


def npos_for(gp: GamePose | None, cn: int = 0, lifesequence: int = 0) -> NPos | None:
    """The record a game pose gives (what SauerClientCore sends for it); None: nothing to send
    (tracking lost, or a place outside the game's 24-bit world)."""
    if gp is None:
        return None
    p = gp.pose
    try:
        return make_npos(
            cn,
            eye=p.eye,
            yaw=p.yaw,
            pitch=p.pitch,
            roll=p.roll,
            vel=p.vel,
            physstate=p.physstate,
            lifesequence=lifesequence,
            move=p.move,
            strafe=p.strafe,
        )
    except ValueError:
        return None


@dataclass
class SauerCheck:
    """For the demo's verification: what went out, and what a receiver makes of it."""

    records: int = 0
    angle_err_max: float = 0.0  # degrees: the record's whole degrees vs the angles sent
    capped: int = 0  # records whose speed the cap lowered
    speed_max: float = 0.0  # units/s asked by the locomotion, before the cap
    spawns: int = 0
    relayed: int = 0  # records a second client saw that match one we sent (demo, tests)
    relayed_other: int = 0  # records of ours a second client saw that we did not send


def angle_error(gp: GamePose, rec: NPos) -> float:
    """The largest of yaw, pitch and roll error between the angles and the record's decode."""
    p = gp.pose
    return max(abs(angle_subtract(p.yaw, rec.yaw)), abs(p.pitch - rec.pitch), abs(p.roll - rec.roll_deg))


class SauerSink:
    name = "sauer"
    unit = "positions"  # what the summary counts as sent

    def __init__(
        self, *, world: SauerWorld = SauerWorld(), link: SauerLink | None = None, watcher: SauerWatcher | None = None
    ) -> None:
        self.world = world
        self.link = link  # a SauerLink, or None = offline
        # The loop may hold its send a frame or two (app/run/loop.py), off a frame whose wake-up
        # already sent another protocol's bytes: the positions' 30 Hz grid holds (the core's timer).
        self.deferrable = link is not None
        self.watcher = watcher  # a SauerWatcher on the same server (the demo), or None
        self.poll = None if link is None else self._poll_linked if watcher is None else self._poll_watched
        self.observe = None
        # What the loop reads each frame (app/run/loop.py): send() is called from the next position
        # tick on (every frame from a spawn until anchored); offline (`follow`), never.
        self.send_at = -math.inf
        self._loop = None  # offline, once the loop is followed: its latest state is taken from it
        self._meter = RateMeter()
        self._check = SauerCheck()
        self.anchor: Anchor | None = None
        self._tick: Tick | None = None  # linked: the last position tick's game pose, as numbers
        self._game: GamePose | None = None  # the last game pose handed to the link (or taken offline)
        self._sent: deque[tuple[bytes, float]] = deque(maxlen=SENT_HISTORY)  # each record's bytes, when it went out
        # Linked: each tick's (game pose numbers, record or its bytes, clock time, bytes), counted in
        # `check`, `sent` and `meter` off the frame thread (the next poll) or when one is read.
        self._pending: list[tuple[Tick, NPos | bytes, float, int]] = []
        self.relay_ms: float | None = None  # our last record's way to the watcher, through the server
        self._spawns_anchored = 0
        self._capped_at: float | None = None  # when the speed cap last bit, and the speed it lowered
        self._capped_speed = 0.0
        self._tracked = True  # the head was tracked at the last send()
        self._next = 0.0  # offline: when the next state is taken
        self._state: RigState | None = None  # offline: the state taken
        self._built: tuple[RigState | None, NPos | None] = (None, None)
        self.last_relayed: NPos | None = None  # our last record as the watcher received it

    # --- the record -------------------------------------------------------------------------

    @property
    def record(self) -> NPos | None:
        """Our last record: sent (linked), or the one the last state taken gives (offline)."""
        if self.link is not None:
            return self.link.core.last_record if self.link.joined else None
        loop = self._loop
        if loop is not None and loop.frame is not None and loop.state is not self._state:
            head = loop.frame.head  # what send() takes offline, taken when shown
            self._tracked = head.position_valid and head.orientation_valid
            self._state = loop.state
        if self._built[0] is not self._state:
            gp = None
            if self._state is not None:
                if self.anchor is None:
                    self.anchor = anchor_at(self._state, self.world)
                if self.anchor is not None:
                    gp = game_pose(self._state, self.world, self.anchor)
            self._game = gp
            self._built = (self._state, npos_for(gp))
        return self._built[1]

    @property
    def data(self) -> bytes:
        rec = self.record
        return b"" if rec is None else encode_npos(rec)

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def seen(self) -> NPos | None:
        """Our record as a receiving game decodes it (relayed byte for byte: the record itself)."""
        return self.record

    @property
    def others(self) -> dict:
        return {} if self.link is None else self.link.others

    @property
    def game(self) -> GamePose | None:
        """The last game pose handed to the link (or taken offline)."""
        gp = self._game
        if gp is None and self._tick is not None:
            gp = self._game = pose_of(self._tick)
        return gp

    @property
    def check(self) -> SauerCheck:
        if self._pending:
            self._settle()
        return self._check

    @property
    def sent(self) -> list[tuple[NPos, float]]:
        """Our last records sent and when each went out (the latest last)."""
        if self._pending:
            self._settle()
        return [(record_of(data), t) for data, t in self._sent]

    @property
    def meter(self) -> RateMeter:
        if self._pending:
            self._settle()
        return self._meter

    # --- per frame --------------------------------------------------------------------------

    def follow(self, loop) -> None:
        """Offline: the frame loop (app/run/loop.py) is handed once; it calls this sink no more, and
        the record is built from its latest state when something shows it."""
        if self.link is None:
            self._loop = loop
            self.send_at = math.inf

    def _due(self) -> float:
        """The loop's `send_at`: at once while a spawn waits to be anchored, else the next position
        tick (none while not alive: a poll sets it again)."""
        link = self.link
        assert link is not None  # a linked sink's
        if link.spawns != self._spawns_anchored:
            return -math.inf
        due = link.position_due_at
        return math.inf if due is None else due

    def _poll_linked(self, now: float) -> None:
        link = self.link
        assert link is not None  # the poll of a linked sink
        if self._pending:
            self._settle()
        if link.poll(now):
            self.send_at = self._due()

    def send(self, state: RigState, frame: TrackingFrame, now: float) -> float | None:
        head = frame.head  # the stage pose: as valid as the world one, and no world pose built
        self._tracked = head.position_valid and head.orientation_valid
        link = self.link
        if link is None:
            self._take_offline(state, frame, now)
            return None
        if link.spawns != self._spawns_anchored:
            anchor = anchor_at(state, self.world)
            if anchor is not None:  # lost tracking: anchored at the first tracked frame
                self.anchor, self._spawns_anchored = anchor, link.spawns
                self._check.spawns = link.spawns
        core = link.core
        due = core.position_due_at  # (link.position_due_at's, one call less)
        if due is None or now < due:
            self.send_at = -math.inf if link.spawns != self._spawns_anchored else math.inf if due is None else due
            return None
        # The tick on the frame thread (issue 26): the game pose as numbers, its N_POS bytes in one
        # call, counted by the core and straight to ENet; the objects (the game pose, the record)
        # are built when something reads them, the counts in `check` and `meter` at the next poll.
        anchor = self.anchor
        tick = None if anchor is None else game_tick(state, self.world, anchor)
        self._tick, self._game = tick, None
        data = None
        if tick is not None and not link.closed:
            try:
                data = npos_bytes(
                    core.cn,
                    tick[0],
                    tick[1],
                    tick[2],
                    tick[3],
                    tick[4],
                    tick[5],
                    tick[6],
                    tick[7],
                    0.0,
                    tick[8],
                    tick[9],
                    PHYS_FLOOR,
                    core.lifesequence,
                )
            except ValueError:  # (a value past a float: the pose's way below counts the drop)
                data = None
        if tick is not None and data is not None:
            nxt = core.take_position_data(now, data)  # the next tick's time, or None: not taken
            if nxt is not None:
                self.send_at = nxt if link.spawns == self._spawns_anchored else -math.inf  # _due()
                client = link.client
                nbytes = client.send_position_data(data)
                if not nbytes:
                    return None
                t_wire = client.sent_at
                pending = self._pending
                pending.append((tick, data, t_wire, nbytes))
                if len(pending) >= SENT_HISTORY:  # never polled (a caller of its own): bounded all the same
                    self._settle()
                return t_wire
        # untracked, a record not of the common case, or more than the position due: the pose's way
        gp = self.game
        core.pose = None if gp is None else gp.pose  # link.set_pose, written out
        sent = link.send(now)
        due = core.position_due_at
        self.send_at = -math.inf if link.spawns != self._spawns_anchored else math.inf if due is None else due
        if sent is None:
            return None
        nbytes, t_wire = sent
        rec = core.last_record
        if tick is not None and rec is not None:
            self._pending.append((tick, rec, t_wire, nbytes))
        else:
            self._meter.add(t_wire, nbytes)
        return t_wire

    def _settle(self) -> None:
        """Count the ticks sent since the last time (send() leaves them for later: off the frame).
        A tick's record is read from its bytes where they are npos_bytes' short form (its
        direction word at 10, its roll at 12), not built."""
        pending, self._pending = self._pending, []
        c, meter, sent = self._check, self._meter, self._sent
        for tick, rec, t_wire, nbytes in pending:
            meter.add(t_wire, nbytes)
            if isinstance(rec, bytes):
                data = rec
                if data[1] < 0x80 and not data[3] & 7:  # one-byte cn, 2-byte coordinates
                    d, roll = data[10] | data[11] << 8, data[12]
                else:
                    r = record_of(data)
                    d, roll = r.dir, r.roll
            else:
                data, d, roll = encode_npos(rec), rec.dir, rec.roll
            c.records += 1
            sent.append((data, t_wire))
            # angle_error of the game pose and the record, from the tick's numbers
            err = max(
                abs(angle_subtract(tick[3], d % 360)),
                abs(tick[4] - (min(max(d // 360, 0), 180) - 90)),
                abs(tick[5] - (min(roll, 180) - 90)),
            )
            if err > c.angle_err_max:
                c.angle_err_max = err
            speed = tick[10]
            if speed > c.speed_max:
                c.speed_max = speed
            if tick[11]:
                c.capped += 1
                self._capped_at, self._capped_speed = t_wire, speed

    def _take_offline(self, state: RigState, frame: TrackingFrame, now: float) -> None:
        if now < self._next and self._tracked:  # a loss is taken at once
            return None
        self._next = now + 1.0 / SEND_RATE
        self._state = state
        return None

    def _poll_watched(self, now: float) -> None:
        link, watcher = self.link, self.watcher
        assert link is not None and watcher is not None  # the poll of a linked sink with a watcher
        if self._pending:
            self._settle()
        link.poll(now, True)
        self.send_at = self._due()
        watcher.poll(now)
        if link.live:
            rec = watcher.new_record_of(link.core.cn)
            if rec is not None:
                self.relayed(rec, now)

    def relayed(self, rec: NPos, now: float | None = None) -> bool:
        """Count a record of ours as a second client received it (at `now`: its way through the
        server is timed from the last send of that record): True when it is one we sent."""
        # the latest send of these bytes (a still player repeats a record)
        if self._pending:
            self._settle()
        data = encode_npos(rec)
        t_sent = next((t for sent, t in reversed(self._sent) if sent == data), None)
        ok = t_sent is not None
        self.last_relayed = rec
        if t_sent is not None:
            if now is not None:
                self.relay_ms = (now - t_sent) * 1000.0
            self._check.relayed += 1
        else:
            self._check.relayed_other += 1
        return ok

    # --- what is shown ----------------------------------------------------------------------

    def status(self, now: float) -> SinkStatus:
        if self._pending:
            self._settle()
        rec = self.record
        gp = self.game
        packed, values, err = "", None, None
        if rec is not None:
            packed = f"N_POS {len(encode_npos(rec))} B yaw {rec.yaw} pitch {rec.pitch} roll {rec.roll_deg}"
            values = {
                "npos_bytes": len(encode_npos(rec)),
                "yaw": rec.yaw,
                "pitch": rec.pitch,
                "roll_deg": rec.roll_deg,
                "vel": rec.vel,
                "move": rec.move,
                "strafe": rec.strafe,
                "lifebit": rec.lifebit,
            }
            if gp is not None:
                err = angle_error(gp, rec)
        notes = []
        if not self._tracked or (self.link is None and rec is None):
            notes.append("tracking lost: no position record")
        if self._capped_at is not None and now - self._capped_at < CAP_SHOWN_FOR:
            notes.append(f"speed capped: {self._capped_speed:.0f} → 179 units/s (the server kicks at 180)")
        link = self.link
        if link is None:
            detail = "; ".join(notes) or "computed only (no server: --sauer HOST)"
            return SinkStatus(self.name, "offline", packed=packed, error_deg=err, detail=detail, values=values)
        hz, bps = self._meter.rates(now)
        others = sum(1 for p in link.others.values() if p.record is not None)
        tail = f"; {others} other player{'s' if others != 1 else ''} seen" if others else ""
        drops = link.drops
        detail = "; ".join(notes + [link.detail]) + tail
        return SinkStatus(
            self.name,
            link.state,
            hz,
            bps,
            packed,
            err,
            detail,
            drops=drops or None,
            ping_ms=link.ping_ms,
            values=values,
            live=link.live,
        )

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
        if self.watcher is not None:
            self.watcher.close()
