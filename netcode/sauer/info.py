"""What a Sauerbraten server says about itself on its info port (game port + 1), sans-IO.

Two queries, both single UDP datagrams that the server answers by echoing the request and
appending its reply (src/fpsgame/server.cpp serverinforeply, src/fpsgame/extinfo.h):

- the server-browser ping: any request whose first int is not 0 (the browser sends its clock);
  the reply: players, attribute count, attributes (protocol, mode, seconds left, max players,
  mastermode [, paused, game speed]), map, description.
- extinfo EXT_PLAYERSTATS (request `0 1 -1`): a packet with the client numbers
  (EXT_PLAYERSTATS_RESP_IDS), then one packet per player (EXT_PLAYERSTATS_RESP_STATS: cn, ping,
  name, team, frags, flags, deaths, teamkills, accuracy, health, armour, gun, privilege, state,
  3 bytes of IP).
A password-protected server reports mastermode 4 ("password") in the ping reply.

`SauerQuery` is the exchange with one server: it hands out the requests (again, doubling the wait,
while unanswered), takes every datagram from the server, counts what it cannot use, and measures the
ping's round trip. It never reads a clock or touches a socket.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import cast

from ..drops import DropCounter, detail as drop_detail
from ..resend import ResendSchedule
from .errors import (
    InfoError as InfoError,  # re-exported: raised here
    SauerDecodeError,
)
from .protocol import CLIENT_STATES, PRIVILEGES, mastermode_name, mode_name
from .wire import Reader, put_int

MAX_PLAYERS = 256  # client numbers are the server's: the players kept stay bounded
EXT_ACK, EXT_VERSION = -1, 105
EXT_NO_ERROR, EXT_ERROR = 0, 1
EXT_PLAYERSTATS_RESP_IDS, EXT_PLAYERSTATS_RESP_STATS = -10, -11
EXT_UPTIME, EXT_PLAYERSTATS, EXT_TEAMSCORE = 0, 1, 2
MM_PASSWORD = 4
FIRST_RESEND = 0.5
RESEND_FACTOR = 2.0


@dataclass(frozen=True)
class InfoReply:
    tag: int
    players: int
    protocol: int
    mode: int
    seconds_left: int
    max_players: int
    mastermode: int
    paused: bool
    gamespeed: int
    map: str
    description: str

    @property
    def password(self) -> bool:
        return self.mastermode == MM_PASSWORD

    def as_dict(self) -> dict[str, object]:
        return {
            "players": self.players,
            "max_players": self.max_players,
            "protocol": self.protocol,
            "mode": self.mode,
            "mode_name": mode_name(self.mode),
            "map": self.map,
            "description": self.description,
            "seconds_left": self.seconds_left,
            "mastermode": self.mastermode,
            "mastermode_name": mastermode_name(self.mastermode),
            "password": self.password,
            "paused": self.paused,
            "gamespeed": self.gamespeed,
        }


@dataclass(frozen=True)
class PlayerInfo:
    cn: int
    ping: int
    name: str
    team: str
    frags: int
    flags: int
    deaths: int
    teamkills: int
    accuracy: int
    health: int
    armour: int
    gun: int
    privilege: int
    state: int

    def as_dict(self) -> dict[str, object]:
        return {
            "cn": self.cn,
            "name": self.name,
            "team": self.team,
            "ping": self.ping,
            "frags": self.frags,
            "deaths": self.deaths,
            "flags": self.flags,
            "teamkills": self.teamkills,
            "accuracy": self.accuracy,
            "health": self.health,
            "armour": self.armour,
            "gun": self.gun,
            "privilege": PRIVILEGES.get(self.privilege, str(self.privilege)),
            "state": CLIENT_STATES.get(self.state, str(self.state)),
        }


def info_request(tag: int) -> bytes:
    if tag == 0:
        raise ValueError("the ping request's first int must not be 0 (0 asks for extinfo)")
    out = bytearray()
    put_int(out, tag)
    return bytes(out)


PLAYERSTATS_REQUEST = bytes((0, EXT_PLAYERSTATS, 0xFF))  # 0, EXT_PLAYERSTATS, cn -1 (all)


def parse_info_reply(data: bytes) -> InfoReply:
    r = Reader(data)
    try:
        tag = r.get_int("tag")
        if tag == 0:
            raise InfoError("an extinfo reply, not a ping reply")
        players = r.get_int("players")
        nattrs = r.get_int("attribute count")
        if not 0 <= nattrs <= 32:
            raise InfoError(f"{nattrs} attributes")
        attrs = [r.get_int("attribute") for _ in range(nattrs)]
        if len(attrs) < 5:
            raise InfoError(f"only {len(attrs)} attributes (protocol, mode, time, max players, mastermode)")
        paused, speed = (attrs[5] != 0, attrs[6]) if len(attrs) >= 7 else (False, 100)
        mapname = r.get_string("map")
        desc = r.get_string("description")
    except SauerDecodeError as e:
        raise InfoError(f"ping reply cut short: {e}") from None
    return InfoReply(tag, players, attrs[0], attrs[1], attrs[2], attrs[3], attrs[4], paused, speed, mapname, desc)


def parse_playerstats(data: bytes) -> tuple[str, object]:
    """One extinfo EXT_PLAYERSTATS reply packet: ("ids", [cn...]), ("player", PlayerInfo) or
    ("error", text)."""
    r = Reader(data)
    try:
        head = (r.get_int("request"), r.get_int("request"), r.get_int("request"))
        if head != (0, EXT_PLAYERSTATS, -1):
            raise InfoError(f"not an EXT_PLAYERSTATS reply (starts {list(head)})")
        ack, version, err = r.get_int("ack"), r.get_int("version"), r.get_int("error")
        if ack != EXT_ACK:
            raise InfoError(f"no EXT_ACK ({ack})")
        if version != EXT_VERSION:
            raise InfoError(f"extinfo version {version}, not {EXT_VERSION}")
        if err != EXT_NO_ERROR:
            return "error", "the server answered EXT_ERROR"
        kind = r.get_int("kind")
        if kind == EXT_PLAYERSTATS_RESP_IDS:
            return "ids", [r.get_int("cn") for _ in iter(r.remaining, 0)]
        if kind != EXT_PLAYERSTATS_RESP_STATS:
            raise InfoError(f"unknown player stats kind {kind}")
        cn, ping = r.get_int("cn"), r.get_int("ping")
        name, team = r.get_string("name"), r.get_string("team")
        v = [r.get_int("stat") for _ in range(10)]
        return "player", PlayerInfo(cn, ping, name, team, *v)
    except SauerDecodeError as e:
        raise InfoError(f"player stats cut short: {e}") from None


@dataclass
class SauerQuery:
    """The ping query and extinfo player stats with one server."""

    tag: int = 1
    info: InfoReply | None = None
    ping_ms: float | None = None
    player_ids: list[int] | None = None
    players: dict[int, PlayerInfo] = field(default_factory=dict)
    drops: Counter[str] = field(default_factory=DropCounter)  # normalised, capped (netcode/drops.py)
    last_drop: str = ""

    def __post_init__(self) -> None:
        self._requests = {"info": info_request(self.tag), "players": PLAYERSTATS_REQUEST}
        self._resend: ResendSchedule[str] = ResendSchedule(self._requests, FIRST_RESEND, RESEND_FACTOR)

    @property
    def done(self) -> bool:
        return (
            self.info is not None and self.player_ids is not None and all(cn in self.players for cn in self.player_ids)
        )

    def start(self, now: float) -> None:
        self._resend.start(now)

    def get_timer(self) -> float | None:
        return self._resend.get_timer()

    def datagrams_to_send(self, now: float) -> list[bytes]:
        return [self._requests[name] for name in self._resend.due(now)]

    def receive_datagram(self, data: bytes, now: float) -> None:
        try:
            if data[:1] != b"\x00":
                reply = parse_info_reply(data)
                if reply.tag != self.tag:
                    self._drop("foreign", f"a ping reply to tag {reply.tag}, not ours ({self.tag})")
                    return
                if self.info is None:
                    self.info = reply
                    self._resend.answered("info")
                    sent_at = self._resend.last_sent("info")
                    self.ping_ms = (now - sent_at) * 1000.0 if sent_at is not None else None
                return
            kind, value = parse_playerstats(data)
        except InfoError as e:
            self._drop("malformed", str(e))
            return
        if kind == "ids":
            ids = self.player_ids = cast("list[int]", value)  # parse_playerstats: ("ids", [cn...])
            if not ids or all(cn in self.players for cn in ids):
                self._resend.answered("players")
        elif kind == "player":
            p = cast(PlayerInfo, value)
            if p.cn not in self.players and len(self.players) >= MAX_PLAYERS:
                self._drop("player: too many client numbers", f"client number {p.cn}")
                return
            self.players[p.cn] = p
            if self.player_ids is not None and all(cn in self.players for cn in self.player_ids):
                self._resend.answered("players")
        else:
            self._drop("error", str(value))

    def _drop(self, reason: str, detail: str) -> None:
        self.drops[reason] += 1
        self.last_drop = drop_detail(detail)
