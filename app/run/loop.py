"""The frame loop: one thread, one clock.

Each step: take the XR frame (the runtime paces us, or a headless session its own clock), update
the rig, run the sinks' sends, drain their sockets, let them observe, draw the mirror, record
telemetry. Nothing here blocks except the XR frame wait; a sink that cannot send this frame says so
and the loop goes on. A runtime failure or a lost session ends the run as a stop does (every sink
closed, so every server sees us disconnect) and is kept in `failure` for the caller to report.

The frame budget (issue 26; docs/performance.md): each step is one wake-up, and the work is spread
over them rather than piled on some. Sends come first, right after the pose is located
(motion-to-wire). A sink marked `deferrable` (a stream on a grid of its own that a frame's delay
does not slow: Sauerbraten's 30 Hz positions, linked) skips its send on a frame where an earlier
sink's bytes already went out, for at most MAX_DEFER frames in a row, so its bytes do not wait
behind another protocol's. A sink whose rate counts from its last send (NetSync's send policy)
keeps a `held_from` attribute: the loop sets it to the clock time of the frame the send was first
held on and clears it after the send, so the sink counts its rate from the frame it was due on
(held without it, 10 Hz measured 9.4 -> 8.4), and each frame puts at most one protocol's bytes on
the wire where the rates allow (motion-to-wire is the first send's); the sockets are drained on a frame that sent
nothing (a Quake 3 command tick sends on 60 of the 90 frames a second), again waiting at most
MAX_DEFER frames. What the polls read reaches the next frame's sends as before:
drained after this frame's sends, before the next frame's.

No call where nothing is due (on this VM a cold Python call costs ~8 us): a sink may keep two plain
attributes the loop reads each frame, `send_at` and `poll_at` (clock seconds; a sink without them is
called every frame). Its send is called only from `send_at` on, its poll only from `poll_at` on, and
its observe only on a frame whose send was called or held (deferred), not on one it was not due. An
offline sink with `follow(loop)` is handed the loop once and reads the latest frame from it when
something shows it (`loop.state`, `loop.frame`): it sets `send_at` to +inf and costs nothing per frame.

With `poll_thread` (what `headcast run` used until session 13) the polls leave the frame thread: a
worker thread runs the due polls between frames, just after one ends (POLL_PERIOD apart), so a frame
carries only the sends (issue 26: a Quake 3 hand-over or a NetSync room broadcast costs ~0.3 ms
cold, more than the frame's whole budget). One lock keeps the two threads apart: the frame thread
holds it from the moment the poses are located to the end of the frame (a wait for a poll still
running counts in the frame's cost and its motion-to-wire), the worker while it polls; so every call
into a sink still runs alone, as without the thread. A poll left due for POLL_STARVED (a loop
stepped without pause, a stalled worker) runs on the frame thread as before.

With `polls_after` (what `headcast run` uses; measured against the worker in one window: 0.25-0.56
points of a core less, frame p99 no worse) the polls leave the frame but not its thread: the due
polls run at the end of each step, after the frame's cost is taken, before the next frame's wait, in
the wake-up the frame already paid for. They run every POLL_PERIOD frames, on the worker's grid (a
NetSync link asks for a poll every 1/30 s; one every third frame's end would find it not yet due
half the time, as the worker's passes do: ~16 a second); a poll asked for at once (`poll_at` -inf: a
Quake 3 tick that read a hand-over) runs at the end of that frame. The worker's own wake-up costs
~100 us of CPU on this VM, 30 times a second (0.25-0.34 % of a core, measured with its polls taken
out); here there is none, and no lock. A frame carries only the sends as with the worker; a poll's
time is in neither the frame's cost nor its motion-to-wire, and a poll longer than the gap left
before the next frame makes that frame late (the pacer's lateness), where the worker's would make it
wait. (Session 12 made it the default and took it back: beside a Quake 3 sink that failed, NetSync
sent nothing more in 2 of 4 runs under load. The cause was not the polls' place but a failed sink's
leaving, in every mode: the others' held counts were reset while a held send kept its `held_from`,
which only the send ending a hold clears, so the NetSync sink counted its rate from that one frame
for good (`_keep_held`). Running a Quake 3 poll asked for at once at the end of the very frame whose
Quake 3 send held the NetSync one made it likelier here.)"""

from __future__ import annotations

import gc
import math
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from headcast.app.errors import AppError, one_line
from headcast.app.run import stop
from headcast.app.run.rig import Rig, RigState
from headcast.app.run.telemetry import Telemetry
from headcast.app.sinks.base import Sink
from headcast.xr.errors import SessionEnded, XRError
from headcast.xr.frame import TrackingFrame

MAX_DT = 0.1  # a stall (debugger, suspended laptop) must not fling the rig across the map
_MAX_DT_NS = round(MAX_DT * 1e9)
MAX_DEFER = 2  # frames the polls, or a deferrable sink's send, may wait in a row for a frame with nothing sent
FLUSH_EVERY = 256  # frames between the telemetry rings' batch writes (app/run/telemetry.py Ring)
POLL_PERIOD = 3  # poll_thread: frames between the worker's passes (30 a second at 90 Hz)
POLL_AFTER = 0.0015  # poll_thread: s after a frame's end the worker's pass starts (the frame thread asleep)
POLL_STARVED = 0.1  # poll_thread: s a poll may wait for the worker before the frame thread runs it
GC_EARLY = 0.7  # share of the collector's first threshold at which the loop collects between frames
_INF = math.inf
_NEG_INF = -math.inf
_gc_count = gc.get_count


class SourceEnded(Exception):
    """A finite frame source (a replayed trace) has no more frames; the message says why."""


class SinkFailed(AppError):
    """A sink's protocol core raised (on a peer's bytes, whatever the exception's type): that sink
    is over — closed, so its server gets our disconnect — and the others stream on. Kept on the
    sink as `sink.fault`; app/run/outcome.py reads it as the sink's failure (status line, summary,
    --json)."""

    def __init__(self, sink_name: str, phase: str, error: BaseException) -> None:
        kind = type(error).__name__
        text = one_line(error) or kind
        super().__init__(f"{sink_name}: stopped on the server's data ({kind} in {phase}: {text}); disconnected")
        self.sink_name, self.phase, self.error = sink_name, phase, error


def _stderr_line(text: str) -> None:
    print(f"headcast: {text}", file=sys.stderr, flush=True)


class FrameSource(Protocol):
    def next_frame(self) -> TrackingFrame: ...
    def close(self) -> None: ...


class Recorder(Protocol):
    """Where the frames are recorded (headcast.xr.trace.TraceWriter)."""

    path: Path
    count: int  # frames written

    def write(self, frame: TrackingFrame) -> None: ...
    def close(self) -> object: ...  # (TraceWriter returns its path)


class Mirror(Protocol):
    def draw(self, loop: "FrameLoop", now: float) -> bool:
        """Draw one frame; False once the user closed the window."""

    def close(self) -> None: ...


@dataclass
class FrameLoop:
    source: FrameSource
    rig: Rig
    sinks: Sequence[Sink]
    telemetry: Telemetry = field(default_factory=Telemetry)
    mirror: Mirror | None = None
    recorder: Recorder | None = None  # headcast.xr.trace.TraceWriter
    duration: float = 0.0  # seconds; 0 = until stopped
    clock: Callable[[], float] = time.perf_counter
    on_status: Callable[["FrameLoop", float], None] | None = None
    status_interval: float = 0.5
    notice: Callable[[str], None] = _stderr_line  # one line the user should see (stderr)
    recording_failure: str = ""  # what the notice said when the recording stopped early
    frame: TrackingFrame | None = None
    state: RigState | None = None
    stop_reason: str = ""
    failure: XRError | None = None  # the runtime failure (or session loss) that ended the run
    _prev_time_ns: int | None = None
    _next_status: float = 0.0
    _t0: float | None = None
    _live: list[Sink] | None = None  # the sinks still running (a failed one leaves: _sink_failed)
    _deferrable: list[bool] = field(default_factory=list)  # per live sink: its send may wait (set with _live)
    _held: list[int] = field(default_factory=list)  # per live sink: frames its send has waited in a row
    _timed: list[bool] = field(default_factory=list)  # per live sink: it keeps send_at/poll_at (set with _live)
    _catch_up: list[bool] = field(default_factory=list)  # per live sink: it reads held_from (set with _live)
    _polled: list[tuple[Sink, bool]] = field(default_factory=list)  # live sinks with a poll: (sink, keeps poll_at)
    _observed: list[tuple[int, Sink]] = field(default_factory=list, init=False)  # live sinks with observe: (i, sink)
    _polls_held = 0  # steps the polls have waited in a row
    _flush_in = FLUSH_EVERY  # frames until the telemetry's next batch write
    poll_thread: bool = False  # the polls on a worker thread between frames (module doc)
    _lock: threading.Lock | None = None  # poll_thread: held by the frame's work and by the worker's polls
    _worker: threading.Thread | None = None
    _worker_stop = False
    _worker_ran = -_INF  # clock time of the worker's last pass
    _ended_at = -_INF  # clock time the last frame's work ended (the worker aims just after it)
    _period = 1.0 / 90  # seconds between frames' ends, smoothed (the worker's grid)
    worker_failure: BaseException | None = None  # what stopped the worker (its polls then run here)
    polls_after: bool = False  # the polls at each step's end, on the frame thread (module doc)
    _grid_in = POLL_PERIOD  # polls_after: frames until every due poll runs again (else only "at once" ones)
    _plain = False  # this frame's work ends with its sends (_set_live)
    _gc_at = 0  # the young generation's count at which the loop collects between frames (0: never; _collect)
    _gc_limits = (10, 10)  # the collector's thresholds of the older generations (_collect)

    def step(self) -> bool:
        """One frame; False when the run is over (`stop_reason` says why)."""
        signum = stop.state.signum
        if signum is not None:  # SIGINT/SIGTERM/SIGHUP: stop between frames, never inside one
            self.stop_reason = stop.reason(signum)
            return False
        clock = self.clock
        if self._t0 is None:
            self._t0 = clock()
            # Everything built so far (modules, sessions, sockets: ~75k objects) lives as long as
            # the loop: out of the collector's sight, a full collection, rare in the steady state
            # but ~18 ms over that heap, would take well under a millisecond in a frame.
            gc.freeze()
            # The collector's automatic runs start inside an allocation, so mostly inside a frame
            # (78-593 us each, 4 in 20 s with Quake 3 alone: frames in the top 1 %); the loop runs
            # them between frames instead, a little before the allocations would (_collect).
            if gc.isenabled():
                t0, t1, t2 = gc.get_threshold()
                if t0 > 0:
                    self._gc_at, self._gc_limits = max(1, int(t0 * GC_EARLY)), (t1, t2)
        sinks = self._live
        if sinks is None:
            sinks = self._set_live(list(self.sinks))
            if self.poll_thread and not self.polls_after and self._polled and self._worker is None:
                self._start_worker()
        try:
            frame = self.source.next_frame()
        except SessionEnded as e:
            self.stop_reason = f"XR session ended: {e}" if e.lost else "XR session ended by the runtime"
            if e.lost:
                self.failure = e
            return False
        except XRError as e:  # the runtime failed: the run ends like any other stop (sinks closed)
            self.stop_reason = f"XR runtime failure: {e}"
            self.failure = e
            return False
        except SourceEnded as e:
            self.stop_reason = str(e)
            return False
        located = clock()
        lock = self._lock
        if lock is None:
            return self._frame(frame, located, sinks)
        lock.acquire()  # a poll still running makes this frame wait: counted in its cost
        try:
            # re-read under the lock: the worker may have failed a sink while this thread slept
            return self._frame(frame, located, self._live or [])
        finally:
            lock.release()

    def _frame(self, frame: TrackingFrame, located: float, sinks: list[Sink]) -> bool:
        """The frame's work once its poses are located (step)."""
        clock = self.clock
        prev, t_ns = self._prev_time_ns, frame.time_ns
        # min(MAX_DT, max(0.0, (t_ns - prev) / 1e9)), the same float, without the builtins and the
        # int-by-float division: cold (the first work after the frame's wait) that line took ~10 us
        # of a ~45-us frame on this VM, these ~2
        dt = 0.0
        if prev is not None:
            d = t_ns - prev
            if d >= _MAX_DT_NS:
                dt = MAX_DT
            elif d > 0:
                dt = d / 1_000_000_000
        self._prev_time_ns = t_ns
        state = self.rig.update(frame, dt)
        self.frame, self.state = frame, state
        tel = self.telemetry
        head = frame.head
        if not (head.position_valid and head.orientation_valid):
            tel.tracking_lost_frames += 1
        busy = False
        deferrable, held, timed, catch_up = self._deferrable, self._held, self._timed, self._catch_up
        idle = 0  # bit i: sink i was not due this frame (its send and observe are skipped)
        for i, s in enumerate(sinks):
            if timed[i] and located < s.send_at:  # type: ignore[attr-defined]
                idle |= 1 << i
                continue
            if busy and deferrable[i] and held[i] < MAX_DEFER:
                if not held[i] and catch_up[i]:
                    s.held_from = located  # type: ignore[attr-defined]  # the frame it was due on
                held[i] += 1  # another protocol's bytes went out this frame: this one's next frame
                continue
            try:
                t_wire = s.send(state, frame, located)
            except Exception as e:  # noqa: BLE001 - whatever a core raises ends that sink only
                self._sink_failed(s, "send", e)
                continue
            if held[i]:
                held[i] = 0
                if catch_up[i]:
                    s.held_from = None  # type: ignore[attr-defined]  # (the sink reads it in send)
            if t_wire is not None:
                busy = True
                tel.wire(t_wire - located)
        alive = True
        if not self._plain:  # (plain: nothing more before the frame's end; _set_live)
            alive = self._after_sends(frame, located, sinks, busy, idle, held)
        end = clock()
        tel.frame(end - located)
        if self._lock is not None:
            if self._ended_at != -_INF:
                self._period += 0.05 * (min(MAX_DT, end - self._ended_at) - self._period)
            self._ended_at = end
        elif self.polls_after and self._polled:  # after the frame's cost is taken, before the next wait
            grid_in = self._grid_in - 1
            if grid_in:  # off the grid: only a poll asked for at once (no call when there is none)
                self._grid_in = grid_in
                for s, timed_poll in self._polled:
                    if timed_poll and s.poll_at == _NEG_INF:  # type: ignore[attr-defined]
                        self._poll_due(end, False)
                        break
            else:
                self._grid_in = POLL_PERIOD
                self._poll_due(end)
        if self._gc_at and _gc_count()[0] >= self._gc_at:
            self._collect()
        self._flush_in -= 1
        if not self._flush_in:  # the rings' batch write, every FLUSH_EVERY frames (bounded memory)
            self._flush_in = FLUSH_EVERY
            tel.flush()
        if self.on_status is not None and end >= self._next_status:
            self._next_status = end + self.status_interval
            try:
                self.on_status(self, end)
            except AppError:
                raise  # the console ends the run (no sink can stream, --require-all)
            except Exception:
                if not self._status_failed(end):
                    raise  # not a sink's: the status line's own bug
        if not alive:
            self.stop_reason = "mirror window closed"
            return False
        t0 = self._t0 if self._t0 is not None else end  # (step set it)
        if self.duration and end - t0 >= self.duration:
            self.stop_reason = f"ran for {self.duration:g} s"
            return False
        return True

    def _after_sends(
        self, frame: TrackingFrame, located: float, sinks: list[Sink], busy: bool, idle: int, held: list[int]
    ) -> bool:
        """The frame's work after the sends (_frame), when there is any: the recording, the polls in
        the frame (neither polls_after nor the worker), the observes, the mirror (False once its
        window was closed); and the held counts kept when a sink failed in this frame's sends."""
        if self.recorder is not None:  # after the sends: it is not on the motion-to-wire path
            try:
                self.recorder.write(frame)
            except OSError as e:
                self._recording_failed(e)
        if self.polls_after or (self._lock is not None and located - self._worker_ran < POLL_STARVED):
            pass  # the polls run between frames: at this step's end, or on the worker
        elif busy and self._polls_held < MAX_DEFER:
            self._polls_held += 1  # this wake-up sent: the sockets are read at a quieter one
        elif self._polled:
            self._polls_held = 0
            self._poll_due(self.clock())
        else:
            self._polls_held = 0
        if self._live is not sinks:
            idle = 0  # a sink failed this frame: the indices moved
            self._keep_held(sinks, held)  # the counts as this frame's sends left them (_set_live's were earlier)
        for i, s in self._observed:
            if not idle >> i & 1:
                try:
                    s.observe(located)  # type: ignore[misc]  # (not None: _set_live)
                except Exception as e:  # noqa: BLE001
                    self._sink_failed(s, "observe", e)
        if self.mirror is not None:
            return self.mirror.draw(self, located)
        return True

    def _collect(self) -> None:
        """The collection the collector would make at its next allocation past its first threshold,
        made now, between frames (after this one's cost is taken, before the next frame's wait): the
        oldest generation whose count passed its threshold, as CPython's own schedule picks it
        (without its rule that defers a full collection while few objects are new: the frozen
        start-up heap is out of its sight anyway). Allocations still start one inside a frame if a
        single step allocates more than the margin left (30 % of the threshold). The collector's
        settings as they are now (read here, not per frame): none while it is disabled (gc.disable
        after the loop started: an explicit collect would override it), none for good once its first
        threshold is 0, and its thresholds as last set."""
        if not gc.isenabled():
            return
        t0, t1, t2 = gc.get_threshold()
        if t0 <= 0:
            self._gc_at = 0
            return
        at = self._gc_at = max(1, int(t0 * GC_EARLY))
        self._gc_limits = (t1, t2)
        c0, c1, c2 = _gc_count()
        if c0 < at:  # the threshold was raised since: not due yet
            return
        gc.collect(2 if c2 > t2 else 1 if c1 > t1 else 0)

    def _start_worker(self) -> None:
        self._lock = threading.Lock()
        self._worker_ran = self.clock()
        self._worker = threading.Thread(target=self._poll_worker, name="headcast-polls", daemon=True)
        self._worker.start()

    def _poll_worker(self) -> None:
        """poll_thread: the due polls, every POLL_PERIOD frames, POLL_AFTER after a frame ended
        (the frame thread is then waiting for its next frame), under the loop's lock."""
        lock, clock = self._lock, self.clock
        assert lock is not None
        try:
            while not self._worker_stop:
                now = clock()
                ended, period = self._ended_at, self._period
                if ended == -_INF:
                    wake = now + POLL_PERIOD * period
                else:  # the next frame end POLL_PERIOD frames on, and a little after it
                    wake = ended + POLL_PERIOD * period + POLL_AFTER
                    while wake <= now:
                        wake += period
                time.sleep(wake - now)
                with lock:
                    if self._worker_stop:
                        return
                    now = clock()
                    self._worker_ran = now
                    self._poll_due(now)
        except BaseException as e:  # noqa: BLE001 - the loop's own bug: the frame thread polls from now on
            self.worker_failure = e
            self._worker_ran = -_INF

    def _poll_due(self, now: float, grid: bool = True) -> None:
        """Each live sink's poll that is due at `now` (from its `poll_at`, when it keeps one); off the
        grid (polls_after) only those asked for at once (`poll_at` -inf). One that raises fails that
        sink only."""
        for s, timed_poll in self._polled:  # (re-read: a sink that failed in send is out)
            if timed_poll:
                at = s.poll_at  # type: ignore[attr-defined]
                if now < at or not grid and at != -_INF:
                    continue
            elif not grid:
                continue
            poll = s.poll
            if poll is not None:
                try:
                    poll(now)
                except Exception as e:  # noqa: BLE001 - that sink fails, the others go on
                    self._sink_failed(s, "poll", e)

    def _stop_worker(self) -> None:
        worker = self._worker
        if worker is None:
            return
        self._worker_stop = True
        if worker is not threading.current_thread():
            worker.join(timeout=1.0)
        self._worker = None

    def _set_live(self, live: list[Sink]) -> list[Sink]:
        before = self._live
        if before is None:  # the first frame: offline sinks that follow the loop read it from now on
            for s in live:
                follow = getattr(s, "follow", None)
                if follow is not None:
                    follow(self)
        self._live = live
        self._deferrable = [bool(getattr(s, "deferrable", False)) for s in live]
        self._keep_held(before or [], self._held)
        self._timed = [hasattr(s, "send_at") for s in live]
        self._catch_up = [hasattr(s, "held_from") for s in live]
        self._polled = [(s, hasattr(s, "poll_at")) for s in live if s.poll is not None]
        self._observed = [(i, s) for i, s in enumerate(live) if s.observe is not None]
        # A plain frame ends with its sends: polls after the step, no observer, no recording, no
        # window, and every sink as on the first frame (one left: its frame has the held counts to
        # keep). Read here: a recorder or a mirror is the loop's from before its first step.
        self._plain = (
            before is None
            and self.polls_after
            and not self.poll_thread
            and not self._observed
            and self.recorder is None
            and self.mirror is None
        )
        return live

    def _keep_held(self, sinks: list[Sink], held: list[int]) -> None:
        """The live sinks' held counts from `held` (per sink of `sinks`, index for index), by sink:
        a sink that was held stays held when another leaves. Its `held_from` was set when it was
        first held and is cleared only by the send that ends the hold: a count reset to 0 there
        would leave it set for good, and a NetSync sink would count its rate from that frame at
        every send after, refusing each (send_hz 0 once the sink beside it failed)."""
        counts = {id(s): n for s, n in zip(sinks, held) if n}
        self._held = [counts.get(id(s), 0) for s in self._live or ()]

    def _sink_failed(self, sink: Sink, phase: str, error: Exception) -> None:
        """The one guard every call into a sink goes through: `error` (raised in `phase`) ends
        this sink, not the run. It leaves the loop's live sinks (this frame's remaining calls skip
        it), keeps the failure as `sink.fault` and is closed at once — its server gets our
        disconnect; an error closing it is added to the failure, never raised."""
        live = self._live
        if live is not None and sink in live:
            # a new list: the phase iterating the old one goes on with the other sinks
            self._set_live([s for s in live if s is not sink])
        if getattr(sink, "fault", None) is not None:
            return
        fault = SinkFailed(sink.name, phase, error)
        try:
            setattr(sink, "fault", fault)  # (not part of Sink: the summary reads it where it is)
        except AttributeError:  # a sink class with __slots__: the loop still drops it
            pass
        self.notice(str(fault) + ("; the other sinks go on" if self._live and phase != "close" else ""))
        try:
            sink.close()
        except Exception as e:  # noqa: BLE001 - the disconnect was attempted; say what stopped it
            fault.args = (f"{fault.args[0]}; closing it failed too ({type(e).__name__}: {one_line(e)})",)

    def _status_failed(self, now: float) -> bool:
        """The status callback raised: a sink whose own status() raises (state its server's bytes
        left) fails as in any other phase, and from then on shows a fixed status naming its
        failure (the summary reads it too). True when such a sink was found."""
        from headcast.app.run.telemetry import SinkStatus

        found = False
        for s in self.sinks:
            try:
                s.status(now)
            except Exception as e:  # noqa: BLE001
                found = True
                self._sink_failed(s, "status", e)
                fault = getattr(s, "fault", None) or SinkFailed(s.name, "status", e)
                fixed = SinkStatus(s.name, "failed", detail=str(fault).removeprefix(f"{s.name}: "))
                try:
                    setattr(s, "status", lambda now, fixed=fixed: fixed)
                except AttributeError:
                    pass
        return found

    def _recording_failed(self, e: OSError, at_close: bool = False) -> None:
        """A full disk (or a failing one) ends the recording, not the run; the writer has kept
        every whole frame, so the file reads as a trace that ends early."""
        rec, self.recorder = self.recorder, None
        if rec is None:
            return
        n = rec.count
        what = "the recording could not be finished" if at_close else f"recording stopped at frame {n}"
        self.recording_failure = (
            f"{what}: {e.strerror or e}; {rec.path} keeps the {n} frames written "
            f"(replay plays them: the trace ends early)"
        )
        self.notice(self.recording_failure + ("" if at_close else "; the run goes on without recording"))

    def run(self) -> str:
        """Run until the duration, the window, the runtime or a stop signal ends it (SIGINT,
        SIGTERM, SIGHUP: app/run/stop.py); always closes every sink (disconnecting from its server),
        the recorder and the source."""
        try:
            with stop.running():
                while self.step():
                    pass
        except KeyboardInterrupt:
            self.stop_reason = "interrupted (Ctrl-C)"
        finally:
            self.close()
        return self.stop_reason

    def close(self) -> None:
        """Sinks first (each sends its server a disconnect at once), then the recording's end
        record, the window and the XR source."""
        errors: list[BaseException] = []
        self._stop_worker()  # no poll runs beside the closes
        for s in self.sinks:  # a sink's close reads its server's last bytes: it fails as that sink
            if getattr(s, "fault", None) is not None:
                continue  # closed when it failed
            try:
                s.close()
            except Exception as e:  # noqa: BLE001
                self._sink_failed(s, "close", e)
        for closer in [self._close_recorder, getattr(self.mirror, "close", None), self.source.close]:
            if closer is None:
                continue
            try:
                closer()
            except Exception as e:  # one failing close must not leave the other servers connected
                errors.append(e)
        if errors:
            raise errors[0]

    def _close_recorder(self) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.close()
        except OSError as e:
            self._recording_failed(e, at_close=True)
