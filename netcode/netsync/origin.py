"""The XROrigin Δ on send, and the physical pose as the official receivers rebuild it.

Unity's frame throughout: left-handed, +Y up, yaw = eulerAngles.y in degrees (positive turns
right seen from above), and Unity's yaw rotation R(θ)·(x, y, z) = (x cosθ + z sinθ, y,
−x sinθ + z cosθ). The Δ is the transform taking the initial XROrigin to the current one:
XROrigin₁ = Δ ∘ XROrigin₀, so `t = p1 − R(dyaw)·p0`, and a receiver maps the head back into the
initial origin's frame with Δ⁻¹ — the wearer's physical (tracking-space) pose when the initial
origin sits at the world origin.

**Receivers' arithmetic, not ours.** Both official receivers (the Python `binary_serializer.py`
of every release from 0.9.0 to 0.17.5, and Unity's `BinarySerializer.cs`) take the head's yaw as
`atan2(2(w·y + z·x), 1 − 2(y² + z²))` of the normalised quaternion, wrapped into [−180, 180).
That is Unity's `eulerAngles.y` only without pitch and roll (docs/protocols/netsync.md#physical-pose): at pitch 30°,
roll 15° it is 9° off. What headcast reports as the far side is what those receivers compute,
so `reconstruct_physical` uses their formula; `unity_yaw` is the true yaw, kept for measuring
their error (docs/protocols/netsync.md#physical-pose).
"""

from __future__ import annotations

import math
from math import atan2, cos, sin, sqrt

from headcast.netcode.pose import Quat, Vec3

from .model import OriginDelta, Transform

RAD = math.pi / 180.0  # = math.radians' factor: x * RAD is bit-identical to math.radians(x)
DEG = 180.0 / math.pi  # = math.degrees' factor
_EPS = 1e-12
_new = tuple.__new__


def delta_angle(current: float, target: float) -> float:
    """Unity's Mathf.DeltaAngle: target − current wrapped into (−180, 180]."""
    t = target - current
    d = t - math.floor(t / 360.0) * 360.0  # Mathf.Repeat
    d = min(max(d, 0.0), 360.0)
    if d > 180.0:
        d -= 360.0
    return d


def normalize_yaw(yaw: float) -> float:
    """Wrap into (−180, 180], the range Unity's DeltaAngle gives (what a Unity sender sends)."""
    return delta_angle(0.0, yaw)


def receiver_normalize_yaw(yaw: float) -> float:
    """The official Python receivers' wrap: ((y + 180) mod 360) − 180, into [−180, 180)."""
    return ((yaw + 180.0) % 360.0) - 180.0


def rotate_yaw(v: Vec3, yaw_deg: float) -> Vec3:
    """Unity's Quaternion.Euler(0, yaw, 0) * v."""
    r = math.radians(yaw_deg)
    c, s = math.cos(r), math.sin(r)
    x, y, z = v
    return (x * c + z * s, y, -x * s + z * c)


def yaw_quat_unity(yaw_deg: float) -> Quat:
    half = math.radians(yaw_deg) * 0.5
    return (0.0, math.sin(half), 0.0, math.cos(half))


def unity_yaw(q: Quat) -> float:
    """eulerAngles.y of a quaternion, Unity's Euler order (q = q_y · q_x · q_z): the true yaw."""
    x, y, z, w = q
    # w² + z² − x² − y² equals 1 − 2(x² + y²) for a unit q and keeps the sign right for any scale
    return math.degrees(math.atan2(2.0 * (x * z + w * y), w * w + z * z - x * x - y * y))


def receiver_yaw(q: Quat) -> float:
    """The official receivers' yaw of a quaternion (`_quaternion_to_yaw_degrees`), same steps:
    normalise (zero/non-finite → identity), atan2(2(wy + zx), 1 − 2(y² + z²)), wrap [−180, 180)."""
    x, y, z, w = q
    m = x * x + y * y + z * z + w * w
    if not _EPS < m < math.inf:
        return 0.0
    inv = 1.0 / sqrt(m)
    x, y, z, w = x * inv, y * inv, z * inv, w * inv
    return ((math.degrees(atan2(2.0 * (w * y + z * x), 1.0 - 2.0 * (y * y + z * z))) + 180.0) % 360.0) - 180.0


def origin_delta(p0: Vec3, yaw0: float, p1: Vec3, yaw1: float) -> OriginDelta:
    """Δ from the initial XROrigin (p0, yaw0) to the current one (p1, yaw1).

    Protocol 3 sends (dx, dz, dyaw) and drops the height; from protocol 4 on `dy` = p1.y − p0.y
    (a yaw rotation keeps y) is sent too."""
    dyaw = delta_angle(yaw0, yaw1)
    rx, _, rz = rotate_yaw((p0[0], 0.0, p0[2]), dyaw)
    return OriginDelta(p1[0] - rx, p1[2] - rz, dyaw, p1[1] - p0[1])


def apply_delta(delta: OriginDelta, p: Vec3) -> Vec3:
    """Δ · p: a point in the initial origin's frame carried to where the current origin put it."""
    x, y, z = rotate_yaw(p, delta.dyaw)
    return (x + delta.dx, y + delta.dy, z + delta.dz)


def reconstruct_physical(head: Transform, delta: OriginDelta) -> Transform:
    """physical = Δ⁻¹ · head as the official receivers compute it: position rotated by −dyaw
    after subtracting (dx, dy, dz) (dy is 0 in protocol 3), yaw = receiver_yaw(head) − dyaw
    wrapped into [−180, 180), rotation yaw-only.

    The same operations in the same order as the shipped decoder (receiver_yaw inlined: this
    runs for every peer of every broadcast); `head.rot` is the decoder's unit quaternion.
    """
    (hx, hy, hz), (x, y, z, w) = head
    dx, dz, dyaw, dy = delta
    r = -dyaw * RAD
    c, s = cos(r), sin(r)
    tx, tz = hx - dx, hz - dz
    m = x * x + y * y + z * z + w * w
    inv = 1.0 / sqrt(m)
    x, y, z, w = x * inv, y * inv, z * inv, w * inv
    head_yaw = ((atan2(2.0 * (w * y + z * x), 1.0 - 2.0 * (y * y + z * z)) * DEG + 180.0) % 360.0) - 180.0
    yaw = ((head_yaw - dyaw + 180.0) % 360.0) - 180.0
    half = yaw * RAD * 0.5
    return _new(Transform, ((c * tx + s * tz, hy - dy, -s * tx + c * tz), (0.0, sin(half), 0.0, cos(half))))


def floor_local_physical(x: float, y: float, z: float, yaw: float) -> Transform:
    """The physical block of a MOVING_FLOOR_LOCAL body (protocol 5+), as the receivers read it:
    position as sent, rotation from the yaw (not wrapped)."""
    half = yaw * RAD * 0.5
    return _new(Transform, ((x, y, z), (0.0, sin(half), 0.0, cos(half))))
