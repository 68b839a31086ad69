"""pyzmq driver for NetSyncClientCore, a netcode/driver.py `Transport`: DEALER → the server's
control (dealer) port, from protocol 7 on a second DEALER → its transform port (control + 2 by
default), SUB ← its PUB port.

Any event loop drives it: wait for `filenos()` to be readable until `next_deadline()`, then
call `on_readable(now)` / `on_timer(now)`, and read the core's events with `next_event()`.
`send_pose(now, frame)` offers a frame's pose and sends what is due at once; `poll(now)` is the
app's once-a-frame convenience (read, timers, send, the events as a list). The descriptors are
ZeroMQ's ZMQ_FD: edge-triggered, so `on_readable` drains each socket until ZMQ_EVENTS has no
POLLIN (at most MAX_MESSAGES_PER_POLL a turn: more left asks for `on_timer` at once), and
every call that sends reads afterwards (a send can consume the edge of a message that came
meanwhile). A `metrics(name, amount)` hook counts "sent_datagrams", "sent_bytes",
"received_datagrams", "received_bytes", "send_errors" and "room_broadcasts" (per message).

Non-blocking throughout. Every queue is bounded (HWMs; LINGER 0, so close never waits) and
IMMEDIATE is on, so while the server is away a pose is dropped at once (counted) instead of
piling up for a peer that may never come back; ZeroMQ reconnects the sockets by itself, and the
next pose registers us with the restarted server. Many clients can share one ZeroMQ context
(`context=`: a swarm's thousands of sockets, one I/O thread); a shared one is not closed here.
"""

from __future__ import annotations

import math
import os
import select
import struct
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import zmq

from ..driver import MetricsHook
from .client import (
    LANE_CONTROL,
    LANE_ROOM,
    LANE_TRANSFORM,
    Counters,
    Incoming,
    NetSyncClientCore,
    Outgoing,
    State,
)
from .codec import NATIVE
from .errors import NoAnswerError as NoAnswerError, ServerProtocolError as ServerProtocolError
from .events import Event, Joined, ProtocolMismatch
from .model import PoseFrame

# ZeroMQ's socket-monitor message: frame 1 = event id (u16) + value (u32), native byte order; frame
# 2 = the endpoint. Read here rather than with zmq.utils.monitor, whose import pulls in asyncio
# (start-up: a Q3-only `headcast run` must not pay for it, nor a run its first status line).
_MONITOR_EVENT = struct.Struct("=HI")

# Room poses are latest-wins; a few queued broadcasts are plenty at 10 Hz polled every frame.
SUB_RCVHWM = 8
DEALER_HWM = 10  # the official client's value
MAX_MESSAGES_PER_POLL = 256  # per socket: one turn never loops unboundedly on a flooding peer
# Plain ints: pyzmq's constants are enums, and `int & IntFlag` builds a new enum member each time
# (a third of a swarm player's read cost).
_SEND_MORE = int(zmq.SNDMORE | zmq.NOBLOCK)
_NOBLOCK = int(zmq.NOBLOCK)
_EVENTS = int(zmq.EVENTS)
# pyzmq's own send: its Python-level wrapper (zmq.Socket.send) adds only the DRAFT routing_id/group
# handling, and costs a Python call per part on the pose's way to the wire
_send = zmq.backend.Socket.send
_POLLIN = int(zmq.POLLIN)


def _native_reads() -> Callable[[int, int], tuple[list[list[bytes]], int]] | None:
    """The C extension's read of a socket through libzmq's own API (_nscodec.c `zmq_drain`: its
    messages until EAGAIN, no Python call per frame), when it is built and finds the libzmq pyzmq
    loaded, of the version pyzmq reports; else None and `_drain` reads through pyzmq (the same
    messages, the same edge handling)."""
    if NATIVE is None or not hasattr(NATIVE, "zmq_bind"):
        return None
    try:
        version = NATIVE.zmq_bind()
    except Exception:
        return None
    if version is None or tuple(version) != tuple(zmq.zmq_version_info()):
        return None
    drain: Callable[[int, int], tuple[list[list[bytes]], int]] = NATIVE.zmq_drain
    return drain


NATIVE_READS = _native_reads()
# The C extension's send of a pose's two parts in one call (_nscodec.c `zmq_send2`: libzmq's
# zmq_send, the same flags as `_send` below), with the reads above; None: through pyzmq.
NATIVE_SEND: Callable[[int, bytes, bytes], int] | None = (
    getattr(NATIVE, "zmq_send2", None) if NATIVE_READS is not None else None
)
_EAGAIN = int(zmq.EAGAIN)
# The C extension's SUB reader thread (sub_thread=True), with the reads above
_NATIVE_SUB: Any = NATIVE if NATIVE_READS is not None and hasattr(NATIVE, "sub_reader") else None


def _threads() -> frozenset[str]:
    """This process's thread IDs (Linux), or empty."""
    try:
        return frozenset(os.listdir("/proc/self/task"))
    except OSError:
        return frozenset()


def _batch_io_threads(before: frozenset[str]) -> bool:
    """Put the ZeroMQ I/O threads started since `before` (named "ZMQbg/IO/…" by libzmq) under
    SCHED_BATCH; True once one was found (or nothing can be done here). A send wakes the I/O
    thread (an eventfd write); woken as an ordinary thread it preempts the sender on a busy core,
    and the frame thread's send took ~55–100 µs median, ~400 µs p90 (2 cores, loaded) instead of
    ~35/~45. A batch thread does not preempt on wake-up; it runs at the next switch or on the
    other core. Done here rather than with libzmq's ZMQ_THREAD_SCHED_POLICY, which aborts the
    process when the kernel refuses; a refusal here leaves the thread as it was."""
    batch = getattr(os, "SCHED_BATCH", None)
    if batch is None or not before:
        return True
    found = False
    for tid in _threads() - before:
        try:
            with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
                if not f.read().startswith("ZMQbg/IO"):
                    continue
            found = True
            os.sched_setscheduler(int(tid), batch, os.sched_param(0))
        except OSError:  # gone, or refused: as it was
            pass
    return found


@dataclass(frozen=True)
class TcpState:
    """The control socket's TCP connection as ZeroMQ reports it (`NetSyncClient.tcp_state`)."""

    connected: bool  # a TCP connection to the control port is up now
    ever_connected: bool  # ... was up at some point
    retries: int  # failed connects since the last success (or the start)
    retry_ms: int | None  # ZeroMQ's wait before its next connect attempt, as last announced


class NetSyncClient:
    """One NetSync participant on `tcp://host:dealer_port` (control) / `tcp://host:pub_port`,
    and from protocol 7 on `tcp://host:transform_port` (default dealer_port + 2).

    `protocol=None` detects the server's protocol (client.py); an int speaks that one. `core`
    drives a core made by the caller instead of one made from the arguments (room, deviceId,
    protocol, send rate, stealth and silence timeout are then the core's). `sub_thread=True` (for
    `poll()` callers: the app's link) has a thread of the C extension read the SUB; `filenos()`
    is then the control socket's alone, so an event loop on the driver API leaves it False.
    """

    metrics: MetricsHook | None

    def __init__(
        self,
        host: str,
        dealer_port: int,
        pub_port: int,
        room_id: str = "",
        device_id: str | None = None,
        *,
        transform_port: int | None = None,
        protocol: int | None = 8,
        send_rate: float = 10.0,
        stealth: bool = False,
        silence_timeout: float = 3.0,
        watch_tcp: bool = False,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        core: NetSyncClientCore | None = None,
        metrics: MetricsHook | None = None,
        now: float | None = None,
        drain_after_send: bool = True,
        sub_thread: bool = False,
    ) -> None:
        self.core = core or NetSyncClientCore(
            room_id,
            device_id or str(uuid.uuid4()),
            protocol=protocol,
            send_rate=send_rate,
            stealth=stealth,
            silence_timeout=silence_timeout,
        )
        self.metrics = metrics
        self.host = host
        self.transform_port = dealer_port + 2 if transform_port is None else transform_port
        self._control_endpoint = f"tcp://{host}:{dealer_port}"
        self._own_context = context is None
        # Threads before our context's I/O thread (started with the first socket): poll() puts it
        # under SCHED_BATCH once libzmq has named it (_batch_io_threads). Not a shared context's.
        self._io_before: frozenset[str] | None = _threads() if context is None else None
        self._io_tries = 0
        self._ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1) if context is None else context
        self._transform: zmq.Socket[bytes] | None = None
        self._monitor: zmq.Socket[bytes] | None = None
        self._tcp = TcpState(False, False, 0, None)
        self._more = False  # a socket still had messages when a turn's bound was reached
        # False (the app's once-a-frame `poll`): a send does not read the control socket at once; the
        # next poll() does, whatever its descriptor says (the send may have taken its edge), so the
        # pose's send is only its two zmq_send calls (motion-to-wire).
        self._drain_after_send = drain_after_send
        self._recheck = False  # the control socket was sent on since it was last drained
        # poll(): when `on_timer` is next needed (`next_deadline`), kept between calls: only what the core
        # is handed (a message, a batch sent on a lane, a reconnect) moves it, and each resets it to
        # -inf (ask again). A poll before it runs no timer (no hello, probe or silence can be due).
        self._due_at = -math.inf
        self._ready: select.poll | None = None  # poll(): the descriptors' readiness (where it exists)
        self._reader: object | None = None  # sub_thread: the C extension's thread reading the SUB
        self.closed = False
        self._dealer = self._ctx.socket(zmq.DEALER)
        try:
            self._sub = self._ctx.socket(zmq.SUB)
        except BaseException:
            self._dealer.close(linger=0)
            raise
        try:
            for s in (self._dealer, self._sub):
                self._common_options(s)
            self._dealer.setsockopt(zmq.SNDHWM, DEALER_HWM)
            self._dealer.setsockopt(zmq.RCVHWM, DEALER_HWM)
            self._dealer.setsockopt(zmq.IMMEDIATE, 1)
            self._sub.setsockopt(zmq.RCVHWM, SUB_RCVHWM)
            self._sub.setsockopt(zmq.SUBSCRIBE, self.core.room_topic)
            if watch_tcp:  # before connect(): a connection made at once is seen too
                self._monitor = self._dealer.get_monitor_socket(
                    zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CONNECT_RETRIED
                )
                self._monitor.setsockopt(zmq.LINGER, 0)
            self._dealer.connect(self._control_endpoint)
            self._sub.connect(f"tcp://{host}:{pub_port}")
            self._room = self.core.room_topic
            self._poll_items = [(self._dealer, _POLLIN), (self._sub, _POLLIN)]
            self._lanes: dict[str, zmq.Socket[bytes]] = {LANE_CONTROL: self._dealer, LANE_TRANSFORM: self._dealer}
            self._lanes_for: int | None = None  # the protocol the pose socket was chosen for
            # The libzmq sockets' addresses for the C reads (NATIVE_READS) and sends (NATIVE_SEND).
            self._handles = {self._dealer: self._dealer.underlying, self._sub: self._sub.underlying}
            self._zsend = NATIVE_SEND  # the pose's sends (send_pose); None: through pyzmq
            if self.core.protocol is not None:
                self._choose_lanes()
            self._fds: tuple[int, ...] = (int(self._dealer.getsockopt(zmq.FD)), int(self._sub.getsockopt(zmq.FD)))
            self._zdrain = NATIVE_READS
            # sub_thread (the app's once-a-frame poll()): a thread of the C extension owns the SUB from
            # here on, waits in zmq_poll and keeps what comes in a ring; poll() takes it without a
            # system call, so libzmq's reads (~8 system calls a broadcast) are off the frame.
            if sub_thread and self._zdrain is not None and _NATIVE_SUB is not None:
                self._reader = _NATIVE_SUB.sub_reader(self._sub, self._handles[self._sub])
                if self._reader is not None:
                    self._fds = self._fds[:1]  # the SUB's descriptor is the thread's
                    # Stopped by close(); also if this client is dropped unclosed: a finalizer runs
                    # before the context's own (which closes every socket, the thread's too).
                    self._stop_reader = weakref.finalize(self, _NATIVE_SUB.reader_stop, self._reader)
        except BaseException:
            self.close()
            raise
        if now is not None:  # else at the first call, on the caller's clock
            self.core.connect(now)

    @staticmethod
    def _common_options(s: zmq.Socket[bytes]) -> None:
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)

    def _choose_lanes(self) -> None:
        """Poses on the control socket (protocols 3–6) or a transform socket of their own (7+),
        opened once the protocol is known."""
        self._lanes_for = self.core.protocol
        if not self.core.uses_transform_lane:
            self._lanes[LANE_TRANSFORM] = self._dealer
            return
        if self._transform is None:
            t = self._ctx.socket(zmq.DEALER)
            self._common_options(t)
            t.setsockopt(zmq.SNDHWM, DEALER_HWM)
            t.setsockopt(zmq.IMMEDIATE, 1)
            t.connect(f"tcp://{self.host}:{self.transform_port}")
            self._transform = t
            self._handles[t] = t.underlying
        self._lanes[LANE_TRANSFORM] = self._transform

    # ------------------------------------------------------------ the driver API

    def filenos(self) -> tuple[int, ...]:
        """The control DEALER's and the SUB's ZMQ_FD (edge-triggered; the transform socket receives
        nothing). Empty once closed."""
        return () if self.closed else self._fds

    def next_deadline(self) -> float | None:
        """When `on_timer` is next needed: the core's timer; at once when a turn left messages unread,
        or before the core started (it starts at the first call, on the caller's clock)."""
        if self.closed:
            return None
        if self._more or self._recheck:
            return 0.0
        timer = self.core.get_timer()
        return 0.0 if timer is None and self.core.state is State.IDLE else timer

    def on_readable(self, now: float) -> None:
        """Drain both sockets (bounded) into the core."""
        if self.closed:
            return
        # One zmq_poll over both sockets (their ZMQ_EVENTS, as libzmq reads them) says which have
        # a message: half the cost of asking each socket, and most calls find none.
        if self._reader is not None:
            self._more = self._drain(self._dealer, LANE_CONTROL, now)
            self._take(now)
            return
        if self._zdrain is not None:  # no zmq_poll: the C read's EAGAIN is as cheap as asking
            more = self._drain(self._dealer, LANE_CONTROL, now)
            self._more = self._drain(self._sub, LANE_ROOM, now) or more
            return
        more = False
        for sock, _ in zmq.zmq_poll(self._poll_items, 0):
            if sock is self._sub:
                more = self._drain(self._sub, LANE_ROOM, now) or more
            else:
                more = self._drain(self._dealer, LANE_CONTROL, now) or more
        self._more = more

    def _drain(self, sock: zmq.Socket[bytes], lane: str, now: float) -> bool:
        """Read `sock` until ZMQ_EVENTS shows no POLLIN (its FD's edge is re-armed only then);
        True when MAX_MESSAGES_PER_POLL were read and more may wait."""
        deliver = self._deliver
        zdrain = self._zdrain
        if zdrain is not None:
            messages, status = zdrain(self._handles[sock], MAX_MESSAGES_PER_POLL)
            for frames in messages:
                deliver(lane, frames, now)
            if status > 1:  # a failed read (pyzmq's recv would have raised it)
                raise zmq.ZMQError(status)
            return status == 1
        for _ in range(MAX_MESSAGES_PER_POLL):
            if not sock.getsockopt(_EVENTS) & _POLLIN:  # type: ignore[operator]
                return False
            # recv_multipart without its Python-level loop and its RCVMORE reads (each getsockopt looks
            # its option up in a Python enum): a frame says whether more follow
            part = sock.recv(_NOBLOCK, copy=False)
            frames = [part.bytes]
            while part.more:
                part = sock.recv(_NOBLOCK, copy=False)
                frames.append(part.bytes)
            deliver(lane, frames, now)
        return True

    def _deliver(self, lane: str, frames: list[bytes], now: float) -> None:
        """One message read on `lane` (its frames): counted (`metrics`), then into the core."""
        self._due_at = -math.inf  # the core's timers may have moved (poll() asks again)
        metrics = self.metrics
        if metrics is not None:
            metrics("received_datagrams", 1)
            metrics("received_bytes", sum(map(len, frames)))
            if lane is LANE_ROOM:
                metrics("room_broadcasts", 1)
        self.core.receive_datagram(Incoming(lane, frames), now)

    def _take(self, now: float) -> None:
        """The messages the SUB's thread read since the last call (sub_thread), into the core."""
        got = _NATIVE_SUB.reader_take(self._reader)
        if got is not None:  # (None: the common call)
            self._took(got, now)

    def _took(self, got: tuple[list[list[bytes]], int, int], now: float) -> None:
        """What `reader_take` gave (the messages, how many the ring lost, the thread's error), into the core."""
        messages, lost, err = got
        if lost:  # more came between two polls than the ring holds: the oldest went
            self.core.counters.drops["broadcast: not read in time"] += lost
        if self.metrics is None:  # all in one call to the core (no per-message count to make)
            if self.core.receive_broadcasts(messages, now):
                self._due_at = -math.inf  # the core's timers may have moved (poll() asks again)
        else:
            deliver = self._deliver
            for frames in messages:
                deliver(LANE_ROOM, frames, now)
        if err:  # the thread's read failed (and it stopped): as pyzmq's recv would have raised it
            raise zmq.ZMQError(err)

    def on_timer(self, now: float) -> None:
        """Run the core's timers and send what is due (then read what came meanwhile); the rest
        of a read that stopped at its bound."""
        if self.closed:
            return
        if self._more or self._recheck:
            self._recheck = False
            self.on_readable(now)
        self.core.handle_timer(now)
        self._flush(now)

    def next_event(self) -> Event | None:
        return self.core.next_event()

    # ------------------------------------------------------------ sending

    def send_pose(self, now: float, frame: PoseFrame) -> bool:
        """Offer this frame's pose and send what is due; True when the pose actually went out."""
        if self.closed:
            return False
        core = self.core
        if self.metrics is None and self._lanes_for == core.protocol:
            # The common frame: only the pose is due (core.pose_now), sent as _flush sends it.
            msg = core.pose_now(now, frame)
            if msg is None:
                return False  # the policy's skip (rate cap, unchanged), counted by the core
            if msg is not False:
                lane = core.pose_lane
                sock, room = self._lanes[lane], core.room_topic
                posed = True
                zsend = self._zsend
                # both parts in one C call, on a socket still open: our own context's close only with
                # us (`closed`, above); a shared one's may be destroyed by its owner (asked: a libzmq call)
                if zsend is not None and (self._own_context or not sock.closed):
                    err = zsend(self._handles[sock], room, msg)
                    if err == _EAGAIN:
                        core.send_failed(Outgoing(lane, (room, msg), "pose"))
                        posed = False
                    elif err:  # (what pyzmq's send would have raised)
                        raise zmq.ZMQError(abs(err))
                else:
                    try:
                        _send(sock, room, _SEND_MORE)
                    except zmq.Again:
                        core.send_failed(Outgoing(lane, (room, msg), "pose"))
                        posed = False
                    else:
                        _send(sock, msg, _NOBLOCK)
                if sock is self._dealer:  # (before protocol 7 poses share the control socket)
                    if not self._drain_after_send:
                        self._recheck = True
                    elif self._drain(sock, LANE_CONTROL, now):
                        self._more = True
                return posed
        core.set_pose(frame)
        return self._flush(now)

    def _flush(self, now: float) -> bool:
        core = self.core
        self._due_at = -math.inf  # the core's timers may move (poll() asks again)
        out = core.datagrams_to_send(now)
        if not out:
            return False
        if self._lanes_for != core.protocol:
            self._choose_lanes()  # detected: from protocol 7 on, open the transform lane now
        lanes, metrics, dealer = self._lanes, self.metrics, self._dealer
        posed = control_failed = on_dealer = False
        for o in out:
            kind = o.kind
            if kind != "pose" and control_failed:
                continue  # the control socket refused this batch: the core retries it whole
            room, payload = o.frames
            sock = lanes[o.lane]
            on_dealer = on_dealer or sock is dealer
            # send_multipart's two parts, without its Python-level loop and checks. A multipart
            # message is queued whole or not at all: only the first part can meet a full queue or,
            # with IMMEDIATE, no connection.
            try:
                _send(sock, room, _SEND_MORE)
            except zmq.Again:
                core.send_failed(o)
                control_failed = kind != "pose"
                if metrics is not None:
                    metrics("send_errors", 1)
                continue
            _send(sock, payload, _NOBLOCK)
            if kind == "pose":
                posed = True
            if metrics is not None:
                metrics("sent_datagrams", 1)
                metrics("sent_bytes", len(room) + len(payload))
        if on_dealer:
            # A call into a socket processes its pending commands and can consume its FD's edge:
            # read what came meanwhile (now, or at the next poll()). Only the control DEALER both
            # sends and receives (the SUB never sends, the transform DEALER never receives).
            if not self._drain_after_send:
                self._recheck = True
            elif self._drain(dealer, LANE_CONTROL, now):
                self._more = True
        return posed

    def reconnect_control(self, now: float) -> None:
        """A new control connection (ZeroMQ gives it a new identity at the server's ROUTER, which
        the server treats as a reconnect and answers with our mapping), with a hello at once: what
        a client whose mapping never came does to ask again."""
        if self.closed:
            return
        try:
            self._dealer.disconnect(self._control_endpoint)
        except zmq.ZMQError:  # not connected yet: connecting again is what we want
            pass
        self._dealer.connect(self._control_endpoint)
        self._recheck = True  # (calls into the socket: its edge may be taken)
        self.core.hello_now()
        self._due_at = -math.inf

    def poll(self, now: float) -> list[Event]:
        """Read both sockets, run the timers, send what is due; the events that came of it. The
        sockets are asked (zmq_poll, their ZMQ_EVENTS) only when a descriptor is readable, a send
        may have taken the control socket's edge, or the last read stopped at its bound: each
        descriptor's edge is re-armed by the drain that read its socket empty."""
        if self.closed:
            return []
        if self._io_before is not None:  # once, off the frame (a few polls at most)
            self._io_tries += 1
            if _batch_io_threads(self._io_before) or self._io_tries >= 50:
                self._io_before = None
        ready = self._ready
        if ready is None and hasattr(select, "poll"):
            ready = self._ready = select.poll()
            for fd in self._fds:
                ready.register(fd, select.POLLIN)
        if self._reader is not None:  # the control socket when its edge says so, then the ring
            if self._recheck or self._more or ready is None or ready.poll(0):
                self._recheck = False
                self._more = self._drain(self._dealer, LANE_CONTROL, now)
            got = _NATIVE_SUB.reader_take(self._reader)  # (_take, without a call of its own)
            if got is not None:
                if got[1] or got[2] or self.metrics is not None:  # lost, failed or counted: _took's way
                    self._took(got, now)
                elif self.core.receive_broadcasts(got[0], now):  # (else its timers moved later, if at all)
                    self._due_at = -math.inf
        elif self._recheck or self._more or ready is None:
            self._recheck = False
            self.on_readable(now)
        elif ready_fds := ready.poll(0):
            if self._zdrain is None or len(ready_fds) > 1:
                self.on_readable(now)
            elif ready_fds[0][0] == self._fds[1]:  # only the SUB's edge: the DEALER has nothing new
                self._more = self._drain(self._sub, LANE_ROOM, now)
            else:
                self._more = self._drain(self._dealer, LANE_CONTROL, now)
        # The timers only when one is due (or a read stopped at its bound, or a send may have taken the
        # control socket's edge): most polls find nothing, and the hello / silence timers are a second
        # or more away. The deadline is asked again only after the core was handed something.
        due = self._due_at
        if due == -math.inf:
            d = self.next_deadline()
            due = math.inf if d is None else d
        if self._more or self._recheck or now >= due:
            self.on_timer(now)
            d = self.next_deadline()
            due = math.inf if d is None else d
        self._due_at = due
        return self.core.take_events()

    # ------------------------------------------------------------ conveniences

    @property
    def client_no(self) -> int | None:
        return self.core.client_no

    @property
    def counters(self) -> Counters:
        return self.core.counters

    def join(
        self, frame: PoseFrame, timeout: float = 5.0, clock: Callable[[], float] = time.monotonic, step: float = 0.02
    ) -> list[Event]:
        """Send `frame` under the send policy until the server names our clientNo.

        For start-up only (it sleeps between polls); returns the events seen meanwhile.
        Raises ServerProtocolError when the server speaks another protocol, NoAnswerError
        when nothing maps us within `timeout` seconds.
        """
        deadline = clock() + timeout
        seen: list[Event] = []
        while True:
            now = clock()
            self.send_pose(now, frame)
            events = self.poll(now)
            seen += events
            for e in events:
                if isinstance(e, Joined):
                    return seen
                if isinstance(e, ProtocolMismatch):
                    raise ServerProtocolError(e)
            if now >= deadline:
                raise NoAnswerError(
                    f"no device-ID mapping from the NetSync server within {timeout:.1f} s "
                    f"(sent {self.counters.sends} poses, {self.counters.probes} protocol probes; "
                    f"drops {dict(self.counters.drops)})"
                )
            time.sleep(step)

    @property
    def tcp_state(self) -> TcpState:
        """Whether the control port's TCP connection is up and how often connecting failed: what
        tells "nothing listens there" from "connected, but the server says nothing". Reads
        ZeroMQ's socket monitor, on a client made with `watch_tcp=True` (else it stays as it
        started); a cheap read, meant for status lines, not every frame."""
        if self.closed or self._monitor is None:
            return self._tcp
        t = self._tcp
        connected, ever, retries, retry_ms = t.connected, t.ever_connected, t.retries, t.retry_ms
        for _ in range(MAX_MESSAGES_PER_POLL):
            try:
                frames = self._monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            if len(frames) != 2 or len(frames[0]) != _MONITOR_EVENT.size:
                continue  # not a monitor event (never seen): ignored
            kind, value = _MONITOR_EVENT.unpack(frames[0])
            if kind == zmq.EVENT_CONNECTED:
                connected, ever, retries, retry_ms = True, True, 0, None
            elif kind == zmq.EVENT_DISCONNECTED:
                connected = False
            elif kind == zmq.EVENT_CONNECT_RETRIED:
                connected, retries, retry_ms = False, retries + 1, value
        self._tcp = TcpState(connected, ever, retries, retry_ms)
        return self._tcp

    def close(self, now: float | None = None) -> None:
        """Close the sockets, and the context when it is our own (LINGER 0: returns at once, no
        thread left behind)."""
        if self.closed:
            return
        self.closed = True
        self.core.close(time.monotonic() if now is None else now)
        if self._reader is not None:  # the thread ends and joins: the SUB is ours again, to close
            self._stop_reader()
            self._reader = None
        if self._monitor is not None:
            self._dealer.disable_monitor()
            self._monitor.close(linger=0)
        for s in (getattr(self, "_dealer", None), getattr(self, "_sub", None), self._transform):
            if s is not None:
                s.close(linger=0)
        if self._own_context:
            self._ctx.term()

    def __enter__(self) -> NetSyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
