"""Cube 2: Sauerbraten N_POS records (protocol 260; client.cpp sendposition / parsepositions).

Two layers:
- `NPos` is the record as it is on the wire: integers only (DMF-scaled coordinates, packed
  direction words, byte magnitudes). `encode_npos` / `decode_npos` convert it to and from bytes
  exactly; its properties give what a receiving game computes from it.
- `make_npos` is sendposition's arithmetic: it turns a player's float state into an `NPos` with
  the game's float32 steps and C truncations, including the yaw quirk (a yaw in (−1, 0)
  encodes as 360, i.e. yaw 0 and pitch +1°) for velocity and fall directions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import struct
from dataclasses import dataclass
from typing import Callable

from .wire import UINT_MAX, UINT_MIN, Reader, SauerDecodeError, put_uint

N_POS = 4
DMF = 16  # coordinate scale
DVELF = 1  # velocity scale
EYEHEIGHT = 14.0  # a player's eye height above its feet, in cube units
# The server kicks a client whose rebuilt horizontal or vertical speed stays ≥ 180.
MAX_SAFE_SPEED = 179.0

# physstate values (ents.h)
PHYS_FLOAT, PHYS_FALL, PHYS_SLIDE, PHYS_SLOPE, PHYS_FLOOR, PHYS_STEP_UP, PHYS_STEP_DOWN, PHYS_BOUNCE = range(8)

_F_XYZ3 = (1 << 0, 1 << 1, 1 << 2)
_F_VEL2 = 1 << 3
_F_FALL = 1 << 4
_F_FALL2 = 1 << 5
_F_FALLDIR = 1 << 6
_F_GAMECLIP = 1 << 7
_COORD_MIN, _COORD_MAX = -(1 << 23), (1 << 23) - 1  # 3 bytes, sign-extended from bit 23

Vec3 = tuple[float, float, float]

_F32 = struct.Struct("<f")
_F32_8 = struct.Struct("<8f")
_U16_4 = struct.Struct("<4H")


def _f32(x: float) -> float:
    try:
        value: float = _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        raise ValueError(f"{x!r} does not fit a float") from None
    return value


_RAD = _f32(_f32(3.1415927) / 180.0)  # tools.h: PI (3.1415927f), RAD (PI / 180.0f)
# The game is built with -O3 -ffast-math (src/Makefile), which turns `x / RAD` into
# `x * (1 / RAD)`: a whole-degree direction then truncates to the degree below about one time
# in 200 compared with a true division. We follow the game's build.
_INV_RAD = _f32(1.0 / _RAD)


def _load_libm_float_trig() -> tuple[Callable[[float, float], float], Callable[[float], float]]:
    """The C library's atan2f/asinf, which the game calls on floats.

    They are not always correctly rounded, and a 1-ulp difference moves a yaw of −124.0000076
    to −123.9999924, i.e. a whole degree after truncation; so use the same functions when the
    platform has them, and double-precision math rounded to float otherwise.
    """
    name = ctypes.util.find_library("m")
    try:
        libm = ctypes.CDLL(name) if name else None
        atan2f, asinf = libm.atan2f, libm.asinf  # type: ignore[union-attr]  # no libm: AttributeError, below
    except (OSError, AttributeError):
        return (lambda y, x: _f32(math.atan2(y, x))), (lambda v: _f32(math.asin(v)))
    atan2f.restype, atan2f.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
    asinf.restype, asinf.argtypes = ctypes.c_float, [ctypes.c_float]
    return atan2f, asinf


_atan2f, _asinf = _load_libm_float_trig()


def _trunc(x: float, what: str) -> int:
    if not math.isfinite(x):
        raise ValueError(f"{what}: non-finite value {x!r}")
    return int(x)


@dataclass(frozen=True)
class NPos:
    """One N_POS record in wire units. z of `o` is the feet height; `falldir` None = straight down."""

    cn: int
    physstate: int  # 0..7, PHYS_*
    lifebit: int  # lifesequence & 1; receivers drop records whose bit does not match
    move: int  # −1, 0, 1 (1 = forward)
    strafe: int  # −1, 0, 1 (1 = left)
    o: tuple[int, int, int]  # int(coord · DMF)
    dir: int  # yawpart + pitchpart · 360
    roll: int  # byte: clamp(int(roll + 90), 0, 180)
    vel: int  # speed · DVELF, 0..65535
    veldir: int
    fall: int = 0  # 0 = no fall block
    falldir: int | None = None
    gameclip: bool = False

    def __post_init__(self) -> None:
        o, falldir = self.o, self.falldir
        if (  # one expression for the common case: every field in range (the loop below names the first not)
            UINT_MIN <= self.cn <= UINT_MAX
            and 0 <= self.physstate <= 7
            and (self.lifebit == 0 or self.lifebit == 1)
            and -1 <= self.move <= 1
            and -1 <= self.strafe <= 1
            and len(o) == 3
            and _COORD_MIN <= o[0] <= _COORD_MAX
            and _COORD_MIN <= o[1] <= _COORD_MAX
            and _COORD_MIN <= o[2] <= _COORD_MAX
            and 0 <= self.dir <= 0xFFFF
            and 0 <= self.roll <= 0xFF
            and 0 <= self.vel <= 0xFFFF
            and 0 <= self.veldir <= 0xFFFF
            and 0 <= self.fall <= 0xFFFF
            and (falldir is None or (0 <= falldir <= 0xFFFF and self.fall > 0))
            and type(self.move) is int  # (a float move in range would pass the comparisons)
            and type(self.strafe) is int
            and type(self.lifebit) is int
        ):
            return
        checks = (
            (UINT_MIN <= self.cn <= UINT_MAX, "cn"),
            (0 <= self.physstate <= 7, "physstate"),
            (self.lifebit in (0, 1), "lifebit"),
            (self.move in (-1, 0, 1), "move"),
            (self.strafe in (-1, 0, 1), "strafe"),
            (len(self.o) == 3 and all(_COORD_MIN <= c <= _COORD_MAX for c in self.o), "o"),
            (0 <= self.dir <= 0xFFFF, "dir"),
            (0 <= self.roll <= 0xFF, "roll"),
            (0 <= self.vel <= 0xFFFF, "vel"),
            (0 <= self.veldir <= 0xFFFF, "veldir"),
            (0 <= self.fall <= 0xFFFF, "fall"),
            (self.falldir is None or (0 <= self.falldir <= 0xFFFF and self.fall > 0), "falldir"),
        )
        for ok, name in checks:
            if not ok:
                raise ValueError(f"NPos.{name} out of range: {getattr(self, name)!r}")

    # What parsepositions makes of it.
    @property
    def position(self) -> Vec3:
        """Feet position in cube units."""
        x, y, z = self.o
        return (x / DMF, y / DMF, z / DMF)

    def eye(self, eyeheight: float = EYEHEIGHT) -> Vec3:
        x, y, z = self.position
        return (x, y, z + eyeheight)

    @property
    def yaw(self) -> int:
        return dir_yaw(self.dir)

    @property
    def pitch(self) -> int:
        return dir_pitch(self.dir)

    @property
    def roll_deg(self) -> int:
        return min(self.roll, 180) - 90

    @property
    def velocity(self) -> Vec3:
        return _vec_from_dir(self.veldir, self.vel / DVELF)

    @property
    def falling(self) -> Vec3:
        if self.fall == 0:
            return (0.0, 0.0, 0.0)
        if self.falldir is None:
            return (0.0, 0.0, -self.fall / DVELF)
        return _vec_from_dir(self.falldir, self.fall / DVELF)


def dir_yaw(d: int) -> int:
    return d % 360


def dir_pitch(d: int) -> int:
    # integer division: pitch arrives in whole degrees
    return min(max(d // 360, 0), 180) - 90


def _vec_from_dir(d: int, mag: float) -> Vec3:
    """vecfromyawpitch(yaw, pitch, move=1, strafe=0) · mag."""
    yaw, pitch = math.radians(dir_yaw(d)), math.radians(dir_pitch(d))
    cp = math.cos(pitch)
    return (-math.sin(yaw) * cp * mag, math.cos(yaw) * cp * mag, math.sin(pitch) * mag)


# --- sendposition's arithmetic --------------------------------------------------------------


def pack_dir(yaw: float, pitch: float) -> int:
    """`(yaw < 0 ? 360 + int(yaw)%360 : int(yaw)%360) + clamp(int(pitch+90), 0, 180)*360`.

    C's % keeps the sign of the dividend; a yaw in (−1, 0) gives 360 + 0 = 360 (the quirk).
    """
    yaw = _f32(yaw)
    iy = _cvtt(yaw)
    rem = -((-iy) % 360) if iy < 0 else iy % 360
    yawpart = 360 + rem if yaw < 0 else rem
    pitchpart = min(max(_cvtt(_f32(_f32(pitch) + 90.0)), 0), 180)
    return (yawpart + pitchpart * 360) & 0xFFFF


_ZERO_DIR = 90 * 360  # pack_dir(0, 0): what vectoyawpitch gives a zero vector


def _cvtt(x: float) -> int:
    """C float→int on x86 (cvttss2si): truncation; NaN or out of range gives INT_MIN.

    vectoyawpitch yields a NaN pitch for a vector whose float magnitude underflows to 0 (or
    rounds below |z|); the game then sends pitch part clamp(INT_MIN) = 0, and so do we.
    """
    if math.isfinite(x) and -2147483648.0 <= x < 2147483648.0:
        return int(x)
    return -2147483648


def normalize_yaw(yaw: float) -> float:
    """fixcamerarange's yaw loops in float: into [0, 360) (−1e-6 + 360 rounds to 360, then 0)."""
    yaw = _f32(yaw)
    if not math.isfinite(yaw):
        raise ValueError(f"yaw: non-finite value {yaw!r}")
    if abs(yaw) > 1080.0:
        yaw = _f32(math.fmod(yaw, 360.0))
    while yaw < 0.0:
        yaw = _f32(yaw + 360.0)
    while yaw >= 360.0:
        yaw = _f32(yaw - 360.0)
    return yaw


def _magnitude(x: float, y: float, z: float) -> float:
    # vec::magnitude in float on float components; double sums of float products round the same
    return _f32(math.sqrt(_f32(_f32(_f32(x * x) + _f32(y * y)) + _f32(z * z))))


def _yaw_pitch(x: float, y: float, z: float, mag: float) -> tuple[float, float]:
    if x == 0.0 and y == 0.0 and z == 0.0:
        return 0.0, 0.0
    yaw = _f32(-_atan2f(x, y) * _INV_RAD)
    # As in the game: a magnitude that underflowed to 0 gives z/0, and a ratio past ±1 gives
    # asin's NaN; pack_dir turns a NaN pitch into what the game's binary sends.
    ratio = math.nan if mag == 0.0 else _f32(z / mag)
    pitch = math.nan if not -1.0 <= ratio <= 1.0 else _f32(_asinf(ratio) * _INV_RAD)
    return yaw, pitch


def vec_to_yaw_pitch(v: Vec3) -> tuple[float, float]:
    """vectoyawpitch: zero → (0, 0); yaw = −atan2(x, y), pitch = asin(z / |v|), degrees, floats.

    Float steps as the game's x86-64 build computes them (atan2f/asinf, reciprocal of RAD).
    """
    x, y, z = (_f32(c) for c in v)
    return _yaw_pitch(x, y, z, _magnitude(x, y, z))


def _speed_dir(v: Vec3, what: str) -> tuple[int, int, tuple[float, float, float]]:
    """(int speed capped at 0xFFFF, packed direction, the float vector) as sendposition computes them."""
    x, y, z = (_f32(c) for c in v)
    if x == 0.0 and y == 0.0 and z == 0.0:
        return 0, _ZERO_DIR, (x, y, z)
    mag = _magnitude(x, y, z)
    speed = min(_trunc(_f32(mag * DVELF), what), 0xFFFF)
    return speed, pack_dir(*_yaw_pitch(x, y, z, mag)), (x, y, z)


@dataclass(frozen=True)
class Pose:
    """What the player is doing, in the game's units: eye position (cube units), view angles
    (degrees), velocity (units/s), move/strafe (−1, 0, 1), physstate: what a client makes its
    N_POS records from (here rather than in client.py, so that the app's Sauerbraten mapping
    needs no client: a run without --sauer does not import it)."""

    eye: tuple[float, float, float]
    yaw: float
    pitch: float
    roll: float
    vel: tuple[float, float, float] = (0.0, 0.0, 0.0)
    move: int = 0
    strafe: int = 0
    physstate: int = PHYS_FLOOR


def make_npos(
    cn: int,
    *,
    eye: Vec3,
    yaw: float,
    pitch: float,
    roll: float,
    vel: Vec3 = (0.0, 0.0, 0.0),
    falling: Vec3 = (0.0, 0.0, 0.0),
    physstate: int = PHYS_FLOOR,
    lifesequence: int = 0,
    move: int = 0,
    strafe: int = 0,
    eyeheight: float = EYEHEIGHT,
    gameclip: bool = False,
) -> NPos:
    """The record sendposition writes for a player (cube units, degrees, Sauerbraten axes).

    `eye` is the player's `o` (eye position); z is sent as feet height `o.z − eyeheight`.
    The view yaw is first brought into [0, 360) as the game's fixcamerarange keeps it.
    Raises ValueError for non-finite input or a position outside the 24-bit coordinate range.

    A client sends one 30 times a second on the app's frame thread (issue 26), where every Python
    call costs microseconds: the float32 steps are taken several values per struct call and the
    common cases (no velocity, no fall) written out; the results are the step-by-step ones.
    """
    x0, y0, z0 = eye
    vx, vy, vz = vel
    fx, fy, fz = falling
    # x - x is 0.0 for every finite x and NaN for an infinity or a NaN: one test for all of them
    if ((x0 - x0) + (y0 - y0) + (z0 - z0) + (yaw - yaw) + (pitch - pitch) + (roll - roll) + (vx - vx) + (vy - vy)) + (
        (vz - vz) + (fx - fx) + (fy - fy) + (fz - fz) + (eyeheight - eyeheight)
    ) != 0.0:
        raise ValueError("make_npos: non-finite player state")
    try:
        ex, ey, ez, eh, r32, vx, vy, vz = _F32_8.unpack(_F32_8.pack(x0, y0, z0, eyeheight, roll, vx, vy, vz))
        fz32 = _F32.unpack(_F32.pack(ez - eh))[0]
        roll_part = int(_F32.unpack(_F32.pack(r32 + 90.0))[0])
    except OverflowError:
        for v in (*eye, eyeheight, roll, *vel):
            _f32(v)  # raises the ValueError naming the value
        _f32(_f32(eye[2]) - _f32(eyeheight))
        raise
    feet = (ex, ey, fz32)
    o = (int(ex * DMF), int(ey * DMF), int(fz32 * DMF))  # ·16 of a float is exact
    if not (_COORD_MIN <= o[0] <= _COORD_MAX and _COORD_MIN <= o[1] <= _COORD_MAX and _COORD_MIN <= o[2] <= _COORD_MAX):
        raise ValueError(f"position {feet} is outside Sauerbraten's 24-bit coordinate range")
    if vx == 0.0 and vy == 0.0 and vz == 0.0:
        speed, veldir = 0, _ZERO_DIR
    else:
        speed, veldir, _ = _speed_dir((vx, vy, vz), "vel")  # (already float32: unchanged)
    if fx == 0.0 and fy == 0.0 and fz == 0.0:
        fall, falldir = 0, None  # no fall block
    else:
        fall, fall_dir, (fx, fy, fz) = _speed_dir(falling, "falling")
        falldir = fall_dir
        if fall == 0 or (fx == 0.0 and fy == 0.0 and fz <= 0.0):
            falldir = None  # no fall block, or straight down: the receiver assumes (0, 0, −1)
    b = move & 3
    m = -1 if b & 2 else b
    b = strafe & 3
    s = -1 if b & 2 else b
    return NPos(
        cn=cn,
        physstate=physstate & 7,
        lifebit=lifesequence & 1,
        move=m,
        strafe=s,
        o=o,
        dir=pack_dir(normalize_yaw(yaw), pitch),
        roll=min(max(roll_part, 0), 180),
        vel=speed,
        veldir=veldir,
        fall=fall,
        falldir=falldir,
        gameclip=gameclip,
    )


def _two_bit(v: int) -> int:
    # sent as v & 3, read back as "bit 1 set → −1, else bit 0"
    b = v & 3
    return -1 if b & 2 else b


# --- bytes -----------------------------------------------------------------------------------


def encode_npos(rec: NPos) -> bytes:
    """The record's bytes, from the N_POS type byte on, with sendposition's field layout."""
    cn, (x, y, z), vel, fall, falldir = rec.cn, rec.o, rec.vel, rec.fall, rec.falldir
    out = bytearray((N_POS,))  # putint(N_POS): one byte
    if 0 <= cn < 1 << 7:
        out.append(cn)  # putuint's one-byte form (client numbers are small)
    else:
        put_uint(out, cn)
    out.append(rec.physstate | rec.lifebit << 3 | (rec.move & 3) << 4 | (rec.strafe & 3) << 6)
    flags = 0
    if x < 0 or x > 0xFFFF:
        flags |= 1  # _F_XYZ3
    if y < 0 or y > 0xFFFF:
        flags |= 2
    if z < 0 or z > 0xFFFF:
        flags |= 4
    if vel > 0xFF:
        flags |= _F_VEL2
    if fall > 0:
        flags |= _F_FALL
        if fall > 0xFF:
            flags |= _F_FALL2
        if falldir is not None:
            flags |= _F_FALLDIR
    if rec.gameclip:
        flags |= _F_GAMECLIP
    put_uint(out, flags)  # (flags ≥ 128 with gameclip: two bytes)
    if flags & 7 == 0:  # the common case: three 2-byte coordinates and the direction word in one go
        out += _U16_4.pack(x, y, z, rec.dir)
    else:
        out += (x & 0xFFFFFF).to_bytes(3 if flags & 1 else 2, "little")
        out += (y & 0xFFFFFF).to_bytes(3 if flags & 2 else 2, "little")
        out += (z & 0xFFFFFF).to_bytes(3 if flags & 4 else 2, "little")
        out += rec.dir.to_bytes(2, "little")
    out.append(rec.roll)
    out += vel.to_bytes(2 if flags & _F_VEL2 else 1, "little")
    out += rec.veldir.to_bytes(2, "little")
    if fall > 0:
        out += fall.to_bytes(2 if flags & _F_FALL2 else 1, "little")
        if falldir is not None:
            out += falldir.to_bytes(2, "little")
    return bytes(out)


def decode_npos(data: bytes, offset: int = 0) -> tuple[NPos, int]:
    """One record starting at `offset` (the N_POS type byte); returns it and the next offset.

    Reads as parsepositions does (flag-selected optional bytes, sign extension of 3-byte
    coordinates, 2-bit move/strafe); raises SauerDecodeError on truncation or a wrong type.
    """
    r = Reader(data, offset)
    start = r.pos
    kind = r.get_int("message type")
    if kind != N_POS:
        raise SauerDecodeError(f"not an N_POS record (type {kind})", start)
    cn = r.get_uint("cn")
    state = r.byte("state")
    flags = r.get_uint("flags")
    o = []
    for bit in _F_XYZ3:
        n = r.u16("coordinate")
        if flags & bit:
            n |= r.byte("coordinate 3rd byte") << 16
            if n & 0x800000:
                n -= 1 << 24
        o.append(n)
    d = r.u16("dir")
    roll = r.byte("roll")
    vel = r.u16("vel") if flags & _F_VEL2 else r.byte("vel")
    veldir = r.u16("veldir")
    fall, falldir = 0, None
    if flags & _F_FALL:
        fall = r.u16("fall") if flags & _F_FALL2 else r.byte("fall")
        if flags & _F_FALLDIR:
            falldir = r.u16("falldir")
            if fall == 0:
                falldir = None  # a direction on a zero magnitude is no fall at all
    rec = NPos(
        cn=cn,
        physstate=state & 7,
        lifebit=state >> 3 & 1,
        move=_two_bit(state >> 4),
        strafe=_two_bit(state >> 6),
        o=(o[0], o[1], o[2]),
        dir=d,
        roll=roll,
        vel=vel,
        veldir=veldir,
        fall=fall,
        falldir=falldir,
        gameclip=bool(flags & _F_GAMECLIP),
    )
    return rec, r.pos


def decode_npos_packet(data: bytes) -> list[NPos]:
    """Every record in a channel-0 packet (several may share one), until the buffer is empty."""
    out: list[NPos] = []
    pos = 0
    while pos < len(data):
        rec, pos = decode_npos(data, pos)
        out.append(rec)
    return out


# --- the position tick: record and bytes in one call ------------------------------------------

_F32_4 = struct.Struct("<4f")
_NPOS_SHORT = struct.Struct("<BBBB4HBBH")  # flags 0: 2-byte coordinates, 1-byte speed, no fall block
_NPOS_VEL2 = struct.Struct("<BBBB4HBHH")  # flags _F_VEL2: the same with a 2-byte speed
_F32_10 = struct.Struct("<10f")
_new, _set = object.__new__, object.__setattr__


def npos_bytes(
    cn: int,
    x0: float,
    y0: float,
    z0: float,
    yaw: float,
    pitch: float,
    roll: float,
    vx: float,
    vy: float,
    vz: float,
    move: int,
    strafe: int,
    physstate: int,
    lifesequence: int,
) -> bytes | None:
    """`encode_npos(make_npos(cn, eye=(x0, y0, z0), yaw=…, vel=(vx, vy, vz), …))` for the common
    case, from the pose's numbers (no Pose, no NPos built): what a client sends 30 times a second
    on the app's frame thread (issue 26), where each Python call and object costs microseconds
    cache-cold. None when it is not the common case — a player outside the game's 2-byte
    coordinate range (0..4095 cube units), a client number from 128, a value a float cannot hold or
    a non-finite one: make_npos + encode_npos then (pose_record), errors included.

    The float32 steps of make_npos are taken in two struct calls and the bytes packed in one;
    tests/sauer/test_codecs.py holds it equal to make_npos + encode_npos."""
    if not (
        0 <= cn < 128
        and (x0 - x0)
        + (y0 - y0)
        + (z0 - z0)
        + (yaw - yaw)
        + (pitch - pitch)
        + (roll - roll)
        + (vx - vx)
        + (vy - vy)
        + (vz - vz)
        == 0.0
    ):
        return None
    try:
        ex, ey, ez, eh, r32, vx, vy, vz, y32, p32 = _F32_10.unpack(
            _F32_10.pack(x0, y0, z0, EYEHEIGHT, roll, vx, vy, vz, yaw, pitch)
        )
        # (y32 + 360: normalize_yaw's one step for a yaw in [−360, 0), taken with the others)
        fz32, r90, p90, y360 = _F32_4.unpack(_F32_4.pack(ez - eh, r32 + 90.0, p32 + 90.0, y32 + 360.0))
    except OverflowError:  # make_npos raises the ValueError naming the value
        return None
    x, y, z = int(ex * DMF), int(ey * DMF), int(fz32 * DMF)  # ·16 of a float is exact
    if not (0 <= x <= 0xFFFF and 0 <= y <= 0xFFFF and 0 <= z <= 0xFFFF):
        return None
    if not 0.0 <= y32 < 360.0:
        if -360.0 <= y32 < 0.0 and y360 < 360.0:
            y32 = y360
        else:
            y32 = normalize_yaw(y32)  # (its first step, the float32 of the yaw, taken already)
    if vx == 0.0 and vy == 0.0 and vz == 0.0:
        speed, veldir = 0, _ZERO_DIR
    else:
        speed, veldir, _ = _speed_dir((vx, vy, vz), "vel")
    # pack_dir of a yaw in [0, 360): the yaw part is its whole degrees
    d = (int(y32) + min(max(_cvtt(p90), 0), 180) * 360) & 0xFFFF
    b = move & 3
    st = physstate & 7 | (lifesequence & 1) << 3 | (3 if b & 2 else b) << 4  # (−1 & 3 == 3: the same bits)
    b = strafe & 3
    st |= (3 if b & 2 else b) << 6
    rollb = min(max(int(r90), 0), 180)
    if speed <= 0xFF:
        return _NPOS_SHORT.pack(N_POS, cn, st, 0, x, y, z, d, rollb, speed, veldir)
    return _NPOS_VEL2.pack(N_POS, cn, st, _F_VEL2, x, y, z, d, rollb, speed, veldir)


def record_of(data: bytes) -> NPos:
    """The record of one N_POS's bytes (decode_npos's): the short form npos_bytes packs in one
    struct call, anything else through decode_npos."""
    n = len(data)
    if n >= 4 and data[1] < 0x80:  # a one-byte client number: the flags byte is data[3]
        flags = data[3]
        layout = _NPOS_SHORT if flags == 0 else _NPOS_VEL2 if flags == _F_VEL2 else None
        if layout is not None and n == layout.size and data[0] == N_POS:
            _, cn, st, _, x, y, z, d, rollb, speed, veldir = layout.unpack(data)
            rec = _new(NPos)  # NPos(cn=cn, …) without the frozen dataclass's per-field __init__
            _set(
                rec,
                "__dict__",
                {
                    "cn": cn,
                    "physstate": st & 7,
                    "lifebit": st >> 3 & 1,
                    "move": _two_bit(st >> 4),
                    "strafe": _two_bit(st >> 6),
                    "o": (x, y, z),
                    "dir": d,
                    "roll": rollb,
                    "vel": speed,
                    "veldir": veldir,
                    "fall": 0,
                    "falldir": None,
                    "gameclip": False,
                },
            )
            return rec
    return decode_npos(data)[0]


def pose_record(cn: int, pose: Pose, lifesequence: int) -> tuple[NPos, bytes]:
    """`make_npos(cn, eye=…, yaw=…, …, lifesequence=…)` of the pose's fields and that record's
    `encode_npos` bytes, in one call: the common case is npos_bytes' (and the record read back
    from its bytes), anything else make_npos + encode_npos themselves, errors included;
    tests/sauer/test_codecs.py holds the two equal.
    """
    eye, vel = pose.eye, pose.vel
    data = npos_bytes(
        cn,
        eye[0],
        eye[1],
        eye[2],
        pose.yaw,
        pose.pitch,
        pose.roll,
        vel[0],
        vel[1],
        vel[2],
        pose.move,
        pose.strafe,
        pose.physstate,
        lifesequence,
    )
    if data is not None:
        return record_of(data), data
    rec = make_npos(
        cn,
        eye=eye,
        yaw=pose.yaw,
        pitch=pose.pitch,
        roll=pose.roll,
        vel=vel,
        physstate=pose.physstate,
        lifesequence=lifesequence,
        move=pose.move,
        strafe=pose.strafe,
    )
    return rec, encode_npos(rec)
