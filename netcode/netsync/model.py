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

# PoseFlags (protocol 3). 0x40/0x80 are not defined before protocol 5.
FLAG_STEALTH = 0x01
FLAG_PHYSICAL = 0x02  # "XROrigin delta present"
FLAG_HEAD = 0x04
FLAG_RIGHT = 0x08
FLAG_LEFT = 0x10
FLAG_VIRTUALS = 0x20
KNOWN_FLAGS = 0x3F

MAX_VIRTUALS = 50


class Transform(NamedTuple):
    pos: Vec3 = (0.0, 0.0, 0.0)
    rot: Quat = IDENTITY


ORIGIN = Transform()


class OriginDelta(NamedTuple):
    """XROrigin Δ in SE(2): translation on the floor (x, z metres) and yaw (degrees)."""

    dx: float = 0.0
    dz: float = 0.0
    dyaw: float = 0.0


ZERO_DELTA = OriginDelta()


@dataclass(frozen=True, slots=True)
class PoseFrame:
    """One frame of the local avatar, absolute poses, as the encoder takes it.

    `flags` are the PoseFlags the caller claims; the encoder sanitises them exactly like the
    shipped serializer (stealth → 0x01 alone; no head → no hands/virtuals). Blocks whose flag
    is clear are ignored.
    """

    flags: int
    head: Transform = ORIGIN
    right: Transform = ORIGIN
    left: Transform = ORIGIN
    virtuals: tuple[Transform, ...] = ()
    delta: OriginDelta = ZERO_DELTA

    @classmethod
    def build(
        cls,
        head: Transform | None,
        right: Transform | None = None,
        left: Transform | None = None,
        virtuals: tuple[Transform, ...] = (),
        delta: OriginDelta | None = None,
        stealth: bool = False,
    ) -> PoseFrame:
        """Flags derived from what is present (Unity sets PhysicalValid whenever it has a Δ)."""
        if stealth:
            return cls(FLAG_STEALTH)
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
        )


class PoseBody(NamedTuple):
    """A decoded client pose body; absent blocks are None. `physical` is reconstructed (seed §6)."""

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


class ClientPose(NamedTuple):
    """Message 11 as decoded (what a server or a test sees)."""

    device_id: str
    body: PoseBody
    raw_body: bytes


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
