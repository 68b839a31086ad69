"""Sans-IO NetSync client core: poses out through the send policy, mapping and room poses in.

Bytes and `now` in, bytes and events out; no sockets, no clock (DESIGN.md). The transport
(transport.py) feeds it the frames its sockets receive and sends what it returns.

- Joining needs no message: the first pose registers us; the server then unicasts the
  device-ID mapping (6), from which we learn our clientNo.
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
from struct import Struct
from dataclasses import dataclass, field

from .codec import (
    MSG_DEVICE_ID_MAPPING,
    MSG_ROOM_POSE,
    NetSyncDecodeError,
    client_pose_header,
    decode_device_id_mapping,
    decode_room_pose,
    encode_body_tail,
)
from .model import FLAG_STEALTH, DeviceMapping, PoseBody, PoseFrame
from .policy import SendPolicy

_STEALTH_FRAME = PoseFrame(FLAG_STEALTH)
_SEQ = Struct("<H")
MAX_PENDING_EVENTS = 4096


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
class ServerSilent:
    silent_for: float


@dataclass(frozen=True, slots=True)
class ServerBack:
    silent_for: float


@dataclass(frozen=True, slots=True)
class Dropped:
    reason: str
    detail: str


Event = Joined | MembersChanged | PeerPose | OwnPose | ServerSilent | ServerBack | Dropped


@dataclass
class Counters:
    sends: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    room_poses: int = 0
    mappings: int = 0
    skipped: Counter = field(default_factory=Counter)  # send policy: "rate" / "unchanged"
    drops: Counter = field(default_factory=Counter)  # reason → count (bad input, lost sends)


class NetSyncClientCore:
    def __init__(
        self,
        room_id: str,
        device_id: str,
        *,
        send_rate: float = 10.0,
        stealth: bool = False,
        silence_timeout: float = 3.0,
    ) -> None:
        self.room_id = room_id
        self.room_topic = room_id.encode("utf-8")
        self.device_id = device_id
        self.stealth = stealth
        self.silence_timeout = silence_timeout
        self.policy = SendPolicy(send_rate)
        self.counters = Counters()
        self.client_no: int | None = None
        self.members: dict[int, DeviceMapping] = {}
        self.server_version: tuple[int, int, int] | None = None
        self._header = client_pose_header(device_id)  # validates the deviceId length once
        self._events: list[Event] = []
        self._tail_of: PoseFrame | None = None  # the frame self._tail encodes
        self._tail = b""
        self._last_rx: float | None = None
        self._silent = False

    # ------------------------------------------------------------ outgoing

    def pose_message(self, now: float, frame: PoseFrame) -> bytes | None:
        """The client-pose message to send this frame, or None when the policy skips it.

        Raises PoseEncodeError for a pose that cannot be encoded (NaN, bad flags).
        """
        if self._last_rx is None:
            self._last_rx = now  # _start, inlined: once per frame
        if self.stealth:
            frame = _STEALTH_FRAME
        if frame is not self._tail_of:
            # A PoseFrame is immutable: the same object offered again (a still headset, frame after
            # frame until the heartbeat) has the same bytes, so they are not encoded again.
            self._tail = encode_body_tail(frame)
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
        old = self.members
        self.members = {m.client_no: m for m in mapping.mappings}
        joined = tuple(sorted(self.members.keys() - old.keys()))
        left = tuple(sorted(old.keys() - self.members.keys()))
        if joined or left:
            self._emit(MembersChanged(mapping.mappings, joined, left))
        mine = next((m.client_no for m in mapping.mappings if m.device_id == self.device_id), None)
        if mine is not None and mine != self.client_no:
            self._emit(Joined(mine, mapping.server_version))
        self.client_no = mine

    def receive_broadcast(self, now: float, frames: list[bytes]) -> None:
        """A SUB message: [topic, payload]."""
        if not self._envelope(frames, "broadcast"):
            return
        payload = frames[1]
        if not payload or payload[0] != MSG_ROOM_POSE:
            self.counters.drops[f"ignored type {payload[0] if payload else 'empty'}"] += 1
            return
        try:
            room = decode_room_pose(payload)
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
        for e in room.entries:
            if e.client_no == self.client_no:
                self._emit(OwnPose(e.body, e.pose_time, now))
            else:
                m = self.members.get(e.client_no)
                self._emit(PeerPose(e.client_no, m.device_id if m else None, e.body, e.pose_time, now))

    def handle_timer(self, now: float) -> None:
        if self._last_rx is None:
            self._last_rx = now  # _start, inlined: the transport calls this at every poll
        if not self._silent and now - self._last_rx > self.silence_timeout:
            self._silent = True
            self._emit(ServerSilent(now - self._last_rx))

    def events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    # ------------------------------------------------------------ internals

    def _start(self, now: float) -> None:
        if self._last_rx is None:
            self._last_rx = now  # silence is measured from our first activity

    def _alive(self, now: float) -> None:
        self._start(now)
        if self._silent:
            self._silent = False
            self._emit(ServerBack(now - self._last_rx))
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
        self.counters.drops[reason] += 1
        self._emit(Dropped(reason, detail))
