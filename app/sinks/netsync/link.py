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

from headcast.app.errors import AppError, ProtocolMismatchError, UnreachableError, UsageError, usage
from headcast.netcode import address
from headcast.netcode.netsync.codec import LATEST_PROTOCOL, PROTOCOLS, client_pose_header
from headcast.netcode.netsync.events import (
    Dropped,
    Joined,
    OwnPose,
    PeerPose,
    ProtocolDetected,
    ProtocolMismatch,
    ServerBack,
    ServerSilent,
)
from headcast.netcode.netsync.model import PoseBody, PoseFrame

DEFAULT_DEALER_PORT = 5555
DEFAULT_PUB_PORT = 5556
TRANSFORM_PORT_OFFSET = 2  # protocol 7+: the official client's transform port is control + 2
PEER_STALE_S = 3.0  # a peer silent this long is dropped from the picture
MAX_PEERS = 1024  # other players kept at once (client numbers are the server's: a bound, not trust)
# The server broadcasts the room at ≤ 10 Hz and maps devices at ≤ 2 Hz: draining the client's
# sockets 30 times a second sees everything within 33 ms and costs a third of every frame.
# (Sending is not tied to this: send() runs every frame under the send policy.)
POLL_PERIOD = 1 / 30
# Before the first answer: how long a silent server is given before the status calls it "no
# answer" (the first connect, probe and its answer take milliseconds on a LAN).
NO_ANSWER_AFTER = 1.0
# Refused TCP connects (ZeroMQ retries every 0.1-1 s) before "nothing listens there" is certain.
UNREACHABLE_AFTER = 3

# What each protocol number means to a user: the releases that speak it (styly-netsync-server).
PROTOCOL_HELP = (
    "3 = styly-netsync-server 0.9-0.10, 4 = 0.11, 5 = 0.12-0.13, 6 = 0.14, 7 = 0.15, 8 = 0.16 and later (current)"
)


def parse_address(text: str) -> tuple[str, int, int, int | None]:
    """HOST[:CONTROL[:PUB[:TRANSFORM]]] → (host, control, pub, transform or None).

    PUB defaults to CONTROL + 1; TRANSFORM (used from protocol 7 on) None = not given here."""
    names = ("CONTROL_PORT", "PUB_PORT", "TRANSFORM_PORT")
    host, ports = usage(lambda: address.parse_address(text, DEFAULT_DEALER_PORT, option="--netsync", ports=names))
    dealer = ports[0]
    pub = ports[1] if len(ports) > 1 else dealer + 1
    transform = ports[2] if len(ports) > 2 else None
    return host, dealer, pub, transform


def resolve_transform_port(control: int, in_address: int | None, configured: int, source: str) -> int:
    """The transform port from the address's fourth part or netsync.transform_port (0 = control + 2).
    Both given and different: refused, naming both."""
    if not 0 <= configured < 65536:
        raise UsageError(
            f"{source}: netsync.transform_port = {configured}: expected 1..65535, or 0 for "
            f"the control port + {TRANSFORM_PORT_OFFSET}"
        )
    if in_address is not None and configured and configured != in_address:
        raise UsageError(f"the transform port is given twice: {in_address} in --netsync and {configured} from {source}")
    return in_address or configured or control + TRANSFORM_PORT_OFFSET


def parse_protocol(value: object, source: str = "--netsync-protocol") -> int | None:
    """netsync.protocol: "auto" → None (detect), or one of PROTOCOLS."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    try:
        protocol = int(text)
    except ValueError:
        protocol = None
    if protocol not in PROTOCOLS:
        where = source if source.startswith("--") else f"{source}: netsync.protocol ="
        raise UsageError(
            f"{where} {value!r}: expected auto or a NetSync protocol {PROTOCOLS[0]}..{PROTOCOLS[-1]} ({PROTOCOL_HELP})"
        )
    return protocol


def version_str(v: tuple[int, ...] | None) -> str:
    return "unknown" if v is None else ".".join(map(str, v))


def drop_text(reason: str, n: int) -> str:
    """A drop reason of the client core, counted, as a user reads it: "dropped 12 room poses: protocol 3"."""
    what, sep, why = reason.partition(": ")
    if not sep:
        return f"dropped {n}: {reason}"
    if what == "room pose":
        what = "room pose" if n == 1 else "room poses"
    elif what == "mapping":
        what = "device-ID mapping" if n == 1 else "device-ID mappings"
    else:
        what = f"{what} message" if n == 1 else f"{what} messages"
    return f"dropped {n} {what}: {why}"


def default_device_id() -> str:
    """Stable per machine and user, so the server gives back the same clientNo on reconnect."""
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers): any stable string will do
        user = "user"
    return f"headcast-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{socket.gethostname()}/{user}')}"


class NetSyncLink:
    """`protocol` None = detect the server's (the default, "auto"); an int speaks that one and a
    server speaking another is reported as a mismatch (`mismatch`, state "protocol mismatch")."""

    def __init__(
        self,
        host: str,
        dealer_port: int,
        pub_port: int,
        room: str,
        device_id: str,
        send_rate: float,
        stealth: bool,
        clock: Callable[[], float] = time.perf_counter,
        *,
        protocol: int | None = None,
        transform_port: int | None = None,
    ) -> None:
        self.clock = clock
        self.transform_port = dealer_port + TRANSFORM_PORT_OFFSET if transform_port is None else transform_port
        self.address = f"{host}:{dealer_port}/{pub_port}"
        self.room = room
        self.device_id = device_id
        self.host, self.dealer_port, self.pub_port = host, dealer_port, pub_port
        # Here, not at the top: ZeroMQ is imported only by a run that joins a NetSync server (start-up).
        from headcast.netcode.netsync.transport import NetSyncClient

        self.client = NetSyncClient(
            host,
            dealer_port,
            pub_port,
            room,
            device_id,
            transform_port=self.transform_port,
            protocol=protocol,
            send_rate=send_rate,
            stealth=stealth,
            watch_tcp=True,
            drain_after_send=False,  # poll() reads the control socket: a pose's send is only its send
            sub_thread=True,  # the room broadcasts are read off the frame thread (when the C extension is built)
        )
        self._core = self.client.core
        self._header_len = len(client_pose_header(device_id))  # `11 | protocol | len | deviceId`, any protocol
        self._counters = self._core.counters
        self.skipped = self._counters.skipped  # the send policy's skips by reason (the sink counts its own there)
        # Protocol changes seen (ProtocolDetected): the same PoseFrame encodes to other bytes after one
        # (the sink's mirror of the policy's "unchanged" test reads it)
        self.protocol_changes = 0
        self._policy = self._core.policy
        self._state = "connecting"
        self._detail = f"waiting for {self.address} room {room!r}, " + (
            "detecting the NetSync protocol" if protocol is None else f"NetSync protocol {protocol}"
        )
        self._started = clock()
        self.closed = False
        self._why_at_close = ""
        self.joined_at: float | None = None  # clock time the server first mapped us
        self.client_no: int | None = None
        self.mismatch: ProtocolMismatch | None = None
        self.own_body: PoseBody | None = None
        self.own_raw: bytes | None = None  # own_body's bytes as relayed (when the C decoder read them)
        self.others: dict[int, PoseBody] = {}
        self._others_seen: dict[int, float] = {}
        self._drop_reasons: dict[str, str] = {}  # reason → the latest detail (Dropped events)
        self.next_poll = 0.0  # the clock time poll() next reads (the sink's poll_at)

    @property
    def protocol(self) -> int | None:
        """The protocol spoken: the one asked for, or the detected one (None while detecting)."""
        return self._core.protocol

    @property
    def model_protocol(self) -> int:
        """The protocol our bodies are encoded in for the far side's model: ours, the latest while detecting."""
        return self._core.protocol or LATEST_PROTOCOL

    @property
    def server_version(self) -> tuple[int, int, int] | None:
        return self._core.server_version

    @property
    def drops(self) -> dict[str, int]:
        """Messages dropped by the client core, per reason (only reasons reported as `Dropped`:
        undecodable or foreign room poses and mappings, not the routine ones such as our
        own broadcast before the mapping named us)."""
        counts = self._counters.drops
        return {r: counts[r] for r in self._drop_reasons if counts[r]}

    def drops_text(self) -> str:
        return "; ".join(drop_text(r, n) for r, n in sorted(self.drops.items(), key=lambda rn: -rn[1]))

    def _where(self) -> str:
        return f"protocol {self.protocol}, server {version_str(self.server_version)}"

    @property
    def state(self) -> str:
        if self.closed:
            return "disconnected"
        if self._unanswered() is not None:
            return "no answer"
        return self._state

    @property
    def detail(self) -> str:
        if self.closed:
            return "left the room (NetSync has no leave message: the server drops us after 5 s)"
        why = self._unanswered()
        return self._detail if why is None else why

    def _unanswered(self) -> str | None:
        """The status line's why, while nothing has come back once a server could have answered
        (None: it has answered, or it is early)."""
        if self.answered or self.mismatch is not None:
            return None
        silent = self.clock() - self._started
        if silent < NO_ANSWER_AFTER:
            return None
        return self._why_silent(f" for {silent:.0f} s")

    def _why_silent(self, how_long: str = "") -> str:
        """Why a server says nothing, as far as the TCP connection ZeroMQ keeps retrying tells."""
        tcp = self.client.tcp_state
        if not tcp.ever_connected:
            retry = "" if tcp.retry_ms is None else f", every {tcp.retry_ms / 1000:g} s"
            return (
                f"cannot connect to TCP {self.host}:{self.dealer_port}{how_long} ({tcp.retries} tries{retry}): "
                "nothing listens there, or a firewall drops it"
            )
        return (
            f"TCP {self.host}:{self.dealer_port} is connected but nothing came back{how_long}: is it a "
            f"NetSync server, and is its PUB port {self.pub_port}?"
        )

    @property
    def failure(self) -> AppError | None:
        """A server that answered in another protocol than the one set will not let us in however
        long we wait: this sink's error (exit 4)."""
        if self.mismatch is not None and self.client_no is None:
            return ProtocolMismatchError(f"netsync: {self.mismatch.message}")
        return None

    def join_timeout_error(self, timeout: float) -> AppError:
        """Not in the room `timeout` s into the first join: why, as this sink's error (exit 3)."""
        t = f"{timeout:g} s"
        if self.answered:
            detail = self._why_at_close if self.closed else self.detail
            return UnreachableError(f"netsync: {self.address} answered but did not let us in within {t} ({detail})")
        return UnreachableError(
            f"netsync: no answer from {self.address} within {t} ({self._why_silent()}; is "
            "the server running and the address/port right?)"
        )

    @property
    def unreachable(self) -> bool:
        """Nothing listens at the control port: ZeroMQ's connects were refused UNREACHABLE_AFTER
        times and none ever succeeded (app/run/outcome.py ends the run on it at once)."""
        if self.answered or self.closed:
            return False
        tcp = self.client.tcp_state
        return not tcp.ever_connected and tcp.retries >= UNREACHABLE_AFTER

    @property
    def received(self) -> int:
        """Bytes received from the server so far (app/run/outcome.py: a joined server gone silent is lost)."""
        return self._counters.bytes_received

    @property
    def answered(self) -> bool:
        """Anything came from the server (a mapping, a broadcast, even one we could not use)."""
        return self._counters.bytes_received > 0

    @property
    def joined(self) -> bool:
        """The server has registered us (a device-ID mapping named our clientNo)."""
        return self.client_no is not None

    def send(self, frame: PoseFrame, now: float) -> tuple[int, int, float, int, bytes] | None:
        """(message bytes, body bytes, clock time handed to the socket, poseSeq, the message) or None
        (policy, closed). The message's last `body bytes` are the body as sent (poseSeq first)."""
        if self.closed or not self.client.send_pose(now, frame):
            return None
        t_wire = self.clock()
        msg = self._core.last_pose  # (set by this send: only a pose the policy let go is sent)
        nbytes = len(msg)
        return nbytes, nbytes - self._header_len, t_wire, self._policy.pose_seq, msg

    def poll(self, now: float) -> None:
        if now < self.next_poll or self.closed:
            return
        self.next_poll = now + POLL_PERIOD
        for ev in self.client.poll(now):
            if isinstance(ev, OwnPose):  # the common one first: every broadcast carries it
                self.own_body, self.own_raw = ev.body, ev.raw
            elif isinstance(ev, PeerPose):
                no = ev.client_no
                if no not in self.others and len(self.others) >= MAX_PEERS:
                    self._forget_stalest()
                self.others[no] = ev.body
                self._others_seen[no] = now
            elif isinstance(ev, Joined):
                self.client_no = ev.client_no
                if self.joined_at is None:
                    self.joined_at = now
                self._state = "connected"
                self._detail = f"client #{ev.client_no} in room {self.room!r}, {self._where()}"
            elif isinstance(ev, ServerSilent):
                if self.mismatch is not None and self.client_no is None:
                    continue  # the mismatch named is the news, not the silence after it
                self._state = "server silent"
                self._detail = f"nothing from {self.address} for {ev.silent_for:.1f} s (still sending)"
            elif isinstance(ev, ServerBack):
                if self.mismatch is not None and self.client_no is None:
                    continue  # answering at last does not undo the mismatch it named
                self._state = "connected" if self.client_no is not None else "connecting"
                if self.client_no is not None:
                    self._detail = f"client #{self.client_no} in room {self.room!r}, {self._where()}"
            elif isinstance(ev, Dropped):
                self._drop_reasons[ev.reason] = ev.detail
            elif isinstance(ev, ProtocolDetected):
                self.protocol_changes += 1
                if self.client_no is None:
                    self._detail = f"{self._where()} (detected from the {ev.how}); joining room {self.room!r}"
            elif isinstance(ev, ProtocolMismatch):
                self.mismatch = ev
                if self.client_no is None:
                    self._state = "protocol mismatch"
                    self._detail = ev.message
        if self._others_seen:
            for no, seen in list(self._others_seen.items()):
                if now - seen > PEER_STALE_S:
                    del self._others_seen[no]
                    self.others.pop(no, None)

    def _forget_stalest(self) -> None:
        """Room for one more peer: the one heard from longest ago goes (only past MAX_PEERS)."""
        no = min(self._others_seen, key=self._others_seen.__getitem__)
        del self._others_seen[no]
        self.others.pop(no, None)

    def close(self) -> None:
        # NetSync has no leave message: the server drops us after its 5 s timeout. Closing the
        # sockets (LINGER 0) is the whole disconnect.
        if self.closed:
            return
        self._why_at_close = self.detail  # what join_timeout_error says once we have left
        self.client.close()
        self.closed = True
