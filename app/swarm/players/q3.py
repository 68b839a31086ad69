"""The Quake 3 swarm player: a real `Q3Client` (the transport the app uses) from its own source
address, usercmds at 60 Hz from the script.

The client is a `driver.Transport`: the swarm loop waits on its `filenos()` until its
`next_deadline()`, and calls `on_readable` / `on_timer`; its `metrics` hook counts every datagram
in the swarm's metrics (socket errors, ICMP included, in `send_errors`)."""

from __future__ import annotations

from headcast.app.swarm.observer import Marker
from headcast.app.swarm.players.base import RATES, Player
from headcast.netcode.q3.client import LINKED, ClientConfig
from headcast.netcode.q3.entities import player_entity
from headcast.netcode.q3.events import Disconnected as Q3Disconnected, EnteredWorld, SnapshotReceived
from headcast.netcode.q3.transport import Q3Client
from headcast.netcode.q3.vrhead import yaw_offset


class Q3Player(Player):
    """A Quake 3 VR client: Q3Client (60 Hz usercmds, VR userinfo) over its own UDP socket."""

    proto = "q3"
    # Each leave makes ioq3 queue two reliable commands (a print, a configstring) to every other
    # client, and it drops one with more than 64 unacknowledged ("Server command overflow"): 32
    # players leaving in one server frame overflow the ones still to leave. 16 at a time, the
    # others served (acknowledging) in between, leave cleanly.
    LEAVE_BATCH = 16

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        self.config = ClientConfig(
            name=f"hc{index}", vr=True, cmd_rate=RATES["q3"], pure_paks=server.pk3, connect_timeout=15.0
        )
        self.intents = script.q3(variation.spot)
        self.marker: Marker | None = None  # (a Q3 player's board marker is a Marker)
        self.client: Q3Client | None = None  # made by start()
        self._attempt_at = 0.0

    def filenos(self) -> list[int]:
        return list(self.client.filenos()) if self.client is not None else []

    def server_info(self) -> dict:
        info = self.client.core.serverinfo if self.client is not None else {}
        return {
            "software": info.get("version"),
            "protocol": info.get("protocol"),
            "name": info.get("sv_hostname"),
            "map": info.get("mapname"),
        }

    def start(self, now: float) -> None:
        self.started_at = self._attempt_at = self.now = now
        self.client = Q3Client(
            (self.server.host, self.server.port), self.config, source=self.var.source, metrics=self.count
        )
        # In game the snapshot messages are decoded in C (_q3snap.c), not by the Python parser:
        # 20 a second for every player is most of a big swarm's protocol work.
        self.client.core.use_native_snapshots()
        self.client.start(now)

    def on_readable(self, now: float) -> None:
        client = self.client
        if client is None:
            return
        self.now = now
        client.on_readable(now)
        self._events(now)

    def next_deadline(self) -> float | None:
        return self.client.next_deadline() if self.client is not None else None

    def on_timer(self, now: float) -> None:
        client = self.client
        if client is None:
            return
        timer = client.next_deadline()
        if timer is None or now < timer:
            return
        if client.state in LINKED:
            self.metrics.tick("q3", now - timer, now)
            intent = self.intents[self.script.index(self.motion_time(now))]
            angles = intent.angles
            if self.marker is not None:
                angles = (angles[0], self.marker.yaw(now, angles[1]), angles[2])
            head = intent.head
            if head is not None:
                head = (head[0], yaw_offset(head[1], angles[1]))
            client.set_input(angles, intent.forwardmove, intent.rightmove, intent.upmove, intent.user_buttons, 0, head)
        self.now = now
        client.on_timer(now)
        self._events(now)

    def _events(self, now: float) -> None:
        client = self.client
        assert client is not None
        board = self.var.board if self.var.observer else None
        while (ev := client.next_event()) is not None:
            if isinstance(ev, SnapshotReceived):
                self.metrics.broadcast("q3", self.index, now)
                if board is not None and board.senders:
                    snap = client.core.snapshot_at(ev.message_num)
                    if snap is not None:
                        ents = snap.entities
                        for cn in board.senders:
                            es = ents.get(cn)
                            p = player_entity(es) if es is not None else None
                            if p is not None and not p.dead:
                                board.saw_yaw(self.index, cn, p.angles[1], now)
                            else:  # outside the observer's PVS, or a corpse until it respawns
                                board.out_of_sight(self.index, cn)
            elif isinstance(ev, EnteredWorld):
                self._in(now, ev.client_num)
            elif isinstance(ev, Q3Disconnected):
                if not self.closed:
                    self._out(now, ev.reason)

    def close(self, now: float) -> None:
        if self.closed or self.client is None:
            self.closed = True
            return
        self.closed = True
        self.now = now
        self.client.close(now, "swarm stopped")  # its events: the swarm's own leave, counted next
        self._out(now, None)
        self.client = None
