"""Quake 3 VR head codec (seed 000; reference quake3.md §8): buttons bits, roll short, VR stats.

Sender: head pitch and head-yaw-minus-weapon-yaw, clamped to ±80°, packed into 7 bits each at
buttons bits 12–18 / 19–25; roll clamped to ±60° goes into `angles[ROLL]` via ANGLE2SHORT.
Receiver (Trinity game code): any of bits 12–25 set means VR data; `p·180/127 − 90` decodes;
`ps.stats` carry `(short)(deg·182.04)`.

The reference clients and game compute all of this in C `float`. Every step here is rounded to
IEEE single precision in the same order, so a truncation boundary lands where theirs does.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

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
_STAT_FACTOR = 182.0399932861328  # 182.04f as a float


def _f32(x: float) -> float:
    """Round to single precision, as a C `float` store does."""
    return _F32.unpack(_F32.pack(x))[0]


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError(f"non-finite angle {x!r}")
    return x


def _clamp_f32(lo: float, hi: float, x: float) -> float:
    # ioq3 Com_Clamp(float min, float max, float value)
    x = _f32(_finite(x))
    return lo if x < lo else hi if x > hi else x


def _angle_subtract_f32(a1: float, a2: float) -> float:
    # q_math AngleSubtract on floats; headset yaws are small, so the loops run at most a few times.
    a = _f32(_f32(_finite(a1)) - _f32(_finite(a2)))
    if abs(a) > 1080.0:
        a = _f32(math.fmod(a, 360.0))
    while a > 180.0:
        a = _f32(a - 360.0)
    while a < -180.0:
        a = _f32(a + 360.0)
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


def pack7(deg: float, limit: float) -> int:
    """Clamp to ±limit, then `(int)((v + 90) * 127 / 180) & 0x7F` in float arithmetic."""
    v = _clamp_f32(-limit, limit, deg)
    return int(_f32(_f32(_f32(v + 90.0) * 127.0) / 180.0)) & PACKED_MASK


def unpack7(packed: int) -> float:
    """Trinity's decode `(p * 180.0f / 127.0f) - 90.0f`; 0° → 63 → −0.709°."""
    p = packed & PACKED_MASK
    return _f32(_f32(_f32(p * 180.0) / 127.0) - 90.0)


def pack_head(user_buttons: int, head_pitch: float, head_yaw: float, weapon_yaw: float) -> int:
    """32-bit usercmd buttons: user bits 0–11, head pitch 12–18, yaw offset 19–25, 26–31 zero.

    Angles in degrees, Quake convention; the yaw offset is AngleSubtract(head_yaw, weapon_yaw).
    Clamped values pack to 7..119, so the result always satisfies the receiver's detection rule.
    """
    pitch_p = pack7(head_pitch, HEAD_PITCH_CLAMP)
    yaw_p = pack7(_angle_subtract_f32(head_yaw, weapon_yaw), HEAD_YAW_CLAMP)
    return (user_buttons & USER_BUTTON_MASK) | (pitch_p << PITCH_SHIFT) | (yaw_p << YAW_SHIFT)


def unpack_head(buttons: int) -> tuple[float, float] | None:
    """(head pitch, head yaw offset) in degrees, or None when bits 12–25 are all clear (no VR data)."""
    if not buttons & VR_BUTTON_MASK:
        return None
    return unpack7(buttons >> PITCH_SHIFT), unpack7(buttons >> YAW_SHIFT)


def roll_short(roll_deg: float) -> int:
    """`angles[ROLL]` of a VR usercmd: ANGLE2SHORT(Com_Clamp(−60, 60, roll))."""
    return angle2short(_clamp_f32(-ROLL_CLAMP, ROLL_CLAMP, roll_deg))


def stat_from_deg(deg: float) -> int:
    """Trinity's `(short)(deg * 182.04f)`: float multiply, truncation, then 16-bit wrap."""
    v = int(_f32(_f32(_finite(deg)) * _STAT_FACTOR))
    return ((v + 0x8000) & 0xFFFF) - 0x8000


def deg_from_stat(stat: int) -> float:
    """The cgame's `(float)stat / 182.04f`."""
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

