"""The ENet transport for SauerClientCore (the `enet` module of pyenet-vladfi: ENet 1.3.20, which
speaks the protocol of the game server's ENet 1.3.17).

A few lines around the core: open a connection when the core says so (3 channels, as the game's
`enet_host_connect(…, 3, 0)`), service ENet without blocking, feed every event to the core, send
what the core hands out (channel 0 unreliable, as the game's positions; channel 1 reliable where
the core says so), drop the connection when the core gives up on it. `poll(now)` does all of that once;
call it every frame — a client that stops servicing ENet is dropped by the server after ~5 s.
"""

from __future__ import annotations

import time
from typing import Callable

import enet

from .client import Event, Outgoing, SauerClientCore, State
from .protocol import CHANNELS


class SauerTransportError(OSError):
    pass


class SauerClient:
    """One client: the core plus an ENet host with one peer."""

    def __init__(
        self, address: tuple[str, int], core: SauerClientCore, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.host_name, self.port = address
        self.core = core
        self.clock = clock
        try:
            self._address = enet.Address(self.host_name.encode("idna"), self.port)
        except (OSError, UnicodeError) as e:
            raise SauerTransportError(f"cannot resolve {self.host_name!r}: {e}") from None
        self._host = enet.Host(None, 1, CHANNELS, 0, 0)
        self._peer = None
        self._connected = False  # the peer's CONNECT event came
        self.sent_at = 0.0  # clock time of the last datagram handed to ENet

    def poll(self, now: float | None = None, positions: bool = True) -> list[Event]:
        """Service ENet once (never blocks) and run the core; returns the core's new events.
        `positions` False: a position tick that is due waits for send_due (see handle_timer)."""
        now = self.clock() if now is None else now
        core = self.core
        if self._peer is None and core.connect_due(now):
            self._peer = self._host.connect(self._address, CHANNELS, 0)
            self._connected = False
            core.connection_started(now)
        self._service(now)
        self._flush(now, positions)
        events = []
        while (ev := core.next_event()) is not None:
            events.append(ev)
        return events

    def send_due(self, now: float) -> None:
        """Hand out what the core has due (a position tick) without reading anything first."""
        self._flush(now)

    def _service(self, now: float) -> None:
        core, host = self.core, self._host
        while True:
            ev = host.service(0)
            kind = ev.type
            if kind == enet.EVENT_TYPE_NONE:
                return
            if kind == enet.EVENT_TYPE_RECEIVE:
                core.receive(ev.channelID, ev.packet.data, now)
            elif kind == enet.EVENT_TYPE_CONNECT:
                self._connected = True
                core.connection_made(now)
            elif kind == enet.EVENT_TYPE_DISCONNECT:
                was_connected, self._peer, self._connected = self._connected, None, False
                core.connection_lost(ev.data if was_connected else None, now)

    def _flush(self, now: float, positions: bool = True) -> None:
        core = self.core
        out = core.packets_to_send(now, positions)
        if core.take_drop() is not None:
            self._drop()
        peer = self._peer
        if peer is not None and self._connected and out:
            for o in out:
                self._send(peer, o)
            self._host.flush()
            self.sent_at = self.clock()
        if self._peer is not None and core.state is State.CLOSED:
            self._drop()

    @staticmethod
    def _send(peer: enet.Peer, o: Outgoing) -> None:
        flags = enet.PACKET_FLAG_RELIABLE if o.reliable else 0
        peer.send(o.channel, enet.Packet(o.data, flags))

    def _drop(self) -> None:
        """Let the server know at once (a disconnect command, DISC_NONE) and forget the peer, so
        that a reconnect is a new client there, not a second one beside a stale slot."""
        peer, self._peer, self._connected = self._peer, None, False
        if peer is not None:
            peer.disconnect_now(0)
            self._host.flush()

    def close(self, now: float | None = None) -> list[Event]:
        """Leave the server (a disconnect it hears at once) and stop; returns the last events."""
        now = self.clock() if now is None else now
        self.core.close(now)
        self._drop()
        events = []
        while (ev := self.core.next_event()) is not None:
            events.append(ev)
        return events
