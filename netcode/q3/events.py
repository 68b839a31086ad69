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


Event = (Connected | GamestateReceived | HeadTracking | EnteredWorld | SnapshotReceived
         | ServerCommand | Disconnected)
