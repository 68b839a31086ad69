"""Connectionless (out-of-band) Quake 3 packets: info strings, requests, and typed replies.

Every OOB packet is ``FF FF FF FF`` followed by text. Requests are built here as bytes;
replies are parsed into small frozen dataclasses. The ``connect`` packet's payload is
adaptive-Huffman compressed by ``huffman.compress_connect`` (C1's codec), so this module
only builds its plain text.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from enum import StrEnum

from .errors import OobError as OobError  # re-exported: raised here

OOB_PREFIX = b"\xff\xff\xff\xff"
GAMENAME = "Quake3Arena"  # ioq3 (and OpenArena) reject any other gamename in getchallenge
MAX_INFO_STRING = 1024
# Characters an info key or value may not hold: the separator, the quote that wraps userinfo
# in `connect` / `userinfo "..."`, and ';' which the console would split on (ioq3's
# Info_SetValueForKey blacklist "\\;\"" — it drops such a pair with a warning).
_INFO_FORBIDDEN = set('\\";')
_INFO_FORBIDDEN_TEXT = '\\ " ;'
# SV_DirectConnect adds `\ip\<address>` to the userinfo and answers "Userinfo string length
# exceeded" unless the result stays under MAX_INFO_STRING; the longest address text is an IPv6
# one, "[" + 39 + "]:" + 5 digits (NET_AdrToString).
_IP_KEY_TEXT = len("\\ip\\") + len("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535")
MAX_USERINFO = MAX_INFO_STRING - 1 - _IP_KEY_TEXT
# The game keeps the first MAX_NETNAME - 1 characters of a name, colour codes included
# (g_local.h MAX_NETNAME 36, ClientCleanName; the same in ioq3's baseq3 and OpenArena).
MAX_NETNAME = 36
MAX_NAME_CHARS = MAX_NETNAME - 1


# ---------------------------------------------------------------------------- info strings


def info_parse(text: str) -> dict[str, str]:
    """``\\k1\\v1\\k2\\v2`` → dict (ioq3 Info_ValueForKey semantics: first key wins)."""
    if not text:
        return {}
    if text.startswith("\\"):
        text = text[1:]
    parts = text.split("\\")
    if len(parts) % 2:
        parts.append("")  # a trailing key without value reads as empty, as in ioq3
    out: dict[str, str] = {}
    for k, v in zip(parts[0::2], parts[1::2]):
        out.setdefault(k, v)
    return out


def info_text_problem(text: str) -> str | None:
    """Why an info key or value cannot carry `text` (None: it can): a character of the
    Info_SetValueForKey blacklist, a control character (C strings end at NUL; the game prints
    names in lines), or one outside Latin-1 (the engine's text is one byte per character)."""
    bad = sorted(_INFO_FORBIDDEN & set(text))
    if bad:
        return f"holds {' '.join(bad)} (an info string cannot hold any of {_INFO_FORBIDDEN_TEXT})"
    for ch in text:
        if ch < " " or ch == "\x7f":
            return f"holds the control character {ch!r}"
        if ch > "\xff":
            return f"holds {ch!r}, which is not Latin-1 (Quake 3 text is one byte per character)"
    return None


def player_name_problem(name: str) -> str | None:
    """Why `name` cannot be a Quake 3 player name as given (None: it can)."""
    if not name:
        return "is empty"
    problem = info_text_problem(name)
    if problem is not None:
        return problem
    if len(name) > MAX_NAME_CHARS:
        return (
            f"is {len(name)} characters; the game keeps {MAX_NAME_CHARS} "
            f"(MAX_NETNAME {MAX_NETNAME}, colour codes included)"
        )
    return None


def info_build(pairs: dict[str, str] | list[tuple[str, str]]) -> str:
    """dict/pairs → ``\\k\\v...``; raises OobError on characters the engine would mangle."""
    items = pairs.items() if isinstance(pairs, dict) else pairs
    out = []
    for k, v in items:
        k, v = str(k), str(v)
        problem = "has an empty key" if not k else info_text_problem(k) or info_text_problem(v)
        if problem is not None:
            raise OobError(f"info key/value {k[:40]!r}={v[:40]!r}{'…' if len(k) > 40 or len(v) > 40 else ''} {problem}")
        out.append(f"\\{k}\\{v}")
    text = "".join(out)
    if len(text) >= MAX_INFO_STRING:
        raise OobError(f"info string is {len(text)} chars; the engine limit is {MAX_INFO_STRING - 1}")
    return text


def new_guid() -> str:
    """A random 32-hex cl_guid (OpenArena's game refuses an empty one: 'Invalid GUID')."""
    return secrets.token_hex(16).upper()


def build_userinfo(
    *,
    name: str,
    challenge: int,
    qport: int,
    protocol: int = 71,
    cl_guid: str,
    rate: int = 25000,
    snaps: int = 20,
    model: str = "sarge",
    handicap: int = 100,
    vr: bool = False,
    extra: dict[str, str] | None = None,
) -> str:
    """The userinfo sent in `connect` (and, minus challenge/qport/protocol, in `userinfo`).

    `vr\\1` is present only for a VR client: a flatscreen client omits the key entirely
    (Trinity shows any non-empty `vr` as VR on the scoreboard).
    """
    pairs: list[tuple[str, str]] = [
        ("name", name),
        ("rate", str(rate)),
        ("snaps", str(snaps)),
        ("model", model),
        ("handicap", str(handicap)),
        ("cl_guid", cl_guid),
    ]
    if vr:
        pairs.append(("vr", "1"))
    for k, v in (extra or {}).items():
        pairs.append((k, v))
    pairs += [("protocol", str(protocol)), ("qport", str(qport & 0xFFFF)), ("challenge", str(challenge))]
    text = info_build(pairs)
    if len(text) > MAX_USERINFO:
        raise OobError(
            f"the userinfo is {len(text)} characters; a server takes at most {MAX_USERINFO} "
            f"(MAX_INFO_STRING {MAX_INFO_STRING} less the \\ip\\ADDRESS it adds)"
        )
    return text


# ---------------------------------------------------------------------------- requests


def oob(text: str) -> bytes:
    return OOB_PREFIX + text.encode("latin-1")


def getinfo(nonce: str = "") -> bytes:
    return oob(f"getinfo {nonce}".rstrip())


def getstatus(nonce: str = "") -> bytes:
    return oob(f"getstatus {nonce}".rstrip())


def getchallenge(client_challenge: int, gamename: str = GAMENAME) -> bytes:
    return oob(f"getchallenge {client_challenge} {gamename}")


def rcon(password: str, command: str) -> bytes:
    if not password or " " in password or '"' in password:
        raise OobError("rcon password must be non-empty without spaces or quotes")
    return oob(f"rcon {password} {command}")


def connect_text(userinfo: str) -> bytes:
    """The uncompressed connect packet: ``FF FF FF FF connect "<userinfo>"``."""
    return oob(f'connect "{userinfo}"')


# ---------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class InfoResponse:
    info: dict[str, str]


@dataclass(frozen=True)
class StatusPlayer:
    score: int
    ping: int
    name: str
    extra: tuple[str, ...] = ()  # Quake3e appends team and clientNum


@dataclass(frozen=True)
class StatusResponse:
    info: dict[str, str]
    players: tuple[StatusPlayer, ...]


@dataclass(frozen=True)
class ChallengeResponse:
    challenge: int
    client_challenge: int | None  # ioq3 echoes ours; very old servers do not
    protocol: int | None


@dataclass(frozen=True)
class ConnectResponse:
    challenge: int | None


@dataclass(frozen=True)
class Print:
    text: str


@dataclass(frozen=True)
class Disconnect:
    reason: str


@dataclass(frozen=True)
class UnknownOob:
    command: str


OobReply = InfoResponse | StatusResponse | ChallengeResponse | ConnectResponse | Print | Disconnect | UnknownOob


def _int32(token: str, what: str) -> int:
    try:
        v = int(token)
    except ValueError:
        raise OobError(f"{what} {token!r} is not an integer") from None
    if not -(1 << 31) <= v < (1 << 32):
        raise OobError(f"{what} {v} does not fit 32 bits")
    return v - (1 << 32) if v >= (1 << 31) else v


def _status_player(line: str) -> StatusPlayer:
    head, sep, rest = line.partition('"')
    nums = head.split()
    name, _, tail = rest.partition('"')
    if len(nums) < 2 or not sep:
        raise OobError(f'statusResponse player line {line!r} is not `score ping "name"`')
    return StatusPlayer(_int32(nums[0], "score"), _int32(nums[1], "ping"), name, tuple(nums[2:]) + tuple(tail.split()))


def parse_oob(data: bytes) -> OobReply:
    """Parse one connectionless packet (with its FF FF FF FF prefix). Raises OobError."""
    if not data.startswith(OOB_PREFIX):
        raise OobError("not an out-of-band packet (no FF FF FF FF prefix)")
    text = data[4:].decode("latin-1")
    # The command is the first token, ended by whitespace or a newline (infoResponse\n...).
    stripped = text.lstrip()
    end = len(stripped)
    for i, ch in enumerate(stripped):
        if ch in " \n\t\r":
            end = i
            break
    cmd, rest = stripped[:end], stripped[end:]
    low = cmd.lower()
    if low == "inforesponse":
        return InfoResponse(info_parse(rest.lstrip("\n").split("\n", 1)[0]))
    if low == "statusresponse":
        lines = rest.lstrip("\n").split("\n")
        players = tuple(_status_player(ln) for ln in lines[1:] if ln.strip())
        return StatusResponse(info_parse(lines[0]), players)
    if low == "challengeresponse":
        toks = rest.split()
        if not toks:
            raise OobError("challengeResponse without a challenge")
        return ChallengeResponse(
            _int32(toks[0], "challenge"),
            _int32(toks[1], "client challenge") if len(toks) > 1 else None,
            _int32(toks[2], "protocol") if len(toks) > 2 else None,
        )
    if low == "connectresponse":
        toks = rest.split()
        return ConnectResponse(_int32(toks[0], "challenge") if toks else None)
    if low == "print":
        return Print(rest[1:] if rest.startswith("\n") else rest.strip())
    if low == "disconnect":
        return Disconnect(rest.strip().strip('"'))
    return UnknownOob(cmd[:64])


class Family(StrEnum):
    """Protocol number + netchan wire format. The same "71" means two formats (docs/protocols/quake3.md#netchan)."""

    LEGACY71 = "legacy71"  # stock OpenArena: protocol 71 on the legacy (XOR, no checksum) netchan
    NEW71 = "new71"  # ioq3 / Quake3e protocol 71: checksummed netchan header
    LEGACY68 = "legacy68"  # Quake III 1.32 protocol 68: legacy netchan

    @property
    def protocol(self) -> int:
        return 68 if self is Family.LEGACY68 else 71

    @property
    def legacy_netchan(self) -> bool:
        return self is not Family.NEW71

    @property
    def description(self) -> str:
        return _FAMILY_DESCRIPTIONS[self]


_FAMILY_DESCRIPTIONS = {
    Family.LEGACY71: "protocol 71 on the legacy netchan (stock OpenArena)",
    Family.NEW71: "protocol 71 on the checksummed netchan (ioq3, Quake3e)",
    Family.LEGACY68: "protocol 68 (legacy netchan)",
}


def family_for_protocol(protocol: int) -> Family:
    """getinfo `protocol` → the likely family (docs/protocols/quake3.md#netchan): 71 → legacy-71, 68 → new-71.

    Only a guess: a Quake3e server set to `protocol 71` (or ioq3 with `com_legacyprotocol 0`)
    reports 71 and speaks the checksummed netchan. The client does not use it; it takes the
    family from the server's answers to the handshake itself (client.py)."""
    if protocol == 71:
        return Family.LEGACY71
    if protocol == 68:
        return Family.NEW71
    raise OobError(f"getinfo protocol {protocol} is neither 68 nor 71")


# `--q3-protocol` / q3.protocol: what a user names a family by.
FAMILY_OPTIONS: dict[str, Family] = {"68": Family.LEGACY68, "71": Family.NEW71, "71-legacy": Family.LEGACY71}


def family_from_option(text: str) -> Family | None:
    """`auto` → None (the client detects it), `68`, `71` (checksummed netchan: ioq3, Quake3e) or
    `71-legacy` (stock OpenArena) → that family. Raises OobError naming the choices."""
    key = str(text).strip().lower()
    if key == "auto":
        return None
    if key not in FAMILY_OPTIONS:
        raise OobError(f"{text!r} is not a Quake 3 protocol: use auto, {', '.join(FAMILY_OPTIONS)}")
    return FAMILY_OPTIONS[key]


def family_option(family: Family) -> str:
    """The `--q3-protocol` value that forces `family`."""
    return next(k for k, v in FAMILY_OPTIONS.items() if v is family)
