"""Sauerbraten protocol 260 (the 2020 Edition) constants: message numbers, game modes, master
modes, disconnect reasons, client states (src/fpsgame/game.h, src/shared/iengine.h,
src/engine/server.cpp disconnectreason)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

PROTOCOL_VERSION = 260
DEFAULT_PORT = 28785  # the game's ENet port; the info/ping port is this + 1
CHANNELS = 3  # 0 positions, 1 game messages, 2 file transfer
CHAN_POS, CHAN_MSG, CHAN_FILE = 0, 1, 2
EYEHEIGHT = 14.0
MAXNAMELEN = 15  # the server keeps this many characters of a name


# The message enum of game.h, in order (N_CONNECT = 0 … N_DEMOPACKET = 114), written out so a
# type checker knows the members. Msg.N_POS == 4 …; an int wherever an int goes.
class Msg(IntEnum):
    N_CONNECT = 0
    N_SERVINFO = 1
    N_WELCOME = 2
    N_INITCLIENT = 3
    N_POS = 4
    N_TEXT = 5
    N_SOUND = 6
    N_CDIS = 7
    N_SHOOT = 8
    N_EXPLODE = 9
    N_SUICIDE = 10
    N_DIED = 11
    N_DAMAGE = 12
    N_HITPUSH = 13
    N_SHOTFX = 14
    N_EXPLODEFX = 15
    N_TRYSPAWN = 16
    N_SPAWNSTATE = 17
    N_SPAWN = 18
    N_FORCEDEATH = 19
    N_GUNSELECT = 20
    N_TAUNT = 21
    N_MAPCHANGE = 22
    N_MAPVOTE = 23
    N_TEAMINFO = 24
    N_ITEMSPAWN = 25
    N_ITEMPICKUP = 26
    N_ITEMACC = 27
    N_TELEPORT = 28
    N_JUMPPAD = 29
    N_PING = 30
    N_PONG = 31
    N_CLIENTPING = 32
    N_TIMEUP = 33
    N_FORCEINTERMISSION = 34
    N_SERVMSG = 35
    N_ITEMLIST = 36
    N_RESUME = 37
    N_EDITMODE = 38
    N_EDITENT = 39
    N_EDITF = 40
    N_EDITT = 41
    N_EDITM = 42
    N_FLIP = 43
    N_COPY = 44
    N_PASTE = 45
    N_ROTATE = 46
    N_REPLACE = 47
    N_DELCUBE = 48
    N_REMIP = 49
    N_EDITVSLOT = 50
    N_UNDO = 51
    N_REDO = 52
    N_NEWMAP = 53
    N_GETMAP = 54
    N_SENDMAP = 55
    N_CLIPBOARD = 56
    N_EDITVAR = 57
    N_MASTERMODE = 58
    N_KICK = 59
    N_CLEARBANS = 60
    N_CURRENTMASTER = 61
    N_SPECTATOR = 62
    N_SETMASTER = 63
    N_SETTEAM = 64
    N_BASES = 65
    N_BASEINFO = 66
    N_BASESCORE = 67
    N_REPAMMO = 68
    N_BASEREGEN = 69
    N_ANNOUNCE = 70
    N_LISTDEMOS = 71
    N_SENDDEMOLIST = 72
    N_GETDEMO = 73
    N_SENDDEMO = 74
    N_DEMOPLAYBACK = 75
    N_RECORDDEMO = 76
    N_STOPDEMO = 77
    N_CLEARDEMOS = 78
    N_TAKEFLAG = 79
    N_RETURNFLAG = 80
    N_RESETFLAG = 81
    N_INVISFLAG = 82
    N_TRYDROPFLAG = 83
    N_DROPFLAG = 84
    N_SCOREFLAG = 85
    N_INITFLAGS = 86
    N_SAYTEAM = 87
    N_CLIENT = 88
    N_AUTHTRY = 89
    N_AUTHKICK = 90
    N_AUTHCHAL = 91
    N_AUTHANS = 92
    N_REQAUTH = 93
    N_PAUSEGAME = 94
    N_GAMESPEED = 95
    N_ADDBOT = 96
    N_DELBOT = 97
    N_INITAI = 98
    N_FROMAI = 99
    N_BOTLIMIT = 100
    N_BOTBALANCE = 101
    N_MAPCRC = 102
    N_CHECKMAPS = 103
    N_SWITCHNAME = 104
    N_SWITCHMODEL = 105
    N_SWITCHTEAM = 106
    N_INITTOKENS = 107
    N_TAKETOKEN = 108
    N_EXPIRETOKENS = 109
    N_DROPTOKENS = 110
    N_DEPOSITTOKENS = 111
    N_STEALTOKENS = 112
    N_SERVCMD = 113
    N_DEMOPACKET = 114


NUMMSG = len(Msg)


def message_name(number: int) -> str:
    try:
        return Msg(number).name
    except ValueError:
        return f"message {number}"


# iengine.h: the reason an ENet disconnect carries, and server.cpp's words for it.
(
    DISC_NONE,
    DISC_EOP,
    DISC_LOCAL,
    DISC_KICK,
    DISC_MSGERR,
    DISC_IPBAN,
    DISC_PRIVATE,
    DISC_MAXCLIENTS,
    DISC_TIMEOUT,
    DISC_OVERFLOW,
    DISC_PASSWORD,
) = range(11)
DISCONNECT_REASONS: dict[int, tuple[str, str]] = {
    DISC_NONE: ("DISC_NONE", "disconnected"),
    DISC_EOP: ("DISC_EOP", "end of packet"),
    DISC_LOCAL: ("DISC_LOCAL", "server is in local mode"),
    DISC_KICK: ("DISC_KICK", "kicked/banned"),
    DISC_MSGERR: ("DISC_MSGERR", "message error"),
    DISC_IPBAN: ("DISC_IPBAN", "ip is banned"),
    DISC_PRIVATE: ("DISC_PRIVATE", "server is in private mode"),
    DISC_MAXCLIENTS: ("DISC_MAXCLIENTS", "server FULL"),
    DISC_TIMEOUT: ("DISC_TIMEOUT", "connection timed out"),
    DISC_OVERFLOW: ("DISC_OVERFLOW", "overflow"),
    DISC_PASSWORD: ("DISC_PASSWORD", "invalid password"),
}


def disconnect_text(reason: int) -> str:
    """'kicked/banned (DISC_KICK)': the server's own words and the code's name."""
    name, words = DISCONNECT_REASONS.get(reason, (f"reason {reason}", "unknown reason"))
    return f"{words} ({name})"


# gamemode flags (game.h) and the modes, numbered from STARTGAMEMODE = -3.
M_TEAM, M_NOITEMS, M_NOAMMO, M_INSTA, M_EFFICIENCY, M_TACTICS, M_CAPTURE, M_REGEN, M_CTF, M_PROTECT, M_HOLD = (
    1 << i for i in range(11)
)
M_EDIT, M_DEMO, M_LOCAL, M_LOBBY, M_DMSP, M_CLASSICSP, M_SLOWMO, M_COLLECT = (1 << i for i in range(12, 20))
STARTGAMEMODE = -3


@dataclass(frozen=True)
class GameMode:
    number: int
    name: str
    flags: int

    @property
    def edit(self) -> bool:
        return bool(self.flags & M_EDIT)

    @property
    def hold(self) -> bool:
        return self.flags & (M_CTF | M_HOLD) == M_CTF | M_HOLD

    @property
    def multiplayer(self) -> bool:
        return not self.flags & M_LOCAL


_MODES = (
    ("SP", M_LOCAL | M_CLASSICSP),
    ("DMSP", M_LOCAL | M_DMSP),
    ("demo", M_DEMO | M_LOCAL),
    ("ffa", M_LOBBY),
    ("coop edit", M_EDIT),
    ("teamplay", M_TEAM),
    ("instagib", M_NOITEMS | M_INSTA),
    ("insta team", M_NOITEMS | M_INSTA | M_TEAM),
    ("efficiency", M_NOITEMS | M_EFFICIENCY),
    ("effic team", M_NOITEMS | M_EFFICIENCY | M_TEAM),
    ("tactics", M_NOITEMS | M_TACTICS),
    ("tac team", M_NOITEMS | M_TACTICS | M_TEAM),
    ("capture", M_NOAMMO | M_TACTICS | M_CAPTURE | M_TEAM),
    ("regen capture", M_NOITEMS | M_CAPTURE | M_REGEN | M_TEAM),
    ("ctf", M_CTF | M_TEAM),
    ("insta ctf", M_NOITEMS | M_INSTA | M_CTF | M_TEAM),
    ("protect", M_CTF | M_PROTECT | M_TEAM),
    ("insta protect", M_NOITEMS | M_INSTA | M_CTF | M_PROTECT | M_TEAM),
    ("hold", M_CTF | M_HOLD | M_TEAM),
    ("insta hold", M_NOITEMS | M_INSTA | M_CTF | M_HOLD | M_TEAM),
    ("effic ctf", M_NOITEMS | M_EFFICIENCY | M_CTF | M_TEAM),
    ("effic protect", M_NOITEMS | M_EFFICIENCY | M_CTF | M_PROTECT | M_TEAM),
    ("effic hold", M_NOITEMS | M_EFFICIENCY | M_CTF | M_HOLD | M_TEAM),
    ("collect", M_COLLECT | M_TEAM),
    ("insta collect", M_NOITEMS | M_INSTA | M_COLLECT | M_TEAM),
    ("effic collect", M_NOITEMS | M_EFFICIENCY | M_COLLECT | M_TEAM),
)
GAME_MODES: dict[int, GameMode] = {
    i + STARTGAMEMODE: GameMode(i + STARTGAMEMODE, n, f) for i, (n, f) in enumerate(_MODES)
}
MODE_FFA, MODE_COOP_EDIT, MODE_INSTAGIB = 0, 1, 3


def mode_name(mode: int) -> str:
    m = GAME_MODES.get(mode)
    return m.name if m is not None else f"mode {mode}"


# mastermodes (game.h): MM_AUTH = -1 … MM_PASSWORD = 4
MASTER_MODES = {-1: "auth", 0: "open", 1: "veto", 2: "locked", 3: "private", 4: "password"}


def mastermode_name(mm: int) -> str:
    return MASTER_MODES.get(mm, f"mastermode {mm}")


# client states (ents.h CS_*)
CS_ALIVE, CS_DEAD, CS_SPAWNING, CS_LAGGED, CS_EDITING, CS_SPECTATOR = range(6)
CLIENT_STATES = {
    CS_ALIVE: "alive",
    CS_DEAD: "dead",
    CS_SPAWNING: "spawning",
    CS_LAGGED: "lagged",
    CS_EDITING: "editing",
    CS_SPECTATOR: "spectator",
}

PRIVILEGES = {0: "none", 1: "master", 2: "auth", 3: "admin"}
GUN_FIST, GUN_SG, GUN_CG, GUN_RL, GUN_RIFLE, GUN_GL, GUN_PISTOL = range(7)
NUM_AMMO = GUN_PISTOL - GUN_SG + 1  # ammo counts in a spawn state: SG … pistol
