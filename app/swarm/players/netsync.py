"""The NetSync swarm player: a real NetSyncClient (netcode/netsync/transport.py) in the swarm's
one ZeroMQ context, poses at 10 Hz."""

from __future__ import annotations

import math
import random
import uuid
from typing import TYPE_CHECKING, Any

from headcast.app.swarm.observer import SeqLog
from headcast.app.swarm.players.base import (
    NETSYNC_JOIN_TIMEOUT,
    RATES,
    RETRY_JITTER,
    RETRY_MAX,
    ZMQ_MAX_SOCKETS,
    JoinLatency,
    Player,
)

if TYPE_CHECKING:
    from headcast.netcode.netsync.transport import NetSyncClient

# Every NetSync player ticks on one 10 ms grid (its 100 ms period starts on a grid line): a swarm
# wake-up serves all the players due on a line, and the ZeroMQ I/O thread is woken once for their
# batch of poses instead of once per pose (a per-message wake-up was most of a player's cost).
TICK_GRID = 0.010


class NetSyncPlayer(Player):
    """A NetSync client: a NetSyncClient (a control DEALER, a transform DEALER from protocol 7 on,
    a SUB) sharing the swarm's one ZeroMQ context (one I/O thread for every player), driven
    through its driver API (filenos, next_deadline, on_readable, on_timer, next_event) and its
    metrics hook.

    Poses go out at the send rate from the motion; the policy's rate cap is set a little above
    it, so a tick a few milliseconds early of the last one's grid is not skipped. Only an
    observer's core decodes room broadcasts (`observe`); the others count them (a full room's
    broadcast decoded by every player would be the swarm's whole budget), and decode device-ID
    mappings only until they know their clientNo. The core's mismatch probes are off (a player
    not mapped within 2 s would ask in every protocol exactly when a loaded server is slow to
    map it): the hello heartbeat alone, and this player's retries (`_ask_again`)."""

    proto = "netsync"
    broadcast_counter = "room_broadcasts"  # the transport's counter for one room broadcast
    context: Any = None  # the shared zmq.Context, made on first use
    latency = JoinLatency()  # this process's recent joins: the retries' first wait
    # The loop starts a new NetSync player only while fewer than this many are waiting for their
    # number (loop.SwarmLoop: its join window): each join costs a loaded styly-netsync-server work
    # for every member of the room (network-variable syncs through its 1,024-message control
    # queue); joins faster than it answers overflow that queue and their mappings are dropped.
    JOIN_WINDOW = 8

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        from headcast.netcode.netsync.client import NetSyncClientCore

        # Random first: the server logs the first 8 characters of a deviceId.
        self.core = NetSyncClientCore(
            server.room,
            f"{uuid.uuid4().hex[:8]}-headcast-swarm-{index}",
            protocol=server.protocol,
            send_rate=min(60.0, RATES["netsync"] * 1.1),
            observe=variation.observer,
            mismatch_probes=False,
        )
        self.client: NetSyncClient | None = None  # from start()
        self.frames = script.netsync(variation.spot)
        self.period = 1.0 / RATES["netsync"]
        self.marker: SeqLog | None = None  # (a NetSync player's board marker is a SeqLog)
        self._next: float | None = None
        self._attempt_at = 0.0
        self.silent = False
        self._join_failed = False  # counted once per attempt
        self._retry_at: float | None = None
        self._retry_wait = 0.0
        self.retries = 0
        self._rng = random.Random(index)

    def filenos(self) -> list[int]:
        return [] if self.client is None else list(self.client.filenos())

    def server_info(self) -> dict:
        v = self.core.server_version  # from the server's device-ID mapping
        return {
            "software": None if v is None else "styly-netsync-server " + ".".join(map(str, v)),
            "protocol": self.server.protocol,
            "room": self.server.room,
        }

    def start(self, now: float) -> None:
        import zmq

        from headcast.netcode.netsync.transport import NetSyncClient

        if NetSyncPlayer.context is None:
            NetSyncPlayer.context = zmq.Context(io_threads=1)
            # ZeroMQ's default is 1023 sockets per context: 341 players of three sockets each.
            NetSyncPlayer.context.set(zmq.MAX_SOCKETS, ZMQ_MAX_SOCKETS)
        self.started_at = self._attempt_at = self.now = now
        srv = self.server
        self.client = NetSyncClient(
            srv.host,
            srv.port,
            srv.pub_port or srv.port + 1,
            transform_port=srv.transform_port or srv.port + 2,
            context=NetSyncPlayer.context,
            core=self.core,
            metrics=self.count,
            now=now,
        )
        self._retry_wait = self.latency.first_retry()
        self._retry_at = now + self._retry_wait * (1.0 + self._rng.uniform(-RETRY_JITTER, RETRY_JITTER))
        self._next = math.ceil(now / TICK_GRID) * TICK_GRID

    def on_readable(self, now: float) -> None:
        client = self.client
        if self.closed or client is None:
            return
        self.now = now
        client.on_readable(now)
        self._events(now)

    def next_deadline(self) -> float | None:
        """The next tick. The client's own timers (the hello heartbeat, the silence deadline, a
        read left over) are served at the ticks, within a period of falling due."""
        return self._next

    def on_timer(self, now: float) -> None:
        client = self.client
        if self.closed or client is None or self._next is None:
            return
        self.now = now
        if now >= self._next:
            self._tick(now, self._next, client)
        if not self.joined:
            if self._retry_at is not None and now >= self._retry_at:
                self._ask_again(now)
            if not self._join_failed and now - self._attempt_at >= NETSYNC_JOIN_TIMEOUT:
                self._join_failed = True
                self.metrics.join_failed(
                    "netsync",
                    self.index,
                    f"no device-ID mapping within {NETSYNC_JOIN_TIMEOUT:g} s (registered, never told its clientNo)",
                    now,
                )
        client.on_timer(now)  # the hello heartbeat, the silence timer, a read left unfinished
        self._events(now)

    def _tick(self, now: float, due: float, client: NetSyncClient) -> None:
        late = now - due
        self._next = due + self.period
        if self._next <= now:
            self._next = now + self.period
        if self.joined:
            self.metrics.tick("netsync", late, now)
        frame = self.frames[self.script.index(self.motion_time(now))]
        if client.send_pose(now, frame) and self.marker is not None:
            self.marker.add(self.core.pose_seq, now)

    def _ask_again(self, now: float) -> None:
        """No device-ID mapping yet (a loaded server drops control messages when its queue is
        full, and sends a client its mapping only when it registers): register again on a new
        control connection (the server treats it as a reconnect and answers with the mapping),
        hello at once; the next ask waits twice as long."""
        self.retries += 1
        if self.client is not None:
            self.client.reconnect_control(now)
        self._retry_wait = min(RETRY_MAX, self._retry_wait * 2.0)
        self._retry_at = now + self._retry_wait * (1.0 + self._rng.uniform(-RETRY_JITTER, RETRY_JITTER))

    def _events(self, now: float) -> None:
        core = self.core
        ev = core.next_event()
        if ev is None:
            return
        from headcast.netcode.netsync.events import Joined, PeerPose, ProtocolMismatch, ServerBack, ServerSilent

        board = self.var.board if self.var.observer else None
        while ev is not None:
            if isinstance(ev, PeerPose):
                if board is not None:
                    board.saw_seq(self.index, ev.client_no, ev.body.pose_seq, now)
            elif isinstance(ev, Joined):
                if not self.joined:
                    if self._retry_at is not None:  # the first number of this start: a join's latency
                        self.latency.add(now - self._attempt_at)
                    self._retry_at = None
                    self._in(now, ev.client_no)
                    self._join_failed = False  # a later attempt (after a kick) counts its own
            elif isinstance(ev, ServerSilent):
                if self.joined:
                    self._out(now, f"server silent for {core.silence_timeout:g} s")
                self.silent = True
            elif isinstance(ev, ServerBack):
                self.silent = False
            elif isinstance(ev, ProtocolMismatch):
                self._out(now, ev.message)
            ev = core.next_event()

    def close(self, now: float) -> None:
        if self.closed:
            return
        self.closed = True
        self._out(now, None)
        if self.client is not None:
            self.client.close(now)
