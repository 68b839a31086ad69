"""Non-blocking UDP driver for `Q3ClientCore`: call `poll(now)` once per frame.

Each poll drains the socket (bounded), feeds the core, fires its timer, sends what it produced
and returns the events. Datagrams from any address but the server's are counted and dropped.
"""
from __future__ import annotations

import errno
import socket
from typing import Sequence

from .client import ClientConfig, Q3ClientCore, State, Status
from .events import Event

MAX_DATAGRAM = 65535
MAX_READS_PER_POLL = 512    # a frame's worth of server traffic is a handful; this bounds a flood
MAX_TIMER_STEPS = 8         # catch-up ticks per poll after a stall (the core re-grids after that)


class Q3Client:
    def __init__(self, server: tuple[str, int], config: ClientConfig | None = None,
                 bind: tuple[str, int] = ("0.0.0.0", 0)) -> None:
        host, port = server
        self.server = (socket.gethostbyname(host), int(port))
        self.core = Q3ClientCore(config)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._sock.bind(bind)
        self.foreign_packets = 0
        self.socket_errors = 0

    @property
    def local_address(self) -> tuple[str, int]:
        return self._sock.getsockname()

    @property
    def status(self) -> Status:
        return self.core.status

    @property
    def state(self) -> State:
        return self.core.state

    def start(self, now: float) -> None:
        self.core.connect(now)
        self._flush(now)

    def set_input(self, angles: Sequence[float] = (0.0, 0.0, 0.0), forward: int = 0, right: int = 0,
                  up: int = 0, buttons: int = 0, weapon: int = 0,
                  head: tuple[float, float] | None = None) -> None:
        self.core.set_input(angles, forward, right, up, buttons, weapon, head)

    def send_command(self, text: str) -> None:
        self.core.send_command(text)

    def poll(self, now: float) -> list[Event]:
        if self._sock.fileno() == -1:
            return []  # closed
        for _ in range(MAX_READS_PER_POLL):
            try:
                data, addr = self._sock.recvfrom(MAX_DATAGRAM)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH):
                    self.socket_errors += 1
                    continue
                raise
            if addr != self.server:
                self.foreign_packets += 1
                continue
            self.core.receive_datagram(data, now)
        for _ in range(MAX_TIMER_STEPS):
            timer = self.core.get_timer()
            if timer is None or timer > now:
                break
            self.core.handle_timer(now)
        self._flush(now)
        events = []
        while (ev := self.core.next_event()) is not None:
            events.append(ev)
        return events

    def close(self, now: float) -> list[Event]:
        """Send `disconnect`, close the socket; returns the final events."""
        if self._sock.fileno() == -1:
            return []
        self.core.close(now)
        self._flush(now)
        self._sock.close()
        events = []
        while (ev := self.core.next_event()) is not None:
            events.append(ev)
        return events

    def _flush(self, now: float) -> None:
        for dgram in self.core.datagrams_to_send(now):
            try:
                self._sock.sendto(dgram, self.server)
            except OSError:
                self.socket_errors += 1  # a full buffer or a vanished route: the protocol resends

    def __enter__(self) -> "Q3Client":
        return self

    def __exit__(self, *exc) -> None:
        if self._sock.fileno() != -1:
            self._sock.close()
