"""Quake 3 VR head codec (docs/protocols/quake3.md#vr-head): buttons bits, roll short, VR stats.

Sender: head pitch and head-yaw-minus-weapon-yaw, clamped to ±80°, packed into 7 bits each at
buttons bits 12–18 / 19–25; roll clamped to ±60° goes into `angles[ROLL]` via ANGLE2SHORT.
Receiver (Trinity game code): any of bits 12–25 set means VR data; `p·180/127 − 90` decodes;
`ps.stats` carry `(short)(deg·182.04)`.

The reference clients and game compute all of this in C `float`. Every step here is rounded to
IEEE single precision in the same order, so a truncation boundary lands where theirs does — the
yaw offset too (`yaw_offset`): in double, head and weapon about 180° apart can wrap to the other
side and pack to the opposite end (+78.66° where the server decodes −80.08°).

Which receiver: Trinity ships its game code only as QVMs, compiled by its q3lcc (ec-/baseq3a's
optimised lcc), which rewrites `x / c` as `x * (1/c)` and folds `x * c1 * c2` into one constant
computed in double. So `p * 180.0f / 127.0f` runs as `p * 1.4173229f` (CNSTF4 1068853974) and
38 of the 128 decoded values differ from a native build's (gcc: two float operations) by up to
1.5e-5°; `(float)stat / 182.04f` likewise runs as `stat * 0.0054933f`. `Receiver.QVM` (the
default) models the QVM, `Receiver.NATIVE` a game library built from the same C.

What other players see of you differs from your own playerState: the server's game snaps the
entity's view angles to whole degrees (`SnapVector` in BG_PlayerStateToEntityState, a truncation
toward zero in both builds), so a 30° roll is 29.998° in your playerState and 29° on your entity.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from enum import StrEnum

from ..pose import angle_subtract

EF_VR_PLAYER = 0x400
VR_BUTTON_MASK = 0x03FFF000  # bits 12–25: "VR data present"
USER_BUTTON_MASK = 0xFFF  # bits 0–11; ioq3 has +button12..14, which would corrupt head pitch
PITCH_SHIFT = 12
YAW_SHIFT = 19
PACKED_MASK = 0x7F

HEAD_PITCH_CLAMP = 80.0
HEAD_YAW_CLAMP = 80.0
ROLL_CLAMP = 60.0
# The cgame's biological limits for drawing a VR head (pitch, yaw offset, roll), in degrees.
DISPLAY_LIMITS = (80.0, 80.0, 60.0)
EMA_TAU_MS = 30.0

_F32 = struct.Struct("<f")
_fpack, _funpack = _F32.pack, _F32.unpack  # bound once: these run several times per usercmd
_STAT_FACTOR = 182.0399932861328  # 182.04f as a float


class Receiver(StrEnum):
    """Which build of the game code decodes the head bits (and the VR stats)."""

    QVM = "qvm"  # Trinity's qagame.qvm / cgame.qvm, compiled by q3lcc: what servers run
    NATIVE = "native"  # the same C compiled for a native game library (gcc, no fast-math)


RECEIVER_NAMES = {Receiver.QVM: "Trinity QVM (q3lcc)", Receiver.NATIVE: "native game library"}
DEFAULT_RECEIVER = Receiver.QVM  # Trinity releases only QVMs (pak8t.pk3); servers run them (vm_game 2)

# The constants q3lcc emits for `* 180.0f / 127.0f` and `/ 182.04f` (CNSTF4 1068853974 and
# 1001652512 in its .asm output): 180·(1/127) and 1/182.04f computed in double, stored as float.
QVM_DECODE_FACTOR = struct.unpack("<f", struct.pack("<I", 0x3FB56AD6))[0]  # 1.4173228740692139
QVM_STAT_FACTOR = struct.unpack("<f", struct.pack("<I", 0x3BB40120))[0]  # 0.005493298...


def _f32(x: float) -> float:
    """Round to single precision, as a C `float` store does."""
    value: float = _funpack(_fpack(x))[0]
    return value


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError(f"non-finite angle {x!r}")
    return x


def _clamp_f32(lo: float, hi: float, x: float) -> float:
    # ioq3 Com_Clamp(float min, float max, float value)
    x = _f32(_finite(x))
    return lo if x < lo else hi if x > hi else x


def yaw_offset(head_yaw: float, weapon_yaw: float) -> float:
    """The head yaw offset the C clients send: q_math AngleSubtract(hmd yaw, weapon yaw) on floats.

    `a = a1 - a2` rounded to single, then `a -= 360` / `a += 360` (each rounded) into [−180, 180].
    The sender (Q3Link) and the mirror's model both take it from here: one arithmetic, one value.
    A float32 result in [−180, 180] comes back unchanged: `yaw_offset(yaw_offset(h, w), 0.0)`
    is `yaw_offset(h, w)`, so the core may pack an offset computed here as a head yaw."""
    a1, a2 = _finite(head_yaw), _finite(weapon_yaw)
    a: float = _funpack(_fpack(_funpack(_fpack(a1))[0] - _funpack(_fpack(a2))[0]))[0]
    if a > 1080.0 or a < -1080.0:
        a = _f32(math.fmod(a, 360.0))  # the loops' result (each of their steps is exact below 2^27)
    while a > 180.0:
        a = _funpack(_fpack(a - 360.0))[0]
    while a < -180.0:
        a = _funpack(_fpack(a + 360.0))[0]
    return a


def angle2short(deg: float) -> int:
    """ioq3 ANGLE2SHORT on a float: `(int)(x*65536/360) & 65535`, float arithmetic, truncation.

    x·65536 is exact in single precision; the division is rounded once to single (computing it in
    double first and rounding to single gives the same result: 53 ≥ 2·24 + 2).
    """
    x = _f32(_finite(deg))
    return int(_f32(x * 65536.0 / 360.0)) & 65535


def short2angle(s: int) -> float:
    """ioq3 SHORT2ANGLE: `s * (360.0/65536)` (double)."""
    return s * (360.0 / 65536)


def view_angle(short: int) -> float:
    """The server's playerState view angle for a usercmd angle short whose delta_angles the client
    compensated: `SHORT2ANGLE((short)temp)` (bg_pmove.c PM_UpdateViewAngles), in [−180, 180)."""
    s = short & 0xFFFF
    return (s - 0x10000 if s >= 0x8000 else s) * (360.0 / 65536)


def snap_angle(deg: float) -> float:
    """SnapVector on one component: `(float)(int)x`, truncation toward zero. The game's macro in
    both builds (QVM OP_CVFI is cvttss2si / a C cast; gcc's cast the same): 29.998 → 29, −29.998 → −29."""
    return float(int(_finite(deg)))


def roll_views(roll_short_: int) -> tuple[float, float]:
    """(the roll our own playerState carries, the roll other players see on our entity) for the
    roll short of a usercmd: SHORT2ANGLE of it, then SnapVector's whole degrees. 30° → (29.998, 29)."""
    own = view_angle(roll_short_)
    return own, float(int(own))


def pack7(deg: float, limit: float) -> int:
    """Clamp to ±limit, then `(int)((v + 90) * 127 / 180) & 0x7F` in float arithmetic."""
    v = _clamp_f32(-limit, limit, deg)
    return int(_funpack(_fpack(_funpack(_fpack(_funpack(_fpack(v + 90.0))[0] * 127.0))[0] / 180.0))[0]) & PACKED_MASK


def _decode_native(p: int) -> float:
    # `(p * 180.0f / 127.0f) - 90.0f` as gcc compiles it: p·180 (exact), / 127, − 90, each in float
    return _f32(_f32(_f32(p * 180.0) / 127.0) - 90.0)


def _decode_qvm(p: int) -> float:
    # the same line as q3lcc compiles it: CVIF4, MULF4 by the folded constant, SUBF4 90
    return _f32(_f32(p * QVM_DECODE_FACTOR) - 90.0)


DECODED: dict[Receiver, tuple[float, ...]] = {
    Receiver.QVM: tuple(_decode_qvm(p) for p in range(128)),
    Receiver.NATIVE: tuple(_decode_native(p) for p in range(128)),
}


def unpack7(packed: int, receiver: Receiver = DEFAULT_RECEIVER) -> float:
    """Trinity's decode `(p * 180.0f / 127.0f) - 90.0f` as `receiver` computes it; 0° → 63 → −0.709°."""
    return DECODED[receiver][packed & PACKED_MASK]


def identify_receiver(decoded: float) -> Receiver | None:
    """Which build decoded a relayed head angle (an entity's angles2[PITCH] or [ROLL]): 38 of the
    128 values tell QVM from native; None when the value is one both give, or neither."""
    qvm, native = decoded in DECODED[Receiver.QVM], decoded in DECODED[Receiver.NATIVE]
    if qvm == native:
        return None
    return Receiver.QVM if qvm else Receiver.NATIVE


def pack_head(user_buttons: int, head_pitch: float, head_yaw: float, weapon_yaw: float) -> int:
    """32-bit usercmd buttons: user bits 0–11, head pitch 12–18, yaw offset 19–25, 26–31 zero.

    Angles in degrees, Quake convention; the yaw offset is `yaw_offset(head_yaw, weapon_yaw)`
    (AngleSubtract in float). Clamped values pack to 7..119, so the result always satisfies the
    receiver's detection rule.
    """
    pitch_p = pack7(head_pitch, HEAD_PITCH_CLAMP)
    yaw_p = pack7(yaw_offset(head_yaw, weapon_yaw), HEAD_YAW_CLAMP)
    return (user_buttons & USER_BUTTON_MASK) | (pitch_p << PITCH_SHIFT) | (yaw_p << YAW_SHIFT)


# The head as a usercmd carries it: (head pitch, head yaw offset from the view yaw), degrees: what
# pack_head packs (with a weapon yaw of 0) and unpack_head returns. Not the tracked head (pitch, yaw,
# roll) an application holds: Q3Link turns that into this with yaw_offset.
WireHead = tuple[float, float]


def unpack_head(buttons: int, receiver: Receiver = DEFAULT_RECEIVER) -> WireHead | None:
    """(head pitch, head yaw offset) in degrees as the server's game decodes them (what other
    players get in the entity's angles2), or None when bits 12–25 are all clear (no VR data)."""
    if not buttons & VR_BUTTON_MASK:
        return None
    table = DECODED[receiver]
    return table[(buttons >> PITCH_SHIFT) & PACKED_MASK], table[(buttons >> YAW_SHIFT) & PACKED_MASK]


def roll_short(roll_deg: float) -> int:
    """`angles[ROLL]` of a VR usercmd: ANGLE2SHORT(Com_Clamp(−60, 60, roll))."""
    return angle2short(_clamp_f32(-ROLL_CLAMP, ROLL_CLAMP, roll_deg))


def stat_from_deg(deg: float) -> int:
    """Trinity's `(short)(deg * 182.04f)`: float multiply, truncation, then 16-bit wrap (one
    multiply: the QVM and a native build agree)."""
    v = int(_f32(_f32(_finite(deg)) * _STAT_FACTOR))
    return ((v + 0x8000) & 0xFFFF) - 0x8000


def deg_from_stat(stat: int, receiver: Receiver = DEFAULT_RECEIVER) -> float:
    """The cgame's `(float)stat / 182.04f` (the QVM multiplies by q3lcc's folded reciprocal)."""
    if receiver is Receiver.QVM:
        return _f32(_f32(float(stat)) * QVM_STAT_FACTOR)
    return _f32(_f32(float(stat)) / _STAT_FACTOR)


def clamp_display(pitch: float, yaw_offset: float, roll: float) -> tuple[float, float, float]:
    """Apply the cgame's biological limits before drawing a head."""
    lp, ly, lr = DISPLAY_LIMITS
    return (min(lp, max(-lp, pitch)), min(ly, max(-ly, yaw_offset)), min(lr, max(-lr, roll)))


@dataclass
class HeadSmoother:
    """The cgame's follow-camera EMA: alpha = dt / (dt + tau), stepping along AngleSubtract.

    Smooths away the 1.42° steps of the 7-bit head angles. The clock is passed in: `now` is in
    seconds from any monotonic source. The first sample, or a clock that does not advance,
    gives the current state unchanged (first sample: the target itself).
    """

    tau_ms: float = EMA_TAU_MS
    _last: float | None = field(default=None, init=False, repr=False)
    _state: tuple[float, float, float] = field(default=(0.0, 0.0, 0.0), init=False)

    def reset(self) -> None:
        self._last = None

    def update(self, now: float, pitch: float, yaw: float, roll: float = 0.0) -> tuple[float, float, float]:
        target = (_finite(pitch), _finite(yaw), _finite(roll))
        if self._last is None:
            self._last = now
            self._state = target
            return target
        dt_ms = max(0.0, (now - self._last) * 1000.0)
        self._last = max(self._last, now)
        alpha = dt_ms / (dt_ms + self.tau_ms) if dt_ms > 0.0 else 0.0
        p, y, r = (angle_subtract(s + alpha * angle_subtract(t, s), 0.0) for s, t in zip(self._state, target))
        self._state = (p, y, r)
        return self._state
