"""Non-blocking UDP driver for `Q3ClientCore`: call `poll(now)` once per frame.

Each poll drains the socket (bounded), feeds the core, fires its timer, sends what it produced
and returns the events. The socket is connected to the server, so the kernel drops datagrams
from any other address, and a readiness check with a zero timeout stops the drain (an EAGAIN
exception per poll costs more, cache-cold after a sleep, than the check).

In game (PRIMED / ACTIVE) the socket is read only when the command tick is due, as ioq3 reads
its socket once per client frame: a snapshot waits at most one tick (1/cmd_rate) in the kernel
buffer, which is no later than the next usercmd packet could use it anyway, and a frame loop
polling faster than the tick rate costs one comparison on the frames in between. At a tick the
usercmd packet is built and sent first and the socket read after, so reading snapshots does not
delay the usercmd (motion-to-wire); the cmd then uses the delta_angles of the snapshots read up to
the previous tick, which ioq3 changes only on spawn, teleport and the pitch clamp. `sent_at` is the clock right
after the last datagrams went to the socket. `wait(now)` sleeps until there is work for `poll`,
for a loop that has nothing else to wake it.

For an event loop that drives many clients (the swarm, `driver.drive`) a Q3Client is a
`driver.Transport`: `filenos()` and `next_deadline()` say what to wait for, `on_readable(now)`
drains the socket into the core and sends its answers, `on_timer(now)` runs the core's due
timers and sends what they produced, `next_event()` hands out the core's events one by one, and
the `metrics` hook (when set) is called for every datagram sent or received and every send error:
("sent_datagrams", 1), ("sent_bytes", n), ("received_datagrams", 1), ("received_bytes", n),
("send_errors", 1) (a failed send, or an ICMP error queued on the socket for an earlier one). The
socket can be made here (bound to `bind`, or to `source` port 0) or handed in made (`sock=`);
either way the client connects it to the server and owns it from then on.

`run(until)` is that loop (`poll` + `wait`) for a thread that has nothing else to do, with the
in-game command ticks in C when the extension is built (`_q3native.Pump`): the core hands the
pump what a tick's datagram needs that only a server message changes (`pump_context`), the pump
sleeps to each tick, builds and sends the datagram as the core would (the same bytes; tests
compare them) with the GIL released, and reads the socket after each tick's send. A server
datagram that is the next on the netchan and starts with a snapshot is acknowledged from the next
tick on, as ioq3 does for every packet it takes in (the message acknowledge and the keys built on
it: all the pump needs from it); the datagrams go to the core with their arrival times once the
oldest has waited `batch` seconds, or at once when one is anything else (out-of-band, a fragment,
server commands, a gamestate), unacknowledged. The pump also comes back when a tick needs the
core (the silence probe, the timeout, fragments, a queued command) and at `until`; the core then
takes over the ticks' state (`absorb_ticks`). So in game the interpreter wakes at most 1/batch
times a second (about 7 at 0.1 s and 20 snapshots/s), not for every usercmd (60/s). While `run`
runs, other threads may call `set_input`, `send_command` and `interrupt`; call
`close` from the thread that runs it, or after it returned.
"""

from __future__ import annotations

import select
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..driver import MetricsHook
from ..icmp import icmp_error
from .client import LINKED, ClientConfig, Q3ClientCore, State, Status
from .errors import TransportError
from .events import Event
from .native import NATIVE

if TYPE_CHECKING:
    from ._q3native import Pump

MAX_DATAGRAM = 65535
MAX_READS_PER_POLL = 512  # a frame's worth of server traffic is a handful; this bounds a flood
MAX_TIMER_STEPS = 8  # catch-up ticks per poll after a stall (the core re-grids after that)
# Why Pump.run returned (the C's PUMP_* codes).
RUN_UNTIL, RUN_READABLE, RUN_PYTHON, RUN_INTERRUPTED, RUN_LOG_FULL = range(5)
_PUMP_PYTHON = RUN_PYTHON  # Pump.step: the tick (or the read after it) needs the core
DEFAULT_BATCH = 0.1  # run(): server datagrams reach the core within this (2 snapshots at 20/s)
# run(): in game, the pump decodes the snapshot messages in C (_q3snap.c) and hands them to the core
# at most this long after the first came (the core's status, entities and events lag by this: an
# application reading the status while run() runs in its thread sees the server's view this late).
DEFAULT_ABSORB = 0.5
# The pump sleeps on CLOCK_MONOTONIC: it can drive a client whose clock is that one.
_MONOTONIC_CLOCKS = (time.perf_counter, time.monotonic) if sys.platform.startswith("linux") else ()


class _SelectReady:
    """The one-socket subset of select.poll that Q3Client uses, over select.select: for systems
    without poll (Windows). A socket with an ICMP error pending reads as ready (recv raises it)."""

    def __init__(self) -> None:
        self._socks: list[socket.socket] = []

    def register(self, sock: socket.socket, events: int = 0) -> None:
        self._socks = [sock]

    def poll(self, timeout_ms: float | None = None) -> list[socket.socket]:
        timeout = None if timeout_ms is None else max(0.0, timeout_ms / 1000.0)
        readable, _, failed = select.select(self._socks, [], self._socks, timeout)
        return readable or failed


def _readiness(sock: socket.socket) -> select.poll | _SelectReady:
    """select.poll where the system has it (cheaper per call), else _SelectReady."""
    if hasattr(select, "poll"):
        ready = select.poll()
        ready.register(sock, select.POLLIN)
        return ready
    fallback = _SelectReady()
    fallback.register(sock)
    return fallback


class Q3Client:
    def __init__(
        self,
        server: tuple[str, int],
        config: ClientConfig | None = None,
        bind: tuple[str, int] = ("0.0.0.0", 0),
        clock: Callable[[], float] = time.perf_counter,
        *,
        source: str | None = None,
        sock: socket.socket | None = None,
        metrics: MetricsHook | None = None,
    ) -> None:
        """`source`: the local address to send from (port 0), instead of `bind`. `sock`: a UDP
        socket made (and bound, or not) by the caller, used instead of a new one. The socket is
        connected to the server and the client's from then on: `close` closes it, and so does a
        failure here."""
        host, port = server
        self.core = Q3ClientCore(config)
        local: tuple[str, int] | None = None  # a socket handed in is bound (or not) as it is
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            local = (source, 0) if source is not None else bind
        try:
            self.server = (socket.gethostbyname(host), int(port))
            sock.setblocking(False)
            if local is not None:
                sock.bind(local)
            sock.connect(self.server)
        except OSError:
            sock.close()
            raise
        self._sock = sock
        self._ready = _readiness(sock)
        self.socket_errors = 0  # failed sends and ICMP errors (the protocol resends)
        self.metrics = metrics
        self._clock = clock
        self.sent_at: float | None = None  # clock() right after the last datagrams were sent
        # set_input(angles, forward, right, up, buttons, weapon, head): Q3ClientCore.set_input itself,
        # bound here so a frame pays one call for it, not two (run() rebinds it to feed its pump too).
        self.set_input = self.core.set_input
        self._pump: Pump | None = None  # the native tick (run, step), made on first use
        # The pump's send_input while it holds the core's current context (step() made it so; receive()
        # keeps it so), else None: in game, a frame's one call per command tick (see send_input).
        self.send_input: Callable[..., Any] | None = None
        # step()/send_input in game: the snapshot messages decoded in C (_q3snap.c) and handed to the
        # core at most this long after the first came (None: every datagram goes to the core).
        self.step_absorb: float | None = None
        # step(): datagrams the pump read after its tick, for receive(), with their arrival (the
        # tick's time) and read lag (Pump.take)
        self._held: list[tuple[bytes, float, float]] = []
        self.native_ticks = 0  # usercmd ticks the pump ran (the rest ran in Python)
        self.native_snapshots = 0  # snapshot messages the pump decoded in C (the rest in Python)
        self._absorb: float | None = DEFAULT_ABSORB  # run()'s: how long C-decoded snapshots wait
        self._stop = False  # interrupt(): run() returns

    def fileno(self) -> int:
        """The UDP socket's descriptor, for an application's own select/poll loop (-1 once closed)."""
        return self._sock.fileno()

    # ------------------------------------------------------------------ driver.Transport

    def filenos(self) -> tuple[int, ...]:
        """The descriptors to wait on for reading: the socket's, none once closed."""
        fd = self._sock.fileno()
        return (fd,) if fd != -1 else ()

    def next_deadline(self) -> float | None:
        """When `on_timer` must run next (the core's timer, on this client's clock); None when
        nothing is scheduled or the client is closed."""
        return self.core.get_timer() if self._sock.fileno() != -1 else None

    def on_readable(self, now: float) -> None:
        """Drain the socket into the core (bounded, any state) and send its answers; the events
        wait for `next_event`."""
        if self._sock.fileno() == -1:
            return
        self.send_input = None
        self._feed_held(now)
        self._receive(now)
        self._flush(now)

    def on_timer(self, now: float) -> None:
        """Run the core's timers that are due (an in-game tick sends one usercmd packet, with the
        input last given to `set_input`; catch-up after a stall is bounded) and send what they
        produced. Harmless before the deadline."""
        if self._sock.fileno() == -1:
            return
        self.sync()
        timer = self.core.get_timer()
        if timer is None or now < timer:
            return
        self.send_input = None
        self._feed_held(now)
        self._send(self.core.run_due(now, MAX_TIMER_STEPS))

    def next_event(self) -> Event | None:
        """The core's oldest event not handed out yet, None when there is none."""
        return self.core.next_event()

    @property
    def local_address(self) -> tuple[str, int]:
        host, port = self._sock.getsockname()
        return str(host), int(port)

    @property
    def status(self) -> Status:
        self.sync()
        return self.core.status

    @property
    def state(self) -> State:
        return self.core.state

    def start(self, now: float) -> None:
        self.core.connect(now)
        self._flush(now)

    def send_command(self, text: str) -> None:
        self.send_input = None
        self.core.send_command(text)
        if self._pump is not None:
            self._pump.interrupt()  # a running run() hands the ticks back to the core, which sends it

    def interrupt(self) -> None:
        """Make a `run` in another thread return within one command tick (thread-safe)."""
        self._stop = True
        if self._pump is not None:
            self._pump.interrupt()

    def run(self, until: float, batch: float = DEFAULT_BATCH, absorb: float | None = DEFAULT_ABSORB) -> list[Event]:
        """Drive the client until `until` (its clock) and return the events: `poll` and `wait` in a
        loop, with the in-game ticks in C when the extension is built (module doc). In game, server
        datagrams reach the core at most `batch` seconds after they arrived (0: at the tick that
        read them); the ticks acknowledge each one from the tick after it arrived either way. The
        plain snapshot messages are decoded in C and reach the core at most `absorb` seconds after
        they arrived (None: they go to the core as datagrams, like the rest).
        Returns early after `interrupt()`."""
        if not 0.0 <= batch <= 1.0:
            raise ValueError(f"batch must be within 0..1 s, not {batch!r}")
        if absorb is not None and not 0.0 <= absorb <= 10.0:
            raise ValueError(f"absorb must be within 0..10 s or None, not {absorb!r}")
        self._absorb = absorb
        events: list[Event] = []
        core = self.core
        clock = self._clock
        self.sync()
        self._feed_held(clock())
        self.send_input = None  # run() configures the pump itself
        pump = self._pump
        if pump is None and NATIVE is not None and clock in _MONOTONIC_CLOCKS and self._sock.fileno() != -1:
            pump = self._pump = NATIVE.Pump(self._sock.fileno())
            pump.set_input(*core.wire_input())
            self.set_input = self._set_input_pumped
        while not self._stop and self._sock.fileno() != -1:
            now = clock()
            if now >= until:
                break
            context = core.pump_context() if pump is not None else None
            if context is None or pump is None:  # not in game, or the next tick is the core's: Python
                events += self._poll(now, read_after=True)
                self.wait(clock(), until)
                continue
            pump.configure(context)
            if absorb is not None:
                core.attach_snapshots(pump, absorb)
            why = pump.run(until, self._pump_datagrams, batch)
            self._pump_datagrams(pump.take())  # what the pump did since its last hand-over
            pump.snap_enable(False, 0, 0, 0.0)  # step() hands every datagram to the core
            if why == RUN_PYTHON:  # this tick is the core's (probe, timeout, fragments, a read error)
                events += self._poll(clock(), read_after=True)
            if core.has_events:
                events += core.take_events()
        if core.has_events:
            events += core.take_events()
        self._stop = False  # consumed here, not on entry: an interrupt() just before run() counts
        return events

    def _pump_datagrams(self, taken: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The pump's hand-over (Pump.take): the core takes over the ticks' state and reads the
        server datagrams at their arrival times, answers go out, and the next context comes back
        (None: the next tick is the core's own)."""
        core = self.core
        datagrams, arrivals, lags = self._take_over(taken)
        pump = self._pump
        if pump is not None:
            snaps = pump.snap_take()
            if snaps:  # decoded in C (_q3snap.c): before the datagrams that followed them
                core.absorb_snapshots(snaps)
                self.native_snapshots += len(snaps)
                metrics = self.metrics
                if metrics is not None:
                    metrics("received_datagrams", len(snaps))
                    metrics("received_bytes", sum(s[2] for s in snaps))
        if datagrams:
            receive = core.receive_datagram
            try:
                for data, at, lag in zip(datagrams, arrivals, lags):
                    core.read_lag = lag  # the round trip's end (client.read_lag); timers keep `at`
                    receive(data, at)
            finally:  # (a datagram the core raised on: no later read inherits the lag)
                core.read_lag = 0.0
            if core.has_output:
                self._send(core.datagrams_to_send(self._clock()))
        context = core.pump_context()
        if context is not None and pump is not None and self._absorb is not None:
            core.attach_snapshots(pump, self._absorb)
        return context

    def _set_input_pumped(self, *args: Any, **kwargs: Any) -> None:
        """set_input once run() made its pump (Q3ClientCore.set_input's arguments): the core's input
        and the pump's (thread-safe)."""
        core = self.core
        core.set_input(*args, **kwargs)  # refuses non-finite angles
        pump = self._pump
        assert pump is not None  # run() or step() made it before binding this
        pump.set_input(*core.wire_input())

    def poll(self, now: float) -> list[Event]:
        """Send what is due, then (in game: at a tick only) read the socket; the events so far."""
        return self._poll(now, read_after=True)

    def send_due(self, now: float) -> list[Event]:
        """As `poll`, but in game the socket is not read after the tick's send: the caller reads it
        with `receive` once its other latency-bound work is done (before the next tick)."""
        return self._poll(now, read_after=False)

    def receive(self, now: float) -> list[Event]:
        """Read the socket now (bounded), send any answer, return the events. After `step` or
        `send_input`: the datagrams their ticks read first, as read now (with `step_absorb`, in game,
        only those: the pump reads at its ticks). In game with the pump, it then takes the core's
        new context (`send_input` armed again), so the next tick's frame does not pay for that."""
        if self._sock.fileno() == -1:
            return []
        if self._feed_held(now):
            self.send_input = None  # the core moved on: the pump takes its context again
        # With step_absorb, in game only the pump reads (at its ticks, snapshots decoded in C). Not
        # while PRIMED: a server that resends its gamestate there must be read (and counted) here.
        if (
            self.step_absorb is None
            or self._pump is None
            or self.core.state is not State.ACTIVE
            or self._stepper() is None
        ):
            if self._receive(now):
                self.send_input = None
        self._flush(now)
        if self.send_input is None and self._pump is not None:
            self._stepper()
        return self.core.take_events()

    def sync(self) -> None:
        """The core takes over what `send_input`'s ticks left in the pump (its counters, timer, last
        cmd, the input given): for a reader of the core between two `receive` calls. The other
        calls into this client do what they need of it first."""
        self._take_ticks()
        self._take_input()

    def _take_ticks(self) -> None:
        """sync's first half: the ticks' state and the snapshots decoded in C (step_absorb) to the
        core, the datagrams read to `_held` (they came after those snapshots)."""
        pump = self._pump
        if pump is not None and pump.pending:
            datagrams, arrivals, lags = self._take_over(pump.take())
            snaps = pump.snap_take()
            if snaps:
                self.core.absorb_snapshots(snaps)
                self.native_snapshots += len(snaps)
                self.send_input = None  # the core moved on: the pump takes its context again
                metrics = self.metrics
                if metrics is not None:
                    metrics("received_datagrams", len(snaps))
                    metrics("received_bytes", sum(s[2] for s in snaps))
            if datagrams:
                self._held += zip(datagrams, arrivals, lags)

    def _take_input(self) -> None:
        """sync's second half, for a tick in Python: the core's input becomes send_input's last (the
        pump holds it already: the core's input only changes through set_input, which gives both)."""
        pump = self._pump
        if pump is not None:
            given = pump.take_input()
            if given is not None:
                self.core.set_input(*given)

    def step(self, now: float) -> list[Event]:
        """`send_due` for a frame loop, with an in-game tick in C when the extension is built and
        the clock is the pump's: the pump, stepped on the caller's thread, builds the tick's datagram
        (the same bytes as the core's) and sends it without the interpreter, then reads the socket
        into a queue that `receive` hands to the core as read at its call (so snapshots are parsed
        after the caller's latency-bound work, and the core sees what `send_due` then `receive`
        would show it: the same bytes go out, tests/q3/test_pump.py). The core takes the tick's
        state over at once (timer, counters, `sent_at`). Out of game, or when the tick is the
        core's (the silence probe, the timeout, fragments, a queued command): `send_due`."""
        pump = self._pump
        if pump is not None and pump.pending:  # send_input's ticks and reads first (its log could be full)
            self._take_ticks()
        pump = self._stepper()
        if pump is None:
            return self.send_due(now)
        why = pump.step(now)
        datagrams, arrivals, lags = self._take_over(pump.take())
        if datagrams:
            self._held += zip(datagrams, arrivals, lags)
            if self.step_absorb is not None:  # the core reads them before the pump consumes anything
                pump.snap_enable(False, 0, 0, 0.0)
                self.send_input = None
        if why == _PUMP_PYTHON:  # this tick (or the read after it) is the core's
            return self.send_due(now)
        return self.core.take_events()

    def _take_over(self, taken: tuple[Any, ...]) -> tuple[Sequence[bytes], Sequence[float], Sequence[float]]:
        """The core takes over the state the pump's ticks left (Pump.take), the counts go to the
        metrics hook; the server datagrams the pump read, their arrival times (their ticks') and read
        lags, for the caller."""
        nows, times, cmds, sequence, last_cmd_time, timer, nbytes, errors, sent_at, datagrams, arrivals, lags = taken
        metrics = self.metrics
        if nows:
            self.core.absorb_ticks(nows, times, cmds, sequence, last_cmd_time, timer, nbytes)
            self.native_ticks += len(nows)
            self.sent_at = sent_at
            if metrics is not None:
                metrics("sent_datagrams", len(nows))
                metrics("sent_bytes", nbytes)
        if errors:
            self.socket_errors += errors
            if metrics is not None:
                metrics("send_errors", errors)
        if datagrams and metrics is not None:
            for data in datagrams:
                metrics("received_datagrams", 1)
                metrics("received_bytes", len(data))
        return datagrams, arrivals, lags

    def _stepper(self) -> Pump | None:
        """The pump for `step`, configured with the core's context; None when the tick must run in
        Python (no extension, another clock, out of game, commands waiting)."""
        pump = self._pump
        if self.send_input is not None:
            return pump
        if NATIVE is None or self._clock not in _MONOTONIC_CLOCKS or self._sock.fileno() == -1:
            return None
        core = self.core
        context = core.pump_context()
        if context is None:
            return None
        if pump is None:
            pump = self._pump = NATIVE.Pump(self._sock.fileno())
            self.set_input = self._set_input_pumped
            pump.set_input(*core.wire_input())  # from now on set_input gives both (send_input: the pump's)
        pump.configure(context)
        pump.roll_clamp = core.roll_clamped
        if self.step_absorb is not None and not self._held:
            core.attach_snapshots(pump, self.step_absorb)
        self.send_input = pump.send_input
        return pump

    def _feed_held(self, now: float) -> int:
        """The datagrams `step` and `send_input` read go to the core, as read `now` (as `send_due`
        then `receive` would have read them: the same timers and bytes); how many. The core first
        takes over the pump's ticks (`sync`)."""
        self._take_ticks()
        held = self._held
        if not held:
            return 0
        core = self.core
        receive = core.receive_datagram
        try:
            for data, at, lag in held:
                # read after `now` (a step's read at this same `now`): the round trip ends at the read
                core.read_lag = max(at + lag - now, 0.0)
                receive(data, now)
        finally:  # (a datagram the core raised on: no later read inherits the lag)
            core.read_lag = 0.0
        n = len(held)
        held.clear()
        return n

    def _poll(self, now: float, read_after: bool) -> list[Event]:
        if self._sock.fileno() == -1:
            return []  # closed
        self.send_input = None  # the core may tick or read: the pump's context would be stale
        self._take_input()
        self._feed_held(now)
        core = self.core
        # The core's fields read directly (this is its own driver): two calls fewer per frame.
        if core.state in LINKED:
            timer = core.get_timer()
            if timer is not None and now < timer:
                return core.take_events()  # between ticks: snapshots wait for the tick (module doc)
            # The tick's usercmd goes out before the socket is read (module doc).
            began = self._clock()
            self._send(core.run_due(now, MAX_TIMER_STEPS))
            if not read_after:
                return core.take_events()
            # Read after the send at the same `now`: a snapshot that ran this tick's usercmd has a
            # round trip of the time since (core.read_lag), not 0. Timers keep `now`.
            core.read_lag = self._clock() - began
            try:
                self._receive(now)
            finally:
                core.read_lag = 0.0
            out = core.datagrams_to_send(now)
        else:
            self._receive(now)
            out = core.run_due(now, MAX_TIMER_STEPS)
        if out:
            self._send(out)
        return core.take_events()

    def _receive(self, now: float) -> int:
        """Drain the socket into the core (bounded); nonzero when anything was read."""
        core = self.core
        ready = self._ready.poll
        recv = self._sock.recv
        n = 0
        for n in range(MAX_READS_PER_POLL):
            if not ready(0):
                break
            try:
                data = recv(MAX_DATAGRAM)
            except BlockingIOError:
                break
            except OSError as exc:  # an ICMP error queued on the connected socket (POLLERR)
                if icmp_error(exc):  # Windows: port unreachable is a ConnectionResetError
                    self.socket_errors += 1
                    if self.metrics is not None:
                        self.metrics("send_errors", 1)
                    continue
                raise TransportError(exc.errno, f"the Quake 3 client's socket failed: {exc}") from exc
            if self.metrics is not None:
                self.metrics("received_datagrams", 1)
                self.metrics("received_bytes", len(data))
            core.receive_datagram(data, now)
        return n

    def wait(self, now: float, until: float | None = None) -> None:
        """Sleep until `poll` has work: the core's timer is due or, before the link is up (or while
        it backs off), a datagram arrives; never past `until` (same clock as `now`). In game this
        wakes once per command tick (60/s at cmd_rate 60), not for every snapshot."""
        if self._sock.fileno() == -1:
            return
        core = self.core
        timer = core.get_timer()
        deadline = timer if until is None or (timer is not None and timer < until) else until
        if deadline is None:
            return  # neither a timer nor a limit: nothing to wait for
        timeout = deadline - now
        if timeout <= 0:
            return
        if core.state in LINKED and deadline == timer:
            time.sleep(timeout)
        else:
            self._ready.poll(timeout * 1000.0)  # milliseconds, rounded up

    def close(self, now: float, reason: str = "closed by the application") -> list[Event]:
        """Send `disconnect`, close the socket; returns the final events (`reason`: the one the
        core's Disconnected event and status give)."""
        if self._sock.fileno() == -1:
            return []
        self.send_input = None
        self.sync()
        self._feed_held(now)
        self.core.close(now, reason)
        self._flush(now)
        self._sock.close()
        return self.core.take_events()

    def _flush(self, now: float) -> None:
        self._send(self.core.datagrams_to_send(now))

    def _send(self, dgrams: list[bytes]) -> None:
        if not dgrams:
            return
        send, metrics = self._sock.send, self.metrics
        for dgram in dgrams:
            try:
                send(dgram)
            except OSError:
                self.socket_errors += 1  # a full buffer or a vanished route: the protocol resends
                if metrics is not None:
                    metrics("send_errors", 1)
                continue
            if metrics is not None:
                metrics("sent_datagrams", 1)
                metrics("sent_bytes", len(dgram))
        self.sent_at = self._clock()

    def __enter__(self) -> "Q3Client":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sock.fileno() != -1:
            self._sock.close()


if TYPE_CHECKING:
    from ..driver import Core, Transport

    def _conforms(core: Q3ClientCore, client: Q3Client) -> tuple[Core[bytes, bytes], Transport]:
        """Checked by mypy, never run: the core is a driver.Core, the client a driver.Transport."""
        return core, client
