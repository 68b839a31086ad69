"""The Sauerbraten swarm player: the real SauerClient transport (netcode/sauer/transport.py) over
its own ENet host, N_POS at 30 Hz."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from headcast.app.swarm.observer import Marker
from headcast.app.swarm.players.base import Player

if TYPE_CHECKING:
    from headcast.netcode.sauer.transport import SauerClient


class SauerPlayer(Player):
    """A Sauerbraten client: a SauerClient (SauerClientCore over one ENet peer, 3 channels) driven
    through its driver API. N_POS at 30 Hz while alive; only an observer parses the relayed
    positions, the others count the position packets (the core's liveness still sees them)."""

    proto = "sauer"
    broadcast_counter = "position_packets"  # the other players' N_POS, relayed on channel 0

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        from headcast.netcode.sauer.client import SauerClientCore

        self.core = SauerClientCore(name=f"hc{index}"[:15], read_positions=variation.observer)
        self.poses = script.sauer(variation.spot)
        self.marker: Marker | None = None  # (a Sauerbraten player's board marker is a Marker)
        self.client: SauerClient | None = None  # from start()

    def filenos(self) -> list[int]:
        return list(self.client.filenos()) if self.client is not None else []

    def server_info(self) -> dict:
        from headcast.netcode.sauer.protocol import PROTOCOL_VERSION

        return {
            "protocol": PROTOCOL_VERSION,  # the client stops on any other (N_SERVINFO)
            "name": self.core.description,
        }

    def start(self, now: float) -> None:
        from headcast.netcode.sauer.transport import SauerClient

        self.started_at = self._attempt_at = self.now = now
        address = (self.server.host, self.server.port)
        self.client = client = SauerClient(address, self.core, source=self.var.source, now=now)
        client.metrics = self.count
        self._step(client, now)

    def _step(self, client: SauerClient, now: float) -> None:
        """Service ENet and the core's timers; a position tick that is due carries the motion's
        pose at `now` (set between the two calls, as the app's link does)."""
        core = self.core
        self.now = now
        client.poll(now, positions=False)
        due = core.position_due_at
        if due is not None and now >= due and self.joined:
            self.metrics.tick("sauer", now - due, now)
            pose = self.poses[self.script.index(self.motion_time(now))]
            if pose is not None and self.marker is not None:
                pose = replace(pose, yaw=self.marker.yaw(now, pose.yaw))
            core.pose = pose
        client.send_due(now)
        self._events(client, now)

    def on_readable(self, now: float) -> None:
        if self.client is not None:
            self._step(self.client, now)

    def next_deadline(self) -> float | None:
        return self.client.next_deadline() if self.client is not None else None

    def on_timer(self, now: float) -> None:
        if self.client is not None:
            self._step(self.client, now)

    def _events(self, client: SauerClient, now: float) -> None:
        from headcast.netcode.sauer.events import Disconnected, Spawned

        core = self.core
        board = self.var.board if self.var.observer else None
        while (ev := client.next_event()) is not None:
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
        client = self.client
        if client is None:
            return
        self.now = now
        client.close(now)
        while client.next_event() is not None:
            pass
        self._out(now, None)
        self.client = None
