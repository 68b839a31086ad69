"""The NetSync swarm player: a NetSyncClientCore on its own ZeroMQ sockets, poses at 10 Hz."""

from __future__ import annotations

import random
import uuid

from headcast.app.swarm.observer import SeqLog
from headcast.app.swarm.players.base import (
    HELLO_PERIOD,
    MAX_READS,
    NETSYNC_JOIN_TIMEOUT,
    RATES,
    RETRY_JITTER,
    RETRY_MAX,
    ZMQ_MAX_SOCKETS,
    JoinLatency,
    Player,
)


class NetSyncPlayer(Player):
    """A NetSync client: NetSyncClientCore over a DEALER (control), a DEALER (transform, protocol
    7+) and a SUB, all in the swarm's one ZeroMQ context (one I/O thread for every player).

    Poses go out at the send rate from the motion; the policy's rate cap is set a little above
    it, so a tick a few milliseconds early of the last one's grid is not skipped. Only an
    observer decodes room broadcasts; the others count them (a full room's broadcast decoded by
    every player would be the swarm's whole budget). Device-ID mappings are decoded until the
    player knows its clientNo."""

    proto = "netsync"
    context = None  # the shared zmq.Context, made on first use
    latency = JoinLatency()  # this process's recent joins: the retries' first wait
    # The loop starts a new NetSync player only while fewer than this many are waiting for their
    # number (loop.SwarmLoop: its join window): each join costs a loaded styly-netsync-server work
    # for every member of the room (network-variable syncs through its 1,024-message control
    # queue); joins faster than it answers overflow that queue and their mappings are dropped.
    JOIN_WINDOW = 8

    def __init__(self, proto, index, server, script, metrics, variation) -> None:
        super().__init__(proto, index, server, script, metrics, variation)
        from headcast.netcode.netsync.client import NetSyncClientCore
        from headcast.netcode.netsync.codec import HELLO_PROTOCOL, encode_client_hello

        # Random first: the server logs the first 8 characters of a deviceId.
        self.core = NetSyncClientCore(
            server.room,
            f"{uuid.uuid4().hex[:8]}-headcast-swarm-{index}",
            protocol=server.protocol,
            send_rate=min(60.0, RATES["netsync"] * 1.1),
        )
        self.frames = script.netsync(variation.spot)
        self.period = 1.0 / RATES["netsync"]
        self.marker: SeqLog | None = None  # (a NetSync player's board marker is a SeqLog)
        self._next: float | None = None
        self._attempt_at = 0.0
        self._socks: list = []
        self._last_rx: float | None = None
        self.silent = False
        self._hello = (
            encode_client_hello(self.core.device_id, False, server.protocol)
            if server.protocol >= HELLO_PROTOCOL
            else b""
        )
        self._hello_at = 0.0
        self._join_failed = False  # counted once per attempt
        self._retry_at: float | None = None
        self._retry_wait = 0.0
        self.retries = 0
        self._rng = random.Random(index)

    def filenos(self) -> list[int]:
        import zmq

        return [s.getsockopt(zmq.FD) for s in self._socks]

    def server_info(self) -> dict:
        v = self.core.server_version  # from the server's device-ID mapping
        return {
            "software": None if v is None else "styly-netsync-server " + ".".join(map(str, v)),
            "protocol": self.server.protocol,
            "room": self.server.room,
        }

    def start(self, now: float) -> None:
        import zmq

        if NetSyncPlayer.context is None:
            NetSyncPlayer.context = zmq.Context(io_threads=1)
            # ZeroMQ's default is 1023 sockets per context: 341 players of three sockets each.
            NetSyncPlayer.context.set(zmq.MAX_SOCKETS, ZMQ_MAX_SOCKETS)
        ctx = NetSyncPlayer.context
        self.started_at = self._attempt_at = now
        host, srv = self.server.host, self.server
        room = self.core.room_topic
        self._room = room

        def sock(kind):
            s = ctx.socket(kind)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.RECONNECT_IVL, 100)
            s.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
            self._socks.append(s)
            return s

        self.dealer = sock(zmq.DEALER)
        self.dealer.setsockopt(zmq.SNDHWM, 10)
        self.dealer.setsockopt(zmq.RCVHWM, 10)
        self.dealer.setsockopt(zmq.IMMEDIATE, 1)
        self._control = f"tcp://{host}:{srv.port}"
        self.dealer.connect(self._control)
        self._retry_wait = self.latency.first_retry()
        self._retry_at = now + self._retry_wait * (1.0 + self._rng.uniform(-RETRY_JITTER, RETRY_JITTER))
        self.sub = sock(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, 8)
        self.sub.setsockopt(zmq.SUBSCRIBE, room)
        self.sub.connect(f"tcp://{host}:{srv.pub_port or srv.port + 1}")
        if self.core.uses_transform_lane:
            self.transform = sock(zmq.DEALER)
            self.transform.setsockopt(zmq.SNDHWM, 10)
            self.transform.setsockopt(zmq.IMMEDIATE, 1)
            self.transform.connect(f"tcp://{host}:{srv.transform_port or srv.port + 2}")
        else:
            self.transform = self.dealer
        self._next = now

    def _send(self, sock, msg: bytes, now: float) -> bool:
        import zmq

        try:
            sock.send(self._room, zmq.SNDMORE | zmq.NOBLOCK)
        except zmq.Again:
            return False
        sock.send(msg, zmq.NOBLOCK)
        self.metrics.sent("netsync", self.index, len(msg) + len(self._room), now)
        return True

    def on_readable(self, now: float) -> None:
        import zmq

        if self.closed:
            return
        core, metrics, i = self.core, self.metrics, self.index
        POLLIN = zmq.POLLIN
        for s in (self.dealer, self.sub):
            for _ in range(MAX_READS):
                if not s.getsockopt(zmq.EVENTS) & POLLIN:
                    break
                frames = s.recv_multipart(zmq.NOBLOCK)
                n = sum(len(f) for f in frames)
                metrics.received("netsync", i, n, now)
                self._last_rx = now
                if s is self.sub:
                    metrics.broadcast("netsync", i, now)
                    if self.var.observer:
                        core.receive_broadcast(now, frames)
                elif not self.joined or self.var.observer:
                    core.receive_unicast(now, frames)
        if self.transform is not self.dealer:
            self.transform.getsockopt(zmq.EVENTS)  # the FD's edge: re-armed only once its state is read
        self._events(now)

    def next_deadline(self) -> float | None:
        return self._next

    def on_timer(self, now: float) -> None:
        if self.closed or self._next is None or now < self._next:
            return
        late = now - self._next
        self._next += self.period
        if self._next <= now:
            self._next = now + self.period
        core = self.core
        if self.joined:
            self.metrics.tick("netsync", late, now)
        frame = self.frames[self.script.index(self.motion_time(now))]
        msg = core.pose_message(now, frame)
        if msg is not None:
            if self._send(self.transform, msg, now):
                if self.marker is not None:
                    self.marker.add(core.policy.pose_seq, now)
            else:
                core.send_failed("no server connection or queue full")
        if core.uses_transform_lane and now >= self._hello_at:
            # The hello heartbeat alone: the core's protocol probes (a player not mapped within
            # 2 s asks in every protocol) would add six messages a second per player exactly
            # when a loaded server is slow to map them.
            if self._send(self.dealer, self._hello, now):
                self._hello_at = now + HELLO_PERIOD
        if not self.joined and self._retry_at is not None and now >= self._retry_at:
            self._ask_again(now)
        if not self.joined and not self._join_failed and now - self._attempt_at >= NETSYNC_JOIN_TIMEOUT:
            self._join_failed = True
            self.metrics.join_failed(
                "netsync",
                self.index,
                f"no device-ID mapping within {NETSYNC_JOIN_TIMEOUT:g} s (registered, never told its clientNo)",
                now,
            )
        core.handle_timer(now)
        if self._last_rx is not None:
            silent = now - self._last_rx > core.silence_timeout
            if silent and not self.silent and self.joined:
                self._out(now, f"server silent for {core.silence_timeout:g} s")
            self.silent = silent
        # Sending can consume the sockets' FD edges: read what came meanwhile now.
        self.on_readable(now)

    def _ask_again(self, now: float) -> None:
        """No device-ID mapping yet (a loaded server drops control messages when its queue is
        full, and sends a client its mapping only when it registers): register again on a new
        control connection (ZeroMQ gives it a new identity at the server's ROUTER, which the server
        treats as a reconnect and answers with the mapping), hello at once; the next ask waits
        twice as long."""
        self.retries += 1
        try:
            self.dealer.disconnect(self._control)
        except Exception:  # noqa: BLE001 - not connected yet: connecting again is what we want
            pass
        self.dealer.connect(self._control)
        self._hello_at = now
        self._retry_wait = min(RETRY_MAX, self._retry_wait * 2.0)
        self._retry_at = now + self._retry_wait * (1.0 + self._rng.uniform(-RETRY_JITTER, RETRY_JITTER))

    def _events(self, now: float) -> None:
        from headcast.netcode.netsync.client import Joined, PeerPose, ProtocolMismatch

        events = self.core.events()
        if not events:
            return
        board = self.var.board if self.var.observer else None
        for ev in events:
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
            elif isinstance(ev, ProtocolMismatch):
                self._out(now, ev.message)

    def close(self, now: float) -> None:
        if self.closed:
            return
        self.closed = True
        self._out(now, None)
        for s in self._socks:
            s.close(linger=0)
        self._socks = []


# ------------------------------------------------------------------------------- Sauerbraten
