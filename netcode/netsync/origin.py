"""The XROrigin Δ (seed §5) on send and the physical pose rebuilt from it (seed §6).

Unity's frame throughout: left-handed, +Y up, yaw = eulerAngles.y in degrees (positive turns
right seen from above), and Unity's yaw rotation R(θ)·(x, y, z) = (x cosθ + z sinθ, y,
−x sinθ + z cosθ). The Δ is the SE(2) transform taking the initial XROrigin to the current one:
XROrigin₁ = Δ ∘ XROrigin₀, so `t = p1 − R(dyaw)·p0`, and a receiver maps the head back into the
initial origin's frame with Δ⁻¹ — which is the wearer's physical (tracking-space) pose when the
initial origin sits at the world origin.
"""
from __future__ import annotations

import math
from math import atan2, cos, sin

from headcast.netcode.pose import Quat, Vec3

from .model import OriginDelta, Transform

_RAD = math.pi / 180.0  # = math.radians' factor: x * _RAD is bit-identical to math.radians(x)
_DEG = 180.0 / math.pi  # = math.degrees' factor
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
    """Wrap into (−180, 180], the range Unity's DeltaAngle gives."""
    return delta_angle(0.0, yaw)


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
    """eulerAngles.y of a quaternion, Unity's Euler order (q = q_y · q_x · q_z).

    The shipped Python decoder uses atan2(2(wy + zx), 1 − 2(y² + z²)), which agrees only
    without pitch and roll (reference §5); this is the formula Unity's own eulerAngles obeys.
    """
    x, y, z, w = q
    # w² + z² − x² − y² equals 1 − 2(x² + y²) for a unit q and keeps the sign right for any scale
    return math.degrees(math.atan2(2.0 * (x * z + w * y), w * w + z * z - x * x - y * y))


def origin_delta(p0: Vec3, yaw0: float, p1: Vec3, yaw1: float) -> OriginDelta:
    """Δ from the initial XROrigin (p0, yaw0) to the current one (p1, yaw1); Y is dropped."""
    dyaw = delta_angle(yaw0, yaw1)
    rx, _, rz = rotate_yaw((p0[0], 0.0, p0[2]), dyaw)
    return OriginDelta(p1[0] - rx, p1[2] - rz, dyaw)


def apply_delta(delta: OriginDelta, p: Vec3) -> Vec3:
    """Δ · p: a point in the initial origin's frame carried to where the current origin put it."""
    x, y, z = rotate_yaw(p, delta.dyaw)
    return (x + delta.dx, y, z + delta.dz)


def reconstruct_physical(head: Transform, delta: OriginDelta) -> Transform:
    """Seed §6: physical = Δ⁻¹ · head, position in 3D (Y kept), rotation yaw-only.

    unity_yaw, rotate_yaw and yaw_quat_unity inlined (same operations, same bits): the decoder
    runs this for every peer of every broadcast.
    """
    (hx, hy, hz), (x, y, z, w) = head
    dx, dz, dyaw = delta
    r = -dyaw * _RAD
    c, s = cos(r), sin(r)
    tx, tz = hx - dx, hz - dz
    yaw = atan2(2.0 * (x * z + w * y), w * w + z * z - x * x - y * y) * _DEG - dyaw
    if not -180.0 < yaw <= 180.0:  # |dyaw| can reach 3276.7° (clamped, not wrapped, on the wire)
        yaw = normalize_yaw(yaw)
    half = yaw * _RAD * 0.5
    return _new(Transform, ((tx * c + tz * s, hy, -tx * s + tz * c), (0.0, sin(half), 0.0, cos(half))))
