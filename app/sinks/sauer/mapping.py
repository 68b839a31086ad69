"""Rig state → the Sauerbraten player: where the VR player stands in the game's world and what its
N_POS says (cube units, whole-degree angles, move/strafe bits, a speed the server accepts).

Axes: Sauerbraten is x right, y forward, z up, in cube units; from OpenXR (x, y, z)_sauer =
(x, −z, y)_xr · 8 (a player's eye is 14 units above its feet: 1.75 m). yaw = Quake yaw (0 faces
+y, growing to the left), pitch = −Quake pitch (up is positive), roll = Quake roll.

The world. The server's spawn state carries no position: the game picks its spawn point from the
map file, on the client. So the spawn point is configured (`sauer.spawn`, where the feet stand,
and `sauer.spawn_yaw`), and at every spawn (the first, after a death, after a map change) the
head's place on the floor and its heading are anchored there: walking — in the room or with the
stick — moves the player away from the spawn point, turning turns it about that point. The eye is
14 units above the spawn floor while the head is at its standing height (`sauer.eye_height`, or 0:
the head's height at the spawn) and rises with the head above it, never sinks below it: the game
draws the feet 14 units under the eye, so a crouch would put the model into the floor.

Velocity: the locomotion's (the stick's), capped at 179 units/s — the server kicks a player whose
speed rebuilt from the record stays ≥ 180 horizontally or vertically for 3 s. Head motion, snap
turns and re-localisation jumps move the position only: the server accepts any jump. move/strafe
(the walking animation others see) come from the locomotion's direction relative to the head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from headcast.app.run.rig import RigState
from headcast.netcode.pose import quake_angles
from headcast.netcode.sauer.npos import EYEHEIGHT, MAX_SAFE_SPEED, PHYS_FLOOR, Pose

UNITS_PER_METRE = 8.0
# A locomotion component within 67.5° of the head's forward (or left) axis sets move (or strafe):
# diagonal stick moves set both, as two keys held in the game.
MOVE_SHARE = math.sin(math.radians(22.5))
DEFAULT_SPAWN = (512.0, 512.0, 512.0)
_new, _set = object.__new__, object.__setattr__


@dataclass(frozen=True, slots=True)
class SauerWorld:
    spawn: tuple[float, float, float] = DEFAULT_SPAWN  # feet, cube units
    spawn_yaw: float = 0.0  # degrees, the game's yaw
    eye_height: float = 0.0  # metres; 0 = the head's height at each spawn


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where the spawn point was put in the rig's world: the head's floor point (OpenXR world
    metres), the turn from the rig's yaw to the game's (degrees) and the standing head height."""

    x: float
    z: float
    turn: float
    standing: float
    # cos and sin of the turn (radians), taken once here rather than at each position tick
    cos: float = field(init=False, repr=False, compare=False)
    sin: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        t = math.radians(self.turn)
        object.__setattr__(self, "cos", math.cos(t))
        object.__setattr__(self, "sin", math.sin(t))


class GamePose(NamedTuple):  # (a tuple: one call to build, on the frame thread)
    pose: Pose
    speed: float  # the locomotion's speed before the cap, units/s
    capped: bool


def anchor_at(state: RigState, world: SauerWorld) -> Anchor | None:
    """The anchor for a spawn now: None while the head is not tracked (anchor at the next frame)."""
    head = state.head
    if not head.valid:
        return None
    x, y, z = head.position
    yaw = quake_angles(head.orientation)[1]
    return Anchor(x, z, world.spawn_yaw - yaw, world.eye_height or y)


# game_tick's numbers: the eye (x, y, z), yaw, pitch, roll, the velocity's x and y (its z is 0), move,
# strafe, the speed asked before the cap, and whether the cap bit
Tick = tuple[float, float, float, float, float, float, float, float, int, int, float, bool]


def game_tick(state: RigState, world: SauerWorld, anchor: Anchor) -> Tick | None:
    """This frame's player in the game's world as plain numbers (game_pose's, no object built: a
    30 Hz tick on the app's frame thread, where each Python call and object costs microseconds
    cold); None while the head is not tracked."""
    head = state.world_head()  # its world position and orientation as state.head's, without the Pose
    if head is None:
        return None
    u = UNITS_PER_METRE
    x, y, z, qx, qy, qz, qw = head
    pitch, yaw, roll = quake_angles((qx, qy, qz, qw))
    turn, c, s = anchor.turn, anchor.cos, anchor.sin
    dx, dy = (x - anchor.x) * u, (anchor.z - z) * u
    sx, sy, sz = world.spawn
    game_yaw = yaw + turn
    mx, mz = state.move_world
    if mx == 0.0 and mz == 0.0:  # (standing: the arithmetic below gives 0.0, 0.0, no move)
        return (
            sx + dx * c - dy * s,
            sy + dx * s + dy * c,
            sz + EYEHEIGHT + max(0.0, y - anchor.standing) * u,
            game_yaw,
            -pitch,
            roll,
            0.0,
            0.0,
            0,
            0,
            0.0,
            False,
        )
    wx, wy = mx * u, -mz * u
    vx, vy = wx * c - wy * s, wx * s + wy * c
    speed = math.hypot(vx, vy)
    capped = speed > MAX_SAFE_SPEED
    if capped:
        k = MAX_SAFE_SPEED / speed
        vx, vy = vx * k, vy * k
    move = strafe = 0
    if speed > 0.0:
        yr = math.radians(game_yaw)
        fwd = (-vx * math.sin(yr) + vy * math.cos(yr)) / math.hypot(vx, vy)  # · (−sin, cos)
        left = (-vx * math.cos(yr) - vy * math.sin(yr)) / math.hypot(vx, vy)  # · (−cos, −sin)
        move = 1 if fwd > MOVE_SHARE else -1 if fwd < -MOVE_SHARE else 0
        strafe = 1 if left > MOVE_SHARE else -1 if left < -MOVE_SHARE else 0
    return (
        sx + dx * c - dy * s,
        sy + dx * s + dy * c,
        sz + EYEHEIGHT + max(0.0, y - anchor.standing) * u,
        game_yaw,
        -pitch,
        roll,
        vx,
        vy,
        move,
        strafe,
        speed,
        capped,
    )


def pose_of(tick: Tick) -> GamePose:
    """The game pose of game_tick's numbers."""
    ex, ey, ez, yaw, pitch, roll, vx, vy, move, strafe, speed, capped = tick
    # Pose(eye=…, yaw=…, …) without the frozen dataclass's per-field __init__: the same object
    pose = _new(Pose)
    _set(
        pose,
        "__dict__",
        {
            "eye": (ex, ey, ez),
            "yaw": yaw,
            "pitch": pitch,
            "roll": roll,
            "vel": (vx, vy, 0.0),
            "move": move,
            "strafe": strafe,
            "physstate": PHYS_FLOOR,
        },
    )
    return GamePose(pose, speed, capped)


def game_pose(state: RigState, world: SauerWorld, anchor: Anchor) -> GamePose | None:
    """This frame's player in the game's world; None while the head is not tracked."""
    tick = game_tick(state, world, anchor)
    return None if tick is None else pose_of(tick)
