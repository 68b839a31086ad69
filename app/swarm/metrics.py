"""What a swarm measures, per protocol: relay latency, loss, broadcast rate per player, bytes,
joins, kicks, late ticks — cheap enough to call for every message of hundreds of players.

Every call is a few integer/float updates on preallocated Python lists: no object per call, no
numpy scalar writes (a numpy item write costs more than the rest of the call). Distributions go
into fixed log-spaced bins (`LogHistogram`): percentiles within 1 % of the exact value, constant
memory for any run length, and mergeable by adding counts — the same bins on every machine, so
Locust workers' histograms add up at the master. Per-player figures (broadcast rate, bytes) are
kept per player and turned into distributions over players at report time with numpy.

Times are seconds on the swarm's one clock (`now`, the same clock `started` was read from).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

PERCENTILES = (50.0, 90.0, 99.0)


class LogHistogram:
    """Counts of values in fixed log-spaced bins from LO to HI seconds.

    A value in [LO, HI) falls in a bin whose edges differ by GROWTH; its percentile is reported
    as the bin's geometric middle, so the relative error is at most sqrt(GROWTH) - 1 (< 1 %).
    Below LO (zero, negative: a tick that ran early) the error is at most LO absolute; at or
    above HI the value is counted in a last bin reported as the exact max. Min, max, count and
    sum are exact, and so are the percentiles that are the min or the max. Percentiles use numpy's
    "inverted_cdf" definition (the smallest value with at least q % of the values at or below it),
    so they are values that occurred, never averages.
    """

    LO = 1e-6
    HI = 1e4
    GROWTH = 1.02
    _K = 1.0 / math.log(GROWTH)
    _INV_LO = 1.0 / LO
    BINS = 2 + math.ceil(math.log(HI / LO) / math.log(GROWTH))  # underflow + log bins + overflow
    REL_ERROR = math.sqrt(GROWTH) - 1.0

    __slots__ = ("counts", "n", "total", "min", "max")

    def __init__(self) -> None:
        self.counts = [0] * self.BINS
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, v: float) -> int:
        """Count `v`; returns its bin (for a per-second histogram of the same bins)."""
        self.n += 1
        self.total += v
        if v < self.min:
            self.min = v
        if v > self.max:
            self.max = v
        if v < self.LO:
            i = 0
        elif v >= self.HI:
            i = self.BINS - 1
        else:
            i = 1 + int(math.log(v * self._INV_LO) * self._K)
        self.counts[i] += 1
        return i

    @classmethod
    def of_bins(cls, bins: Iterable[dict[int, int]], total: float, vmax: float) -> "LogHistogram":
        """A histogram of several sparse bin counts (per-second parts of another with the same
        bins); min is its lowest bin's middle (within the bins' 1 %), max and total are given."""
        h = cls()
        for b in bins:
            for i, c in b.items():
                h.counts[i] += c
                h.n += c
        if h.n:
            h.total, h.max = total, vmax
            h.min = min(h._middle(next(i for i, c in enumerate(h.counts) if c)), vmax)
        return h

    def merge(self, other: "LogHistogram") -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts)]
        self.n += other.n
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    def _middle(self, i: int) -> float:
        if i == 0:
            return self.LO / 2
        if i == self.BINS - 1:
            return self.max
        return self.LO * self.GROWTH ** (i - 0.5)

    def percentiles(self, qs: Iterable[float]) -> list[float | None]:
        """The q-th percentiles (0 < q <= 100), each clamped into [min, max]; None when empty."""
        qs = list(qs)
        if not self.n:
            return [None] * len(qs)
        ranks = [max(1, math.ceil(q / 100.0 * self.n - 1e-9)) for q in qs]  # 1-based rank wanted
        order = sorted(range(len(qs)), key=ranks.__getitem__)
        out: list[float | None] = [None] * len(qs)
        seen, i, counts = 0, 0, self.counts
        for j in order:
            if ranks[j] >= self.n:  # the largest value and the smallest are known exactly
                out[j] = self.max
                continue
            if ranks[j] == 1:
                out[j] = self.min
                continue
            while seen + counts[i] < ranks[j]:
                seen += counts[i]
                i += 1
            out[j] = min(max(self._middle(i), self.min), self.max)
        return out

    def summary(self, scale: float = 1.0, digits: int = 6) -> dict:
        """count, mean, p50, p90, p99, max (values × scale, rounded), JSON-able."""

        def r(v: float | None) -> float | None:
            return None if v is None else round(v * scale, digits)

        p50, p90, p99 = self.percentiles(PERCENTILES)
        return {
            "count": self.n,
            "mean": r(self.total / self.n) if self.n else None,
            "p50": r(p50),
            "p90": r(p90),
            "p99": r(p99),
            "max": r(self.max) if self.n else None,
        }

    def state(self) -> dict:
        """The histogram as JSON-able numbers (sparse bins), for `from_state` elsewhere."""
        return {
            "bins": {str(i): c for i, c in enumerate(self.counts) if c},
            "n": self.n,
            "total": self.total,
            "min": self.min if self.n else None,
            "max": self.max if self.n else None,
        }

    @classmethod
    def from_state(cls, state: dict) -> "LogHistogram":
        h = cls()
        for i, c in state["bins"].items():
            h.counts[int(i)] = int(c)
        h.n, h.total = int(state["n"]), float(state["total"])
        if h.n:
            h.min, h.max = float(state["min"]), float(state["max"])
        return h


class SecondHistogram:
    """A coarse histogram for one second of the time series (a plot's p50/p99 line, ±12 %)."""

    LO, GROWTH = 1e-4, 1.25
    _K = 1.0 / math.log(GROWTH)
    BINS = 2 + math.ceil(math.log(1e2 / LO) / math.log(GROWTH))

    @classmethod
    def index(cls, v: float) -> int:
        if v < cls.LO:
            return 0
        return min(cls.BINS - 1, 1 + int(math.log(v / cls.LO) * cls._K))

    @classmethod
    def percentile(cls, counts: list[int], q: float, vmax: float) -> float:
        n = sum(counts)
        rank, seen = max(1, math.ceil(q / 100.0 * n - 1e-9)), 0
        for i, c in enumerate(counts):
            seen += c
            if seen >= rank:
                mid = cls.LO / 2 if i == 0 else vmax if i == cls.BINS - 1 else cls.LO * cls.GROWTH ** (i - 0.5)
                return min(mid, vmax)
        return vmax


# Columns of a per-second row (one list of numbers per second per protocol).
(
    UP_BYTES,
    DOWN_BYTES,
    UP_MSGS,
    DOWN_MSGS,
    BROADCASTS,
    RELAYS,
    RELAY_SUM,
    RELAY_MAX,
    LOST,
    TICKS,
    SLIPPED,
    JOINS,
    LEFT,
    KICKS,
    JOIN_FAILED,
    ACTIVE_DELTA,
) = range(16)
COLUMNS = 16


class ProtocolStats:
    """One protocol's counters; `SwarmMetrics` holds one per protocol."""

    def __init__(self, started: float, slip_after: float) -> None:
        self.started = started
        self.slip_after = slip_after
        self.relay = LogHistogram()
        self.join = LogHistogram()
        self.late = LogHistogram()
        self.lost = 0
        self.kick_reasons: dict[str, int] = {}
        self.join_failed_reasons: dict[str, int] = {}
        self.joined = self.left = self.kicked = self.join_failed = 0
        self.active = self.peak_active = 0
        self.slipped = 0
        self.rows: list[list[float]] = []
        self.row_hist: list[list[int] | None] = []
        self.relay_bins: list[dict[int, int] | None] = []  # each second's relays in `relay`'s bins
        # Per player (index → value), grown on first sight of an index.
        self.p_up: list[int] = []
        self.p_down: list[int] = []
        self.p_bc: list[int] = []
        self.p_bc_first: list[float] = []
        self.p_bc_last: list[float] = []
        self.p_in: list[bool] = []  # joined and not yet gone

    def second(self, now: float) -> int:
        """The index of `now`'s row (rows up to it exist after this call)."""
        s = int(now - self.started)
        if s < 0:
            s = 0
        rows = self.rows
        while len(rows) <= s:
            rows.append([0] * COLUMNS)
            self.row_hist.append(None)
            self.relay_bins.append(None)
        return s

    def row(self, now: float) -> list[float]:
        return self.rows[self.second(now)]

    # --- the counters as JSON/msgpack-able numbers, and back (Locust workers → master) --------

    _COUNTERS = ("lost", "joined", "left", "kicked", "join_failed", "active", "peak_active", "slipped")

    def state(self) -> dict:
        players = [
            [i, self.p_up[i], self.p_down[i], self.p_bc[i], self.p_bc_first[i], self.p_bc_last[i], self.p_in[i]]
            for i in range(len(self.p_up))
            if self.p_up[i] or self.p_down[i] or self.p_bc[i] or self.p_in[i]
        ]
        return {
            "counters": {k: getattr(self, k) for k in self._COUNTERS},
            "kick_reasons": dict(self.kick_reasons),
            "join_failed_reasons": dict(self.join_failed_reasons),
            "relay": self.relay.state(),
            "join": self.join.state(),
            "late": self.late.state(),
            "rows": self.rows,
            "row_hist": [None if h is None else {str(i): c for i, c in enumerate(h) if c} for h in self.row_hist],
            "relay_bins": [None if b is None else {str(i): c for i, c in b.items()} for b in self.relay_bins],
            "players": players,
        }

    def merge_state(self, state: dict, shift: int) -> None:
        """Add another process's counters, its rows `shift` seconds later than ours. Player
        indices are the swarm's (each process numbers its players apart from the others')."""
        for k, v in state["counters"].items():
            if k == "peak_active":
                continue  # peaks of different processes need not coincide: recomputed from the rows
            setattr(self, k, getattr(self, k) + v)
        for mine, theirs in (
            (self.kick_reasons, state["kick_reasons"]),
            (self.join_failed_reasons, state["join_failed_reasons"]),
        ):
            for r, n in theirs.items():
                mine[r] = mine.get(r, 0) + n
        self.relay.merge(LogHistogram.from_state(state["relay"]))
        self.join.merge(LogHistogram.from_state(state["join"]))
        self.late.merge(LogHistogram.from_state(state["late"]))
        relay_bins = state.get("relay_bins") or [None] * len(state["rows"])
        for s, (row, hist, bins) in enumerate(zip(state["rows"], state["row_hist"], relay_bins)):
            t = max(0, s + shift)
            self.second(self.started + t)
            if bins:
                mine_bins = self.relay_bins[t]
                if mine_bins is None:
                    mine_bins = self.relay_bins[t] = {}
                for i, c in bins.items():
                    mine_bins[int(i)] = mine_bins.get(int(i), 0) + c
            mine_row = self.rows[t]
            for c in range(COLUMNS):
                mine_row[c] = max(mine_row[c], row[c]) if c == RELAY_MAX else mine_row[c] + row[c]
            if hist:
                h = self.row_hist[t]
                if h is None:
                    h = self.row_hist[t] = [0] * SecondHistogram.BINS
                for i, c in hist.items():
                    h[int(i)] += c
        for j, up, down, bc, first, last, inside in state["players"]:
            self.grow(j)
            self.p_up[j] += up
            self.p_down[j] += down
            if bc:
                self.p_bc_first[j] = first if not self.p_bc[j] else min(first, self.p_bc_first[j])
                self.p_bc_last[j] = max(last, self.p_bc_last[j])
                self.p_bc[j] += bc
            self.p_in[j] = self.p_in[j] or inside
        active: float = 0
        peak: float = 0
        for row in self.rows:
            active += row[ACTIVE_DELTA]
            peak = max(peak, active)
        self.peak_active = max(self.peak_active, int(peak))  # (whole players: ints in the rows)

    def grow(self, player: int) -> None:
        k = player + 1 - len(self.p_up)
        if k > 0:
            self.p_up += [0] * k
            self.p_down += [0] * k
            self.p_bc += [0] * k
            self.p_bc_first += [0.0] * k
            self.p_bc_last += [0.0] * k
            self.p_in += [False] * k


class SwarmMetrics:
    """Every figure of a swarm run. One instance per process (the swarm loop, or one Locust
    worker); calls take the loop's `now` where a time series needs it.

    Calls without a `now` (relay, lost, tick, joins, kicks) land in the second of the latest
    `now` seen, unless given one.

    `slip_after`: a tick that runs more than this many seconds after its deadline is counted as
    slipped (the lateness distribution is kept whole anyway).
    """

    def __init__(self, protocols: list[str], started: float, slip_after: float = 0.005) -> None:
        self.protocols = list(protocols)
        self.started = started
        self.slip_after = slip_after
        self.stats = {p: ProtocolStats(started, slip_after) for p in self.protocols}
        self.servers: dict[str, dict] = {}  # per protocol: what the server said of itself
        self._last_now = started  # the latest `now` seen: when events without a time happened

    # --- per message -------------------------------------------------------------------------

    def sent(self, proto: str, player: int, nbytes: int, now: float) -> None:
        st = self.stats[proto]
        self._last_now = now
        row = st.row(now)
        row[UP_BYTES] += nbytes
        row[UP_MSGS] += 1
        if player >= len(st.p_up):
            st.grow(player)
        st.p_up[player] += nbytes

    def received(self, proto: str, player: int, nbytes: int, now: float) -> None:
        st = self.stats[proto]
        self._last_now = now
        row = st.row(now)
        row[DOWN_BYTES] += nbytes
        row[DOWN_MSGS] += 1
        if player >= len(st.p_down):
            st.grow(player)
        st.p_down[player] += nbytes

    def broadcast(self, proto: str, player: int, now: float) -> None:
        st = self.stats[proto]
        self._last_now = now
        st.row(now)[BROADCASTS] += 1
        if player >= len(st.p_bc):
            st.grow(player)
        if not st.p_bc[player]:
            st.p_bc_first[player] = now
        st.p_bc[player] += 1
        st.p_bc_last[player] = now

    def relay(self, proto: str, seconds: float, now: float | None = None) -> None:
        st = self.stats[proto]
        b = st.relay.add(seconds)
        s = st.second(self._last_now if now is None else now)
        bins = st.relay_bins[s]
        if bins is None:
            bins = st.relay_bins[s] = {}
        bins[b] = bins.get(b, 0) + 1
        row = st.rows[s]
        row[RELAYS] += 1
        row[RELAY_SUM] += seconds
        if seconds > row[RELAY_MAX]:
            row[RELAY_MAX] = seconds
        hist = st.row_hist[s]
        if hist is None:
            hist = st.row_hist[s] = [0] * SecondHistogram.BINS
        hist[SecondHistogram.index(seconds)] += 1

    def lost(self, proto: str, n: int = 1, now: float | None = None) -> None:
        st = self.stats[proto]
        at = self._last_now if now is None else now
        st.lost += n
        st.row(at)[LOST] += n

    def tick(self, proto: str, late: float, now: float | None = None) -> None:
        st = self.stats[proto]
        at = self._last_now if now is None else now
        st.late.add(late)
        row = st.row(at)
        row[TICKS] += 1
        if late > st.slip_after:
            st.slipped += 1
            row[SLIPPED] += 1

    def server_seen(self, proto: str, info: dict) -> None:
        """What a player learnt of its server on joining (version, protocol, name): the first one
        of each protocol is kept."""
        if proto not in self.servers and info:
            self.servers[proto] = {k: v for k, v in info.items() if v not in (None, "")}

    # --- per player life ---------------------------------------------------------------------

    def joined(self, proto: str, player: int, seconds: float, now: float | None = None) -> None:
        st = self.stats[proto]
        at = self._last_now if now is None else now
        st.join.add(seconds)
        st.joined += 1
        if player >= len(st.p_in):
            st.grow(player)
        row = st.row(at)
        row[JOINS] += 1
        if not st.p_in[player]:
            st.p_in[player] = True
            st.active += 1
            row[ACTIVE_DELTA] += 1
            if st.active > st.peak_active:
                st.peak_active = st.active

    def join_failed(self, proto: str, player: int, reason: str, now: float | None = None) -> None:
        st = self.stats[proto]
        at = self._last_now if now is None else now
        st.join_failed += 1
        st.join_failed_reasons[reason] = st.join_failed_reasons.get(reason, 0) + 1
        st.row(at)[JOIN_FAILED] += 1

    def kicked(self, proto: str, player: int, reason: str, now: float | None = None) -> None:
        st = self.stats[proto]
        at = self._last_now if now is None else now
        st.kicked += 1
        st.kick_reasons[reason] = st.kick_reasons.get(reason, 0) + 1
        row = st.row(at)
        row[KICKS] += 1
        self._gone(st, player, row)

    def left(self, proto: str, player: int, now: float | None = None) -> None:
        st = self.stats[proto]
        at = self._last_now if now is None else now
        st.left += 1
        row = st.row(at)
        row[LEFT] += 1
        self._gone(st, player, row)

    @staticmethod
    def _gone(st: ProtocolStats, player: int, row: list[float]) -> None:
        if player < len(st.p_in) and st.p_in[player]:
            st.p_in[player] = False
            st.active -= 1
            row[ACTIVE_DELTA] -= 1

    # --- across processes (Locust workers) ------------------------------------------------------

    def state(self, wall_started: float) -> dict:
        """Everything counted so far as plain numbers (JSON, msgpack); `wall_started` is the
        wall-clock time of `started`, which lines other processes' seconds up with ours."""
        return {
            "wall_started": wall_started,
            "slip_after": self.slip_after,
            "servers": dict(self.servers),
            "protocols": {p: st.state() for p, st in self.stats.items()},
        }

    @classmethod
    def merged(cls, states: list[dict]) -> "SwarmMetrics":
        """One SwarmMetrics holding the sum of several processes' states, on the wall clock
        (`started` is the earliest `wall_started`; report it with `now` on the wall clock).
        Broadcast times stay on each process's own clock: only their differences are used."""
        protocols = list(dict.fromkeys(p for s in states for p in s["protocols"]))
        start = min((s["wall_started"] for s in states), default=0.0)
        m = cls(protocols, start, states[0]["slip_after"] if states else 0.005)
        for s in states:
            shift = int(round(s["wall_started"] - start))
            for proto, st in s["protocols"].items():
                m.stats[proto].merge_state(st, shift)
            for proto, info in (s.get("servers") or {}).items():
                m.server_seen(proto, info)
        return m

    # --- reading -----------------------------------------------------------------------------

    def live(self, now: float, window: float = 3.0) -> dict:
        """Per protocol, the last `window` whole seconds: players in, rates, relay p50/p99,
        loss, slipped ticks; plus totals of kicks and failed joins. For the status line."""
        out = {}
        last = int(now - self.started)  # the second under way is not whole yet
        first = max(0, last - max(1, int(window)))
        for proto, st in self.stats.items():
            rows = st.rows[first:last]
            span = max(1, len(rows))
            col = lambda c: sum(r[c] for r in rows)  # noqa: E731
            hist = [0] * SecondHistogram.BINS
            vmax = 0.0
            # relay and loss of the seconds our own ticks ran on time (the server's figures)
            relays: float = 0
            lost: float = 0
            for r, h in zip(rows, st.row_hist[first:last]):
                if r[SLIPPED]:
                    continue
                relays += r[RELAYS]
                lost += r[LOST]
                if h is not None:
                    hist = [a + b for a, b in zip(hist, h)]
                    vmax = max(vmax, r[RELAY_MAX])
            out[proto] = {
                "active": st.active,
                "joined": st.joined,
                "join_failed": st.join_failed,
                "kicked": st.kicked,
                "left": st.left,
                "up_Bps": col(UP_BYTES) / span,
                "down_Bps": col(DOWN_BYTES) / span,
                "broadcast_hz_per_player": col(BROADCASTS) / span / st.active if st.active else 0.0,
                "relay_p50_s": SecondHistogram.percentile(hist, 50, vmax) if relays else None,
                "relay_p99_s": SecondHistogram.percentile(hist, 99, vmax) if relays else None,
                "loss_pct": 100.0 * lost / (relays + lost) if relays + lost else None,
                "slipped": st.slipped,
                "seconds_with_slips": sum(1 for r in rows if r[SLIPPED]),
            }
        return out

    def report(self, now: float) -> dict:
        """The final report as JSON-able numbers (see `report.py` for its HTML page)."""
        duration = max(now - self.started, 1e-9)
        return {
            "kind": "headcast swarm report",
            "version": 1,
            "source": "headcast",
            "started": self.started,
            "duration_s": round(duration, 3),
            "protocols": {
                proto: dict(
                    protocol_report(st, duration), **({"server": self.servers[proto]} if proto in self.servers else {})
                )
                for proto, st in self.stats.items()
            },
            "series": {proto: series(st) for proto, st in self.stats.items()},
            "histograms": {
                proto: {"relay_s": st.relay.state(), "join_s": st.join.state(), "tick_late_s": st.late.state()}
                for proto, st in self.stats.items()
            },
        }


def _spread(values: np.ndarray, digits: int = 3) -> dict:
    """min, p10, p50, p90, max, mean over players (exact: numpy on the per-player values)."""
    if not len(values):
        return {"players": 0, "min": None, "p10": None, "p50": None, "p90": None, "max": None, "mean": None}
    p10, p50, p90 = np.percentile(values, (10, 50, 90), method="inverted_cdf")
    r = lambda v: round(float(v), digits)  # noqa: E731
    return {
        "players": int(len(values)),
        "min": r(values.min()),
        "p10": r(p10),
        "p50": r(p50),
        "p90": r(p90),
        "max": r(values.max()),
        "mean": r(values.mean()),
    }


def protocol_report(st: ProtocolStats, duration: float) -> dict:
    counts = np.asarray(st.p_bc, dtype=np.float64)
    span = np.asarray(st.p_bc_last) - np.asarray(st.p_bc_first)
    got = (counts >= 2) & (span > 0)
    rates = (counts[got] - 1) / span[got]  # broadcasts a player got per second, first to last
    seen = np.asarray(st.p_up, dtype=np.int64) > 0  # players that sent anything
    n_players = len(st.p_up)
    up = np.asarray(st.p_up, dtype=np.float64)[seen] / duration if n_players else np.zeros(0)
    down = np.asarray(st.p_down, dtype=np.float64)[seen] / duration if n_players else np.zeros(0)
    delivered = st.relay.n
    up_bytes, down_bytes, up_msgs, down_msgs, broadcasts = (
        sum(r[c] for r in st.rows) for c in (UP_BYTES, DOWN_BYTES, UP_MSGS, DOWN_MSGS, BROADCASTS)
    )
    return {
        "players": {
            "joined": st.joined,
            "active": st.active,
            "peak_active": st.peak_active,
            "left": st.left,
            "kicked": st.kicked,
            "kick_reasons": dict(st.kick_reasons),
            "join_failed": st.join_failed,
            "join_failed_reasons": dict(st.join_failed_reasons),
            "silent": int(np.count_nonzero(counts[seen] == 0)) if n_players else 0,
        },
        "join_ms": st.join.summary(1000.0, 3),
        "relay_ms": st.relay.summary(1000.0, 3),
        "relay": {
            "delivered": delivered,
            "lost": st.lost,
            "loss_pct": round(100.0 * st.lost / (delivered + st.lost), 3) if delivered + st.lost else None,
        },
        "broadcast_hz": _spread(rates),
        "up": {
            "bytes": up_bytes,
            "messages": up_msgs,
            "bytes_per_s": round(up_bytes / duration, 1),
            "per_player_bytes_per_s": _spread(up, 1),
        },
        "down": {
            "bytes": down_bytes,
            "messages": down_msgs,
            "bytes_per_s": round(down_bytes / duration, 1),
            "per_player_bytes_per_s": _spread(down, 1),
            "broadcasts": broadcasts,
        },
        "ticks": {
            "count": st.late.n,
            "slipped": st.slipped,
            "slip_after_ms": st.slip_after * 1000.0,
            "late_ms": st.late.summary(1000.0, 3),
            **_suspect(st.rows),
        },
        "server_view": server_view(st),
        "generator": generator(st),
    }


# The load generator is called the bottleneck when more of its ticks than this slipped.
BOTTLENECK_SLIPPED = 0.01


def server_view(st: ProtocolStats) -> dict:
    """Relay latency and loss over the seconds in which none of our own ticks slipped: what the
    server did, without the seconds where a late generator delayed its own sends and reads."""
    clean = [s for s, r in enumerate(st.rows) if not r[SLIPPED]]
    rows = st.rows
    relays = sum(rows[s][RELAYS] for s in clean)
    lost = sum(rows[s][LOST] for s in clean)
    h = LogHistogram.of_bins(
        (bins for s in clean if (bins := st.relay_bins[s])),
        sum(rows[s][RELAY_SUM] for s in clean),
        max((rows[s][RELAY_MAX] for s in clean if rows[s][RELAYS]), default=0.0),
    )
    return {
        "seconds": len(clean),
        "of_seconds": len(rows),
        "relay_ms": h.summary(1000.0, 3),
        "relay": {
            "delivered": int(relays),
            "lost": int(lost),
            "loss_pct": round(100.0 * lost / (relays + lost), 3) if relays + lost else None,
        },
    }


def generator(st: ProtocolStats) -> dict:
    """The load generator's own health: how many of its ticks slipped, and whether that makes it
    the bottleneck of the run (more than BOTTLENECK_SLIPPED of its ticks)."""
    ticks = st.late.n
    share = st.slipped / ticks if ticks else 0.0
    late = [s for s, r in enumerate(st.rows) if r[SLIPPED]]
    rows = st.rows
    h = LogHistogram.of_bins(
        (bins for s in late if (bins := st.relay_bins[s])),
        sum(rows[s][RELAY_SUM] for s in late),
        max((rows[s][RELAY_MAX] for s in late if rows[s][RELAYS]), default=0.0),
    )
    return {
        "ticks": ticks,
        "slipped": st.slipped,
        "slipped_pct": round(100.0 * share, 3),
        "late_p99_ms": st.late.summary(1000.0, 3)["p99"],
        "seconds_with_slips": len(late),
        "relay_ms_in_those_seconds": h.summary(1000.0, 3),
        "lost_in_those_seconds": int(sum(rows[s][LOST] for s in late)),
        "bottleneck": share > BOTTLENECK_SLIPPED,
    }


def _suspect(rows: list[list[float]]) -> dict:
    """The seconds in which the load generator ran late (a slipped tick) and the relay figures
    measured in them: a late generator delays its own sends and reads, so a relay spike or a
    loss in such a second may be ours, not the server's."""
    late = [r for r in rows if r[SLIPPED]]
    return {
        "seconds_with_slips": len(late),
        "relayed_in_them": int(sum(r[RELAYS] for r in late)),
        "lost_in_them": int(sum(r[LOST] for r in late)),
    }


def series(st: ProtocolStats) -> dict:
    """One value per whole second since the start, for plots (the last, partial second too)."""
    rows = st.rows
    col = lambda c: [r[c] for r in rows]  # noqa: E731
    p50: list[float | None] = []
    p99: list[float | None] = []
    mean: list[float | None] = []
    for r, h in zip(rows, st.row_hist):
        if h is None:
            p50.append(None)
            p99.append(None)
            mean.append(None)
        else:
            p50.append(round(SecondHistogram.percentile(h, 50, r[RELAY_MAX]) * 1000.0, 3))
            p99.append(round(SecondHistogram.percentile(h, 99, r[RELAY_MAX]) * 1000.0, 3))
            mean.append(round(r[RELAY_SUM] / r[RELAYS] * 1000.0, 3))
    active: list[float] = []
    n: float = 0
    for r in rows:
        n += r[ACTIVE_DELTA]
        active.append(n)
    return {
        "t": list(range(len(rows))),
        "active": active,
        "up_Bps": col(UP_BYTES),
        "down_Bps": col(DOWN_BYTES),
        "up_msgs": col(UP_MSGS),
        "down_msgs": col(DOWN_MSGS),
        "broadcasts": col(BROADCASTS),
        "relays": col(RELAYS),
        "lost": col(LOST),
        "relay_p50_ms": p50,
        "relay_p99_ms": p99,
        "relay_mean_ms": mean,
        "relay_max_ms": [round(r[RELAY_MAX] * 1000.0, 3) if r[RELAYS] else None for r in rows],
        "ticks": col(TICKS),
        "slipped": col(SLIPPED),
        "joins": col(JOINS),
        "left": col(LEFT),
        "kicks": col(KICKS),
        "join_failed": col(JOIN_FAILED),
    }
