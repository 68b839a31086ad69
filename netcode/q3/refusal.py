"""What a server's refusal of a connection means: the `print` it answers a `getchallenge` or
`connect` with, sorted into whether trying again can help.

The texts are the engines' and games' own (ioq3 sv_client.c `SV_GetChallenge` /
`SV_DirectConnect`, Quake3e's, and the game's `ClientConnect`: ioq3's baseq3 and OpenArena's
qagame). Matching is on lower-cased fragments, so colour codes or a trailing period do not matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class RefusalKind(StrEnum):
    PASSWORD = "password"  # game: "Invalid password" (g_password)
    BANNED = "banned"  # engine or game: "You are banned from this server." …
    PROTOCOL = "protocol"  # engine: "Server uses protocol version 71 (yours is 68)."
    GAME = "game"  # ioq3: "Game mismatch: This is a Quake3Arena server"
    USERINFO = "userinfo"  # engine: "Userinfo string length exceeded. …"; OpenArena: "Invalid GUID"
    FULL = "full"  # engine: "Server is full" (ioq3) / "Server is full." (Quake3e)
    TOO_MANY = "too many"  # Quake3e: "Too many connections." (sv_maxclientsPerIP)
    WAIT = "wait"  # Quake3e: "Reconnecting, please wait 2 seconds."
    CHALLENGE = "challenge"  # "No or bad challenge for your address." / "Incorrect challenge, please reconnect."
    OTHER = "other"  # anything else: shown as the server said it, retried


# The kinds no retry can change: the same request gets the same answer.
FATAL = frozenset(
    (RefusalKind.PASSWORD, RefusalKind.BANNED, RefusalKind.PROTOCOL, RefusalKind.GAME, RefusalKind.USERINFO)
)

_PATTERNS: tuple[tuple[str, RefusalKind], ...] = (
    ("invalid password", RefusalKind.PASSWORD),
    ("banned", RefusalKind.BANNED),
    ("uses protocol version", RefusalKind.PROTOCOL),
    ("game mismatch", RefusalKind.GAME),
    ("userinfo string length", RefusalKind.USERINFO),
    ("invalid guid", RefusalKind.USERINFO),
    ("server is full", RefusalKind.FULL),
    ("too many connections", RefusalKind.TOO_MANY),
    ("please wait", RefusalKind.WAIT),
    ("bad challenge", RefusalKind.CHALLENGE),
    ("incorrect challenge", RefusalKind.CHALLENGE),
)
_COLOUR = re.compile(r"\^[0-9a-zA-Z]")
_PROTOCOL = re.compile(r"protocol version (\d+)")
_WAIT = re.compile(r"wait (\d+) second")


@dataclass(frozen=True)
class Refusal:
    text: str  # the server's words, one line, colour codes removed
    kind: RefusalKind
    protocol: int | None = None  # PROTOCOL: the protocol the server speaks
    wait: float | None = None  # WAIT: seconds the server asks for

    @property
    def fatal(self) -> bool:
        """Trying again with the same settings gets the same answer."""
        return self.kind in FATAL


def classify(text: str) -> Refusal:
    clean = " ".join(_COLOUR.sub("", text).split())[:200]
    low = clean.lower()
    kind = next((k for needle, k in _PATTERNS if needle in low), RefusalKind.OTHER)
    protocol = wait = None
    if kind is RefusalKind.PROTOCOL and (m := _PROTOCOL.search(low)):
        protocol = int(m.group(1))
    if kind is RefusalKind.WAIT and (m := _WAIT.search(low)):
        wait = float(m.group(1))
    return Refusal(clean, kind, protocol, wait)
