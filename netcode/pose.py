"""Pose conventions shared by every sink: quaternions, OpenXR → Quake angles, OpenXR → Unity.

Frames (docs/architecture.md#conventions):
- OpenXR: right-handed, +Y up, −Z forward, metres. Quaternions are (x, y, z, w).
- Quake: X forward, Y left, Z up; pitch positive looking down, yaw positive turning left,
  roll positive when the right side dips. Degrees.
- Unity: left-handed, +Y up, +Z forward: p = (x, y, −z), q = (−x, −y, z, w).

Plain floats on purpose: one pose per frame, where tuple arithmetic beats numpy's call overhead.
The angle wrap helpers follow ioq3's q_math.c, including AngleNormalize360's quantisation to
1/65536 of a turn, so a sink and a Quake server agree on what a wrapped angle is.
"""

from __future__ import annotations

import math

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]  # (x, y, z, w)

IDENTITY: Quat = (0.0, 0.0, 0.0, 1.0)

# Below this horizontal length the forward vector is vertical and yaw/roll are not separable.
_GIMBAL_EPS = 1e-9


def q_mul(a: Quat, b: Quat) -> Quat:
    """Hamilton product a·b: rotate by b first, then by a."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def q_conj(q: Quat) -> Quat:
    x, y, z, w = q
    return (-x, -y, -z, w)


def q_normalize(q: Quat) -> Quat:
    """Unit quaternion; a zero or non-finite input (a runtime glitch) becomes the identity."""
    x, y, z, w = q
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(n) or n == 0.0:
        return IDENTITY
    return (x / n, y / n, z / n, w / n)


def q_rotate(q: Quat, v: Vec3) -> Vec3:
    """Rotate v by the unit quaternion q (v' = q v q*)."""
    qx, qy, qz, qw = q
    vx, vy, vz = v
    # t = 2 (u × v); v' = v + w t + u × t
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


def quat_from_axis_angle(axis: Vec3, deg: float) -> Quat:
    """Right-handed rotation of `deg` degrees about `axis` (normalised here; a zero axis gives identity)."""
    ax, ay, az = axis
    n = math.sqrt(ax * ax + ay * ay + az * az)
    if not math.isfinite(n) or n == 0.0:
        return IDENTITY
    half = math.radians(deg) * 0.5
    s = math.sin(half) / n
    return (ax * s, ay * s, az * s, math.cos(half))


def yaw_quat(deg: float) -> Quat:
    """Rotation about OpenXR +Y; positive turns left (counter-clockwise seen from above)."""
    half = math.radians(deg) * 0.5
    return (0.0, math.sin(half), 0.0, math.cos(half))


def quake_angles(q: Quat) -> tuple[float, float, float]:
    """(pitch, yaw, roll) in degrees, Quake convention, of an OpenXR orientation.

    Inverse of Quake's AngleVectors: with forward f, right r, up u in Quake axes
    (Xq = −Z, Yq = −X, Zq = +Y), pitch = atan2(−f.z, |f.xy|), yaw = atan2(f.y, f.x),
    roll = atan2(−r.z, u.z). Looking straight up or down, yaw is taken from the right
    vector and roll is 0.

    q_normalize and the three q_rotate calls are written out (the same operations in the same
    order, zero terms included: the same bits): it runs on the frame thread, where each Python
    call costs microseconds cache-cold (issue 26). The Q3 sink's tick in C (Pump.send_pose in
    netcode/q3/_q3native.c) repeats it operation for operation and must give the same floats: so
    the horizontal length is sqrt of the sum of squares, not math.hypot (CPython's own algorithm,
    which differs between versions), and the C is built without fused multiply-adds.
    """
    x, y, z, w = q
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(n) or n == 0.0:
        qx, qy, qz, qw = IDENTITY
    else:
        qx, qy, qz, qw = x / n, y / n, z / n, w / n
    # q_rotate(q, (0, 0, -1)): forward
    tx = 2.0 * (qy * -1.0 - qz * 0.0)
    ty = 2.0 * (qz * 0.0 - qx * -1.0)
    tz = 2.0 * (qx * 0.0 - qy * 0.0)
    fx = 0.0 + qw * tx + (qy * tz - qz * ty)
    fy = 0.0 + qw * ty + (qz * tx - qx * tz)
    fz = -1.0 + qw * tz + (qx * ty - qy * tx)
    # q_rotate(q, (1, 0, 0)): right
    rtx = 2.0 * (qy * 0.0 - qz * 0.0)
    rty = 2.0 * (qz * 1.0 - qx * 0.0)
    rtz = 2.0 * (qx * 0.0 - qy * 1.0)
    rx = 1.0 + qw * rtx + (qy * rtz - qz * rty)
    ry = 0.0 + qw * rty + (qz * rtx - qx * rtz)
    rz = 0.0 + qw * rtz + (qx * rty - qy * rtx)
    # q_rotate(q, (0, 1, 0)): up (its y only is used)
    utx = 2.0 * (qy * 0.0 - qz * 1.0)
    uty = 2.0 * (qz * 0.0 - qx * 0.0)
    utz = 2.0 * (qx * 1.0 - qy * 0.0)
    uy = 1.0 + qw * uty + (qz * utx - qx * utz)
    # into Quake axes: (x, y, z)_q = (−z, −x, y)_xr
    fqx, fqy, fqz = -fz, -fx, fy
    rqx, rqy, rqz = -rz, -rx, ry
    uqz = uy
    horiz = math.sqrt(fqx * fqx + fqy * fqy)
    pitch = math.degrees(math.atan2(-fqz, horiz))
    if horiz < _GIMBAL_EPS:
        # Quake's right vector with roll 0 is (sin yaw, −cos yaw, 0).
        return pitch, math.degrees(math.atan2(rqx, -rqy)), 0.0
    yaw = math.degrees(math.atan2(fqy, fqx))
    roll = math.degrees(math.atan2(-rqz, uqz))
    return pitch, yaw, roll


def unity_position(p: Vec3) -> Vec3:
    x, y, z = p
    return (x, y, -z)


def unity_quat(q: Quat) -> Quat:
    x, y, z, w = q
    return (-x, -y, z, w)


def _finite(a: float) -> float:
    if not math.isfinite(a):
        raise ValueError(f"non-finite angle {a!r}")
    return a


def angle_subtract(a1: float, a2: float) -> float:
    """q_math AngleSubtract: a1 − a2 wrapped into [−180, 180] (±180 kept as given by the loop)."""
    a = _finite(a1) - _finite(a2)
    # Same result as q_math's `while (a > 180) a -= 360` loops, without looping on huge inputs.
    if a > 180.0:
        a -= 360.0 * math.ceil((a - 180.0) / 360.0)
    elif a < -180.0:
        a += 360.0 * math.ceil((-180.0 - a) / 360.0)
    return a


def angle_normalize360(a: float) -> float:
    """q_math AngleNormalize360: quantised to 1/65536 turn, truncating toward zero, into [0, 360)."""
    return (360.0 / 65536) * (int(_finite(a) * (65536 / 360.0)) & 65535)


def angle_normalize180(a: float) -> float:
    """q_math AngleNormalize180: AngleNormalize360, then (180, 360) moved to (−180, 0)."""
    a = angle_normalize360(a)
    if a > 180.0:
        a -= 360.0
    return a


def lerp_angle(frm: float, to: float, frac: float) -> float:
    """q_math LerpAngle: interpolate the short way round (result not wrapped, as in Quake)."""
    _finite(frm)
    _finite(to)
    if to - frm > 180.0:
        to -= 360.0
    if to - frm < -180.0:
        to += 360.0
    return frm + frac * (to - frm)
