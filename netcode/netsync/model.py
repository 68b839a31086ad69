"""Values at the NetSync boundary: what the encoder takes and what the decoders give back.

Everything here is in Unity's frame (left-handed, +Y up, +Z forward, metres, degrees);
the app converts from OpenXR with `headcast.netcode.pose.unity_position/unity_quat`.

The values a decoder makes per body (Transform, OriginDelta, PoseBody, RoomEntry) are
NamedTuples rather than frozen dataclasses: equally immutable, but built 3–4× faster, and a
room broadcast makes a dozen of them per peer ten times a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from headcast.netcode.pose import IDENTITY, Quat, Vec3

# PoseFlags. 0x40 exists from protocol 5 on; 0x80 is never defined.
FLAG_STEALTH = 0x01
FLAG_PHYSICAL = 0x02  # "physical block present": the XROrigin Δ, or (0x40) the floor-local pose
FLAG_HEAD = 0x04
FLAG_RIGHT = 0x08
FLAG_LEFT = 0x10
FLAG_VIRTUALS = 0x20
FLAG_MOVING_FLOOR = 0x40  # MOVING_FLOOR_LOCAL (protocol 5+): poses are local to a moving floor
KNOWN_FLAGS = 0x3F  # protocols 3 and 4
KNOWN_FLAGS_MOVING_FLOOR = 0x7F  # protocol 5 on

MAX_VIRTUALS = 50


class Transform(NamedTuple):
    pos: Vec3 = (0.0, 0.0, 0.0)
    rot: Quat = IDENTITY


ORIGIN = Transform()


class OriginDelta(NamedTuple):
    """XROrigin Δ: translation on the floor (x, z metres), yaw (degrees) and, from protocol 4 on,
    the height change `dy` (metres; protocol 3 has no field for it and sends none)."""

    dx: float = 0.0
    dz: float = 0.0
    dyaw: float = 0.0
    dy: float = 0.0


ZERO_DELTA = OriginDelta()


@dataclass(frozen=True, slots=True)
class PoseFrame:
    """One frame of the local avatar, absolute poses, as the encoder takes it.

    `flags` are the PoseFlags the caller claims; the encoder sanitises them exactly like the
    shipped serializer (stealth → 0x01 alone; no head → no hands/virtuals). Blocks whose flag
    is clear are ignored. With FLAG_MOVING_FLOOR (protocol 5+) the physical block carries
    `physical` (floor-local position and the yaw of its rotation) instead of `delta`, and the
    head, hands and virtuals are read by receivers as floor-local.
    """

    flags: int
    head: Transform = ORIGIN
    right: Transform = ORIGIN
    left: Transform = ORIGIN
    virtuals: tuple[Transform, ...] = ()
    delta: OriginDelta = ZERO_DELTA
    physical: Transform = ORIGIN

    @classmethod
    def build(
        cls,
        head: Transform | None,
        right: Transform | None = None,
        left: Transform | None = None,
        virtuals: tuple[Transform, ...] = (),
        delta: OriginDelta | None = None,
        stealth: bool = False,
        physical: Transform | None = None,
    ) -> PoseFrame:
        """Flags derived from what is present (Unity sets PhysicalValid whenever it has a Δ).

        `physical` (protocol 5+) sends the floor-local physical pose (FLAG_MOVING_FLOOR) instead
        of a Δ."""
        if stealth:
            return cls(FLAG_STEALTH)
        if physical is not None:
            flags = FLAG_PHYSICAL | FLAG_MOVING_FLOOR
        else:
            flags = FLAG_PHYSICAL if delta is not None else 0
        if head is not None:
            flags |= FLAG_HEAD
            if right is not None:
                flags |= FLAG_RIGHT
            if left is not None:
                flags |= FLAG_LEFT
            if virtuals:
                flags |= FLAG_VIRTUALS
        return cls(
            flags,
            head or ORIGIN,
            right or ORIGIN,
            left or ORIGIN,
            tuple(virtuals),
            delta or ZERO_DELTA,
            physical or ORIGIN,
        )


class PoseBody(NamedTuple):
    """A decoded client pose body; absent blocks are None.

    `physical` is what the official receivers make of the physical block: rebuilt from the
    XROrigin Δ and the head (docs/protocols/netsync.md#physical-pose), or read directly with FLAG_MOVING_FLOOR; `delta`
    is None in that case (the official decoder reports a zero Δ).
    """

    pose_seq: int
    flags: int
    encoding_flags: int
    delta: OriginDelta | None
    head: Transform | None
    right: Transform | None
    left: Transform | None
    virtuals: tuple[Transform, ...]
    physical: Transform | None

    @property
    def stealth(self) -> bool:
        return bool(self.flags & FLAG_STEALTH)

    @property
    def moving_floor(self) -> bool:
        return bool(self.flags & FLAG_MOVING_FLOOR)


class ClientPose(NamedTuple):
    """Message 11 as decoded (what a server or a test sees)."""

    device_id: str
    body: PoseBody
    raw_body: bytes
    protocol: int = 3


class RoomEntry(NamedTuple):
    client_no: int
    pose_time: float  # server monotonic seconds: not comparable with our clock
    body: PoseBody


@dataclass(frozen=True, slots=True)
class RoomPose:
    """Message 12: the server's broadcast of every non-stealth member's last body."""

    room_id: str
    broadcast_time: float
    entries: tuple[RoomEntry, ...]
    protocol: int = 3


@dataclass(frozen=True, slots=True)
class DeviceMapping:
    client_no: int
    device_id: str
    stealth: bool


@dataclass(frozen=True, slots=True)
class DeviceIdMapping:
    """Message 6: the room's clientNo ↔ deviceId table, unicast to every member."""

    server_version: tuple[int, int, int]
    mappings: tuple[DeviceMapping, ...]


@dataclass(frozen=True, slots=True)
class ClientHello:
    """Message 19 (protocol 7+): binds the sender's control-lane identity to its deviceId."""

    device_id: str
    stealth: bool
    protocol: int
