"""Every error the NetSync package raises, under one root: `NetSyncError`.

`except NetSyncError` catches anything this package says went wrong with a peer, a local server
or the client's use; each class also derives from the built-in a caller would have caught before
(ValueError for bad bytes, TimeoutError / ConnectionError for the server, RuntimeError for a
local server that would not start), so older handlers still work. The modules that raise them
re-export their own (`codec.NetSyncDecodeError`, `transport.NoAnswerError`, ...).

    NetSyncError
    ├── NetSyncDecodeError      bytes from the network that are not a message (codec.py)
    │   ├── TruncatedError, TrailingBytesError, MissingDeltaEncodingError, VirtualCountError,
    │   ├── UnsupportedProtocolError, MessageTypeError, FlagsError, StringError
    ├── PoseEncodeError         our pose cannot be put on the wire (codec.py)
    ├── NoAnswerError           the server never mapped us within the bound (transport.join)
    ├── ServerProtocolError     the server answered in another protocol (transport.join)
    ├── ServerStartError        a local styly-netsync-server would not start (localserver.py)
    └── ReleaseInstallError     a styly-netsync-server release could not be installed (releases.py)

A protocol mismatch seen by the core is not an exception: it is an event
(`events.ProtocolMismatch`); `ServerProtocolError` carries it for callers that block (`join`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import ProtocolMismatch

__all__ = [
    "FlagsError",
    "MessageTypeError",
    "MissingDeltaEncodingError",
    "NetSyncDecodeError",
    "NetSyncError",
    "NoAnswerError",
    "PoseEncodeError",
    "ReleaseInstallError",
    "ServerProtocolError",
    "ServerStartError",
    "StringError",
    "TrailingBytesError",
    "TruncatedError",
    "UnsupportedProtocolError",
    "VirtualCountError",
]


class NetSyncError(Exception):
    """The root of every error of the NetSync package."""


class NetSyncDecodeError(NetSyncError, ValueError):
    """Malformed NetSync bytes from the network; `offset` is where in the message it went wrong."""

    def __init__(self, offset: int, detail: str) -> None:
        super().__init__(f"offset {offset}: {detail}")
        self.offset = offset
        self.detail = detail


class TruncatedError(NetSyncDecodeError):
    pass


class TrailingBytesError(NetSyncDecodeError):
    pass


class MissingDeltaEncodingError(NetSyncDecodeError):
    """PhysicalValid without encoding bit 4: an old-V3 sender (docs/protocols/netsync.md#errata, fail fast)."""


class VirtualCountError(NetSyncDecodeError):
    pass


class UnsupportedProtocolError(NetSyncDecodeError):
    """The message's protocol byte is not one this codec speaks, or not the one expected;
    `protocol` is the byte the message carried."""

    def __init__(self, offset: int, detail: str, protocol: int) -> None:
        super().__init__(offset, detail)
        self.protocol = protocol


class MessageTypeError(NetSyncDecodeError):
    pass


class FlagsError(NetSyncDecodeError):
    """Undefined flag bits, or flags no conforming encoder writes (stealth with blocks, hands
    without a head, virtual entries without VirtualsValid)."""


class StringError(NetSyncDecodeError):
    pass


class PoseEncodeError(NetSyncError, ValueError):
    """The local pose cannot be put on the wire (non-finite number, bad flags, deviceId or roomId too long)."""


class NoAnswerError(NetSyncError, TimeoutError):
    """Nothing came back from the server within the bound (wrong address/port, not running)."""


class ServerProtocolError(NetSyncError, ConnectionError):
    """The server answered, in another NetSync protocol than the one we were told to speak
    (`mismatch`: the core's event, its `message` in words for the user)."""

    def __init__(self, mismatch: ProtocolMismatch) -> None:
        super().__init__(mismatch.message)
        self.mismatch = mismatch


class ServerStartError(NetSyncError, RuntimeError):
    """A local styly-netsync-server did not start (not installed, exited, not ready in time)."""


class ReleaseInstallError(NetSyncError, RuntimeError):
    """A styly-netsync-server release could not be installed into its own environment."""
