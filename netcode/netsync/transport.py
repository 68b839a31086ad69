"""pyzmq driver for NetSyncClientCore: DEALER → the server's dealer port, SUB ← its PUB port.

Non-blocking throughout: the app calls `send_pose(now, frame)` and `poll(now)` once per frame.
Every queue is bounded (HWMs; LINGER 0, so close never waits) and IMMEDIATE is on, so while
the server is away a pose is dropped at once (counted) instead of piling up for a peer that
may never come back; ZeroMQ reconnects both sockets by itself, and the next pose registers
us with the restarted server.
"""
from __future__ import annotations

import time
import uuid

import zmq

from .client import Event, Joined, NetSyncClientCore
from .model import PoseFrame

# Room poses are latest-wins; a few queued broadcasts are plenty at 10 Hz polled every frame.
SUB_RCVHWM = 8
DEALER_HWM = 10  # the official client's value
MAX_MESSAGES_PER_POLL = 256  # per socket: one poll never loops unboundedly on a flooding peer
_SEND_MORE = zmq.SNDMORE | zmq.NOBLOCK


class NoAnswerError(TimeoutError):
    """Nothing came back from the server within the bound (wrong address/port, not running)."""


class NetSyncClient:
    """One NetSync participant on `tcp://host:dealer_port` / `tcp://host:pub_port`."""

    def __init__(
        self,
        host: str,
        dealer_port: int,
        pub_port: int,
        room_id: str,
        device_id: str | None = None,
        *,
        send_rate: float = 10.0,
        stealth: bool = False,
        silence_timeout: float = 3.0,
    ) -> None:
        self.core = NetSyncClientCore(
            room_id,
            device_id or str(uuid.uuid4()),
            send_rate=send_rate,
            stealth=stealth,
            silence_timeout=silence_timeout,
        )
        self._ctx = zmq.Context(io_threads=1)
        self._dealer = self._ctx.socket(zmq.DEALER)
        self._sub = self._ctx.socket(zmq.SUB)
        try:
            for s in (self._dealer, self._sub):
                s.setsockopt(zmq.LINGER, 0)
                s.setsockopt(zmq.RECONNECT_IVL, 100)
                s.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
            self._dealer.setsockopt(zmq.SNDHWM, DEALER_HWM)
            self._dealer.setsockopt(zmq.RCVHWM, DEALER_HWM)
            self._dealer.setsockopt(zmq.IMMEDIATE, 1)
            self._sub.setsockopt(zmq.RCVHWM, SUB_RCVHWM)
            self._sub.setsockopt(zmq.SUBSCRIBE, self.core.room_topic)
            self._dealer.connect(f"tcp://{host}:{dealer_port}")
            self._sub.connect(f"tcp://{host}:{pub_port}")
        except BaseException:
            self.close()
            raise
        self._room = self.core.room_topic
        self._poll_items = [(self._dealer, zmq.POLLIN), (self._sub, zmq.POLLIN)]
        self.closed = False

    # ------------------------------------------------------------ per frame

    def send_pose(self, now: float, frame: PoseFrame) -> bool:
        """Offer this frame's pose; True when a message actually went out."""
        msg = self.core.pose_message(now, frame)
        if msg is None:
            return False
        # send_multipart's two parts, without its Python-level loop and checks. A multipart
        # message is queued whole or not at all: only the first part can meet a full queue or,
        # with IMMEDIATE, no connection.
        send = self._dealer.send
        try:
            send(self._room, _SEND_MORE)
        except zmq.Again:
            self.core.send_failed("no server connection or queue full")
            return False
        send(msg, zmq.NOBLOCK)
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
            for sock, _ in ready:
                if sock is self._sub:
                    core.receive_broadcast(now, sock.recv_multipart(zmq.NOBLOCK))
                else:
                    core.receive_unicast(now, sock.recv_multipart(zmq.NOBLOCK))
            ready = zmq.zmq_poll(self._poll_items, 0)
        core.handle_timer(now)
        return core.events()

    # ------------------------------------------------------------ conveniences

    @property
    def client_no(self) -> int | None:
        return self.core.client_no

    @property
    def counters(self):
        return self.core.counters

    def join(self, frame: PoseFrame, timeout: float = 5.0, clock=time.monotonic, step: float = 0.02) -> list[Event]:
        """Send `frame` under the send policy until the server names our clientNo.

        For start-up only (it sleeps between polls); returns the events seen meanwhile.
        Raises NoAnswerError when no mapping comes back within `timeout` seconds.
        """
        deadline = clock() + timeout
        seen: list[Event] = []
        while True:
            now = clock()
            self.send_pose(now, frame)
            events = self.poll(now)
            seen += events
            if any(isinstance(e, Joined) for e in events):
                return seen
            if now >= deadline:
                raise NoAnswerError(
                    f"no device-ID mapping from the NetSync server within {timeout:.1f} s "
                    f"(sent {self.counters.sends} poses; drops {dict(self.counters.drops)})"
                )
            time.sleep(step)

    def close(self) -> None:
        """Close both sockets and the context (LINGER 0: returns at once, no thread left behind)."""
        if self._ctx.closed:
            return
        for s in (getattr(self, "_dealer", None), getattr(self, "_sub", None)):
            if s is not None:
                s.close(linger=0)
        self._ctx.term()
        self.closed = True

    def __enter__(self) -> NetSyncClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
