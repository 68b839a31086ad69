"""Events the Quake 3 client core hands to the application (small frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .oob import Family


@dataclass(frozen=True)
class Connected:
    """connectResponse received: the netchan is up, the gamestate is next."""

    family: Family
    challenge: int


@dataclass(frozen=True)
class FamilyChanged:
    """Auto-detection moved to the other netchan of protocol 71 (or to the protocol the server
    named): the server's answers showed the first guess was wrong."""

    old: Family
    new: Family
    reason: str


@dataclass(frozen=True)
class Refused:
    """The server refused the connection with a `print` (its words in `text`, `kind` a
    refusal.RefusalKind). `fatal`: retrying cannot help and the client has stopped; otherwise it
    tries again in `retry_in` seconds (None: it will not, reconnect is off)."""

    text: str
    kind: str
    fatal: bool
    retry_in: float | None


@dataclass(frozen=True)
class RateLimited:
    """The server is up (it answered a request that is not rate-limited) but not our
    `getchallenge`: it is dropping this address's connectionless requests. The client keeps
    asking, backing off."""

    unanswered: int


@dataclass(frozen=True)
class GamestateReceived:
    server_id: int
    client_num: int
    checksum_feed: int
    mapname: str
    sv_pure: bool
    vr_support: bool
    serverinfo: dict[str, str]
    systeminfo: dict[str, str]


@dataclass(frozen=True)
class HeadTracking:
    """Whether head bits (32-bit buttons) are sent on this link, and why not when they are not."""

    sent: bool
    reason: str


@dataclass(frozen=True)
class EnteredWorld:
    """The first snapshot without SNAPFLAG_NOT_ACTIVE after a gamestate: the server runs our usercmds."""

    server_time: int
    client_num: int


@dataclass(frozen=True)
class SnapshotReceived:
    """A valid snapshot; `ps` is our own playerState (delta.PlayerState)."""

    message_num: int
    server_time: int
    snap_flags: int
    ps: Any
    num_entities: int
    delta: bool


@dataclass(frozen=True)
class ServerCommand:
    seq: int
    text: str


@dataclass(frozen=True)
class Disconnected:
    reason: str
    will_reconnect: bool


Event = (
    Connected
    | FamilyChanged
    | Refused
    | RateLimited
    | GamestateReceived
    | HeadTracking
    | EnteredWorld
    | SnapshotReceived
    | ServerCommand
    | Disconnected
)
