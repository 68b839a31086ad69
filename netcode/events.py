"""Events every protocol core reports the same way (each protocol's own are in `<protocol>/events.py`,
which re-exports these): the server falling silent and coming back."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerBack", "ServerSilent"]


@dataclass(frozen=True, slots=True)
class ServerSilent:
    """Nothing came from the server for `silent_for` seconds (the connection is kept: a silence
    may end; a core drops it later by its own rule)."""

    silent_for: float


@dataclass(frozen=True, slots=True)
class ServerBack:
    """The server was heard again after a `ServerSilent`, `silent_for` seconds after the packet before."""

    silent_for: float
