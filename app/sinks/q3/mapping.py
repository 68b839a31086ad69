"""Rig state → what a Quake 3 VR usercmd carries, and what the far side makes of it.

Pure functions: degrees in, plain numbers out. The Q3 client turns `Q3Intent` into a usercmd
(angle shorts compensated by the server's delta_angles, the buttons width the link allows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from headcast.app.run.rig import RigState
from headcast.netcode.pose import quake_angles
from headcast.netcode.q3 import vrhead
from headcast.xr.frame import Controls

BUTTON_ATTACK = 1
MOVE_MAX = 127
TRIGGER_PRESSED = 0.5


class Q3Intent(NamedTuple):
    """One usercmd's worth for the Q3 sink: absolute view angles (degrees) and the usercmd fields.

    A NamedTuple (built without its Python-level __new__) rather than a frozen dataclass: one is
    built at every command tick, on a frame whose every object costs several microseconds.
    """

    angles: tuple[float, float, float]  # weapon pitch, weapon yaw, head roll (clamped ±60)
    user_buttons: int  # bits 0–11 (attack)
    forwardmove: int
    rightmove: int
    upmove: int
    head: tuple[float, float, float] | None  # head pitch, yaw, roll as tracked (None = lost)
    vr: bool  # head bits wanted (the link may still be 16-bit)

    @property
    def buttons(self) -> int:
        """The 32-bit VR buttons: head bits when the head is tracked and vr is on. Packed when read
        (the receiver's view, the status line): the Q3 client packs the wire's own from `head`."""
        head = self.head
        if self.vr and head is not None:
            return vrhead.pack_head(self.user_buttons, head[0], head[1], self.angles[1])
        # Tracking lost (or a flat link): no head bits at all, so the receiver clears
        # EF_VR_PLAYER instead of showing a frozen head.
        return self.user_buttons

    @property
    def roll_short(self) -> int:
        return vrhead.roll_short(self.angles[2])


_new = tuple.__new__
_ROLL_CLAMP = vrhead.ROLL_CLAMP


def q3_intent(state: RigState, controls: Controls, vr: bool, move_speed: float) -> Q3Intent:
    stage = state.frame
    q = state.world_orientation(stage.head)
    head = quake_angles(q) if q is not None else None
    q = state.world_orientation(stage.right_aim)
    if q is not None:
        w_pitch, w_yaw, _ = quake_angles(q)
    elif head is not None:
        # No right controller: aim where the head looks (a seated/gamepad-less setup).
        w_pitch, w_yaw = head[0], head[1]
    else:
        w_pitch, w_yaw = 0.0, state.origin.yaw
    user = BUTTON_ATTACK if controls.trigger_right >= TRIGGER_PRESSED else 0
    if vr and head is not None:
        # max(-clamp, min(clamp, roll)), builtins' semantics kept (NaN → +clamp)
        roll = head[2] if head[2] < _ROLL_CLAMP else _ROLL_CLAMP
        roll = roll if roll > -_ROLL_CLAMP else -_ROLL_CLAMP
    else:
        roll = 0.0  # no head on the wire: roll back to level
    vx, vz = state.move_world
    fwd, right = weapon_frame_moves(state.move_world, w_yaw, move_speed) if vx or vz else (0, 0)
    return _new(Q3Intent, ((w_pitch, w_yaw, roll), user, fwd, right, MOVE_MAX if controls.jump else 0, head, vr))


def weapon_frame_moves(move_world: tuple[float, float], weapon_yaw: float, move_speed: float) -> tuple[int, int]:
    """World floor velocity (OpenXR x, z; m/s) → forwardmove/rightmove (±127) in the weapon's yaw frame."""
    vx, vz = move_world
    if move_speed <= 0 or (vx == 0.0 and vz == 0.0):
        return 0, 0
    y = math.radians(weapon_yaw)
    # Quake yaw 0 faces OpenXR -Z; +yaw turns left (towards -X).
    fx, fz = -math.sin(y), -math.cos(y)
    rx, rz = math.cos(y), -math.sin(y)
    f = (vx * fx + vz * fz) / move_speed
    r = (vx * rx + vz * rz) / move_speed
    clamp = lambda v: max(-MOVE_MAX, min(MOVE_MAX, int(round(v * MOVE_MAX))))  # noqa: E731
    return clamp(f), clamp(r)


@dataclass(frozen=True, slots=True)
class RemoteHead:
    """The head a VR-aware receiver draws from one usercmd: decoded, limited (not yet smoothed)."""

    pitch: float
    yaw_offset: float
    roll: float


def remote_head(buttons: int, roll_short: int) -> RemoteHead | None:
    """What Trinity's game code recovers from the wire: 7-bit pitch / yaw offset, 16-bit roll."""
    head = vrhead.unpack_head(buttons)
    if head is None:
        return None
    roll = vrhead.short2angle(roll_short)
    if roll > 180.0:
        roll -= 360.0
    p, y, r = vrhead.clamp_display(head[0], head[1], roll)
    return RemoteHead(p, y, r)
