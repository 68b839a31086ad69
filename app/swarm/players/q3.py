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

# A pumped player's C-decoded snapshots reach its core at most this long after the first came (as
# the app's STEP_ABSORB: ~2 snapshots at 20/s); their broadcasts are counted then.
PUMP_ABSORB = 0.1


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
        # In game (not an observer) the ticks go through the pump's C tick (`Q3Client.send_input`,
        # as app/sinks/q3/link.py sends them): one C call per tick builds and sends the usercmd and
        # reads the socket after it; snapshots are decoded in C and reach the core in batches (at
        # most PUMP_ABSORB s after the first), so the loop does not watch the socket meanwhile.
        self.pumped = False
        self.fds_changed = False  # SwarmLoop: filenos() changed (asks it again)
        self._due: float | None = None  # the pump's next tick while the core has not taken it over

    def filenos(self) -> list[int]:
        if self.client is None or self.pumped:
            return []  # pumped: the pump reads the socket at each tick
        return list(self.client.filenos())

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
        # 20 a second for every player is most of a big swarm's protocol work. An observer's by the
        # core's own decoder, the others' by the pump (on_timer).
        if self.var.observer:  # its snapshots reach the core as they arrive (relay latency)
            self.client.core.use_native_snapshots()
        else:
            # The pump decodes the plain snapshot messages in C; the rest reach the core's Python
            # parser (joins, commands). Not with use_native_snapshots too: the core's C decoder and
            # the pump's each take the other's snapshot ring over (a reset of the ring and the
            # newest snapshot copied at every hand-over), and an entity set the first made can be
            # gone from its ring when the second is handed it (LookupError in attach_snapshots).
            self.client.step_absorb = PUMP_ABSORB
        self.client.start(now)

    def on_readable(self, now: float) -> None:
        client = self.client
        if client is None:
            return
        self.now = now
        self._due = None
        if self.pumped:  # a read the selector reported before the pump took the socket over
            self._handle(client.receive(now), now)
        else:
            client.on_readable(now)
            self._events(now)
        self._watch(client)

    def next_deadline(self) -> float | None:
        if self._due is not None:
            return self._due
        return self.client.next_deadline() if self.client is not None else None

    def on_timer(self, now: float) -> None:
        client = self.client
        if client is None:
            return
        timer = self.next_deadline()
        if timer is None or now < timer:
            return
        self.now = now
        if client.state not in LINKED:
            client.on_timer(now)
            self._events(now)
            self._watch(client)
            return
        self.metrics.tick("q3", now - timer, now)
        intent = self.intents[self.script.index(self.motion_time(now))]
        angles = intent.angles
        if self.marker is not None:
            angles = (angles[0], self.marker.yaw(now, angles[1]), angles[2])
        tracked = intent.head  # (pitch, yaw) as tracked; the usercmd's is (pitch, yaw offset)
        if self.var.observer:
            head = (tracked[0], yaw_offset(tracked[1], angles[1])) if tracked is not None else None
            client.set_input(angles, intent.forwardmove, intent.rightmove, intent.upmove, intent.user_buttons, 0, head)
            client.on_timer(now)
            self._events(now)
            return
        fast = client.send_input
        if fast is not None:
            # The pump's C tick (Q3Link.send): the input from plain numbers, the usercmd built and
            # sent, the socket read after it; the core takes the ticks over when it must come in.
            r = fast(now, angles, intent.user_buttons, intent.forwardmove, intent.rightmove, intent.upmove, 0, tracked)
            if r.__class__ is tuple:
                if r[4]:  # datagrams read, C-decoded snapshots due, or a read failed: the core's turn
                    self._due = None
                    self._handle(client.receive(now), now)
                    self._watch(client)
                else:
                    self._due = r[2]
                return
        # The tick through the core (Q3Link._send): out of the pump's reach (a command queued,
        # fragments, the silence probe), or the pump's first tick.
        self._due = None
        head = (tracked[0], yaw_offset(tracked[1], angles[1])) if tracked is not None else None
        client.set_input(angles, intent.forwardmove, intent.rightmove, intent.upmove, intent.user_buttons, 0, head)
        self._handle(client.step(now), now)
        self._handle(client.receive(now), now)
        self._watch(client)

    def _watch(self, client: Q3Client) -> None:
        """In game with the pump armed the loop leaves the socket to it; else it watches it."""
        pumped = client.send_input is not None and not self.var.observer
        if pumped != self.pumped:
            self.pumped = pumped
            self.fds_changed = True

    def _events(self, now: float) -> None:
        client = self.client
        assert client is not None
        events = []
        while (ev := client.next_event()) is not None:
            events.append(ev)
        self._handle(events, now)

    def _handle(self, events: list, now: float) -> None:
        client = self.client
        assert client is not None
        board = self.var.board if self.var.observer else None
        for ev in events:
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
        self._due = None
        self.client.close(now, "swarm stopped")  # its events: the swarm's own leave, counted next
        self._out(now, None)
        self.client = None
