"""Relay latency and loss, matched by content: what a marked player sent, and when a sampled
observer player saw the server relay it.

Each protocol relays something that names one update of one player:

- NetSync: every pose carries its poseSeq, and the room broadcast relays each client's latest
  body with it. A marked sender logs poseSeq → send time; the observer decodes the broadcast and
  matches each marked client's poseSeq. The broadcast is latest-wins (10 Hz, as the poses), so
  a pose superseded before the next broadcast is no loss; a pose that stood alone for
  `NETSYNC_STOOD` seconds (1.5 broadcast periods) and never showed is — unless the observer's
  broadcasts around it came further apart than it stood (plus `NETSYNC_JITTER`): a server
  broadcasting late, or our loop reading late, sent no broadcast in the pose's life to carry
  it. That shows as relay latency and a lower broadcast rate, not as loss (a fixed 0.15 s counted
  1–3 losses in a third of 2-room runs, in seconds where broadcasts came > 150 ms apart).
- Quake 3 and Sauerbraten relay no sequence of ours, only the player's view: Q3 snapshots carry
  each player's view angles snapped to whole degrees (BG_PlayerStateToEntityState), Sauerbraten
  N_POS records whole-degree yaws. A marked sender's yaw follows the motion in steps of
  `MARK_STEP` degrees (exact in a Q3 angle short: 1024 units), each held `MARK_HOLD` seconds
  and different from the one before; the observer matches the yaw it sees (within `MARK_TOL`,
  for the engines' truncation) to the first unmatched step with that yaw. A step held a whole
  `MARK_HOLD` (four Q3 snapshots, six Sauerbraten position frames) that never showed while a
  later one did, the sender in sight all along, is lost. A Q3 snapshot holds only the players
  in the observer's potentially visible set: a step missed while out of sight is no loss.

Latency is our send (the first datagram carrying the update) → the observer's read of the
datagram relaying it, both on the swarm's one clock.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable

MARK_STEP = 360.0 / 64  # 5.625°: 1024 Q3 angle units, so the server's view is exactly the step
MARK_HOLD = 0.2  # seconds each marked yaw is held
MARK_TOL = 1.01  # the engines truncate to whole degrees
MARK_KEEP = 64  # steps remembered per sender (12.8 s at MARK_HOLD)
NETSYNC_KEEP = 256  # poseSeqs remembered per sender (25 s at 10 Hz)
NETSYNC_STOOD = 0.15  # a pose that was the latest this long must show in a 10 Hz broadcast …
NETSYNC_JITTER = 0.02  # … when it also stood longer than the broadcast gap around it, plus this


def _diff(a: float, b: float) -> float:
    return abs(math.remainder(a - b, 360.0))


def _wrap(a: float) -> float:
    return math.remainder(a, 360.0)


class Marker:
    """A marked sender's yaw steps (Q3, Sauerbraten)."""

    def __init__(self) -> None:
        self.steps: deque[tuple[int, float, float]] = deque(maxlen=MARK_KEEP)  # (k, first send, yaw)
        self.k = 0
        self.value: float | None = None
        self._until = -math.inf

    def yaw(self, now: float, motion_yaw: float) -> float:
        """The yaw to send now instead of `motion_yaw` (a new step once the last has been held)."""
        if now >= self._until:
            v = _wrap(round(motion_yaw / MARK_STEP) * MARK_STEP)
            if self.value is not None and _diff(v, self.value) < 2 * MARK_TOL:
                v = _wrap(self.value + 2 * MARK_STEP)  # still motion: step anyway, visibly
            self.k += 1
            self.value = v
            self._until = now + MARK_HOLD
            self.steps.append((self.k, now, v))
        value = self.value  # (set by the first call: _until starts at -inf)
        return motion_yaw if value is None else value


class SeqLog:
    """A marked NetSync sender's poseSeq → send time."""

    def __init__(self) -> None:
        self.sent: dict[int, float] = {}
        self.order: deque[int] = deque()

    def add(self, seq: int, now: float) -> None:
        if len(self.order) >= NETSYNC_KEEP:
            self.sent.pop(self.order.popleft(), None)
        self.sent[seq] = now
        self.order.append(seq)


class Board:
    """One protocol's marked senders by the client number the server gave them, and the
    observers' progress through each (what they matched last)."""

    def __init__(
        self, proto: str, relay: Callable[[str, float, float], None], lost: Callable[[str, int, float], None]
    ) -> None:
        self.proto = proto
        self._relay, self._lost = relay, lost
        self.senders: dict[int, Marker | SeqLog] = {}
        # (observer, cn) → (log, last k/seq matched, out of sight since)
        self._seen: dict[tuple[int, int], tuple[object, int, bool]] = {}
        self._broadcast_at: dict[tuple[int, int], float] = {}  # NetSync: (observer, cn) → last broadcast read
        self.relays = 0
        self.lost = 0

    def register(self, client_number: int, log: Marker | SeqLog) -> None:
        self.senders[client_number] = log

    def unregister(self, client_number: int, log: Marker | SeqLog) -> None:
        if self.senders.get(client_number) is log:
            del self.senders[client_number]

    def _count(self, latency: float | None, lost: int, now: float) -> None:
        if latency is not None:
            self.relays += 1
            self._relay(self.proto, latency, now)
        if lost:
            self.lost += lost
            self._lost(self.proto, lost, now)

    def saw_yaw(self, observer: int, cn: int, yaw: float, now: float) -> None:
        """An observer read marked sender `cn`'s relayed yaw (whole degrees) at `now`."""
        marker = self.senders.get(cn)
        if not isinstance(marker, Marker):
            return
        key = (observer, cn)
        log, last, gap = self._seen.get(key, (None, -1, True))
        if log is not marker:
            last, gap = -1, True  # a new sender in this slot (a rejoin): start over
        match = None
        # In sight since the last match: the first step after it with this yaw. Back in sight
        # (or first seen): the newest step with it — an older one with the same yaw is not
        # what the server shows now.
        for k, at, v in reversed(marker.steps) if gap else marker.steps:
            if k > last and at <= now and _diff(yaw, v) <= MARK_TOL:
                match = (k, at)
                break
        if match is None:
            return  # the last match again, or a yaw of a step we no longer hold
        k, at = match
        lost = 0 if gap else sum(1 for j, _, _ in marker.steps if last < j < k)
        self._seen[key] = (marker, k, False)
        self._count(now - at, lost, now)

    def out_of_sight(self, observer: int, cn: int) -> None:
        """A relay the observer got without marked sender `cn` in it (a Q3 snapshot where the
        player is outside the observer's potentially visible set): steps it misses meanwhile
        are not losses."""
        seen = self._seen.get((observer, cn))
        if seen is not None and not seen[2]:
            self._seen[(observer, cn)] = (seen[0], seen[1], True)

    def saw_seq(self, observer: int, cn: int, seq: int, now: float) -> None:
        """An observer read marked NetSync sender `cn`'s relayed poseSeq at `now`."""
        log = self.senders.get(cn)
        if not isinstance(log, SeqLog):
            return
        key = (observer, cn)
        prev, last, _ = self._seen.get(key, (None, -1, True))
        if prev is not log:
            last = -1
        before = self._broadcast_at.get(key)
        self._broadcast_at[key] = now
        if seq == last or seq not in log.sent:
            return
        if last >= 0 and (seq - last) & 0xFFFF > 0x8000:
            return  # older than what we saw (reordered): no news
        lost = 0
        if last >= 0:
            stood = NETSYNC_STOOD if before is None else max(NETSYNC_STOOD, now - before + NETSYNC_JITTER)
            gap = (seq - last) & 0xFFFF
            for s in log.order:  # the remembered sends between the two, each timed to its successor
                if 0 < (s - last) & 0xFFFF < gap:
                    at, nxt = log.sent[s], log.sent.get((s + 1) & 0xFFFF)
                    if nxt is not None and nxt - at >= stood:
                        lost += 1
        self._seen[key] = (log, seq, False)
        self._count(now - log.sent[seq], lost, now)
