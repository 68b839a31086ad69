"""Errors the CLI shows as one line (no traceback) with a non-zero exit code."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

# Every character str.splitlines() breaks at: a value quoted into a message (a path, a name)
# must not split the message's one line.
_LINE_BREAKS: dict[str, str | int | None] = {c: repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(text: object) -> str:
    """`text` with every line break escaped (\\n, \\x85 …), so it prints as one line."""
    return str(text).translate(str.maketrans(_LINE_BREAKS))


class AppError(Exception):
    """A failure the user can act on; the message says what and, where known, how to fix it."""

    exit_code = 1


class UsageError(AppError):
    """A flag or config value is unusable (same exit code as argparse's own usage errors)."""

    exit_code = 2


def usage(call: Callable[[], T]) -> T:
    """`call()`, with a ValueError it raises (text from the command line or a config file that
    does not parse, e.g. netcode.address.AddressError) shown as a UsageError."""
    try:
        return call()
    except ValueError as e:
        raise UsageError(str(e)) from None


class UnreachableError(AppError):
    """A server did not answer."""

    exit_code = 3


class RefusedError(AppError):
    """A server answered but would not let us in: its refusal ("Invalid password", "Server is
    full" …), a rate limit on this address, or a handshake that never completed. Reachable, so
    not exit 3; the message carries the server's words."""

    exit_code = 1


class ProtocolMismatchError(AppError):
    """The server answered in another protocol than the one we speak (NetSync: a different
    protocol number, or one headcast does not speak): reachable, but no use as configured."""

    exit_code = 4
