"""The rig: where the tracked play space (the XROrigin) sits in the world, and locomotion.

The XROrigin is an SE(2) pose in the OpenXR world frame: a point on the floor (x, z) and a yaw
about +Y (positive = turn left, as `yaw_quat`). A stage-space pose p, q maps to the world as
`origin.pos + R_y(yaw)·p`, `yaw_quat(yaw) ⊗ q`. The left stick slides the origin; the right stick
turns it *about the head*, so the head's world position does not jump when the view turns and
the physical (stage) pose — what the NetSync receiver reconstructs — never changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from headcast.netcode.pose import Quat, Vec3, q_mul, yaw_quat
from headcast.xr.frame import Controls, Pose, TrackingFrame


@dataclass(frozen=True, slots=True)
class Origin:
    """An XROrigin on the floor: world x, z in metres and yaw in degrees (+ = left)."""

    x: float = 0.0
    z: float = 0.0
    yaw: float = 0.0

    def to_world(self, p: Vec3) -> Vec3:
        c, s = math.cos(math.radians(self.yaw)), math.sin(math.radians(self.yaw))
        # R_y(yaw) for a right-handed frame: x' = x cos + z sin, z' = -x sin + z cos.
        return (self.x + p[0] * c + p[2] * s, p[1], self.z - p[0] * s + p[2] * c)

    def rotate(self, q: Quat) -> Quat:
        return q_mul(yaw_quat(self.yaw), q)

    def trig(self) -> tuple[float, float, float, float, float, float]:
        """What `pose_to_world` needs of this origin (x, z, cos, sin of the yaw and of half of it):
        the rig evaluates it once per origin, not per pose per frame."""
        r = math.radians(self.yaw)
        # yaw_quat(yaw) = (0, sin(r/2), 0, cos(r/2))
        return self.x, self.z, math.cos(r), math.sin(r), math.cos(r * 0.5), math.sin(r * 0.5)

    def turned_about(self, pivot: Vec3, degrees: float) -> "Origin":
        """This origin turned by `degrees` about the stage point `pivot` (the head): the pivot's
        world position is the same before and after."""
        turned = Origin(0.0, 0.0, self.yaw + degrees)
        before, after = self.to_world(pivot), turned.to_world(pivot)
        # Plain wrap into [-180, 180]: q_math's AngleNormalize180 would quantise the yaw.
        return Origin(before[0] - after[0], before[2] - after[2], math.remainder(self.yaw + degrees, 360.0))


def pose_to_world(pose: Pose, trig: tuple[float, float, float, float, float, float]) -> Pose:
    """A stage pose in the world of the origin whose `Origin.trig()` this is."""
    ox, oz, c, s, cy, sy = trig
    px, py, pz = pose.position
    if pose.position_valid:
        px, pz = ox + px * c + pz * s, oz - px * s + pz * c
    qx, qy, qz, qw = pose.orientation
    if pose.orientation_valid:  # q_mul(yaw_quat(yaw), q) with the zero terms left out
        qx, qy, qz, qw = cy * qx + sy * qz, cy * qy + sy * qw, cy * qz - sy * qx, cy * qw - sy * qy
    return Pose(
        (px, py, pz),
        (qx, qy, qz, qw),
        pose.position_valid,
        pose.orientation_valid,
        pose.position_tracked,
        pose.orientation_tracked,
    )


# The range of each numeric setting (the config's [rig] keys), checked by Rig and by the config.
LIMITS: dict[str, tuple[float, float]] = {
    "move_speed": (0.0, 100.0),
    "snap_angle": (1.0, 180.0),
    "smooth_speed": (0.0, 3600.0),
    "deadzone": (0.0, 0.95),
}


@dataclass(frozen=True, slots=True)
class RigSettings:
    move_speed: float = 2.0  # m/s at full left-stick deflection
    turn_mode: str = "snap"  # "snap" or "smooth"
    snap_angle: float = 45.0  # degrees per snap
    smooth_speed: float = 90.0  # degrees/s at full right-stick deflection
    deadzone: float = 0.15  # stick magnitude ignored (drift)
    snap_press: float = 0.7  # stick x past this fires one snap...
    snap_release: float = 0.3  # ...and must come back inside this before the next


class RigState:
    """One frame of the rig: the origin now and at start, and the world poses it gives.

    Read-only. A world pose is computed when first read: per frame the sinks read few of them
    (the Q3 sink the head and the right aim at its 60 Hz tick, NetSync the head and grips at
    10 Hz), and on a cache-cold frame every Pose built costs several microseconds.
    """

    __slots__ = (
        "start",
        "origin",
        "snapped",
        "move_world",
        "frame",
        "trig",
        "_head",
        "_right_aim",
        "_left_grip",
        "_right_grip",
    )
    # the world poses, each built on first use this frame
    _head: Pose | None
    _right_aim: Pose | None
    _left_grip: Pose | None
    _right_grip: Pose | None

    def __init__(
        self,
        start: Origin,
        origin: Origin,
        frame: TrackingFrame,
        snapped: float,
        move_world: tuple[float, float],
        trig: tuple[float, float, float, float, float, float],
    ) -> None:
        self.start = start
        self.origin = origin
        self.snapped = snapped  # degrees turned by a snap this frame (0 if none)
        self.move_world = move_world  # left-stick velocity in world x, z (m/s), for the sinks
        self.frame = frame  # the stage poses
        self.trig = trig  # origin.trig(): (x, z, cos, sin of the yaw and of half of it)
        self._head = self._right_aim = self._left_grip = self._right_grip = None

    def world_orientation(self, stage: Pose) -> Quat | None:
        """The world orientation of one of `frame`'s stage poses, None while it is not valid,
        without building its world Pose: all a Q3 command tick reads of the head and the aim."""
        if not stage.orientation_valid:
            return None
        cy, sy = self.trig[4], self.trig[5]
        qx, qy, qz, qw = stage.orientation  # as pose_to_world
        return cy * qx + sy * qz, cy * qy + sy * qw, cy * qz - sy * qx, cy * qw - sy * qy

    def world_position(self, stage: Pose) -> Vec3:
        """The world position of one of `frame`'s stage poses (as `pose_to_world`, valid or not),
        without building its world Pose: what a Sauerbraten position tick reads of the head."""
        ox, oz, c, s = self.trig[0], self.trig[1], self.trig[2], self.trig[3]
        px, py, pz = stage.position
        if stage.position_valid:
            px, pz = ox + px * c + pz * s, oz - px * s + pz * c
        return px, py, pz

    def world_head(self) -> tuple[float, float, float, float, float, float, float] | None:
        """The head's world (x, y, z) and orientation (qx, qy, qz, qw) in one call: world_position
        and world_orientation of `frame.head`, the same operations; None unless both are valid
        (a Sauerbraten position tick's one read of the rig)."""
        stage = self.frame.head
        if not (stage.position_valid and stage.orientation_valid):
            return None
        ox, oz, c, s, cy, sy = self.trig[0], self.trig[1], self.trig[2], self.trig[3], self.trig[4], self.trig[5]
        px, py, pz = stage.position
        qx, qy, qz, qw = stage.orientation
        return (
            ox + px * c + pz * s,
            py,
            oz - px * s + pz * c,
            cy * qx + sy * qz,
            cy * qy + sy * qw,
            cy * qz - sy * qx,
            cy * qw - sy * qy,
        )

    # The left aim pose drives nothing, so it is not mapped.
    @property
    def head(self) -> Pose:
        p = self._head
        if p is None:
            p = self._head = pose_to_world(self.frame.head, self.trig)
        return p

    @property
    def right_aim(self) -> Pose:
        p = self._right_aim
        if p is None:
            p = self._right_aim = pose_to_world(self.frame.right_aim, self.trig)
        return p

    @property
    def left_grip(self) -> Pose:
        p = self._left_grip
        if p is None:
            p = self._left_grip = pose_to_world(self.frame.left_grip, self.trig)
        return p

    @property
    def right_grip(self) -> Pose:
        p = self._right_grip
        if p is None:
            p = self._right_grip = pose_to_world(self.frame.right_grip, self.trig)
        return p


_NO_MOVE = (0.0, 0.0)
_new_state = object.__new__


class Rig:
    """Stateful locomotion: feed it each TrackingFrame and the time step."""

    def __init__(self, settings: RigSettings = RigSettings(), start: Origin = Origin()) -> None:
        if settings.turn_mode not in ("snap", "smooth"):
            raise ValueError(f"turn = {settings.turn_mode!r}: must be 'snap' or 'smooth'")
        for name, (lo, hi) in LIMITS.items():
            value = getattr(settings, name)
            if not lo <= value <= hi:  # NaN fails too
                raise ValueError(f"{name} = {value:g}: must be {lo:g}..{hi:g}")
        self.settings = settings
        self.start = start
        self.origin = start
        self._snap_armed = True
        self._last_head: Vec3 = (0.0, 1.6, 0.0)
        self._trig_of: Origin | None = None  # the origin self._trig was evaluated for
        self._trig = start.trig()
        # The last Controls found inert: the same object again turns and moves nothing (update's
        # fast path). An XR session hands over the same Controls while its states read the same.
        self._inert: Controls | None = None

    def update(self, frame: TrackingFrame, dt: float) -> RigState:
        head = frame.head
        if head.position_valid:
            self._last_head = head.position
        controls = frame.controls
        if controls is self._inert:
            # The sticks as on the frame that found them inert: no turn, no move, the snap's arming
            # as it was. No builtin call (abs, hypot: ~9 us cold on this VM), no new tuple.
            snapped = 0.0
            move_world = _NO_MOVE
        else:
            snapped, move_world = self._controls(head, controls, dt)
        o = self.origin
        if o is not self._trig_of:
            self._trig_of, self._trig = o, o.trig()
        # RigState(self.start, o, frame, snapped, move_world, self._trig), its __init__ inline: on a
        # cache-cold frame the call alone is ~3 us of the ~8 the state costs to build
        state = _new_state(RigState)
        state.start = self.start
        state.origin = o
        state.snapped = snapped
        state.move_world = move_world
        state.frame = frame
        state.trig = self._trig
        state._head = state._right_aim = state._left_grip = state._right_grip = None
        return state

    def _controls(self, head: Pose, controls: Controls, dt: float) -> tuple[float, tuple[float, float]]:
        """The sticks' turn and move this frame (update's slow path): the degrees snapped and the
        move's world velocity. Notes `controls` as inert when the same values on the next frame
        would do nothing, whatever the head and the time step."""
        s = self.settings
        # The pivot for turns is the head; with the head lost, its last known place.
        head_stage = self._last_head
        snapped = 0.0
        tx = controls.turn[0]
        if s.turn_mode == "snap":
            if self._snap_armed and abs(tx) >= s.snap_press:
                # Stick right turns right, which is negative yaw.
                snapped = -math.copysign(s.snap_angle, tx)
                self.origin = self.origin.turned_about(head_stage, snapped)
                self._snap_armed = False
            elif abs(tx) <= s.snap_release:
                self._snap_armed = True
        elif abs(tx) > s.deadzone:
            self.origin = self.origin.turned_about(head_stage, -tx * s.smooth_speed * dt)

        move_world = _NO_MOVE
        mx, my = controls.move
        moving = (mx or my) and math.hypot(mx, my) > s.deadzone
        if s.turn_mode == "snap":
            # again: a snap only when armed; re-armed only inside the release (already armed: no change)
            turns = abs(tx) >= s.snap_press if self._snap_armed else abs(tx) <= s.snap_release
        else:
            turns = abs(tx) > s.deadzone
        self._inert = None if moving or turns else controls
        if moving and head.orientation_valid:
            # Stick axes are head-relative on the floor: forward is where the head faces.
            fwd = self._floor_forward(self.origin.rotate(head.orientation))
            right = (-fwd[1], fwd[0])  # forward (x, z) turned 90° clockwise seen from above
            vx = s.move_speed * (my * fwd[0] + mx * right[0])
            vz = s.move_speed * (my * fwd[1] + mx * right[1])
            move_world = (vx, vz)
            self.origin = Origin(self.origin.x + vx * dt, self.origin.z + vz * dt, self.origin.yaw)
        return snapped, move_world

    @staticmethod
    def _floor_forward(q: Quat) -> tuple[float, float]:
        """The -Z axis of `q` projected on the floor, normalised (x, z); straight up/down → yaw only."""
        x, y, z, w = q
        fx, fz = -2.0 * (x * z + w * y), -(1.0 - 2.0 * (x * x + y * y))
        n = math.hypot(fx, fz)
        if n < 1e-9:
            return (0.0, -1.0)
        return (fx / n, fz / n)
