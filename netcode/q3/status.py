"""What a Quake 3 server says about itself without a connection: `getinfo` and `getstatus`, sans-IO.

The requests are what `quakestat -q3s -R -P` sends (quakestat sends them one after the other; we
send both at once). The replies are parsed strictly, in the shape ioq3 and Quake3e build them
(``SVC_Info`` / ``SVC_Status``)::

    FF FF FF FF "infoResponse\\n" \\k\\v\\k\\v...                     (no trailing newline)
    FF FF FF FF "statusResponse\\n" \\k\\v\\k\\v... "\\n" (score ping "name"\\n)*

Anything else is a `StatusError` saying what was wrong. `ServerQuery` is the exchange with one
server address: it hands out the request datagrams (again, with a fresh nonce, when a server stays
silent), takes every datagram that address sends, counts what it cannot use as drops with a
reason, and measures the round trip of each request it gets an answer to. It never reads a clock
or touches a socket.

The server echoes the request's argument as the `challenge` key of both replies, so a reply
names the attempt it answers: that is how a reply to a resent request is timed from its own
send, and how a late or foreign reply is told apart. ioq3 limits these requests per source
address (10 at once, then one per second, shared with `getchallenge` and `rcon`; the excess is
dropped silently, docs/protocols/quake3.md#servers): one query costs two, and a resend comes only after a second.
"""

from __future__ import annotations

import re
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..resend import ResendSchedule
from .errors import StatusError as StatusError  # re-exported: raised here

OOB_PREFIX = b"\xff\xff\xff\xff"
PORT_SERVER = 27960  # ioq3 qcommon.h: the default server port
MAX_NONCE = 128  # ioq3 ignores a getinfo/getstatus whose argument is longer
FIRST_RESEND = 1.0  # s: the per-address bucket refills one request per second
RESEND_FACTOR = 2.0

_INT = r"-?[0-9]+"
# `score ping "name"`; docs/protocols/quake3.md#servers has trinity-server add a team before and a client number after.
_PLAYER = re.compile(rf'({_INT}) ({_INT})((?: {_INT})*) "(.*)"((?: [^ "]+)*)')
_COLOR = re.compile(r"\^[0-9A-Za-z]")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


@dataclass(frozen=True)
class Player:
    """One line of a statusResponse. `name` is raw: colour codes and every byte kept (latin-1)."""

    score: int
    ping: int
    name: str
    extra: tuple[str, ...] = ()  # tokens some servers add around the name (team, client number)

    @property
    def clean_name(self) -> str:
        return clean(self.name)


@dataclass(frozen=True)
class InfoResponse:
    challenge: str
    info: dict[str, str]  # without `challenge`


@dataclass(frozen=True)
class StatusResponse:
    challenge: str
    rules: dict[str, str]  # the server's serverinfo: every CVAR_SERVERINFO cvar, without `challenge`
    players: tuple[Player, ...]


def clean(text: str) -> str:
    """ioq3's Q_CleanStr: drop colour codes (``^`` + a letter or digit) and anything unprintable."""
    return _UNPRINTABLE.sub("", _COLOR.sub("", text))


# ---------------------------------------------------------------------------- requests


def _request(command: str, nonce: str) -> bytes:
    if not nonce or len(nonce) > MAX_NONCE or not nonce.isascii() or not nonce.isalnum():
        raise StatusError(f"nonce {nonce!r} must be 1..{MAX_NONCE} ASCII letters or digits")
    return OOB_PREFIX + f"{command} {nonce}".encode("ascii")


def getinfo_request(nonce: str) -> bytes:
    return _request("getinfo", nonce)


def getstatus_request(nonce: str) -> bytes:
    return _request("getstatus", nonce)


# ---------------------------------------------------------------------------- replies


def parse_infostring(text: str) -> dict[str, str]:
    """``\\k\\v\\k\\v`` → dict. Strict: a backslash first, key/value pairs, no empty or repeated key
    (Info_SetValueForKey removes a key before setting it, so a server never repeats one)."""
    if not text:
        return {}
    if not text.startswith("\\"):
        raise StatusError(f"info string does not start with a backslash: {text[:40]!r}")
    parts = text[1:].split("\\")
    if len(parts) % 2:
        raise StatusError(f"info string has a key without a value: {parts[-1][:40]!r}")
    out: dict[str, str] = {}
    for key, value in zip(parts[0::2], parts[1::2]):
        if not key:
            raise StatusError("info string has an empty key")
        if key in out:
            raise StatusError(f"info string repeats the key {key!r}")
        out[key] = value
    return out


def _body(data: bytes, command: str) -> str:
    head = OOB_PREFIX + command.encode() + b"\n"
    if not data.startswith(OOB_PREFIX):
        raise StatusError("not a connectionless packet (no FF FF FF FF)")
    if data[: len(head)].lower() != head.lower():
        word = data[4 : 4 + 24].split(b"\n", 1)[0]
        raise StatusError(f"not a {command} (starts {word!r})")
    body = data[len(head) :]
    if b"\0" in body:
        raise StatusError(f"{command} holds a NUL byte at {body.index(0) + len(head)}")
    return body.decode("latin-1")


def _challenge(info: dict[str, str], command: str) -> str:
    try:
        return info.pop("challenge")
    except KeyError:
        raise StatusError(f"{command} does not echo a challenge") from None


def parse_info_response(data: bytes) -> InfoResponse:
    body = _body(data, "infoResponse")
    if body.endswith("\n"):
        body = body[:-1]  # ioq3 sends none; one is harmless
    if "\n" in body:
        raise StatusError("infoResponse has more than one line")
    info = parse_infostring(body)
    return InfoResponse(_challenge(info, "infoResponse"), info)


def _int32(token: str, what: str, line: str) -> int:
    value = int(token)
    if not -(1 << 31) <= value < (1 << 31):
        raise StatusError(f"{what} {value} in player line {line!r} does not fit 32 bits")
    return value


def parse_player(line: str) -> Player:
    m = _PLAYER.fullmatch(line)
    if m is None:
        raise StatusError(f'player line {line[:80]!r} is not `score ping "name"`')
    score, ping, before, name, after = m.groups()
    return Player(
        _int32(score, "score", line), _int32(ping, "ping", line), name, tuple(before.split()) + tuple(after.split())
    )


def parse_status_response(data: bytes) -> StatusResponse:
    body = _body(data, "statusResponse")
    if not body.endswith("\n"):
        raise StatusError("statusResponse does not end with a newline (cut short?)")
    lines = body[:-1].split("\n")
    rules = parse_infostring(lines[0])
    challenge = _challenge(rules, "statusResponse")
    return StatusResponse(challenge, rules, tuple(parse_player(line) for line in lines[1:]))


# ---------------------------------------------------------------------------- one server


@dataclass
class _Request:
    build: Callable[[str], bytes]
    sent: dict[str, float] = field(default_factory=dict)  # nonce → when it went out
    rtt: float | None = None


class ServerQuery:
    """getinfo + getstatus with one server address; every datagram from that address goes in."""

    def __init__(self, nonce: Callable[[], str] = lambda: secrets.token_hex(4)) -> None:
        self._nonce = nonce
        self._requests = {"info": _Request(getinfo_request), "status": _Request(getstatus_request)}
        self._resend: ResendSchedule[str] = ResendSchedule(self._requests, FIRST_RESEND, RESEND_FACTOR)
        self.info: InfoResponse | None = None
        self.status: StatusResponse | None = None
        self.drops: Counter[str] = Counter()
        self.last_drop = ""

    @property
    def done(self) -> bool:
        return self.info is not None and self.status is not None

    @property
    def ping_ms(self) -> float | None:
        """Round trip of the getstatus that was answered (quakestat's ping), in ms."""
        rtt = self._requests["status"].rtt
        return None if rtt is None else rtt * 1000.0

    @property
    def info_rtt_ms(self) -> float | None:
        rtt = self._requests["info"].rtt
        return None if rtt is None else rtt * 1000.0

    def start(self, now: float) -> None:
        self._resend.start(now)

    def get_timer(self) -> float | None:
        """When `datagrams_to_send` has something again (a resend), or None."""
        return self._resend.get_timer()

    def datagrams_to_send(self, now: float) -> list[bytes]:
        out = []
        for kind in self._resend.due(now):
            req, nonce = self._requests[kind], self._nonce()
            req.sent[nonce] = now
            out.append(req.build(nonce))
        return out

    def receive_datagram(self, data: bytes, now: float) -> None:
        low = data[4:20].lower()
        reply: InfoResponse | StatusResponse
        try:
            if low.startswith(b"inforesponse"):
                kind, reply = "info", parse_info_response(data)
            elif low.startswith(b"statusresponse"):
                kind, reply = "status", parse_status_response(data)
            else:
                raise StatusError(f"not an infoResponse or statusResponse (starts {data[:24]!r})")
        except StatusError as e:
            self._drop("malformed", str(e))
            return
        req = self._requests[kind]
        sent = req.sent.get(reply.challenge)
        if sent is None:
            self._drop("foreign", f"{kind}Response for challenge {reply.challenge[:40]!r}, which we did not send")
            return
        if getattr(self, kind) is not None:
            self._drop("duplicate", f"a second {kind}Response (challenge {reply.challenge!r})")
            return
        req.rtt = now - sent
        self._resend.answered(kind)
        setattr(self, kind, reply)

    def _drop(self, reason: str, detail: str) -> None:
        self.drops[reason] += 1
        self.last_drop = detail
