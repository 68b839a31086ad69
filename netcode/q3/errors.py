"""Every error the Quake 3 package raises, under one root: `Q3Error`.

`except Q3Error` catches anything this package says went wrong with a peer, a file or the client's
use; each class also derives from the built-in a caller would have caught before (ValueError for
bad bytes, RuntimeError for misuse, OSError for the socket), so older handlers still work. The
modules that raise them re-export their own (`oob.OobError`, `client.ClientError`, ...).

    Q3Error
    ├── MsgError            bits that cannot be decoded (msg.py, the C codecs)
    ├── ServerParseError    a server message that is malformed (serverparse.py)
    ├── OobError            a connectionless packet or info string that is malformed (oob.py)
    ├── StatusError         an infoResponse / statusResponse that is malformed (status.py)
    ├── PureError           no pk3 to answer a pure server with (pure.py)
    ├── ClientError         the core used wrongly (client.py)
    │   ├── ServerMisbehaved    the server left the connection no way on
    │   └── IllegalTransition   a state change the state table does not allow (a bug here)
    └── TransportError      the UDP socket failed with something other than an ICMP error

A refusal by the server is not an exception: it is an event (`events.Refused`) and a state
(`client.Status.refusal`), sorted by `refusal.classify`.
"""

from __future__ import annotations

__all__ = [
    "ClientError",
    "IllegalTransition",
    "MsgError",
    "OobError",
    "PureError",
    "Q3Error",
    "ServerMisbehaved",
    "ServerParseError",
    "StatusError",
    "TransportError",
]


class Q3Error(Exception):
    """The root of every error of the Quake 3 package."""


class MsgError(Q3Error, ValueError):
    """A message cannot be decoded: overread, garbage Huffman code, bad count or length."""


class ServerParseError(Q3Error, ValueError):
    """A server message is malformed; the text names what was wrong."""


class OobError(Q3Error, ValueError):
    """A connectionless packet (or an info string) is malformed; the message says how."""


class StatusError(Q3Error, ValueError):
    """An infoResponse/statusResponse is malformed; the message says how."""


class PureError(Q3Error, ValueError):
    """A pk3 cannot be read, or no pk3 holds the cgame/ui module a pure server expects."""


class ClientError(Q3Error, RuntimeError):
    """The application used the core wrongly (e.g. a command while closed, a full queue)."""


class ServerMisbehaved(ClientError):
    """The server's messages leave this connection no way on (it never acknowledges our reliable
    commands, as a server that keeps resending its gamestate and ignores our `cp`): raised once,
    out of `receive_datagram`, after the core has sent `disconnect` (three packets, waiting in
    `datagrams_to_send`) and closed for good (no reconnect). What the server sends afterwards is a
    counted drop; `close()` has nothing left to do."""


class IllegalTransition(ClientError):
    """The core tried a state change its state table (client.TRANSITIONS) does not allow: an
    internal error of this package, never the peer's doing."""


class TransportError(Q3Error, OSError):
    """The client's UDP socket failed with an error that is not a queued ICMP error (those are
    counted, `send_errors` / `socket_errors`, and the protocol resends)."""
