"""The Sauerbraten swarm player: a SauerClientCore over its own ENet host, N_POS at 30 Hz."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from headcast.app.swarm.observer import Marker
from headcast.app.swarm.players.base import JOIN_TICK, MAX_READS, Player


class SauerPlayer(Player):
    """A Sauerbraten client: SauerClientCore over its own ENet host (one peer, 3 channels).
    N_POS at 30 Hz while alive; only an observer parses the relayed positions, the others count
    the position packets (the core's liveness still sees them)."""

    proto = "sauer"

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        from headcast.netcode.sauer.client import SauerClientCore

        self.core = SauerClientCore(name=f"hc{index}"[:15])
        self.poses = script.sauer(variation.spot)
        self.marker: Marker | None = None  # (a Sauerbraten player's board marker is a Marker)
        self.host: Any = None  # an enet.Host (pyenet has no types)
        self.peer = None
        self._connected = False
        self._attempt_at = 0.0
        self._service_at = 0.0

    def filenos(self) -> list[int]:
        return [self.host.socket.fileno()] if self.host is not None else []

    def server_info(self) -> dict:
        from headcast.netcode.sauer.protocol import PROTOCOL_VERSION

        return {
            "protocol": PROTOCOL_VERSION,  # the client stops on any other (N_SERVINFO)
            "name": self.core.description,
        }

    def start(self, now: float) -> None:
        import enet

        self.started_at = self._attempt_at = now
        bind = enet.Address(self.var.source.encode(), 0) if self.var.source else None
        self.host = enet.Host(bind, 1, 3, 0, 0)
        self._address = enet.Address(self.server.host.encode("idna"), self.server.port)
        self.on_timer(now)

    def _service(self, now: float) -> None:
        import enet

        from headcast.netcode.sauer.protocol import CHAN_POS

        core, host, metrics, i = self.core, self.host, self.metrics, self.index
        observer = self.var.observer
        for _ in range(MAX_READS):
            ev = host.service(0)
            kind = ev.type
            if kind == enet.EVENT_TYPE_NONE:
                break
            if kind == enet.EVENT_TYPE_RECEIVE:
                data = ev.packet.data
                metrics.received("sauer", i, len(data), now)
                if ev.channelID == CHAN_POS:
                    metrics.broadcast("sauer", i, now)
                    if not observer:
                        data = b""  # counted, not parsed: the core still sees the server alive
                core.receive(ev.channelID, data, now)
            elif kind == enet.EVENT_TYPE_CONNECT:
                self._connected = True
                core.connection_made(now)
            elif kind == enet.EVENT_TYPE_DISCONNECT:
                was, self.peer, self._connected = self._connected, None, False
                core.connection_lost(ev.data if was else None, now)
        self._service_at = now

    def _flush(self, now: float) -> None:
        import enet

        core = self.core
        if self.peer is None and core.connect_due(now):
            self.peer = self.host.connect(self._address, 3, 0)
            self._connected = False
            core.connection_started(now)
        due = core.position_due_at
        if due is not None and now >= due and self.joined:
            self.metrics.tick("sauer", now - due, now)
            pose = self.poses[self.script.index(self.motion_time(now))]
            if pose is not None and self.marker is not None:
                pose = replace(pose, yaw=self.marker.yaw(now, pose.yaw))
            core.pose = pose
        out = core.packets_to_send(now)
        if core.take_drop() is not None:
            self._drop()
        peer = self.peer
        if peer is not None and self._connected and out:
            for o in out:
                peer.send(o.channel, enet.Packet(o.data, enet.PACKET_FLAG_RELIABLE if o.reliable else 0))
                self.metrics.sent("sauer", self.index, len(o.data), now)
            self.host.flush()
        self._events(now)

    def _drop(self) -> None:
        peer, self.peer, self._connected = self.peer, None, False
        if peer is not None:
            peer.disconnect_now(0)
            self.host.flush()

    def on_readable(self, now: float) -> None:
        if self.host is None:
            return
        self._service(now)
        self._flush(now)

    def next_deadline(self) -> float | None:
        if self.host is None:
            return None
        t = self.core.get_timer()
        if not self.joined:  # ENet's handshake resends need servicing too
            t = min(t, self._service_at + JOIN_TICK) if t is not None else self._service_at + JOIN_TICK
        return t

    def on_timer(self, now: float) -> None:
        if self.host is None:
            return
        self._service(now)
        self._flush(now)

    def _events(self, now: float) -> None:
        from headcast.netcode.sauer.client import Disconnected, Spawned

        core = self.core
        board = self.var.board if self.var.observer else None
        while (ev := core.next_event()) is not None:
            if isinstance(ev, Spawned):
                if not self.joined:
                    self._in(now, core.cn)
            elif isinstance(ev, Disconnected):
                if not self.closed:
                    self._out(now, ev.text)
        if board is not None and board.senders:
            for cn in board.senders:
                p = core.players.get(cn)
                if p is not None and p.record is not None and p.record_at == now:
                    board.saw_yaw(self.index, cn, p.record.yaw, now)

    def close(self, now: float) -> None:
        if self.closed:
            return
        self.closed = True
        if self.host is None:
            return
        self.core.close(now)
        self._drop()
        while self.core.next_event() is not None:
            pass
        self._out(now, None)
        self.host = None
