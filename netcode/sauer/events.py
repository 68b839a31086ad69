"""What `SauerClientCore.next_event()` (and the transport's) hands the application: every event
of the Sauerbraten client, in one module. `ServerSilent` / `ServerBack` are the ones every
protocol shares (netcode/events.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ..events import ServerBack, ServerSilent

__all__ = [
    "Disconnected",
    "Event",
    "Killed",
    "MapChanged",
    "PlayerJoined",
    "PlayerLeft",
    "ServerBack",
    "ServerSilent",
    "ServerText",
    "Spawned",
    "Welcomed",
]


@dataclass(frozen=True, slots=True)
class Welcomed:
    """N_WELCOME and its N_MAPCHANGE: we are in (as client `cn`), not yet spawned."""

    cn: int
    description: str
    map: str
    mode: int


@dataclass(frozen=True, slots=True)
class Spawned:
    """We (re)spawned: N_SPAWNSTATE answered with N_SPAWN. `first`: the first in this connection."""

    lifesequence: int
    map: str
    mode: int
    first: bool


@dataclass(frozen=True, slots=True)
class MapChanged:
    map: str
    mode: int


@dataclass(frozen=True, slots=True)
class Killed:
    """We died; `by` is the killer's name ("" for ourselves or unknown)."""

    by: str


@dataclass(frozen=True, slots=True)
class ServerText:
    """N_SERVMSG: a line the server shows every client."""

    text: str


@dataclass(frozen=True, slots=True)
class Disconnected:
    """The connection ended. `reason`: the server's DISC_* code (None when we dropped it or it
    never answered); `text` says it in words; `retry_in` None = no retry (stopped for good)."""

    reason: int | None
    text: str
    was_in_game: bool
    retry_in: float | None


@dataclass(frozen=True, slots=True)
class PlayerJoined:
    cn: int
    name: str


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    cn: int
    name: str


# What next_event() hands the application.
Event = (
    Welcomed
    | Spawned
    | MapChanged
    | Killed
    | ServerText
    | ServerSilent
    | ServerBack
    | Disconnected
    | PlayerJoined
    | PlayerLeft
)
