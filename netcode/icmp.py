"""An ICMP error that comes back to a connected UDP socket, read the same on every system.

Linux and macOS raise it on the socket's next recv/send: "port unreachable" (nothing listens
there) as ECONNREFUSED (ConnectionRefusedError), host and network unreachable as EHOSTUNREACH and
ENETUNREACH. Windows raises "port unreachable" as WSAECONNRESET (ConnectionResetError) on the
next recv, and its own WSAEHOSTUNREACH / WSAENETUNREACH / WSAENETRESET (TTL expired) numbers. A UDP
socket has no connection to reset, so ConnectionResetError on one means port unreachable.
For UDP sockets only: on TCP a reset is a reset.
"""

from __future__ import annotations

import errno

PORT_UNREACHABLE = (ConnectionRefusedError, ConnectionResetError)
# errno values (POSIX) and Winsock codes (OSError.winerror on Windows) of the other ICMP errors.
_UNREACHABLE_ERRNOS = frozenset({errno.EHOSTUNREACH, errno.ENETUNREACH})
_UNREACHABLE_WINERRORS = frozenset({10065, 10051, 10052})  # WSAEHOSTUNREACH, WSAENETUNREACH, WSAENETRESET


def port_unreachable(exc: BaseException) -> bool:
    """Nothing listens at the address (ICMP port unreachable), on any system."""
    return isinstance(exc, PORT_UNREACHABLE)


def icmp_error(exc: BaseException) -> bool:
    """Any ICMP error a connected UDP socket reports (port, host or network unreachable): a
    count for a client that keeps going, not a crash."""
    return isinstance(exc, OSError) and (
        isinstance(exc, PORT_UNREACHABLE)
        or exc.errno in _UNREACHABLE_ERRNOS
        or getattr(exc, "winerror", None) in _UNREACHABLE_WINERRORS
    )
