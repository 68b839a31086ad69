"""A live NetSync connection for the sink: one client in the room.

The room broadcast carries our own entry too; the client core hands it back as `OwnPose`,
our body exactly as the server relayed it to everybody, so the sink can show what the far
side really receives without a second participant. (A stealth client is never broadcast,
so in stealth mode there is no own body to show.)
"""
from __future__ import annotations

import getpass
import socket
import time
import uuid
from typing import Callable

from headcast.app.errors import UsageError
from headcast.netcode.netsync.client import Joined, OwnPose, PeerPose, ServerBack, ServerSilent
from headcast.netcode.netsync.model import PoseBody, PoseFrame
from headcast.netcode.netsync.transport import NetSyncClient

DEFAULT_DEALER_PORT = 5555
DEFAULT_PUB_PORT = 5556
PEER_STALE_S = 3.0  # a peer silent this long is dropped from the picture
# The server broadcasts the room at ≤ 10 Hz and maps devices at ≤ 2 Hz: draining the client's
# sockets 30 times a second sees everything within 33 ms and costs a third of every frame.
# (Sending is not tied to this: send() runs every frame under the send policy.)
POLL_PERIOD = 1 / 30


def parse_address(text: str) -> tuple[str, int, int]:
    """HOST[:DEALER[:PUB]] (PUB defaults to DEALER + 1)."""
    parts = text.split(":")
    if not parts[0] or len(parts) > 3:
        raise UsageError(f"--netsync {text!r}: expected HOST, HOST:DEALER_PORT or HOST:DEALER_PORT:PUB_PORT")
    try:
        dealer = int(parts[1]) if len(parts) > 1 else DEFAULT_DEALER_PORT
        pub = int(parts[2]) if len(parts) > 2 else dealer + 1
    except ValueError:
        raise UsageError(f"--netsync {text!r}: ports must be numbers") from None
    if not (0 < dealer < 65536 and 0 < pub < 65536):
        raise UsageError(f"--netsync {text!r}: ports must be 1..65535")
    return parts[0], dealer, pub


def default_device_id() -> str:
    """Stable per machine and user, so the server gives back the same clientNo on reconnect."""
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers): any stable string will do
        user = "user"
    return f"headcast-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{socket.gethostname()}/{user}')}"


class NetSyncLink:
    def __init__(self, host: str, dealer_port: int, pub_port: int, room: str, device_id: str,
                 send_rate: float, stealth: bool, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.address = f"{host}:{dealer_port}/{pub_port}"
        self.room = room
        self.device_id = device_id
        self.client = NetSyncClient(host, dealer_port, pub_port, room, device_id,
                                    send_rate=send_rate, stealth=stealth)
        self._header_len = 3 + len(device_id.encode())
        self._counters = self.client.core.counters
        self._policy = self.client.core.policy
        self.state = "connecting"
        self.detail = f"waiting for {self.address} room {room!r}"
        self.client_no: int | None = None
        self.own_body: PoseBody | None = None
        self.others: dict[int, PoseBody] = {}
        self._others_seen: dict[int, float] = {}
        self._next_poll = 0.0

    @property
    def joined(self) -> bool:
        """The server has registered us (a device-ID mapping named our clientNo)."""
        return self.client_no is not None

    def send(self, frame: PoseFrame, now: float) -> tuple[int, int, float, int] | None:
        """(message bytes, body bytes, clock time handed to the socket, poseSeq) or None (policy)."""
        counters = self._counters
        before = counters.bytes_sent
        if not self.client.send_pose(now, frame):
            return None
        t_wire = self.clock()
        nbytes = counters.bytes_sent - before
        return nbytes, nbytes - self._header_len, t_wire, self._policy.pose_seq

    def poll(self, now: float) -> None:
        if now < self._next_poll:
            return
        self._next_poll = now + POLL_PERIOD
        for ev in self.client.poll(now):
            if isinstance(ev, OwnPose):  # the common one first: every broadcast carries it
                self.own_body = ev.body
            elif isinstance(ev, PeerPose):
                self.others[ev.client_no] = ev.body
                self._others_seen[ev.client_no] = now
            elif isinstance(ev, Joined):
                self.client_no = ev.client_no
                self.state = "connected"
                self.detail = f"client #{ev.client_no} in room {self.room!r}, server {'.'.join(map(str, ev.server_version))}"
            elif isinstance(ev, ServerSilent):
                self.state = "server silent"
                self.detail = f"nothing from {self.address} for {ev.silent_for:.1f} s (still sending)"
            elif isinstance(ev, ServerBack):
                self.state = "connected" if self.client_no is not None else "connecting"
        if self._others_seen:
            for no, seen in list(self._others_seen.items()):
                if now - seen > PEER_STALE_S:
                    del self._others_seen[no]
                    self.others.pop(no, None)

    def close(self) -> None:
        # NetSync has no leave message: the server drops us after its 5 s timeout. Closing the
        # sockets (LINGER 0) is the whole disconnect.
        self.client.close()
