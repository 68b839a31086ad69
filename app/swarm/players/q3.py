"""The Quake 3 swarm player: a Q3ClientCore on its own UDP socket, usercmds at 60 Hz from the script."""

from __future__ import annotations

import socket

from headcast.app.swarm.observer import Marker
from headcast.app.swarm.players.base import MAX_READS, RATES, Player
from headcast.netcode.icmp import icmp_error
from headcast.netcode.q3.client import LINKED, ClientConfig, Q3ClientCore
from headcast.netcode.q3.entities import player_entity
from headcast.netcode.q3.events import Disconnected as Q3Disconnected, EnteredWorld, SnapshotReceived
from headcast.netcode.q3.vrhead import yaw_offset


class Q3Player(Player):
    """A Quake 3 VR client: Q3ClientCore (60 Hz usercmds, VR userinfo) over its own UDP socket."""

    proto = "q3"
    # Each leave makes ioq3 queue two reliable commands (a print, a configstring) to every other
    # client, and it drops one with more than 64 unacknowledged ("Server command overflow"): 32
    # players leaving in one server frame overflow the ones still to leave. 16 at a time, the
    # others served (acknowledging) in between, leave cleanly.
    LEAVE_BATCH = 16

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        self.core = Q3ClientCore(
            ClientConfig(name=f"hc{index}", vr=True, cmd_rate=RATES["q3"], pure_paks=server.pk3, connect_timeout=15.0)
        )
        self.intents = script.q3(variation.spot)
        self.marker: Marker | None = None  # (a Q3 player's board marker is a Marker)
        self.sock: socket.socket | None = None
        self._attempt_at = 0.0
        self.socket_errors = 0

    def filenos(self) -> list[int]:
        return [self.sock.fileno()] if self.sock is not None else []

    def server_info(self) -> dict:
        info = self.core._serverinfo  # the gamestate's serverinfo configstring
        return {
            "software": info.get("version"),
            "protocol": info.get("protocol"),
            "name": info.get("sv_hostname"),
            "map": info.get("mapname"),
        }

    def start(self, now: float) -> None:
        self.started_at = self._attempt_at = now
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setblocking(False)
            s.bind((self.var.source or "0.0.0.0", 0))
            s.connect((socket.gethostbyname(self.server.host), self.server.port))
        except OSError:
            s.close()
            raise
        self.sock = s
        self.core.connect(now)
        self._send(self.core.datagrams_to_send(now), now)

    def _send(self, dgrams: list[bytes], now: float) -> None:
        sock, metrics, i = self.sock, self.metrics, self.index
        assert sock is not None  # sends only between start and close
        for d in dgrams:
            try:
                sock.send(d)
            except OSError:
                self.socket_errors += 1  # a full buffer, an ICMP error: the protocol resends
                continue
            metrics.sent("q3", i, len(d), now)

    def on_readable(self, now: float) -> None:
        sock, core, metrics, i = self.sock, self.core, self.metrics, self.index
        if sock is None:
            return
        for _ in range(MAX_READS):
            try:
                data = sock.recv(65535)
            except BlockingIOError:
                break
            except OSError as e:
                if icmp_error(e):  # port/host/network unreachable (Windows: a ConnectionResetError)
                    self.socket_errors += 1
                    continue
                raise
            metrics.received("q3", i, len(data), now)
            core.receive_datagram(data, now)
        out = core.datagrams_to_send(now)
        if out:
            self._send(out, now)
        self._events(now)

    def next_deadline(self) -> float | None:
        return self.core._timer

    def on_timer(self, now: float) -> None:
        core = self.core
        timer = core._timer
        if timer is None or now < timer:
            return
        if core._state in LINKED:
            self.metrics.tick("q3", now - timer, now)
            intent = self.intents[self.script.index(self.motion_time(now))]
            angles = intent.angles
            if self.marker is not None:
                angles = (angles[0], self.marker.yaw(now, angles[1]), angles[2])
            head = intent.head
            if head is not None:
                head = (head[0], yaw_offset(head[1], angles[1]))
            core.set_input(angles, intent.forwardmove, intent.rightmove, intent.upmove, intent.user_buttons, 0, head)
        self._send(core.run_due(now, 8), now)
        self._events(now)

    def _events(self, now: float) -> None:
        core = self.core
        events = core.take_events()
        if not events:
            return
        board = self.var.board if self.var.observer else None
        for ev in events:
            if isinstance(ev, SnapshotReceived):
                self.metrics.broadcast("q3", self.index, now)
                if board is not None and board.senders:
                    snap = core._snapshot_at(ev.message_num)
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
        if self.closed or self.sock is None:
            self.closed = True
            return
        self.closed = True
        self.core.close(now, "swarm stopped")
        self._send(self.core.datagrams_to_send(now), now)
        self.core.take_events()
        self._out(now, None)
        self.sock.close()
        self.sock = None


# ----------------------------------------------------------------------------------- NetSync
