"""Every error the Sauerbraten package raises, under one root: `SauerError`.

`except SauerError` catches anything this package says went wrong with a peer's bytes, the client's
use or its socket; each class also derives from the built-in a caller would have caught before
(ValueError for bad bytes and bad arguments, RuntimeError for misuse, OSError for the socket).

    SauerError
    ├── SauerDecodeError    bytes that are not a valid message (wire.py, npos.py, messages.py)
    ├── InfoError           an info-port reply that is malformed (info.py)
    ├── ClientError         the core given what it cannot use: a name or password outside the
    │                       cube charset, a message before the server let us in (client.py)
    ├── IllegalTransition   a state change the state table does not allow (a bug here)
    └── TransportError      ENet could not resolve the address or open its host (transport.py)

A server that refuses or drops us is not an exception: it is an event (`events.Disconnected`,
its DISC_* reason) and a state (`client.State.WAITING` or `CLOSED`). Starting a local server
raises `netcode.serverprocess.LocalServerError`, shared by the three protocols.
"""

from __future__ import annotations

__all__ = ["ClientError", "IllegalTransition", "InfoError", "SauerDecodeError", "SauerError", "TransportError"]


class SauerError(Exception):
    """The root of every error of the Sauerbraten package."""


class SauerDecodeError(SauerError, ValueError):
    """The peer's bytes are not a valid message; `offset` is where reading failed."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} (at byte {offset})")
        self.reason = reason
        self.offset = offset


class InfoError(SauerError, ValueError):
    """An info-port reply (ping or extinfo) is malformed; the message says how."""


class ClientError(SauerError, ValueError):
    """The core cannot do what it was asked: a name or password it cannot encode, a game message
    before the server let us in."""


class IllegalTransition(SauerError, RuntimeError):
    """The core tried a state change its table (`client.TRANSITIONS`) does not hold."""


class TransportError(SauerError, OSError):
    """ENet could not resolve the server's address or open its host."""
