"""Sans-IO NetSync client core, protocols 3–8: poses out through the send policy, hellos and
probes out on the control lane, mapping and room poses in.

Bytes and `now` in, bytes and events out; no sockets, no clock (docs/architecture.md#one-loop). The transport
(transport.py) feeds it the frames its sockets receive and sends what it returns:
`pose_message` goes on the transform lane (the control/dealer socket before protocol 7, the
separate transform socket from 7 on), `control_messages` on the control lane.

- Protocols 3–6: joining needs no message: the first pose registers us; the server then
  unicasts the device-ID mapping (6), from which we learn our clientNo.
- Protocols 7–8: the server maps only clients that said hello (19) on the control lane; poses go
  to the transform lane. The hello is repeated every second (the official client's stealth
  heartbeat period): it keeps a stealth client registered (stealth sends no poses from 7 on)
  and re-binds our control identity after a server restart, which answers it with a mapping.
- `protocol=None` detects the server's protocol: one protocol's smallest join message at a time
  (a stealth pose for 3–6, a hello for 7–8, under our deviceId, on the control lane), the newest
  protocol first (`DETECT_ORDER`), the next one only when `PROBE_STEP` s brought no answer, and
  none once one is answered. A server accepts exactly its own protocol and logs a warning for
  every other one it gets (styly-netsync-server: "Received invalid control-lane message type",
  "Deserialization failed …"), so a current server (0.16+) sees no message it rejects, and an
  older one only those of the protocols newer than its own, once per join. The protocol byte of
  the first room broadcast, or the server version in the first mapping, names the protocol
  (`ProtocolDetected`); until then no pose is sent.
- With a protocol set and no mapping after `MISMATCH_PROBE_AFTER` seconds, the same probes go
  out under a probe deviceId; a server that answers one names its protocol, and the mismatch is
  reported as `ProtocolMismatch` (never as silence). A room broadcast in another protocol does
  the same at once.
- Room poses (12) arrive on the SUB socket; the SUB filter matches topics by prefix, so the
  topic frame is compared exactly here. Every other member's entry becomes a `PeerPose`
  with the physical pose rebuilt from the XROrigin Δ; our own entry becomes an `OwnPose`:
  our body exactly as the server relayed it to everybody (what the far side sees).
- A message that fails to decode is dropped whole and counted by reason; nothing of it is used.
- No valid message for `silence_timeout` seconds → `ServerSilent`; the next one → `ServerBack`.
  Sending never stops meanwhile, so a restarted server registers us again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from struct import Struct
from typing import Sequence

from ..drops import DropCounter, detail as drop_detail
from .codec import (
    HELLO_PROTOCOL,
    MSG_DEVICE_ID_MAPPING,
    MSG_ROOM_POSE,
    PROTOCOLS,
    NetSyncDecodeError,
    check_protocol,
    client_pose_header,
    decode_device_id_mapping,
    decode_room_pose,
    encode_body_tail,
    encode_client_hello,
    encode_client_pose,
    room_id_bytes,
)
from .model import FLAG_STEALTH, DeviceMapping, PoseBody, PoseFrame
from .policy import SendPolicy
from .releases import protocol_of_version

_STEALTH_FRAME = PoseFrame(FLAG_STEALTH)
_SEQ = Struct("<H")
MAX_PENDING_EVENTS = 4096
HELLO_PERIOD = 1.0  # protocol 7+: hello once a second (the official stealth heartbeat period)
PROBE_PERIOD = 1.0  # detection / mismatch probes after a first round went unanswered
# Detection asks one protocol at a time, newest first: a server logs every message of another
# protocol as a warning, and operators read those logs. The first round waits PROBE_STEP s per
# protocol (a LAN answers in milliseconds; a late answer still names the protocol, by the
# server version in its mapping), later rounds PROBE_PERIOD s.
PROBE_STEP = 0.25
MISMATCH_PROBE_AFTER = 2.0  # seconds without a mapping before asking which protocol the server speaks
PROBE_SUFFIX = "/headcast-probe"
CONTROL_RETRY = 0.1  # a control message the socket refused (not connected yet) is retried this soon


def probe_messages(device_id: str, protocols: Sequence[int] = PROTOCOLS) -> list[bytes]:
    """Every protocol's smallest join message under `device_id`, all for the control lane: a
    stealth pose (protocols 3–6; stealth is never broadcast) or a stealth hello (7–8)."""
    return [
        encode_client_hello(device_id, True, p)
        if p >= HELLO_PROTOCOL
        else encode_client_pose(device_id, 0, _STEALTH_FRAME, p)
        for p in protocols
    ]


DETECT_ORDER = tuple(sorted(PROTOCOLS, reverse=True))  # the current release's protocol first


# Which styly-netsync-server releases speak each protocol (releases.py has the ranges).
PROTOCOL_RELEASES = {3: "0.9.0–0.10.x", 4: "0.11.x", 5: "0.12.x–0.13.x", 6: "0.14.x", 7: "0.15.x", 8: "0.16.0 or later"}


def version_text(v: tuple[int, int, int] | None, protocol: int | None = None) -> str:
    if v is not None:
        return "styly-netsync-server " + ".".join(map(str, v))
    if protocol in PROTOCOL_RELEASES:
        return f"styly-netsync-server {PROTOCOL_RELEASES[protocol]}"
    return "an unknown version"


@dataclass(frozen=True, slots=True)
class Joined:
    """We have a clientNo (first mapping, or a new number after a server restart)."""

    client_no: int
    server_version: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class MembersChanged:
    members: tuple[DeviceMapping, ...]
    joined: tuple[int, ...]
    left: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PeerPose:
    client_no: int
    device_id: str | None  # None until a mapping names this clientNo
    body: PoseBody
    pose_time: float  # the server's monotonic clock
    received: float  # our `now` when it arrived


@dataclass(frozen=True, slots=True)
class OwnPose:
    """Our own entry in a room broadcast (matched by the clientNo the mapping gave us)."""

    body: PoseBody
    pose_time: float  # the server's monotonic clock
    received: float  # our `now` when it arrived


@dataclass(frozen=True, slots=True)
class ProtocolDetected:
    """`protocol=None` found the server's protocol; poses go out from now on."""

    protocol: int
    server_version: tuple[int, int, int] | None
    how: str  # "room broadcast" / "device-ID mapping"


@dataclass(frozen=True, slots=True)
class ProtocolMismatch:
    """The server speaks another protocol than ours (`server_protocol` None: one headcast does
    not speak at all). `message` says so in words, for the user."""

    ours: int | None
    server_protocol: int | None
    server_version: tuple[int, int, int] | None
    message: str


@dataclass(frozen=True, slots=True)
class ServerSilent:
    silent_for: float


@dataclass(frozen=True, slots=True)
class ServerBack:
    silent_for: float


@dataclass(frozen=True, slots=True)
class Dropped:
    reason: str
    detail: str


Event = (
    Joined
    | MembersChanged
    | PeerPose
    | OwnPose
    | ServerSilent
    | ServerBack
    | Dropped
    | ProtocolDetected
    | ProtocolMismatch
)


@dataclass
class Counters:
    sends: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    room_poses: int = 0
    mappings: int = 0
    hellos: int = 0
    probes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # send policy: "rate" / "unchanged"
    drops: DropCounter = field(default_factory=DropCounter)  # reason → count (bad input, lost sends)


class NetSyncClientCore:
    def __init__(
        self,
        room_id: str,
        device_id: str,
        *,
        protocol: int | None = 8,
        send_rate: float = 10.0,
        stealth: bool = False,
        silence_timeout: float = 3.0,
    ) -> None:
        self.room_id = room_id
        self.room_topic = room_id_bytes(room_id)  # PoseEncodeError for one the room broadcast cannot carry
        self.device_id = device_id
        self.stealth = stealth
        self.silence_timeout = silence_timeout
        self.policy = SendPolicy(send_rate)
        self.counters = Counters()
        self.client_no: int | None = None
        self.members: dict[int, DeviceMapping] = {}
        self.server_version: tuple[int, int, int] | None = None
        self.requested_protocol = None if protocol is None else check_protocol(protocol)
        self.protocol: int | None = None
        self.mismatch: ProtocolMismatch | None = None
        client_pose_header(device_id)  # validates the deviceId length once (PoseEncodeError)
        self._events: list[Event] = []
        self._tail_of: PoseFrame | None = None  # the frame self._tail encodes
        self._tail = b""
        self._last_rx: float | None = None
        self._silent = False
        self._started: float | None = None
        self._next_control = 0.0
        self._control_at = 0.0
        self._probing = protocol is None  # detection, or (later) a mismatch probe
        self._detected_by = ""  # how detection named the protocol ("room broadcast", "device-ID mapping")
        self._probe_id = device_id  # detection registers us under our own deviceId
        self._probe_i = 0  # probes sent this diagnosis: DETECT_ORDER[i % len] goes next
        self._next_hello = 0.0
        self._last_batch = (False, False)  # (a probe, a hello) in the last control batch
        if protocol is not None:
            self._use(protocol)

    def _use(self, protocol: int) -> None:
        self.protocol = protocol
        self._header = client_pose_header(self.device_id, protocol)
        self._tail_of = None

    @property
    def uses_transform_lane(self) -> bool:
        """Poses go to a separate transform socket (protocol 7+)."""
        return self.protocol is not None and self.protocol >= HELLO_PROTOCOL

    # ------------------------------------------------------------ outgoing

    def pose_message(self, now: float, frame: PoseFrame) -> bytes | None:
        """The client-pose message to send this frame, or None when the policy skips it.

        Raises PoseEncodeError for a pose that cannot be encoded (NaN, bad flags).
        """
        if self._last_rx is None:
            self._start(now)
        protocol = self.protocol
        if protocol is None or (self.stealth and protocol >= HELLO_PROTOCOL):
            # detecting: nothing is sent until we know what to send; stealth from protocol 7 on
            # is the hello heartbeat alone (control_messages)
            self.counters.skipped["detecting" if protocol is None else "stealth (hello only)"] += 1
            return None
        if self.stealth:
            frame = _STEALTH_FRAME
        if frame is not self._tail_of:
            # A PoseFrame is immutable: the same object offered again (a still headset, frame after
            # frame until the heartbeat) has the same bytes, so they are not encoded again.
            self._tail = encode_body_tail(frame, protocol)
            self._tail_of = frame
        tail = self._tail
        policy = self.policy
        seq = policy.decide(now, tail)
        counters = self.counters
        if seq is None:
            counters.skipped[policy.last_skip] += 1
            return None
        msg = b"".join((self._header, _SEQ.pack(seq), tail))
        counters.sends += 1
        counters.bytes_sent += len(msg)
        return msg

    def control_messages(self, now: float) -> list[bytes]:
        """What goes on the control lane now: hellos (protocol 7+, once a second) and, while
        detecting or diagnosing a mismatch, every protocol's probe (once a second)."""
        if self._last_rx is None:
            self._start(now)
        started = now if self._started is None else self._started  # (set by _start)
        if (
            not self._probing
            and self.client_no is None
            and self.mismatch is None
            and now - started >= MISMATCH_PROBE_AFTER
        ):
            self._probing = True  # nothing maps us: ask which protocol the server speaks
            self._probe_id = self.device_id + PROBE_SUFFIX
            self._probe_i = 0
            self._next_control = now
        if now < self._next_control:
            return []
        out = []
        probed = hello = False
        step = HELLO_PERIOD
        if self._probing:
            out += probe_messages(self._probe_id, (DETECT_ORDER[self._probe_i % len(DETECT_ORDER)],))
            self._probe_i += 1
            self.counters.probes += 1
            probed = True
            step = PROBE_STEP if self._probe_i < len(DETECT_ORDER) else PROBE_PERIOD
        if self.protocol is not None and self.protocol >= HELLO_PROTOCOL and now >= self._next_hello:
            out.append(encode_client_hello(self.device_id, self.stealth, self.protocol))
            self.counters.hellos += 1
            self._next_hello = now + HELLO_PERIOD
            hello = True
        self._next_control = now + step
        self._control_at = now
        self._last_batch = (probed, hello)
        return out

    def control_send_failed(self) -> None:
        """The control socket refused a message (not connected yet): try again soon, not a
        whole period later — but not at every poll while the server is away. A probe that did
        not go out is sent again before the next protocol's."""
        self.counters.drops["control send: no server connection or queue full"] += 1
        self._next_control = self._control_at + CONTROL_RETRY
        probed, hello = self._last_batch
        if probed and self._probe_i:
            self._probe_i -= 1
            self.counters.probes -= 1
        if hello:
            self._next_hello = self._control_at
        self._last_batch = (False, False)

    def send_failed(self, reason: str) -> None:
        """The transport could not queue the last message (counted; its poseSeq stays used, so
        receivers see the gap). The server never got that pose, so the next frame may resend."""
        self.counters.drops[f"send: {reason}"] += 1
        self.policy.forget_last()

    # ------------------------------------------------------------ incoming

    def receive_unicast(self, now: float, frames: list[bytes]) -> None:
        """A DEALER message: [roomId, payload]."""
        if not self._envelope(frames, "unicast"):
            return
        payload = frames[1]
        if not payload or payload[0] != MSG_DEVICE_ID_MAPPING:
            self._alive(now)  # the server answered (variables, RPC…): not ours to decode
            self.counters.drops[f"ignored type {payload[0] if payload else 'empty'}"] += 1
            return
        try:
            mapping = decode_device_id_mapping(payload)
        except NetSyncDecodeError as e:
            self._drop(f"mapping: {type(e).__name__}", str(e))
            return
        self._alive(now)
        self.counters.mappings += 1
        self.server_version = mapping.server_version
        if self._probing:
            mapped = {m.device_id for m in mapping.mappings}
            if self._probe_id in mapped and not (self.protocol is not None and self.device_id in mapped):
                self._probe_answered(protocol_of_version(mapping.server_version), "device-ID mapping")
        elif self._detected_by == "room broadcast":
            # Only the server sends a mapping, and its release names its protocol: that beats the
            # protocol byte of a broadcast (junk under our topic steered detection to 6 on a 0.17.5)
            named = protocol_of_version(mapping.server_version)
            if named is not None and named != self.protocol:
                was = self.protocol
                self._use(named)
                self._detected_by = "device-ID mapping"
                self._next_control = self._next_hello = 0.0  # hello (7+) at the next call
                self._emit(
                    ProtocolDetected(
                        named, self.server_version, f"device-ID mapping, over a room broadcast in protocol {was}"
                    )
                )
        old = self.members
        self.members = {m.client_no: m for m in mapping.mappings}
        joined = tuple(sorted(self.members.keys() - old.keys()))
        left = tuple(sorted(old.keys() - self.members.keys()))
        if joined or left:
            self._emit(MembersChanged(mapping.mappings, joined, left))
        self._update_own_number()

    def _update_own_number(self) -> None:
        if self.protocol is None:
            return  # registered by a detection probe: joined once we know the protocol
        mine = next((no for no, m in self.members.items() if m.device_id == self.device_id), None)
        version = self.server_version  # (set: the members came in a mapping, which carries it)
        if mine is not None and mine != self.client_no and version is not None:
            self._emit(Joined(mine, version))
        self.client_no = mine
        if mine is not None and self._probing and self._probe_id != self.device_id:
            self._probing = False  # mapped after all (a slow server): nothing to diagnose

    def receive_broadcast(self, now: float, frames: list[bytes]) -> None:
        """A SUB message: [topic, payload]."""
        if not self._envelope(frames, "broadcast"):
            return
        payload = frames[1]
        if not payload or payload[0] != MSG_ROOM_POSE:
            self.counters.drops[f"ignored type {payload[0] if payload else 'empty'}"] += 1
            return
        if len(payload) > 1 and payload[1] != self.protocol:
            if not self._foreign_protocol(payload[1]):
                return
        try:
            room = decode_room_pose(payload, self.protocol)
        except NetSyncDecodeError as e:
            self._drop(f"room pose: {type(e).__name__}", str(e))
            return
        if room.room_id != self.room_id:
            self._drop("room pose: foreign room", f"{room.room_id!r} under topic {self.room_id!r}")
            return
        self._alive(now)
        self.counters.room_poses += 1
        if self.client_no is None:
            # Without our number we cannot tell our own entry from a peer's.
            self.counters.drops["room pose: before mapping"] += 1
            return
        for entry in room.entries:
            if entry.client_no == self.client_no:
                self._emit(OwnPose(entry.body, entry.pose_time, now))
            else:
                m = self.members.get(entry.client_no)
                self._emit(PeerPose(entry.client_no, m.device_id if m else None, entry.body, entry.pose_time, now))

    def _foreign_protocol(self, protocol: int) -> bool:
        """A room broadcast whose protocol byte is not ours. While detecting it names the server's
        protocol (True: decode it); otherwise it is a mismatch, dropped and reported."""
        if self.protocol is None and protocol in PROTOCOLS:
            self._probe_answered(protocol, "room broadcast")
            return True
        self._drop(
            f"room pose: protocol {protocol}",
            f"a room broadcast in NetSync protocol {protocol}; we speak {self.protocol}",
        )
        if self.client_no is None:
            self._mismatch(protocol if protocol in PROTOCOLS else None, None, known=protocol)
        return False

    def _probe_answered(self, protocol: int | None, how: str) -> None:
        if self.protocol is None:
            if protocol is None:
                return  # a server version we have no table entry for: its broadcast will tell
            self._probing = False
            self._use(protocol)
            self._detected_by = how
            self._next_control = self._next_hello = 0.0  # hello (7+) at the next call
            self._emit(ProtocolDetected(protocol, self.server_version, how))
            self._update_own_number()  # the probe may have registered us already
            return
        self._probing = False
        if protocol != self.protocol:
            self._mismatch(protocol, self.server_version)
        elif self.mismatch is None:
            self._emit_mismatch(
                ProtocolMismatch(
                    self.protocol,
                    protocol,
                    self.server_version,
                    f"the server ({version_text(self.server_version)}) speaks NetSync protocol {protocol} as we do, "
                    "but never registered our poses: check the ports (from protocol 7 on poses go to the transform "
                    "port, control + 2 by default)",
                )
            )

    def _mismatch(self, protocol: int | None, version: tuple[int, int, int] | None, known: int | None = None) -> None:
        if self.mismatch is not None:
            return
        theirs = (
            f"NetSync protocol {protocol}"
            if protocol is not None
            else (
                f"NetSync protocol {known}, which headcast does not speak"
                if known is not None
                else "a NetSync protocol headcast does not speak"
            )
        )
        fix = (
            f"use --netsync-protocol auto (or {protocol})"
            if protocol is not None
            else f"headcast speaks protocols {PROTOCOLS[0]}–{PROTOCOLS[-1]}"
        )
        ours = (
            f"headcast spoke {self.protocol}"
            if self.protocol is not None
            else f"headcast speaks {PROTOCOLS[0]}–{PROTOCOLS[-1]}"
        )
        self._emit_mismatch(
            ProtocolMismatch(
                self.protocol,
                protocol,
                version,
                f"server ({version_text(version, protocol)}) speaks {theirs}; {ours}: {fix}",
            )
        )

    def _emit_mismatch(self, m: ProtocolMismatch) -> None:
        self.mismatch = m
        self._emit(m)

    def handle_timer(self, now: float) -> None:
        last = self._last_rx
        if last is None:
            self._start(now)
            last = now
        if not self._silent and now - last > self.silence_timeout:
            self._silent = True
            self._emit(ServerSilent(now - last))

    def events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    # ------------------------------------------------------------ internals

    def _start(self, now: float) -> None:
        if self._last_rx is None:
            self._last_rx = now  # silence is measured from our first activity
            self._started = now

    def _alive(self, now: float) -> None:
        self._start(now)
        last = self._last_rx
        if self._silent and last is not None:  # (silent: there was a last)
            self._silent = False
            self._emit(ServerBack(now - last))
        self._last_rx = now

    def _envelope(self, frames: list[bytes], what: str) -> bool:
        self.counters.bytes_received += sum(len(f) for f in frames)
        if len(frames) != 2:
            self._drop(f"{what}: frames", f"{len(frames)} frames, expected [roomId, payload]")
            return False
        if frames[0] != self.room_topic:
            # SUB filters by prefix: room "a" also gets "ab" and "a\x00obj"
            self.counters.drops[f"{what}: other topic"] += 1
            return False
        return True

    def _emit(self, event: Event) -> None:
        if len(self._events) >= MAX_PENDING_EVENTS:  # nobody is polling: keep memory bounded
            self.counters.drops["events: not polled"] += 1
            return
        self._events.append(event)

    def _drop(self, reason: str, detail: str) -> None:
        key = self.counters.drops.add(reason)  # normalised and capped: netcode/drops.py
        self._emit(Dropped(key, drop_detail(detail)))
