"""What the NetSync client core reports (`NetSyncClientCore.next_event()`), all in one place.

ServerSilent / ServerBack are the ones every protocol core shares (netcode/events.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import ServerBack, ServerSilent
from .model import DeviceMapping, PoseBody

__all__ = [
    "Dropped",
    "Event",
    "Joined",
    "MembersChanged",
    "OwnPose",
    "PeerPose",
    "ProtocolDetected",
    "ProtocolMismatch",
    "ServerBack",
    "ServerSilent",
]


@dataclass(frozen=True, slots=True)
class Joined:
    """We have a clientNo (first mapping, or a new number after a server restart)."""

    client_no: int
    server_version: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class MembersChanged:
    """A device-ID mapping named other members than the last one."""

    members: tuple[DeviceMapping, ...]
    joined: tuple[int, ...]
    left: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PeerPose:
    """Another member's entry in a room broadcast."""

    client_no: int
    device_id: str | None  # None until a mapping names this clientNo
    body: PoseBody
    pose_time: float  # the server's monotonic clock
    received: float  # our `now` when it arrived


@dataclass(frozen=True, slots=True)
class OwnPose:
    """Our own entry in a room broadcast (matched by the clientNo the mapping gave us). `raw`: the
    body's bytes as relayed, when the C decoder read the broadcast (None on the Python path); not
    part of equality (the body is what was decoded from them)."""

    body: PoseBody
    pose_time: float  # the server's monotonic clock
    received: float  # our `now` when it arrived
    raw: bytes | None = field(default=None, compare=False)


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
class Dropped:
    """A message from the server that was not used, and why (counted in `counters.drops` too)."""

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
