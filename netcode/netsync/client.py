"""Sans-IO NetSync client core, protocols 3–8: poses out through the send policy, hellos and
probes out on the control lane, mapping and room poses in.

Bytes and `now` in, bytes and events out; no sockets, no clock (docs/architecture.md#one-loop),
in netcode/driver.py's shape: the transport (transport.py) hands it each message its sockets
receive as `Incoming(lane, frames)` (`receive_datagram`) and sends each `Outgoing(lane, frames)`
that `datagrams_to_send` returns: the pose set last (`set_pose`) on the pose lane (the control
DEALER before protocol 7, the transform DEALER from 7 on), hellos and probes on the control lane.
The join state machine is one table (`TRANSITIONS`); the events are in events.py, the errors
in errors.py.

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

import enum
from collections import Counter, deque
from dataclasses import dataclass, field
from struct import Struct
from typing import Literal, NamedTuple, Sequence

from ..counters import CoreCounters
from ..drops import DropCounter, detail as drop_detail
from .codec import (
    HELLO_PROTOCOL,
    MSG_DEVICE_ID_MAPPING,
    MSG_ROOM_POSE,
    NATIVE,
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
from .events import (
    Dropped,
    Event,
    Joined,
    MembersChanged,
    OwnPose,
    PeerPose,
    ProtocolDetected,
    ProtocolMismatch,
    ServerBack,
    ServerSilent,
)
from .model import FLAG_STEALTH, DeviceMapping, PoseFrame
from .policy import SendPolicy
from .releases import protocol_of_version

_STEALTH_FRAME = PoseFrame(FLAG_STEALTH)
_SEQ = Struct("<H")
_NATIVE = NATIVE  # the C codec (codec.py), or None: the pure-Python paths
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


@dataclass
class Counters(CoreCounters):
    """What the core counted; reads as a mapping too (`counters["drops"]`: every drop)."""

    sends: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    room_poses: int = 0
    mappings: int = 0
    hellos: int = 0
    probes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # send policy: "rate" / "unchanged"
    drops: DropCounter = field(default_factory=DropCounter)  # reason → count (bad input, lost sends)


# ------------------------------------------------------------------ the lanes and their messages

LANE_CONTROL = "control"  # DEALER ↔ the control port: mappings in; hellos, probes (and poses before 7) out
LANE_TRANSFORM = "transform"  # DEALER → the transform port (protocol 7+): poses out
LANE_ROOM = "room"  # SUB ← the PUB port: room broadcasts in


class Incoming(NamedTuple):
    """One ZeroMQ message that arrived on `lane` (`LANE_CONTROL` or `LANE_ROOM`): its frames,
    [roomId, payload] when well-formed."""

    lane: str
    frames: Sequence[bytes]


class Outgoing(NamedTuple):
    """One ZeroMQ message to send on `lane`: `frames` = (roomId, payload); `kind` is "pose",
    "hello" or "probe" (what `send_failed` is told back)."""

    lane: str
    frames: tuple[bytes, bytes]
    kind: str


# ------------------------------------------------------------------ the state machine, one table


class State(enum.Enum):
    """Where the core is in joining the room (the silence of a server is a flag, `silent`, beside it)."""

    IDLE = "idle"  # made, not connected
    DETECTING = "detecting"  # protocol=None: asking which protocol the server speaks
    JOINING = "joining"  # protocol known, no clientNo yet
    JOINED = "joined"  # a device-ID mapping named our clientNo
    MISMATCH = "mismatch"  # the server speaks another protocol (or never registers us): reported
    CLOSED = "closed"


# (state, what happened) → the next state. A pair not in the table changes nothing (a mapping
# while closed, a second mismatch); every state change goes through it (`_move`).
TRANSITIONS: dict[tuple[State, str], State] = {
    (State.IDLE, "connect"): State.JOINING,
    (State.IDLE, "connect detecting"): State.DETECTING,
    (State.DETECTING, "detected"): State.JOINING,
    (State.DETECTING, "mismatch"): State.MISMATCH,
    (State.JOINING, "mapped"): State.JOINED,
    (State.JOINING, "mismatch"): State.MISMATCH,
    (State.JOINED, "unmapped"): State.JOINING,  # a mapping without us (a server restart forgot us)
    (State.MISMATCH, "mapped"): State.JOINED,  # mapped after all (a slow server)
    (State.IDLE, "close"): State.CLOSED,
    (State.DETECTING, "close"): State.CLOSED,
    (State.JOINING, "close"): State.CLOSED,
    (State.JOINED, "close"): State.CLOSED,
    (State.MISMATCH, "close"): State.CLOSED,
}


class NetSyncClientCore:
    """The sans-IO NetSync client (netcode/driver.py's `Core`): `connect`, `receive_datagram`,
    `datagrams_to_send`, `get_timer` / `handle_timer`, `next_event`, `close`, `state`, `counters`.

    `set_pose(frame)` offers the latest frame's pose: the next `datagrams_to_send` puts it
    through the send policy (rate cap, heartbeat) once. `observe=False` makes a load client: room
    broadcasts are counted, not decoded, and mappings are decoded only until we have our number;
    `mismatch_probes=False` never asks an unmapped server which protocol it speaks (the hello
    heartbeat alone: a swarm's retries ask again instead)."""

    def __init__(
        self,
        room_id: str,
        device_id: str,
        *,
        protocol: int | None = 8,
        send_rate: float = 10.0,
        stealth: bool = False,
        silence_timeout: float = 3.0,
        observe: bool = True,
        mismatch_probes: bool = True,
    ) -> None:
        self.room_id = room_id
        self.room_topic = room_id_bytes(room_id)  # PoseEncodeError for one the room broadcast cannot carry
        self.device_id = device_id
        self.stealth = stealth
        self.silence_timeout = silence_timeout
        self.observe = observe
        self.mismatch_probes = mismatch_probes
        self.policy = SendPolicy(send_rate)
        self._counters = Counters()
        self.client_no: int | None = None
        self.members: dict[int, DeviceMapping] = {}
        self.server_version: tuple[int, int, int] | None = None
        self.requested_protocol = None if protocol is None else check_protocol(protocol)
        self.protocol: int | None = None
        self.mismatch: ProtocolMismatch | None = None
        client_pose_header(device_id)  # validates the deviceId length once (PoseEncodeError)
        self._state = State.IDLE
        self._events: deque[Event] = deque()
        self._pose: PoseFrame | None = None  # set_pose's frame, not offered yet
        self._tail_of: PoseFrame | None = None  # the frame self._tail encodes
        self._tail = b""
        self.last_pose = b""  # the client-pose message of the last pose the policy let go
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
        self.pose_lane = LANE_CONTROL
        if protocol is not None:
            self._use(protocol)

    def _use(self, protocol: int) -> None:
        self.protocol = protocol
        self._header = client_pose_header(self.device_id, protocol)
        self._tail_of = None
        self.pose_lane = LANE_TRANSFORM if protocol >= HELLO_PROTOCOL else LANE_CONTROL

    def _move(self, what: str) -> None:
        self._state = TRANSITIONS.get((self._state, what), self._state)

    # ------------------------------------------------------------ the driver API

    @property
    def state(self) -> State:
        return self._state

    @property
    def counters(self) -> Counters:
        return self._counters

    @property
    def silent(self) -> bool:
        """No valid message for `silence_timeout` s (a `ServerSilent` was reported, no `ServerBack` yet)."""
        return self._silent

    @property
    def uses_transform_lane(self) -> bool:
        """Poses go to a separate transform socket (protocol 7+)."""
        return self.protocol is not None and self.protocol >= HELLO_PROTOCOL

    @property
    def pose_seq(self) -> int:
        """The poseSeq of the last pose that went out."""
        return self.policy.pose_seq

    def connect(self, now: float) -> None:
        """Start: silence is measured from here, the first hello / probe is due at once."""
        if self._state is State.IDLE:
            self._last_rx = now
            self._started = now
            self._move("connect detecting" if self.protocol is None else "connect")

    def set_pose(self, frame: PoseFrame) -> None:
        """The latest frame's pose: the next `datagrams_to_send` offers it to the send policy once."""
        self._pose = frame

    def pose_now(self, now: float, frame: PoseFrame) -> bytes | Literal[False] | None:
        """The frame loop's pose in one call, when nothing else is due (the common frame): the
        client-pose message for `pose_lane`, None when the policy skips it (counted as
        `datagrams_to_send` counts it), or False when `set_pose` + `datagrams_to_send` must run
        instead (not connected yet, closed, a pose already set, a hello or probe due). The same
        bytes and counts as that path."""
        state = self._state
        if (
            state is State.IDLE
            or state is State.CLOSED
            or self._pose is not None
            or now >= self._next_control
            or (not self._probing and self.client_no is None and self.mismatch is None and self.mismatch_probes)
        ):
            return False
        return self._pose_message(now, frame)

    def datagrams_to_send(self, now: float) -> list[Outgoing]:
        """The pose set last (when the policy lets it go), then what is due on the control lane:
        hellos (protocol 7+, once a second) and, while detecting or diagnosing a mismatch, one
        protocol's probe at a time. Raises PoseEncodeError for a pose that cannot be encoded."""
        if self._state is State.IDLE:
            self.connect(now)
        elif self._state is State.CLOSED:
            return []
        out: list[Outgoing] = []
        frame = self._pose
        if frame is not None:
            self._pose = None
            msg = self._pose_message(now, frame)
            if msg is not None:
                out.append(Outgoing(self.pose_lane, (self.room_topic, msg), "pose"))
        if now >= self._next_control or (
            not self._probing and self.client_no is None and self.mismatch is None and self.mismatch_probes
        ):
            self._control_messages(now, out)
        return out

    def send_failed(self, out: Outgoing) -> None:
        """The transport could not queue `out` (no connection yet, or its queue is full): counted.
        A pose's poseSeq stays used (receivers see the gap) and the next frame may resend; a
        refused control message is tried again soon (CONTROL_RETRY), a probe before the next
        protocol's. Tell it once per batch of control messages."""
        if out.kind == "pose":
            self._counters.drops["send: no server connection or queue full"] += 1
            self.policy.forget_last()
            return
        self._counters.drops["control send: no server connection or queue full"] += 1
        self._next_control = self._control_at + CONTROL_RETRY
        probed, hello = self._last_batch
        if probed and self._probe_i:
            self._probe_i -= 1
            self._counters.probes -= 1
        if hello:
            self._next_hello = self._control_at
        self._last_batch = (False, False)

    def hello_now(self) -> None:
        """Say hello (protocol 7+) at the next `datagrams_to_send`: a new control connection
        needs one to be registered (and answered with a mapping)."""
        self._next_control = self._next_hello = 0.0

    def receive_datagram(self, data: Incoming, now: float) -> None:
        """One message from the server: a room broadcast (`LANE_ROOM`) or a control-lane unicast."""
        if self._state is State.IDLE:
            self.connect(now)
        elif self._state is State.CLOSED:
            return
        if data.lane == LANE_ROOM:
            self._receive_broadcast(now, data.frames)
        else:
            self._receive_unicast(now, data.frames)

    def get_timer(self) -> float | None:
        """When `handle_timer` (then `datagrams_to_send`) is next needed: the silence deadline, the
        next hello or probe, the moment an unmapped client starts asking which protocol the server
        speaks. None before `connect` and after `close`."""
        if self._state is State.IDLE or self._state is State.CLOSED:
            return None
        times = []
        if not self._silent and self._last_rx is not None:
            times.append(self._last_rx + self.silence_timeout)
        if self._probing:
            times.append(self._next_control)
        elif self.uses_transform_lane:  # the hello heartbeat (a refused one: CONTROL_RETRY later)
            times.append(max(self._next_control, self._next_hello))
        if not self._probing and self.mismatch_probes and self.client_no is None and self.mismatch is None:
            times.append((self._started or 0.0) + MISMATCH_PROBE_AFTER)
        return min(times) if times else None

    def handle_timer(self, now: float) -> None:
        """Report a server silent for `silence_timeout` s (once per outage)."""
        if self._state is State.IDLE:
            self.connect(now)
        last = self._last_rx
        if not self._silent and last is not None and now >= last + self.silence_timeout:
            self._silent = True
            self._emit(ServerSilent(now - last))

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def take_events(self) -> list[Event]:
        """Every pending event, oldest first, at once (what `next_event` until None gives)."""
        events = self._events
        if not events:
            return []
        taken = list(events)
        events.clear()
        return taken

    def receive_broadcasts(self, messages: Sequence[Sequence[bytes]], now: float) -> bool:
        """Room broadcasts (each message's frames) in one call: the same counts, drops and events as
        `receive_datagram(Incoming(LANE_ROOM, frames), now)` for each in turn. The common one (our
        room's topic, our protocol, decoded whole by the C codec) is handled here without a call of
        its own per step (on this VM a cold Python call costs ~5-8 us); anything else goes the way
        receive_datagram takes it. False when each was the common one: `get_timer` can only have
        moved later (the silence deadline, with the last message's time)."""
        native = _NATIVE
        if native is None or self._state is not State.JOINED or not self.observe:
            for frames in messages:
                self.receive_datagram(Incoming(LANE_ROOM, frames), now)
            return True
        moved = False
        topic, counters, events, members = self.room_topic, self._counters, self._events, self.members
        for frames in messages:
            protocol, own = self.protocol, self.client_no  # (a message handed on below may change them)
            got = None
            if len(frames) == 2 and frames[0] == topic and own is not None and protocol is not None:
                payload = frames[1]
                if len(payload) > 1 and payload[0] == MSG_ROOM_POSE and payload[1] == protocol:
                    got = native.decode_room(payload, protocol, topic, own)
            if got is None or self._state is not State.JOINED:
                self.receive_datagram(Incoming(LANE_ROOM, frames), now)
                moved = True
                continue
            counters.bytes_received += len(topic) + len(payload)
            if self._silent:  # back: the silence deadline is armed again
                self._alive(now)
                moved = True
            else:
                self._last_rx = now
            counters.room_poses += 1
            own_raw = got[2]
            for entry in got[1]:
                if len(events) >= MAX_PENDING_EVENTS:  # (as _emit)
                    counters.drops["events: not polled"] += 1
                    continue
                no = entry.client_no
                if no == own:
                    events.append(OwnPose(entry.body, entry.pose_time, now, own_raw))
                else:
                    m = members.get(no)
                    events.append(PeerPose(no, m.device_id if m else None, entry.body, entry.pose_time, now))
        return moved

    def close(self, now: float) -> None:
        """Done (NetSync has no leave message: the server drops a silent client after 5 s)."""
        self._move("close")
        self._pose = None

    # ------------------------------------------------------------ outgoing

    def _pose_message(self, now: float, frame: PoseFrame) -> bytes | None:
        """The client-pose message for `frame`, or None when the policy skips it."""
        protocol = self.protocol
        counters = self._counters
        if protocol is None or (self.stealth and protocol >= HELLO_PROTOCOL):
            # detecting: nothing is sent until we know what to send; stealth from protocol 7 on
            # is the hello heartbeat alone (the control lane)
            counters.skipped["detecting" if protocol is None else "stealth (hello only)"] += 1
            return None
        if self.stealth:
            frame = _STEALTH_FRAME
        if frame is not self._tail_of:
            # A PoseFrame is immutable: the same object offered again (a still headset, frame after
            # frame until the heartbeat) has the same bytes, so they are not encoded again. The C
            # codec straight away (encode_body_tail's own first step: one call, not three).
            tail = None if _NATIVE is None else _NATIVE.encode(b"", frame, -1, protocol)
            self._tail = encode_body_tail(frame, protocol) if tail is None else tail
            self._tail_of = frame
        tail = self._tail
        policy = self.policy
        seq = policy.decide(now, tail)
        if seq is None:
            counters.skipped[policy.last_skip] += 1
            return None
        msg = self.last_pose = b"".join((self._header, _SEQ.pack(seq), tail))
        counters.sends += 1
        counters.bytes_sent += len(msg)
        return msg

    def _control_messages(self, now: float, out: list[Outgoing]) -> None:
        started = now if self._started is None else self._started  # (set by connect)
        if (
            not self._probing
            and self.mismatch_probes
            and self.client_no is None
            and self.mismatch is None
            and now - started >= MISMATCH_PROBE_AFTER
        ):
            self._probing = True  # nothing maps us: ask which protocol the server speaks
            self._probe_id = self.device_id + PROBE_SUFFIX
            self._probe_i = 0
            self._next_control = now
        if now < self._next_control:
            return
        probed = hello = False
        step = HELLO_PERIOD
        room, counters = self.room_topic, self._counters
        if self._probing:
            (probe,) = probe_messages(self._probe_id, (DETECT_ORDER[self._probe_i % len(DETECT_ORDER)],))
            out.append(Outgoing(LANE_CONTROL, (room, probe), "probe"))
            self._probe_i += 1
            counters.probes += 1
            probed = True
            step = PROBE_STEP if self._probe_i < len(DETECT_ORDER) else PROBE_PERIOD
        if self.protocol is not None and self.protocol >= HELLO_PROTOCOL and now >= self._next_hello:
            msg = encode_client_hello(self.device_id, self.stealth, self.protocol)
            out.append(Outgoing(LANE_CONTROL, (room, msg), "hello"))
            counters.hellos += 1
            self._next_hello = now + HELLO_PERIOD
            hello = True
        self._next_control = now + step
        self._control_at = now
        self._last_batch = (probed, hello)

    # ------------------------------------------------------------ incoming

    def _receive_unicast(self, now: float, frames: Sequence[bytes]) -> None:
        """A DEALER message: [roomId, payload]."""
        if not self._envelope(frames, "unicast"):
            return
        payload = frames[1]
        if not payload or payload[0] != MSG_DEVICE_ID_MAPPING:
            self._alive(now)  # the server answered (variables, RPC…): not ours to decode
            self._counters.drops[f"ignored type {payload[0] if payload else 'empty'}"] += 1
            return
        if not self.observe and self.client_no is not None:
            self._alive(now)  # a load client: mappings matter only until it has its number
            self._counters.mappings += 1
            return
        try:
            mapping = decode_device_id_mapping(payload)
        except NetSyncDecodeError as e:
            self._drop(f"mapping: {type(e).__name__}", str(e))
            return
        self._alive(now)
        self._counters.mappings += 1
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
                self.hello_now()  # hello (7+) at the next call
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
        self._move("unmapped" if mine is None else "mapped")
        if mine is not None and self._probing and self._probe_id != self.device_id:
            self._probing = False  # mapped after all (a slow server): nothing to diagnose

    def _receive_broadcast(self, now: float, frames: Sequence[bytes]) -> None:
        """A SUB message: [topic, payload]."""
        if not self._envelope(frames, "broadcast"):
            return
        payload = frames[1]
        if not payload or payload[0] != MSG_ROOM_POSE:
            self._counters.drops[f"ignored type {payload[0] if payload else 'empty'}"] += 1
            return
        if not self.observe and self.protocol is not None and len(payload) > 1 and payload[1] == self.protocol:
            self._alive(now)  # a load client counts the room, it does not read it
            self._counters.room_poses += 1
            return
        if len(payload) > 1 and payload[1] != self.protocol:
            if not self._foreign_protocol(payload[1]):
                return
        protocol, own = self.protocol, self.client_no
        # The common broadcast in one C call (the whole message, our room's, every entry well-formed:
        # the same entries, and our body's bytes as relayed); anything else the Python path decides.
        got = (
            None
            if _NATIVE is None or protocol is None
            else _NATIVE.decode_room(payload, protocol, self.room_topic, -1 if own is None else own)
        )
        if got is not None:
            entries, own_raw = got[1], got[2]
        else:
            try:
                room = decode_room_pose(payload, protocol)
            except NetSyncDecodeError as e:
                self._drop(f"room pose: {type(e).__name__}", str(e))
                return
            if room.room_id != self.room_id:
                self._drop("room pose: foreign room", f"{room.room_id!r} under topic {self.room_id!r}")
                return
            entries, own_raw = room.entries, None
        self._alive(now)
        self._counters.room_poses += 1
        if own is None:
            # Without our number we cannot tell our own entry from a peer's.
            self._counters.drops["room pose: before mapping"] += 1
            return
        for entry in entries:
            if entry.client_no == own:
                self._emit(OwnPose(entry.body, entry.pose_time, now, own_raw))
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
            self._move("detected")
            self._detected_by = how
            self.hello_now()  # hello (7+) at the next call
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
        self._move("mismatch")
        self._emit(m)

    # ------------------------------------------------------------ internals

    def _alive(self, now: float) -> None:
        last = self._last_rx
        if self._silent and last is not None:  # (silent: there was a last)
            self._silent = False
            self._emit(ServerBack(now - last))
        self._last_rx = now

    def _envelope(self, frames: Sequence[bytes], what: str) -> bool:
        counters = self._counters
        if len(frames) != 2:
            counters.bytes_received += sum(len(f) for f in frames)
            self._drop(f"{what}: frames", f"{len(frames)} frames, expected [roomId, payload]")
            return False
        topic, payload = frames
        counters.bytes_received += len(topic) + len(payload)
        if topic != self.room_topic:
            # SUB filters by prefix: room "a" also gets "ab" and "a\x00obj"
            counters.drops[f"{what}: other topic"] += 1
            return False
        return True

    def _emit(self, event: Event) -> None:
        if len(self._events) >= MAX_PENDING_EVENTS:  # nobody is polling: keep memory bounded
            self._counters.drops["events: not polled"] += 1
            return
        self._events.append(event)

    def _drop(self, reason: str, detail: str) -> None:
        key = self._counters.drops.add(reason)  # normalised and capped: netcode/drops.py
        self._emit(Dropped(key, drop_detail(detail)))
