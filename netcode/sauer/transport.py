"""The ENet transport for SauerClientCore, a netcode/driver.py `Transport` (the `enet` module of
pyenet-vladfi: ENet 1.3.20, which speaks the protocol of the game server's ENet 1.3.17).

A few lines around the core: open a connection when the core's state wants one (3 channels, as
the game's `enet_host_connect(…, 3, 0)`), service ENet without blocking, feed every event to the
core (`connection_made`, `receive_datagram`, `connection_lost`), send what the core hands out
(channel 0 unreliable, as the game's positions; channel 1 reliable where the core says so), and
drop the peer when the core has given up on the connection.

Two ways to drive it:
- from an event loop (`driver.drive`, the swarm): wait on `filenos()` (the ENet host's UDP socket)
  until `next_deadline()`, then call `on_readable(now)` / `on_timer(now)`; events come from
  `next_event()`. ENet's own resends and handshake need servicing too: before the server lets us
  in, the deadline is at most SERVICE_EVERY after the last service.
- once a frame (the app's link): `poll(now, positions=False)`, set the pose, `send_due(now)` (or
  `send_position(now)`: the tick straight to ENet when it is all that is due).
A client that stops servicing ENet is dropped by the server after ~5 s.

`metrics(name, amount)`, when set, hears "sent_datagrams"/"sent_bytes" for every packet handed to
ENet, "received_datagrams"/"received_bytes" for every packet ENet delivered, "send_errors" for one
ENet refused, and "position_packets" for every packet on channel 0 (the players' positions the
server relays). ENet's own acknowledgements and pings are not counted.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

import enet

from ..driver import MetricsHook
from .client import Incoming, Outgoing, SauerClientCore, State
from .errors import TransportError
from .events import Event
from .protocol import CHAN_POS, CHANNELS

SERVICE_EVERY = 0.05  # s: ENet serviced at least this often until the server lets us in
MAX_EVENTS_PER_SERVICE = 256  # ENet events read per call: a flood is bounded
_JOINING = (State.CONNECTING, State.HANDSHAKE, State.JOINING, State.LOADING)
_RELIABLE = enet.PACKET_FLAG_RELIABLE


class SauerClient:
    """One client: the core plus an ENet host with one peer. `source` binds the host to that local
    address (None: the kernel's choice). Connects at once (at `now`, or the clock's time)."""

    def __init__(
        self,
        address: tuple[str, int],
        core: SauerClientCore,
        clock: Callable[[], float] = time.monotonic,
        *,
        source: str | None = None,
        now: float | None = None,
    ) -> None:
        self.host_name, self.port = address
        self.core = core
        self.clock = clock
        self.metrics: MetricsHook | None = None
        try:
            self._address = enet.Address(self.host_name.encode("idna"), self.port)
        except (OSError, UnicodeError) as e:
            raise TransportError(f"cannot resolve {self.host_name!r}: {e}") from None
        try:
            bind = enet.Address(source.encode("idna"), 0) if source else None
            self._host: Any = enet.Host(bind, 1, CHANNELS, 0, 0)  # pyenet has no types
        except (OSError, UnicodeError, MemoryError) as e:
            raise TransportError(f"cannot open an ENet host (source {source or 'any'}): {e}") from None
        self._peer: Any = None
        self._connected = False  # the peer's CONNECT event came
        self._serviced_at = 0.0
        self.sent_at = 0.0  # clock time of the last datagram handed to ENet
        if core.state is State.IDLE:
            core.connect(self.clock() if now is None else now)
        self._sync_peer()

    # --- the driver API (netcode/driver.py Transport) ----------------------------------------

    def filenos(self) -> tuple[int, ...]:
        host = self._host
        return () if host is None else (host.socket.fileno(),)

    def next_deadline(self) -> float | None:
        if self._host is None:
            return None
        t = self.core.get_timer()
        if self._peer is not None and self.core.state in _JOINING:
            service = self._serviced_at + SERVICE_EVERY
            t = service if t is None else min(t, service)
        return t

    def on_readable(self, now: float) -> None:
        self.poll(now)

    def on_timer(self, now: float) -> None:
        self.poll(now)

    def next_event(self) -> Event | None:
        return self.core.next_event()

    def close(self, now: float | None = None) -> None:
        """Leave the server (a disconnect it hears at once) and stop; the last events stay readable
        with next_event()."""
        self.core.close(self.clock() if now is None else now)
        self._drop()
        self._host = None  # its socket closes with it

    # --- once a frame ------------------------------------------------------------------------

    def poll(self, now: float | None = None, positions: bool = True) -> None:
        """Service ENet once (never blocks), run the core's timers, send what is due.
        `positions` False: a position tick that is due waits for send_due (see handle_timer)."""
        now = self.clock() if now is None else now
        if self._host is None:
            return
        self._service(now)
        self.core.handle_timer(now, positions)
        self._flush(now)

    def send_due(self, now: float) -> None:
        """Hand out what the core has due (a position tick) without reading anything first."""
        if self._host is None:
            return
        self.core.handle_timer(now)
        self._flush(now)

    def send_position(self, now: float) -> int:
        """send_due for an application that polls every frame (the app's link): the position
        tick, when it is all that is due, straight to ENet (SauerClientCore.take_position);
        anything else is send_due's. Returns the bytes of the position handed to ENet (0: none)."""
        host, core = self._host, self.core
        if host is None:
            return 0
        data = core.take_position(now)
        if data is None:
            before = core.counters.position_bytes
            self.send_due(now)
            return core.counters.position_bytes - before
        return self.send_position_data(data) if data else 0

    def send_position_data(self, data: bytes) -> int:
        """A position the core has counted as sent (take_position, take_position_data) straight to
        ENet on channel 0, unreliable, flushed: the bytes handed to ENet (0: none, with no
        connected peer, as _flush's)."""
        peer = self._peer
        if peer is None or not self._connected:
            return 0  # (_flush's: a datagram with no connected peer is not sent)
        failed = peer.send(CHAN_POS, enet.Packet(data, 0)) < 0
        metrics = self.metrics
        if metrics is not None:
            if failed:
                metrics("send_errors", 1)
            else:
                metrics("sent_datagrams", 1)
                metrics("sent_bytes", len(data))
        self._host.flush()
        self.sent_at = self.clock()
        return len(data)

    # --- inside ------------------------------------------------------------------------------

    def _service(self, now: float) -> None:
        core, host, metrics = self.core, self._host, self.metrics
        self._serviced_at = now
        for _ in range(MAX_EVENTS_PER_SERVICE):
            ev = host.service(0)
            kind = ev.type
            if kind == enet.EVENT_TYPE_NONE:
                break
            if kind == enet.EVENT_TYPE_RECEIVE:
                data, channel = ev.packet.data, ev.channelID
                if metrics is not None:
                    metrics("received_datagrams", 1)
                    metrics("received_bytes", len(data))
                    if channel == CHAN_POS:
                        metrics("position_packets", 1)
                core.receive_datagram(Incoming(channel, data), now)
            elif kind == enet.EVENT_TYPE_CONNECT:
                self._connected = True
                core.connection_made(now)
            elif kind == enet.EVENT_TYPE_DISCONNECT:
                was_connected, self._peer, self._connected = self._connected, None, False
                core.connection_lost(ev.data if was_connected else None, now)
        self._sync_peer()

    def _flush(self, now: float) -> None:
        core = self.core
        out = core.datagrams_to_send(now)
        # _sync_peer's common case written out (a position tick 30 times a second on the app's frame
        # thread, where each Python call costs microseconds cold): in game with a connected peer
        if not (self._connected and core.wants_connection):
            self._sync_peer()
        peer = self._peer
        if peer is None or not self._connected or not out:
            return
        metrics = self.metrics
        for o in out:
            failed = peer.send(o.channel, enet.Packet(o.data, _RELIABLE if o.reliable else 0)) < 0  # _send's
            if metrics is not None:
                if failed:
                    metrics("send_errors", 1)
                else:
                    metrics("sent_datagrams", 1)
                    metrics("sent_bytes", len(o.data))
        self._host.flush()
        self.sent_at = self.clock()

    def resends_pending(self) -> bool:
        """True while ENet holds reliable data the server has not acknowledged. Only a service
        resends it or notices the peer timing out: a flush (each position's) sends what is queued,
        ENet's pings and acknowledgements, with the timeout check off."""
        peer = self._peer
        return peer is not None and self._connected and peer.reliableDataInTransit > 0

    @staticmethod
    def _send(peer: Any, o: Outgoing) -> int:
        flags = enet.PACKET_FLAG_RELIABLE if o.reliable else 0
        result: int = peer.send(o.channel, enet.Packet(o.data, flags))
        return result

    def _sync_peer(self) -> None:
        """An ENet peer exactly while the core's state wants a connection."""
        if self.core.wants_connection:
            if self._peer is None and self.core.state is State.CONNECTING:
                self._peer = self._host.connect(self._address, CHANNELS, 0)
                self._connected = False
        elif self._peer is not None:
            self._drop()

    def _drop(self) -> None:
        """Let the server know at once (a disconnect command, DISC_NONE) and forget the peer, so
        that a reconnect is a new client there, not a second one beside a stale slot."""
        peer, self._peer, self._connected = self._peer, None, False
        if peer is not None and self._host is not None:
            peer.disconnect_now(0)
            self._host.flush()


if TYPE_CHECKING:
    from ..driver import Core, Transport

    def _conforms(core: SauerClientCore, client: SauerClient) -> tuple[Core[Incoming, Outgoing], Transport]:
        """Checked by mypy, never run: the core is a driver.Core, the client a driver.Transport."""
        return core, client
