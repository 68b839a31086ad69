"""pyzmq driver for NetSyncClientCore: DEALER → the server's control (dealer) port, from
protocol 7 on a second DEALER → its transform port (control + 2 by default), SUB ← its PUB port.

Non-blocking throughout: the app calls `send_pose(now, frame)` and `poll(now)` once per frame.
Every queue is bounded (HWMs; LINGER 0, so close never waits) and IMMEDIATE is on, so while
the server is away a pose is dropped at once (counted) instead of piling up for a peer that
may never come back; ZeroMQ reconnects both sockets by itself, and the next pose registers
us with the restarted server.
"""

from __future__ import annotations

import struct
import time
import uuid
from dataclasses import dataclass
from typing import Callable

import zmq

from .client import Counters, Event, Joined, NetSyncClientCore, ProtocolMismatch
from .model import PoseFrame

# ZeroMQ's socket-monitor message: frame 1 = event id (u16) + value (u32), native byte order; frame
# 2 = the endpoint. Read here rather than with zmq.utils.monitor, whose import pulls in asyncio
# (start-up: a Q3-only `headcast run` must not pay for it, nor a run its first status line).
_MONITOR_EVENT = struct.Struct("=HI")

# Room poses are latest-wins; a few queued broadcasts are plenty at 10 Hz polled every frame.
SUB_RCVHWM = 8
DEALER_HWM = 10  # the official client's value
MAX_MESSAGES_PER_POLL = 256  # per socket: one poll never loops unboundedly on a flooding peer
_SEND_MORE = zmq.SNDMORE | zmq.NOBLOCK


@dataclass(frozen=True)
class TcpState:
    """The control socket's TCP connection as ZeroMQ reports it (`NetSyncClient.tcp_state`)."""

    connected: bool  # a TCP connection to the control port is up now
    ever_connected: bool  # ... was up at some point
    retries: int  # failed connects since the last success (or the start)
    retry_ms: int | None  # ZeroMQ's wait before its next connect attempt, as last announced


class NoAnswerError(TimeoutError):
    """Nothing came back from the server within the bound (wrong address/port, not running)."""


class ProtocolMismatchError(ConnectionError):
    """The server answered, in another NetSync protocol than the one we were told to speak."""

    def __init__(self, mismatch: ProtocolMismatch) -> None:
        super().__init__(mismatch.message)
        self.mismatch = mismatch


class NetSyncClient:
    """One NetSync participant on `tcp://host:dealer_port` (control) / `tcp://host:pub_port`,
    and from protocol 7 on `tcp://host:transform_port` (default dealer_port + 2).

    `protocol=None` detects the server's protocol (client.py); an int speaks that one.
    """

    def __init__(
        self,
        host: str,
        dealer_port: int,
        pub_port: int,
        room_id: str,
        device_id: str | None = None,
        *,
        transform_port: int | None = None,
        protocol: int | None = 8,
        send_rate: float = 10.0,
        stealth: bool = False,
        silence_timeout: float = 3.0,
        watch_tcp: bool = False,
    ) -> None:
        self.core = NetSyncClientCore(
            room_id,
            device_id or str(uuid.uuid4()),
            protocol=protocol,
            send_rate=send_rate,
            stealth=stealth,
            silence_timeout=silence_timeout,
        )
        self.host = host
        self.transform_port = dealer_port + 2 if transform_port is None else transform_port
        self._ctx = zmq.Context(io_threads=1)
        self._dealer = self._ctx.socket(zmq.DEALER)
        self._sub = self._ctx.socket(zmq.SUB)
        self._transform: zmq.Socket[bytes] | None = None
        self._monitor: zmq.Socket[bytes] | None = None
        self._tcp = TcpState(False, False, 0, None)
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
            self._dealer.connect(f"tcp://{host}:{dealer_port}")
            self._sub.connect(f"tcp://{host}:{pub_port}")
        except BaseException:
            self.close()
            raise
        self._room = self.core.room_topic
        self._poll_items = [(self._dealer, zmq.POLLIN), (self._sub, zmq.POLLIN)]
        self._pose_socket: zmq.Socket[bytes] = self._dealer
        self._lanes_for: int | None = None  # the protocol the pose socket was chosen for
        if self.core.protocol is not None:
            self._choose_lanes()
        self.closed = False

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
            self._pose_socket = self._dealer
            return
        if self._transform is None:
            t = self._ctx.socket(zmq.DEALER)
            self._common_options(t)
            t.setsockopt(zmq.SNDHWM, DEALER_HWM)
            t.setsockopt(zmq.IMMEDIATE, 1)
            t.connect(f"tcp://{self.host}:{self.transform_port}")
            self._transform = t
        self._pose_socket = self._transform

    # ------------------------------------------------------------ per frame

    def send_pose(self, now: float, frame: PoseFrame) -> bool:
        """Offer this frame's pose; True when a message actually went out."""
        msg = self.core.pose_message(now, frame)
        if msg is None:
            return False
        if self._lanes_for != self.core.protocol:
            self._choose_lanes()
        if not self._send(self._pose_socket, msg):
            self.core.send_failed("no server connection or queue full")
            return False
        return True

    def _send(self, sock: zmq.Socket[bytes], msg: bytes) -> bool:
        # send_multipart's two parts, without its Python-level loop and checks. A multipart
        # message is queued whole or not at all: only the first part can meet a full queue or,
        # with IMMEDIATE, no connection.
        try:
            sock.send(self._room, _SEND_MORE)
        except zmq.Again:
            return False
        sock.send(msg, zmq.NOBLOCK)
        return True

    def poll(self, now: float) -> list[Event]:
        """Drain both sockets (bounded), run the silence timer, return what happened."""
        core = self.core
        # One zmq_poll over both sockets says which have a message: a receive that finds none
        # raises zmq.Again, and building that exception costs more than the poll (per socket, per
        # call, on a cache-cold frame).
        ready = zmq.zmq_poll(self._poll_items, 0)
        for _ in range(MAX_MESSAGES_PER_POLL):
            if not ready:
                break
            for sock, _ in ready:  # _poll_items: the SUB and the control DEALER
                if sock is self._sub:
                    core.receive_broadcast(now, self._sub.recv_multipart(zmq.NOBLOCK))
                else:
                    core.receive_unicast(now, self._dealer.recv_multipart(zmq.NOBLOCK))
            ready = zmq.zmq_poll(self._poll_items, 0)
        core.handle_timer(now)
        if self._lanes_for != core.protocol:
            self._choose_lanes()  # detected: from protocol 7 on, open the transform lane now
        for msg in core.control_messages(now):
            if not self._send(self._dealer, msg):
                core.control_send_failed()
                break
        return core.events()

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
        Raises ProtocolMismatchError when the server speaks another protocol, NoAnswerError
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
                    raise ProtocolMismatchError(e)
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
        if self._ctx.closed or self._monitor is None:
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

    def close(self) -> None:
        """Close both sockets and the context (LINGER 0: returns at once, no thread left behind)."""
        if self._ctx.closed:
            return
        if self._monitor is not None:
            self._dealer.disable_monitor()
            self._monitor.close(linger=0)
        for s in (getattr(self, "_dealer", None), getattr(self, "_sub", None), getattr(self, "_transform", None)):
            if s is not None:
                s.close(linger=0)
        self._ctx.term()
        self.closed = True

    def __enter__(self) -> NetSyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
