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

Each protocol's views, sources and words are in its own folder (app/sinks/<protocol>/farside.py, a
`FarSideModel`); this module holds the records, the plain-words registry and the tracker.

Angles are degrees in the Quake sense for every sink (pitch + down, yaw + left in (−180, 180],
roll + when the right side dips); positions are metres in the world named by the sample's `frame`.
The tracker (`FarSideTracker`) keeps the last `plot_seconds` of every view and link figure in
numpy rings; `pause()` freezes a copy for the reader while recording goes on.
"""

from __future__ import annotations

import importlib
import math
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Protocol

import numpy as np

from headcast.app.run.telemetry import Ring

if TYPE_CHECKING:  # the contract the sinks and links fit (app/sinks/contract.py)
    from headcast.app.sinks.contract import AnyFarSink, FarSink

NAN = float("nan")
MAX_RATE = 160.0  # frames per second the rings are sized for (90–144 Hz headsets)
LINK_PERIOD = 0.1  # seconds between samples of rates and round trips (a status figure)

# The frame samples are in when no protocol names its own (the angle sense is the same everywhere).
XR_FRAME = "rig world (OpenXR axes, metres)"

# Transients (FarSideView.transient)
JOINING = "joining"
SPAWN = "spawn"
TRACKING_LOST = "tracking lost"
DISCONNECTED = "disconnected"
DEAD = "dead"
SERVER_SILENT = "server silent"
INTERMISSION = "intermission"


# Plain words first: each view's `why` and each error `basis` is said in words a user reads; the
# precise term (the protocol's field, the decode's build) is its detail — the mirror's tooltip,
# the demo's summary and --json put it after the plain words (`detail`, `why_with_detail`).
DETAILS: dict[str, str] = {}


def plain(text: str, detail: str) -> str:
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


def angle_err(a: HeadSample, b: HeadSample) -> float:
    return max(abs(a.pitch - b.pitch), abs(wrap180(a.yaw - b.yaw)), abs(wrap180(a.roll - b.roll)))


class Add(Protocol):
    """The tracker's row writer: a view and the error of the pair compared this frame (if any)."""

    def __call__(self, now: float, v: FarSideView, err_deg: float | None, err_m: float | None = None) -> None: ...


class FarSideModel:
    """One protocol's far side (app/sinks/<protocol>/farside.py `FarSide`): which inputs its views
    are built from, the views themselves, where their numbers come from and what echoes us."""

    def inputs(self, sink: Any) -> tuple:
        """What the views are built from, by identity (the sinks build new objects when anything
        changes): the tracker rebuilds the views only when this changes."""
        raise NotImplementedError

    def update(self, sink: Any, now: float, add: Add) -> None:
        """Build this frame's views and hand each to `add(now, view, err_deg, err_m)`."""
        raise NotImplementedError

    def sources(self, sink: Any) -> list[tuple[str, Source, str]]:
        """(view key, source, plain why) of every view, in order."""
        raise NotImplementedError

    def round_trip(self, sink: Any) -> tuple[float | None, str]:
        """The round trip where the protocol echoes us (ms), and what echoes ("" when nothing)."""
        raise NotImplementedError

    def round_trip_name(self, sink: Any) -> str:
        """ "relay" (our own pose back through the server) or "ping" (the server's acknowledgement)."""
        raise NotImplementedError


# Each sink's far-side model, imported when a sink of that name first shows up (the terminal-only
# run never imports the far side: tests/app/test_startup_imports.py).
MODEL_MODULES = {
    "q3": "headcast.app.sinks.q3.farside",
    "netsync": "headcast.app.sinks.netsync.farside",
    "sauer": "headcast.app.sinks.sauer.farside",
}


def model_class(name: str) -> type[FarSideModel] | None:
    """The far-side model of the sink called `name` (None: not a sink with a far side)."""
    module = MODEL_MODULES.get(name)
    return None if module is None else importlib.import_module(module).FarSide


_NAN3 = (NAN, NAN, NAN)
_NAN6 = _NAN3 + _NAN3


class _Series:
    """One view's rows: the last `size` frames."""

    def __init__(self, size: int) -> None:
        self.ring = Ring(size, len(COLUMNS))
        self.last: FarSideView | None = None
        self.rep: tuple = ()  # the last row's values after its time, no pair compared (repeated unchanged)

    def add(self, now: float, v: FarSideView, err_deg: float | None, err_m: float | None) -> None:
        s, o = v.sent, v.seen
        row: tuple[float, ...]
        if s is None:
            row = _NAN6
        else:
            pos = s.pos
            row = (s.pitch, s.yaw, s.roll, *(_NAN3 if pos is None else pos))
        if o is None:
            row += _NAN6
        else:
            pos = o.pos
            row += (o.pitch, o.yaw, o.roll, *(_NAN3 if pos is None else pos))
        if v.transient is None:
            self.rep = (*row, NAN, NAN, 0.0)
            self.ring.add(now, *row, NAN if err_deg is None else err_deg, NAN if err_m is None else err_m, 0.0)
        else:
            self.rep = (*row, NAN, NAN, 1.0)
            self.ring.add(now, *self.rep)
        self.last = v

    def repeat(self, now: float) -> None:
        """Nothing changed since the last row: the same values at `now`, no new pair compared."""
        self.ring.add(now, *self.rep)


class _Link:
    def __init__(self, size: int, sink: FarSink) -> None:
        self.ring = Ring(size, len(LINK_COLUMNS))
        self.sink = sink
        self.messages = 0
        self.m2w_ms: float | None = None
        self.next_sample = -math.inf
        self.figures: LinkFigures | None = None


class _Sink:
    """One sink's far side in the tracker: its model, the identities its views were last built
    from, its views' series and its link."""

    __slots__ = ("model", "key", "series", "link")

    def __init__(self, model: FarSideModel, series: list[_Series]) -> None:
        self.model = model
        self.key: tuple | None = None
        self.series = series
        self.link: _Link | None = None


_UNSEEN: Any = object()  # a sink name the tracker has not met yet


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
        self._sinks: dict[str, _Sink | None] = {}  # sink name → its far side (None: a sink without one)
        self._links: dict[str, _Link] = {}
        self._frozen: dict | None = None
        self._memo: dict[int, tuple[Ring, float, np.ndarray]] = {}
        self._now = 0.0

    # --- recording ---------------------------------------------------------------------------

    def update(self, loop, now: float) -> None:
        """Record this frame; `now` is the frame's located time (what the loop passes the mirror).
        Once per loop frame: one loop over the sinks, no call it can do without."""
        self._now = now
        entries = self._sinks
        for sink in loop.sinks:
            name = sink.name
            e = entries.get(name, _UNSEEN)
            if e is None:
                continue  # not a sink with a far side
            if e is _UNSEEN:
                e = self._entry(name)
                if e is None:
                    continue
            model = e.model
            key = model.inputs(sink)
            if key == e.key:
                # The same sent and seen as the last frame (between Q3 command ticks, NetSync sends
                # and broadcasts, Sauerbraten's 30 Hz): the rows go on, nothing is rebuilt.
                for s in e.series:
                    s.ring.add(now, *s.rep)  # s.repeat(now), a call less
            else:
                e.key = key
                model.update(sink, now, self._add)
            lk = e.link
            if lk is None or lk.sink is not sink:
                lk = e.link = self._links[name] = _Link(self._size, sink)
            meter = sink.meter
            total = meter.total_messages
            if total != lk.messages:
                lk.messages = total
                last = meter.last_time  # (set: a message went out)
                lk.m2w_ms = None if last is None else (last - now) * 1000.0
            if not now < lk.next_sample:
                self._sample_link(lk, sink, now, model)

    def _entry(self, name: str) -> _Sink | None:
        cls = model_class(name)
        e = self._sinks[name] = None if cls is None else _Sink(cls(), self._by_sink.setdefault(name, []))
        return e

    def _add(self, now: float, v: FarSideView, err_deg: float | None, err_m: float | None = None) -> None:
        s = self._series.get(v.key)
        if s is None:
            s = self._series[v.key] = _Series(self._size)
            self._by_sink.setdefault(v.sink, []).append(s)
        # _Series.add, inline (a call less per view built)
        sent, seen = v.sent, v.seen
        row: tuple[float, ...]
        if sent is None:
            row = _NAN6
        else:
            pos = sent.pos
            row = (sent.pitch, sent.yaw, sent.roll, *(_NAN3 if pos is None else pos))
        if seen is None:
            row += _NAN6
        else:
            pos = seen.pos
            row += (seen.pitch, seen.yaw, seen.roll, *(_NAN3 if pos is None else pos))
        if v.transient is None:
            s.rep = (*row, NAN, NAN, 0.0)
            s.ring.add(now, *row, NAN if err_deg is None else err_deg, NAN if err_m is None else err_m, 0.0)
        else:
            s.rep = (*row, NAN, NAN, 1.0)
            s.ring.add(now, *s.rep)
        s.last = v

    def _sample_link(self, lk: _Link, sink: AnyFarSink, now: float, model: FarSideModel) -> None:
        """The link's figures, every LINK_PERIOD."""
        lk.next_sample = now + LINK_PERIOD
        hz, bps = sink.meter.rates(now)
        rtt, basis = model.round_trip(sink)
        lk.figures = LinkFigures(sink.name, hz, bps, lk.m2w_ms, rtt, basis)
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

BASIS_LOCAL = plain("sent vs encoded and decoded here (no server)", "local round trip, in this process")


def sources(sinks) -> list[tuple[str, Source, str]]:
    """(view key, source, why) of every view the sinks give, in the tracker's order; `why` in plain
    words, then its precise term in parentheses."""
    out = []
    for sink in sinks:
        cls = model_class(sink.name)
        if cls is not None:
            out += cls().sources(sink)
    return [(key, src, why_with_detail(why)) for key, src, why in out]


def _columns(names: Iterable[str], rows: np.ndarray | None) -> dict[str, np.ndarray]:
    names = tuple(names)
    if rows is None:
        rows = np.zeros((0, len(names)))
    return {n: rows[:, i] for i, n in enumerate(names)}


def round_trip_name(sink) -> str:
    """What a sink's round trip is called: "relay" (our own pose back through the server) or
    "ping" (the server's acknowledgement)."""
    cls = model_class(sink.name)
    return "ping" if cls is None else cls().round_trip_name(sink)
