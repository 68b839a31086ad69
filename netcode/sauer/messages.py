"""Sauerbraten's game messages: what a server sends a client, parsed as the game parses it, and
what a client sends (src/fpsgame/client.cpp parsemessages / parsepositions / sendintro).

Messages on channel 1 are packed back to back without lengths: a reader stays in step only by
reading every message exactly as far as the game does, so `parse_messages` follows
parsemessages case by case (including capture/ctf/collect's cases, whose N_INITFLAGS layout
depends on the game mode), and relayed messages of other clients (N_CLIENT cn, length, bytes) are
parsed with that client as their sender. Where the game stops reading a packet (a message that
needs a sender outside N_CLIENT, an unknown type) we stop too and say why (`ParseResult.stopped`).

The messages the client core acts on become small frozen dataclasses; the rest are read past.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .npos import decode_npos
from .protocol import GAME_MODES, NUM_AMMO, Msg
from .wire import MAXSTRLEN, Reader, SauerDecodeError, put_int, put_string


@dataclass(frozen=True)
class PlayerState:
    """parsestate: what a spawn carries."""

    lifesequence: int
    health: int
    maxhealth: int
    armour: int
    armourtype: int
    gunselect: int
    ammo: tuple[int, ...]


# --- server → client --------------------------------------------------------------------------


@dataclass(frozen=True)
class ServInfo:
    cn: int
    protocol: int
    sessionid: int
    haspassword: bool
    description: str
    auth: str


@dataclass(frozen=True)
class Welcome:
    pass


@dataclass(frozen=True)
class MapChange:
    map: str
    mode: int
    items: bool


@dataclass(frozen=True)
class SpawnState:
    """N_SPAWNSTATE: the server spawns `cn` (us, or a bot of ours) with this state; answered by N_SPAWN."""

    cn: int
    state: PlayerState


@dataclass(frozen=True)
class Spawned:
    """N_SPAWN relayed from client `cn`: it spawned with this state (its new lifesequence)."""

    cn: int
    state: PlayerState


@dataclass(frozen=True)
class InitClient:
    cn: int
    name: str
    team: str
    model: int


@dataclass(frozen=True)
class InitAI:
    cn: int
    owner: int
    aitype: int
    skill: int
    model: int
    name: str
    team: str


@dataclass(frozen=True)
class ClientLeft:
    """N_CDIS."""

    cn: int


@dataclass(frozen=True)
class Died:
    victim: int
    actor: int
    frags: int
    teamfrags: int


@dataclass(frozen=True)
class ForcedDeath:
    cn: int


@dataclass(frozen=True)
class ResumeEntry:
    cn: int
    state: int  # CS_*
    frags: int
    flags: int
    deaths: int
    quadmillis: int
    player: PlayerState


@dataclass(frozen=True)
class Resume:
    entries: tuple[ResumeEntry, ...]


@dataclass(frozen=True)
class ServMsg:
    text: str


@dataclass(frozen=True)
class Pong:
    millis: int


@dataclass(frozen=True)
class ClientPing:
    cn: int
    ping: int


@dataclass(frozen=True)
class TimeUp:
    seconds: int


@dataclass(frozen=True)
class CurrentMaster:
    mastermode: int
    masters: tuple[tuple[int, int], ...]  # (cn, privilege)


@dataclass(frozen=True)
class MasterMode:
    mastermode: int


@dataclass(frozen=True)
class Spectator:
    cn: int
    on: bool


@dataclass(frozen=True)
class SetTeam:
    cn: int
    team: str
    reason: int


@dataclass(frozen=True)
class SwitchName:
    cn: int
    name: str


@dataclass(frozen=True)
class SwitchModel:
    cn: int
    model: int


@dataclass(frozen=True)
class Text:
    cn: int
    text: str
    team: bool = False


@dataclass(frozen=True)
class EditMode:
    cn: int
    on: bool


@dataclass(frozen=True)
class PauseGame:
    paused: bool
    cn: int


@dataclass(frozen=True)
class AuthChallenge:
    desc: str
    id: int
    challenge: str


@dataclass(frozen=True)
class DemoPlayback:
    on: bool
    cn: int


@dataclass
class ParseResult:
    messages: list[object] = field(default_factory=list)
    stopped: str = ""  # why the rest of the packet was not read (as the game would not read it)
    skipped: int = 0  # messages read past (no dataclass: sounds, shots, items, edits, ...)


class _Ctx:
    """What parsing needs of the session (the game mode: N_INITFLAGS' layout depends on it) and
    where it collects the result."""

    __slots__ = ("mode", "out", "skipped")

    def __init__(self, mode: int) -> None:
        self.mode = mode
        self.out: list[object] = []
        self.skipped = 0


class _Stop(Exception):
    """The game stops reading this (sub)buffer here."""


# One message's reader: (reader, sender cn or -1, context, message number) -> its record or None.
Handler = Callable[[Reader, int, _Ctx, int], object]


def _ints(r: Reader, n: int, what: str) -> list[int]:
    return [r.get_int(what) for _ in range(n)]


def _state(r: Reader) -> PlayerState:
    v = _ints(r, 6 + NUM_AMMO, "spawn state")
    return PlayerState(v[0], v[1], v[2], v[3], v[4], v[5], tuple(v[6:]))


def _needs_sender(sender: int, t: int) -> None:
    if sender < 0:
        # `if(!d) return;`: at the top level the game ignores the rest of the packet
        raise _Stop(f"{Msg(t).name} outside N_CLIENT (the game stops reading the packet there)")


def _skip_list(r: Reader, per: int, what: str) -> None:
    """`while((n = getint(p)) >= 0 && !overread) read per ints`."""
    while r.get_int(what) >= 0:
        _ints(r, per, what)


def _sel_edit(r: Reader, t: int) -> None:
    _ints(r, 13, "selection")
    extra_ints = {
        Msg.N_EDITF: 2,
        Msg.N_EDITT: 2,
        Msg.N_EDITM: 2,
        Msg.N_ROTATE: 1,
        Msg.N_REPLACE: 3,
        Msg.N_EDITVSLOT: 2,
    }.get(Msg(t), 0)
    _ints(r, extra_ints, "edit")
    if t in (Msg.N_EDITT, Msg.N_REPLACE, Msg.N_EDITVSLOT):
        if r.remaining() < 2:
            raise _Stop(f"{Msg(t).name}: no room for its extra length")
        extra = r.u16("edit extra length")
        if r.remaining() < extra:
            raise _Stop(f"{Msg(t).name}: extra data cut short")
        r.skip(extra, "edit extra")


def _parse(r: Reader, sender: int, ctx: _Ctx) -> None:
    """parsemessages(cn = sender, d, p): every message of the (sub)buffer.

    The game recurses into each N_CLIENT's buffer; here the outer buffers wait on a stack, so a
    packet of thousands of nested N_CLIENT headers is read as the game reads it (each level at
    least 3 bytes: the depth is bounded by the packet's size) and never raises RecursionError. A
    stop inside a relayed buffer ends that buffer only; the outer one goes on after its length."""
    out = ctx.out
    outer: list[tuple[Reader, int]] = []
    while True:
        try:
            while r.remaining():
                t = r.get_int("message type")
                if t == Msg.N_CLIENT:
                    cn = r.get_int("N_CLIENT cn")
                    length = r.get_uint("N_CLIENT length")
                    sub = Reader(r.skip(length, "N_CLIENT payload"))
                    outer.append((r, sender))
                    r, sender = sub, cn
                    continue
                simple = _FIXED.get(t)
                if simple is not None:
                    need_sender, n = simple
                    if need_sender:
                        _needs_sender(sender, t)
                    _ints(r, n, Msg(t).name)
                    ctx.skipped += 1
                    continue
                handler = _HANDLERS.get(t)
                if handler is None:
                    raise _Stop(f"unknown message type {t} (the game calls it an illegal network message)")
                msg = handler(r, sender, ctx, t)
                if msg is None:
                    ctx.skipped += 1
                else:
                    out.append(msg)
        except (_Stop, SauerDecodeError):
            if not outer:
                raise  # the packet itself: parse_messages says why it stopped
            # the game's recursive call returns; the outer buffer goes on after the length
        if not outer:
            return
        r, sender = outer.pop()


def parse_messages(data: bytes, mode: int = 0) -> ParseResult:
    """Every message of one channel-1 packet from the server. `mode`: the game mode in force
    (an N_MAPCHANGE in the packet changes it for what follows)."""
    ctx = _Ctx(mode)
    stopped = ""
    try:
        _parse(Reader(data), -1, ctx)
    except _Stop as e:
        stopped = str(e)
    except SauerDecodeError as e:
        stopped = f"cut short: {e}"
    return ParseResult(ctx.out, stopped, ctx.skipped)


# (needs a sender outside N_CLIENT, ints after the type) for messages that are a fixed count of ints
_FIXED: dict[int, tuple[bool, int]] = {
    Msg.N_DEMOPACKET: (False, 0),
    Msg.N_SOUND: (True, 1),
    Msg.N_GUNSELECT: (True, 1),
    Msg.N_TAUNT: (True, 0),
    Msg.N_REMIP: (True, 0),
    Msg.N_EDITENT: (True, 10),
    Msg.N_SHOTFX: (False, 9),
    Msg.N_EXPLODEFX: (False, 3),
    Msg.N_DAMAGE: (False, 5),
    Msg.N_HITPUSH: (False, 6),
    Msg.N_ITEMSPAWN: (False, 1),
    Msg.N_ITEMACC: (False, 2),
    Msg.N_ANNOUNCE: (False, 1),
    Msg.N_NEWMAP: (False, 1),
    Msg.N_GAMESPEED: (False, 2),
    # capture
    Msg.N_BASEREGEN: (False, 5),
    Msg.N_REPAMMO: (False, 2),
    # ctf
    Msg.N_DROPFLAG: (False, 6),
    Msg.N_SCOREFLAG: (False, 9),
    Msg.N_RETURNFLAG: (False, 3),
    Msg.N_TAKEFLAG: (False, 3),
    Msg.N_RESETFLAG: (False, 5),
    Msg.N_INVISFLAG: (False, 2),
    # collect
    Msg.N_TAKETOKEN: (False, 3),
    Msg.N_DEPOSITTOKENS: (False, 6),
}


def _servinfo(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    cn, prot, sessionid, haspass = _ints(r, 4, "N_SERVINFO")
    desc = r.get_string("server description", MAXSTRLEN)
    auth = r.get_string("server auth", MAXSTRLEN)
    return ServInfo(cn, prot, sessionid, haspass > 0, desc, auth)


def _mapchange(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    name = r.get_string("map name")
    mode = r.get_int("mode")
    items = r.get_int("items") != 0
    ctx.mode = mode
    return MapChange(name, mode, items)


def _initclient(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    cn = r.get_int("cn")
    name = r.get_string("name")
    team = r.get_string("team")
    return InitClient(cn, name, team, r.get_int("model"))


def _spawn(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    state = _state(r)
    return Spawned(sender, state) if sender >= 0 else None


def _spawnstate(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    cn = r.get_int("cn")
    return SpawnState(cn, _state(r))


def _itemlist(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _skip_list(r, 1, "item list")


def _teaminfo(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    while r.get_string("team"):
        r.get_int("team frags")


def _resume(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    entries = []
    while True:
        cn = r.get_int("resume cn")
        if cn < 0:
            break
        state, frags, flags, deaths, quad = _ints(r, 5, "resume")
        entries.append(ResumeEntry(cn, state, frags, flags, deaths, quad, _state(r)))
    return Resume(tuple(entries))


def _clipboard(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _ints(r, 2, Msg(t).name)
    r.skip(max(r.get_int("packed length"), 0), Msg(t).name)


def _edit(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _needs_sender(sender, t)
    _sel_edit(r, t)


def _editvar(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _needs_sender(sender, t)
    kind = r.get_int("variable type")
    r.get_string("variable name")
    if kind == 0:
        r.get_int("int value")
    elif kind == 1:
        r.get_float("float value")
    elif kind == 2:
        r.get_string("string value")


def _senddemolist(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    for _ in range(max(r.get_int("demos"), 0)):
        r.get_string("demo")


def _currentmaster(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    mm = r.get_int("mastermode")
    masters = []
    while (cn := r.get_int("master cn")) >= 0:
        masters.append((cn, r.get_int("privilege")))
    return CurrentMaster(mm, tuple(masters))


def _bases(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    for _ in range(max(r.get_int("bases"), 0)):
        r.get_int("ammo type")
        r.get_string("owner")
        r.get_string("enemy")
        _ints(r, 2, "base")


def _baseinfo(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    r.get_int("base")
    r.get_string("owner")
    r.get_string("enemy")
    _ints(r, 2, "base")


def _basescore(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    r.get_int("base")
    r.get_string("team")
    r.get_int("total")


def _initflags(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    # ctfclientmode::parseflags: m_hold adds each flag's holding team (and time)
    hold = (m := GAME_MODES.get(ctx.mode)) is not None and m.hold
    _ints(r, 2, "scores")
    for _ in range(max(r.get_int("flags"), 0)):
        _version, _spawn, owner, _invis = _ints(r, 4, "flag")
        if owner < 0 and r.get_int("dropped"):
            _ints(r, 3, "drop location")
        if hold and r.get_int("hold team") >= 0:
            r.get_int("hold time")


def _inittokens(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _ints(r, 2, "scores")
    for _ in range(max(r.get_int("tokens"), 0)):
        _ints(r, 6, "token")
    _skip_list(r, 1, "token counts")


def _expiretokens(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    while r.get_int("token") >= 0:
        pass


def _droptokens(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _ints(r, 4, "drop")
    _skip_list(r, 2, "dropped token")


def _stealtokens(r: Reader, sender: int, ctx: _Ctx, t: int) -> None:
    _ints(r, 8, "steal")
    _skip_list(r, 1, "stolen token")


def _authchal(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    desc = r.get_string("auth desc")
    ident = r.get_int("auth id") & 0xFFFFFFFF
    return AuthChallenge(desc, ident, r.get_string("challenge"))


def _initai(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    bn, owner, aitype, skill, model = _ints(r, 5, "N_INITAI")
    name = r.get_string("bot name")
    return InitAI(bn, owner, aitype, min(max(skill, 1), 101), model, name, r.get_string("bot team"))


def _text(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    _needs_sender(sender, t)
    return Text(sender, r.get_string("text"))


def _sayteam(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    cn = r.get_int("cn")
    return Text(cn, r.get_string("text"), team=True)


def _clientping(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    _needs_sender(sender, t)
    return ClientPing(sender, r.get_int("ping"))


def _switchname(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    name = r.get_string("name")
    return SwitchName(sender, name) if sender >= 0 else None


def _switchmodel(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    model = r.get_int("model")
    return SwitchModel(sender, model) if sender >= 0 else None


def _editmode(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
    on = r.get_int("edit mode") != 0
    return EditMode(sender, on) if sender >= 0 else None


def _one(cls: Callable[[int], object], what: str) -> Handler:
    def handler(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
        return cls(r.get_int(what))

    return handler


def _two(make: Callable[[int, int], object], what: str) -> Handler:
    def handler(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
        a, b = _ints(r, 2, what)
        return make(a, b)

    return handler


def _string(make: Callable[[str], object] | None, what: str) -> Handler:
    def handler(r: Reader, sender: int, ctx: _Ctx, t: int) -> object:
        s = r.get_string(what)
        return None if make is None else make(s)

    return handler


_HANDLERS: dict[int, Handler] = {
    Msg.N_SERVINFO: _servinfo,
    Msg.N_WELCOME: lambda r, sender, ctx, t: Welcome(),
    Msg.N_PAUSEGAME: _two(lambda v, cn: PauseGame(v > 0, cn), "N_PAUSEGAME"),
    Msg.N_TEXT: _text,
    Msg.N_SAYTEAM: _sayteam,
    Msg.N_MAPCHANGE: _mapchange,
    Msg.N_FORCEDEATH: _one(ForcedDeath, "cn"),
    Msg.N_ITEMLIST: _itemlist,
    Msg.N_INITCLIENT: _initclient,
    Msg.N_SWITCHNAME: _switchname,
    Msg.N_SWITCHMODEL: _switchmodel,
    Msg.N_CDIS: _one(ClientLeft, "cn"),
    Msg.N_SPAWN: _spawn,
    Msg.N_SPAWNSTATE: _spawnstate,
    Msg.N_DIED: lambda r, sender, ctx, t: Died(*_ints(r, 4, "N_DIED")),
    Msg.N_TEAMINFO: _teaminfo,
    Msg.N_RESUME: _resume,
    Msg.N_CLIPBOARD: _clipboard,
    Msg.N_UNDO: _clipboard,
    Msg.N_REDO: _clipboard,
    **{
        m: _edit
        for m in (
            Msg.N_EDITF,
            Msg.N_EDITT,
            Msg.N_EDITM,
            Msg.N_FLIP,
            Msg.N_COPY,
            Msg.N_PASTE,
            Msg.N_ROTATE,
            Msg.N_REPLACE,
            Msg.N_DELCUBE,
            Msg.N_EDITVSLOT,
        )
    },
    Msg.N_EDITVAR: _editvar,
    Msg.N_PONG: _one(Pong, "millis"),
    Msg.N_CLIENTPING: _clientping,
    Msg.N_TIMEUP: _one(TimeUp, "seconds"),
    Msg.N_SERVMSG: _string(ServMsg, "server message"),
    Msg.N_SENDDEMOLIST: _senddemolist,
    Msg.N_DEMOPLAYBACK: _two(lambda on, cn: DemoPlayback(on != 0, cn), "N_DEMOPLAYBACK"),
    Msg.N_CURRENTMASTER: _currentmaster,
    Msg.N_MASTERMODE: _one(MasterMode, "mastermode"),
    Msg.N_EDITMODE: _editmode,
    Msg.N_SPECTATOR: _two(lambda cn, on: Spectator(cn, on != 0), "N_SPECTATOR"),
    Msg.N_SETTEAM: lambda r, sender, ctx, t: SetTeam(r.get_int("cn"), r.get_string("team"), r.get_int("reason")),
    Msg.N_BASES: _bases,
    Msg.N_BASEINFO: _baseinfo,
    Msg.N_BASESCORE: _basescore,
    Msg.N_INITFLAGS: _initflags,
    Msg.N_INITTOKENS: _inittokens,
    Msg.N_EXPIRETOKENS: _expiretokens,
    Msg.N_DROPTOKENS: _droptokens,
    Msg.N_STEALTOKENS: _stealtokens,
    Msg.N_REQAUTH: _string(None, "auth desc"),
    Msg.N_AUTHCHAL: _authchal,
    Msg.N_INITAI: _initai,
    Msg.N_SERVCMD: _string(None, "server command"),
}


# --- channel 0: positions ---------------------------------------------------------------------


@dataclass(frozen=True)
class Teleported:
    cn: int
    teleport: int
    dest: int


@dataclass(frozen=True)
class JumpPadded:
    cn: int
    jumppad: int


def parse_positions(data: bytes) -> tuple[list[object], str]:
    """parsepositions: N_POS records (NPos), N_TELEPORT / N_JUMPPAD; and why the rest was not
    read ("" when all was)."""
    out: list[object] = []
    pos = 0
    try:
        while pos < len(data):
            r = Reader(data, pos)
            t = r.get_int("message type")
            if t == Msg.N_POS:
                rec, pos = decode_npos(data, pos)
                out.append(rec)
            elif t == Msg.N_TELEPORT:
                out.append(Teleported(*_ints(r, 3, "N_TELEPORT")))
                pos = r.pos
            elif t == Msg.N_JUMPPAD:
                out.append(JumpPadded(*_ints(r, 2, "N_JUMPPAD")))
                pos = r.pos
            elif t == Msg.N_DEMOPACKET:
                pos = r.pos
            else:
                return out, f"unknown message type {t} on channel 0"
    except SauerDecodeError as e:
        return out, f"cut short: {e}"
    return out, ""


# --- client → server --------------------------------------------------------------------------


def build(*parts: int | str) -> bytes:
    """A message as the game's `putint`/`sendstring` sequence: ints and strings in order."""
    out = bytearray()
    for p in parts:
        if isinstance(p, str):
            put_string(out, p)
        else:
            put_int(out, p)
    return bytes(out)


def connect_message(name: str, model: int, password_hash: str = "", authdesc: str = "", authname: str = "") -> bytes:
    """sendintro's N_CONNECT: name, player model, password hash ("" = none), auth desc and name."""
    return build(Msg.N_CONNECT, name, model, password_hash, authdesc, authname)


def spawn_message(lifesequence: int, gunselect: int) -> bytes:
    return build(Msg.N_SPAWN, lifesequence, gunselect)


def tryspawn_message() -> bytes:
    return build(Msg.N_TRYSPAWN)


def ping_message(millis: int) -> bytes:
    return build(Msg.N_PING, millis)


def clientping_message(ping: int) -> bytes:
    return build(Msg.N_CLIENTPING, ping)
