"""Sauerbraten protocol 260 (the 2020 Edition) constants: message numbers, game modes, master
modes, disconnect reasons, client states (src/fpsgame/game.h, src/shared/iengine.h,
src/engine/server.cpp disconnectreason)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

PROTOCOL_VERSION = 260
DEFAULT_PORT = 28785          # the game's ENet port; the info/ping port is this + 1
CHANNELS = 3                  # 0 positions, 1 game messages, 2 file transfer
CHAN_POS, CHAN_MSG, CHAN_FILE = 0, 1, 2
EYEHEIGHT = 14.0

# The message enum of game.h, in order (N_CONNECT = 0 … N_DEMOPACKET = 114).
_NAMES = """
N_CONNECT N_SERVINFO N_WELCOME N_INITCLIENT N_POS N_TEXT N_SOUND N_CDIS
N_SHOOT N_EXPLODE N_SUICIDE N_DIED N_DAMAGE N_HITPUSH N_SHOTFX N_EXPLODEFX
N_TRYSPAWN N_SPAWNSTATE N_SPAWN N_FORCEDEATH N_GUNSELECT N_TAUNT
N_MAPCHANGE N_MAPVOTE N_TEAMINFO N_ITEMSPAWN N_ITEMPICKUP N_ITEMACC N_TELEPORT N_JUMPPAD
N_PING N_PONG N_CLIENTPING N_TIMEUP N_FORCEINTERMISSION N_SERVMSG N_ITEMLIST N_RESUME
N_EDITMODE N_EDITENT N_EDITF N_EDITT N_EDITM N_FLIP N_COPY N_PASTE N_ROTATE N_REPLACE N_DELCUBE
N_REMIP N_EDITVSLOT N_UNDO N_REDO N_NEWMAP N_GETMAP N_SENDMAP N_CLIPBOARD N_EDITVAR
N_MASTERMODE N_KICK N_CLEARBANS N_CURRENTMASTER N_SPECTATOR N_SETMASTER N_SETTEAM
N_BASES N_BASEINFO N_BASESCORE N_REPAMMO N_BASEREGEN N_ANNOUNCE
N_LISTDEMOS N_SENDDEMOLIST N_GETDEMO N_SENDDEMO N_DEMOPLAYBACK N_RECORDDEMO N_STOPDEMO N_CLEARDEMOS
N_TAKEFLAG N_RETURNFLAG N_RESETFLAG N_INVISFLAG N_TRYDROPFLAG N_DROPFLAG N_SCOREFLAG N_INITFLAGS
N_SAYTEAM N_CLIENT N_AUTHTRY N_AUTHKICK N_AUTHCHAL N_AUTHANS N_REQAUTH N_PAUSEGAME N_GAMESPEED
N_ADDBOT N_DELBOT N_INITAI N_FROMAI N_BOTLIMIT N_BOTBALANCE N_MAPCRC N_CHECKMAPS
N_SWITCHNAME N_SWITCHMODEL N_SWITCHTEAM
N_INITTOKENS N_TAKETOKEN N_EXPIRETOKENS N_DROPTOKENS N_DEPOSITTOKENS N_STEALTOKENS
N_SERVCMD N_DEMOPACKET
""".split()
# Msg.N_POS == 4 …; an int wherever an int goes.
Msg = IntEnum("Msg", _NAMES, start=0)
NUMMSG = len(_NAMES)


def message_name(number: int) -> str:
    try:
        return Msg(number).name
    except ValueError:
        return f"message {number}"


# iengine.h: the reason an ENet disconnect carries, and server.cpp's words for it.
DISC_NONE, DISC_EOP, DISC_LOCAL, DISC_KICK, DISC_MSGERR, DISC_IPBAN, DISC_PRIVATE, DISC_MAXCLIENTS, \
    DISC_TIMEOUT, DISC_OVERFLOW, DISC_PASSWORD = range(11)
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
M_TEAM, M_NOITEMS, M_NOAMMO, M_INSTA, M_EFFICIENCY, M_TACTICS, M_CAPTURE, M_REGEN, M_CTF, M_PROTECT, \
    M_HOLD = (1 << i for i in range(11))
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
    ("SP", M_LOCAL | M_CLASSICSP), ("DMSP", M_LOCAL | M_DMSP), ("demo", M_DEMO | M_LOCAL), ("ffa", M_LOBBY),
    ("coop edit", M_EDIT), ("teamplay", M_TEAM), ("instagib", M_NOITEMS | M_INSTA),
    ("insta team", M_NOITEMS | M_INSTA | M_TEAM), ("efficiency", M_NOITEMS | M_EFFICIENCY),
    ("effic team", M_NOITEMS | M_EFFICIENCY | M_TEAM), ("tactics", M_NOITEMS | M_TACTICS),
    ("tac team", M_NOITEMS | M_TACTICS | M_TEAM), ("capture", M_NOAMMO | M_TACTICS | M_CAPTURE | M_TEAM),
    ("regen capture", M_NOITEMS | M_CAPTURE | M_REGEN | M_TEAM), ("ctf", M_CTF | M_TEAM),
    ("insta ctf", M_NOITEMS | M_INSTA | M_CTF | M_TEAM), ("protect", M_CTF | M_PROTECT | M_TEAM),
    ("insta protect", M_NOITEMS | M_INSTA | M_CTF | M_PROTECT | M_TEAM), ("hold", M_CTF | M_HOLD | M_TEAM),
    ("insta hold", M_NOITEMS | M_INSTA | M_CTF | M_HOLD | M_TEAM), ("effic ctf", M_NOITEMS | M_EFFICIENCY | M_CTF | M_TEAM),
    ("effic protect", M_NOITEMS | M_EFFICIENCY | M_CTF | M_PROTECT | M_TEAM),
    ("effic hold", M_NOITEMS | M_EFFICIENCY | M_CTF | M_HOLD | M_TEAM), ("collect", M_COLLECT | M_TEAM),
    ("insta collect", M_NOITEMS | M_INSTA | M_COLLECT | M_TEAM),
    ("effic collect", M_NOITEMS | M_EFFICIENCY | M_COLLECT | M_TEAM),
)
GAME_MODES: dict[int, GameMode] = {i + STARTGAMEMODE: GameMode(i + STARTGAMEMODE, n, f) for i, (n, f) in enumerate(_MODES)}
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
CLIENT_STATES = {CS_ALIVE: "alive", CS_DEAD: "dead", CS_SPAWNING: "spawning", CS_LAGGED: "lagged",
                 CS_EDITING: "editing", CS_SPECTATOR: "spectator"}

PRIVILEGES = {0: "none", 1: "master", 2: "auth", 3: "admin"}
GUN_FIST, GUN_SG, GUN_CG, GUN_RL, GUN_RIFLE, GUN_GL, GUN_PISTOL = range(7)
NUM_AMMO = GUN_PISTOL - GUN_SG + 1  # ammo counts in a spawn state: SG … pistol
