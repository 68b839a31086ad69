"""NetSync wire codec, protocols 3–8: client pose (11), room pose (12), device-ID mapping (6),
client hello (19).

Byte-exact with each protocol's shipped serializer (styly-netsync-server 0.9.0–0.10.4 for 3,
0.11 for 4, 0.12–0.13 for 5, 0.14 for 6, 0.15 for 7, 0.16–0.17 for 8; docs/protocols/netsync.md#versions):
int24 head position, smallest-three rotations, hands/virtuals relative to the *unquantised*
head (world-axis position offset, conj(head)·part rotation), round-half-to-even then clamp, in
float64 with the same operation order — so the same input gives the same bits. What differs:

| protocol | pose body                                                                     |
|----------|-------------------------------------------------------------------------------|
| 3        | physical block i16 dx, dz, dyaw (6 B); encodingFlags 0x1F                     |
| 4        | physical block i16 dx, dy, dz, dyaw (8 B)                                     |
| 5–8      | + flag 0x40 MOVING_FLOOR_LOCAL: the block carries the floor-local physical    |
|          | x, y, z, yaw, and encodingFlags is 0x0F (bit 4 clear)                         |

6 changes only network variables, 7 adds the hello (19) and separate control/transform lanes,
8 adds the deviceId to control messages — the pose bodies of 5–8 are the same bytes. Each
layout is one precompiled struct per (protocol family, flags) combination.

Decoding is strict where the shipped decoder is lenient (it relays junk, reads past limits):
any defect raises a `NetSyncDecodeError` subclass naming the byte offset, and nothing is
returned from a message that failed anywhere.

Two paths, the same bits: a checked one that branches on every block, clamps and names every
defect, and per layout a straight-line function generated from it on first use (see "fast
paths"), which hands anything unusual back to the checked one. tests/netsync/test_codec_fastpath.py
holds them to each other; tests/benchmarks/bench_netsync_codec.py times them against the
shipped serializers.
"""

from __future__ import annotations

import math
import os
import struct
import sys
from functools import lru_cache
from math import atan2, cos, floor, sin, sqrt  # noqa: F401 - atan2, cos, floor, sin: the generated code's globals
from types import ModuleType
from typing import Any, Callable

from headcast.netcode.pose import IDENTITY, Quat

from .errors import (
    FlagsError as FlagsError,
    MessageTypeError as MessageTypeError,
    MissingDeltaEncodingError as MissingDeltaEncodingError,
    NetSyncDecodeError as NetSyncDecodeError,
    PoseEncodeError as PoseEncodeError,
    StringError as StringError,
    TrailingBytesError as TrailingBytesError,
    TruncatedError as TruncatedError,
    UnsupportedProtocolError as UnsupportedProtocolError,
    VirtualCountError as VirtualCountError,
)
from .model import (
    FLAG_HEAD,
    FLAG_LEFT,
    FLAG_MOVING_FLOOR,
    FLAG_PHYSICAL,
    FLAG_RIGHT,
    FLAG_STEALTH,
    FLAG_VIRTUALS,
    KNOWN_FLAGS,
    KNOWN_FLAGS_MOVING_FLOOR,
    MAX_VIRTUALS,
    ClientHello,
    ClientPose,
    DeviceIdMapping,
    DeviceMapping,
    OriginDelta,
    PoseBody,
    PoseFrame,
    RoomEntry,
    RoomPose,
    Transform,
)
from .origin import DEG, RAD, floor_local_physical, receiver_yaw, reconstruct_physical

PROTOCOLS = (3, 4, 5, 6, 7, 8)
LATEST_PROTOCOL = 8
HELLO_PROTOCOL = 7  # first protocol with MSG_CLIENT_HELLO and the separate transform lane
MSG_DEVICE_ID_MAPPING = 6
MSG_CLIENT_POSE = 11
MSG_ROOM_POSE = 12
MSG_CLIENT_HELLO = 19
HELLO_FLAG_STEALTH = 0x01

ENCODING_FLAGS = 0x1F  # yaw-only, right/left/virtual relative to head, physical = XROrigin Δ
ENC_XRORIGIN_DELTA = 0x10
ENCODING_FLAGS_MOVING_FLOOR = ENCODING_FLAGS & ~ENC_XRORIGIN_DELTA  # 0x0F (protocol 5+)

ABS_POS_SCALE = 0.01
DELTA_POS_SCALE = 0.01
DELTA_YAW_SCALE = 0.1
REL_POS_SCALE = 0.005

_I16_MIN, _I16_MAX = -32768, 32767
_I24_MIN, _I24_MAX = -(1 << 23), (1 << 23) - 1
_QMIN, _QMAX = -0.70710677, 0.70710677
_QRANGE = _QMAX - _QMIN
_QEPS = 1e-12
_INF = math.inf
_ROUND = 6755399441055744.0  # 1.5 · 2**52
_IDENTITY_PACKED = 0xE0080200  # identity: index 3, three zeros at 511.5 → 512

_BODY_HEAD = struct.Struct("<HBB")  # poseSeq, flags, encodingFlags
_ENTRY_HEAD = struct.Struct("<Hd")  # clientNo, poseTime
_ROOM_TAIL = struct.Struct("<dH")  # broadcastTime, count
_MAP_HEAD = struct.Struct("<BBBH")  # version major/minor/patch, count
_MAP_ENTRY = struct.Struct("<HBB")  # clientNo, stealth, id length
_REL = struct.Struct("<hhhI")
_REL_ITER = _REL.iter_unpack
_HEAD = struct.Struct("<HbHbHbI")  # int24 as low u16 + signed high byte


# ---------------------------------------------------------------- protocols


def check_protocol(protocol: int) -> int:
    if protocol not in PROTOCOLS:
        raise ValueError(f"NetSync protocol {protocol!r} is not one headcast speaks ({PROTOCOLS[0]}–{PROTOCOLS[-1]})")
    return protocol


def known_flags(protocol: int) -> int:
    return KNOWN_FLAGS_MOVING_FLOOR if protocol >= 5 else KNOWN_FLAGS


def _family(protocol: int) -> int:
    """Pose bodies are the same bytes within a family: 3; 4; 5–8."""
    return 3 if protocol == 3 else 4 if protocol == 4 else 5


# ---------------------------------------------------------------- quantisers (shipped semantics)


def _q16(v: float, scale: float) -> int:
    q = round(v / scale)  # float64, round-half-to-even, like the shipped int(round(v / scale))
    return _I16_MIN if q < _I16_MIN else _I16_MAX if q > _I16_MAX else q


def _q24(v: float) -> int:
    q = round(v / ABS_POS_SCALE)
    return _I24_MIN if q < _I24_MIN else _I24_MAX if q > _I24_MAX else q


def _wire_normalize(x: float, y: float, z: float, w: float) -> Quat:
    # Not pose.q_normalize: the wire's identity threshold (|q|² ≤ 1e-12) and multiply-by-inverse
    # order are part of what fixes the bits, so they are the shipped serializer's own.
    m = x * x + y * y + z * z + w * w
    if not _QEPS < m < _INF:  # also NaN
        return IDENTITY
    inv = 1.0 / sqrt(m)
    return (x * inv, y * inv, z * inv, w * inv)


def _pack_unit(x: float, y: float, z: float, w: float) -> int:
    """Smallest-three of an already wire-normalised quaternion.

    Largest |component| wins (ties → first index); if it is negative the quaternion is negated;
    the other three, ascending, each clamped to ±1/√2 and scaled to 0..1023 (in [0, 1] × 1023
    after the clamp, so the shipped 0..1023 clamp can never trigger). Scalars in, not a tuple:
    this runs three times per body.

    Rounding: `v + 2**52·1.5 − 2**52·1.5` is IEEE round-half-to-even — Python's round() — for
    0 ≤ v < 2**51 (there the sum's ulp is 1), and the packed word is built from exact float
    integers below 2**32 with one int() at the end instead of three round() calls.
    """
    ax, ay, az, aw = abs(x), abs(y), abs(z), abs(w)
    if ax >= ay and ax >= az and ax >= aw:
        i, big, a, b, c = 0.0, x, y, z, w
    elif ay >= az and ay >= aw:
        i, big, a, b, c = 1073741824.0, y, x, z, w  # index << 30
    elif az >= aw:
        i, big, a, b, c = 2147483648.0, z, x, y, w
    else:
        i, big, a, b, c = 3221225472.0, w, x, y, z
    if big < 0.0:
        a, b, c = -a, -b, -c
    a = _QMIN if a < _QMIN else _QMAX if a > _QMAX else a
    b = _QMIN if b < _QMIN else _QMAX if b > _QMAX else b
    c = _QMIN if c < _QMIN else _QMAX if c > _QMAX else c
    return int(
        i
        + ((a - _QMIN) / _QRANGE * 1023 + _ROUND - _ROUND) * 1048576.0
        + ((b - _QMIN) / _QRANGE * 1023 + _ROUND - _ROUND) * 1024.0
        + ((c - _QMIN) / _QRANGE * 1023 + _ROUND - _ROUND)
    )


_DQ10 = tuple(_QMIN + (_QRANGE * (v * (1.0 / 1023.0))) for v in range(1024))


def decompress_quat(packed: int) -> Quat:
    """Smallest-three u32 → unit quaternion (never zero, never NaN)."""
    i = packed >> 30
    a = _DQ10[(packed >> 20) & 0x3FF]
    b = _DQ10[(packed >> 10) & 0x3FF]
    c = _DQ10[packed & 0x3FF]
    s = a * a + b * b + c * c
    # With s ≤ 1 the rebuilt component makes the quaternion unit already; only a corrupt
    # packing (s > 1) needs the renormalisation the shipped decoder always does.
    big = sqrt(1.0 - s) if s <= 1.0 else 0.0
    if i == 3:
        q = (a, b, c, big)
    elif i == 0:
        q = (big, a, b, c)
    elif i == 1:
        q = (a, big, b, c)
    else:
        q = (a, b, big, c)
    return q if s <= 1.0 else _wire_normalize(*q)


def compress_quat(q: Quat) -> int:
    """Smallest-three u32 of any quaternion (zero/non-finite → identity), shipped bit-for-bit."""
    return _pack_unit(*_wire_normalize(*q))


# ---------------------------------------------------------------- encoder


def sanitize_flags(flags: int, protocol: int = LATEST_PROTOCOL) -> int:
    """The shipped encoder's flag rules: stealth is 0x01 alone; no head, no hands/virtuals."""
    if flags & ~known_flags(protocol):
        raise PoseEncodeError(f"flags 0x{flags:02x} has bits protocol {protocol} does not define")
    if flags & FLAG_STEALTH:
        return FLAG_STEALTH
    if not flags & FLAG_HEAD:
        flags &= ~(FLAG_RIGHT | FLAG_LEFT | FLAG_VIRTUALS)
    return flags


def _physical_fmt(family: int) -> str:
    return "hhh" if family == 3 else "hhhh"


@lru_cache(maxsize=1024)
def _body_struct(flags: int, n_virtuals: int, with_seq: bool, family: int) -> struct.Struct:
    fmt = "<HBB" if with_seq else "<BB"
    if flags & FLAG_PHYSICAL:
        fmt += _physical_fmt(family)
    if flags & FLAG_HEAD:
        fmt += "HbHbHbI"
        if flags & FLAG_RIGHT:
            fmt += "hhhI"
        if flags & FLAG_LEFT:
            fmt += "hhhI"
    fmt += "B" + "hhhI" * n_virtuals
    return struct.Struct(fmt)


def _rel(
    args: list[Any], part: Transform, hx: float, hy: float, hz: float, ax: float, ay: float, az: float, aw: float
) -> None:
    """A hand/virtual relative to the head: world-axis offset, conj(head)·part; (ax…aw) = conj(head)."""
    (px, py, pz), (bx, by, bz, bw) = part
    x = round((px - hx) / REL_POS_SCALE)
    y = round((py - hy) / REL_POS_SCALE)
    z = round((pz - hz) / REL_POS_SCALE)
    if not (_I16_MIN <= x <= _I16_MAX and _I16_MIN <= y <= _I16_MAX and _I16_MIN <= z <= _I16_MAX):
        x, y, z = _q16(px - hx, REL_POS_SCALE), _q16(py - hy, REL_POS_SCALE), _q16(pz - hz, REL_POS_SCALE)
    # _wire_normalize (twice: the part, then the product) and q_mul inlined: hot path
    m = bx * bx + by * by + bz * bz + bw * bw
    if _QEPS < m < _INF:
        inv = 1.0 / sqrt(m)
        bx, by, bz, bw = bx * inv, by * inv, bz * inv, bw * inv
    else:
        bx, by, bz, bw = IDENTITY
    rx = aw * bx + ax * bw + ay * bz - az * by
    ry = aw * by - ax * bz + ay * bw + az * bx
    rz = aw * bz + ax * by - ay * bx + az * bw
    rw = aw * bw - ax * bx - ay * by - az * bz
    m = rx * rx + ry * ry + rz * rz + rw * rw
    if _QEPS < m < _INF:
        inv = 1.0 / sqrt(m)
        args += (x, y, z, _pack_unit(rx * inv, ry * inv, rz * inv, rw * inv))
    else:
        args += (x, y, z, _IDENTITY_PACKED)


def _physical_args(frame: PoseFrame, flags: int, family: int) -> tuple[Any, ...]:
    """The physical block's integers: the XROrigin Δ, or the floor-local physical pose."""
    if flags & FLAG_MOVING_FLOOR:
        (px, py, pz), rot = frame.physical
        return (
            _q16(px, DELTA_POS_SCALE),
            _q16(py, DELTA_POS_SCALE),
            _q16(pz, DELTA_POS_SCALE),
            _q16(receiver_yaw(rot), DELTA_YAW_SCALE),
        )
    dx, dz, dyaw, dy = frame.delta
    x, z, yaw = round(dx / DELTA_POS_SCALE), round(dz / DELTA_POS_SCALE), round(dyaw / DELTA_YAW_SCALE)
    if not (_I16_MIN <= x <= _I16_MAX and _I16_MIN <= z <= _I16_MAX and _I16_MIN <= yaw <= _I16_MAX):
        x, z, yaw = _q16(dx, DELTA_POS_SCALE), _q16(dz, DELTA_POS_SCALE), _q16(dyaw, DELTA_YAW_SCALE)
    if family == 3:
        return (x, z, yaw)
    return (x, _q16(dy, DELTA_POS_SCALE), z, yaw)


def _body_args(frame: PoseFrame, args: list[Any], protocol: int, family: int) -> tuple[int, int, list[Any]]:
    """Sanitised flags, virtual count and the struct arguments of a body, appended to `args`."""
    flags = sanitize_flags(frame.flags, protocol)
    n = min(len(frame.virtuals), MAX_VIRTUALS) if flags & FLAG_VIRTUALS else 0
    args += (flags, ENCODING_FLAGS_MOVING_FLOOR if flags & FLAG_MOVING_FLOOR else ENCODING_FLAGS)
    try:
        if flags & FLAG_PHYSICAL:
            args += _physical_args(frame, flags, family)
        if flags & FLAG_HEAD:
            (hx, hy, hz), (qx, qy, qz, qw) = frame.head
            x, y, z = round(hx / ABS_POS_SCALE), round(hy / ABS_POS_SCALE), round(hz / ABS_POS_SCALE)
            if not (_I24_MIN <= x <= _I24_MAX and _I24_MIN <= y <= _I24_MAX and _I24_MIN <= z <= _I24_MAX):
                x, y, z = _q24(hx), _q24(hy), _q24(hz)
            # normalised twice, as the shipped serializer does (once on read, again in compress
            # and in the inverse); the two can differ in the last bit
            qx, qy, qz, qw = _wire_normalize(*_wire_normalize(qx, qy, qz, qw))
            args += (x & 0xFFFF, x >> 16, y & 0xFFFF, y >> 16, z & 0xFFFF, z >> 16, _pack_unit(qx, qy, qz, qw))
            if flags & FLAG_RIGHT:
                _rel(args, frame.right, hx, hy, hz, -qx, -qy, -qz, qw)
            if flags & FLAG_LEFT:
                _rel(args, frame.left, hx, hy, hz, -qx, -qy, -qz, qw)
            args.append(n)
            for i in range(n):
                _rel(args, frame.virtuals[i], hx, hy, hz, -qx, -qy, -qz, qw)
        else:
            args.append(0)
    except (ValueError, OverflowError) as e:  # round() of NaN / inf
        raise PoseEncodeError(f"pose has a non-finite value: {e}") from None
    return flags, n, args


def _pack_body_checked(frame: PoseFrame, protocol: int, seq: int | None) -> bytes:
    family = _family(protocol)
    flags, n, args = _body_args(frame, [] if seq is None else [seq], protocol, family)
    return _body_struct(flags, n, seq is not None, family).pack(*args)


def encode_body_tail(frame: PoseFrame, protocol: int = LATEST_PROTOCOL) -> bytes:
    """The body after poseSeq (flags … last virtual): what the send policy compares (Unity signs it)."""
    return _pack_body(frame, protocol, None)


def encode_body(pose_seq: int, frame: PoseFrame, protocol: int = LATEST_PROTOCOL) -> bytes:
    return _pack_body(frame, protocol, pose_seq & 0xFFFF)


# roomId and deviceId travel as UTF-8 after a one-byte length, in our messages and in the
# server's room broadcast: a longer room id makes every broadcast of the room fail on the server.
MAX_ID_BYTES = 255


def id_bytes(text: str, what: str) -> bytes:
    """`text` as the wire carries it (UTF-8, at most MAX_ID_BYTES); PoseEncodeError names `what`."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise PoseEncodeError(f"{what} is not valid Unicode text (it cannot be encoded as UTF-8)") from None
    if len(raw) > MAX_ID_BYTES:
        raise PoseEncodeError(f"{what} is {len(raw)} bytes of UTF-8; the wire allows {MAX_ID_BYTES}")
    return raw


def _device_id_bytes(device_id: str) -> bytes:
    return id_bytes(device_id, "deviceId")


def room_id_bytes(room_id: str) -> bytes:
    return id_bytes(room_id, "roomId")


@lru_cache(maxsize=64)
def client_pose_header(device_id: str, protocol: int = LATEST_PROTOCOL) -> bytes:
    """`11 | protocol | len | deviceId`: constant per client, so it is built once."""
    raw = _device_id_bytes(device_id)
    return bytes((MSG_CLIENT_POSE, check_protocol(protocol), len(raw))) + raw


def encode_client_pose(device_id: str, pose_seq: int, frame: PoseFrame, protocol: int = LATEST_PROTOCOL) -> bytes:
    header = client_pose_header(device_id, protocol)
    if NATIVE is not None:  # the C accelerator: the same bytes, or None for anything unusual
        out: bytes | None = NATIVE.encode(header, frame, pose_seq & 0xFFFF, protocol)
        if out is not None:
            return out
    try:  # _pack_body, inlined
        fn = _ENCODERS[protocol][frame.flags]
    except (KeyError, TypeError):
        fn = _make_encoder(protocol, frame.flags, False)
    if fn is not None:
        try:
            return header + fn(frame, pose_seq & 0xFFFF)
        except Exception:  # see _pack_body
            pass
    return header + _pack_body_checked(frame, protocol, pose_seq & 0xFFFF)


def encode_client_hello(device_id: str, stealth: bool = False, protocol: int = LATEST_PROTOCOL) -> bytes:
    """Message 19 (protocol 7+), on the control lane: `19 | protocol | flags | len | deviceId`."""
    if check_protocol(protocol) < HELLO_PROTOCOL:
        raise ValueError(f"protocol {protocol} has no client hello (it starts with protocol {HELLO_PROTOCOL})")
    raw = _device_id_bytes(device_id)
    return bytes((MSG_CLIENT_HELLO, protocol, HELLO_FLAG_STEALTH if stealth else 0, len(raw))) + raw


def encode_room_pose(
    room_id: str, broadcast_time: float, entries: list[tuple[int, float, bytes]], protocol: int = LATEST_PROTOCOL
) -> bytes:
    """Message 12 from raw bodies, as the server relays them: (clientNo, poseTime, body)."""
    rid = room_id_bytes(room_id)
    parts = [
        bytes((MSG_ROOM_POSE, check_protocol(protocol), len(rid))),
        rid,
        _ROOM_TAIL.pack(broadcast_time, len(entries)),
    ]
    for client_no, pose_time, body in entries:
        parts += (_ENTRY_HEAD.pack(client_no, pose_time), body)
    return b"".join(parts)


def encode_device_id_mapping(version: tuple[int, int, int], mappings: list[DeviceMapping]) -> bytes:
    parts = [bytes((MSG_DEVICE_ID_MAPPING,)), _MAP_HEAD.pack(*version, len(mappings))]
    for m in mappings:
        raw = m.device_id.encode("utf-8")
        parts += (_MAP_ENTRY.pack(m.client_no, int(m.stealth), len(raw)), raw)
    return b"".join(parts)


# ---------------------------------------------------------------- decoders


def _need(data: bytes, offset: int, size: int, what: str) -> None:  # for the envelopes
    if offset + size > len(data):
        raise TruncatedError(offset, f"{what} needs {size} bytes, {max(0, len(data) - offset)} left")


def _fixed_struct(flags: int, family: int) -> struct.Struct:
    """Everything of a body from the physical block up to and including virtualCount."""
    fmt = "<"
    if flags & FLAG_PHYSICAL:
        fmt += _physical_fmt(family)
    if flags & FLAG_HEAD:
        fmt += "HbHbHbI" + "hhhI" * ((flags & FLAG_RIGHT) // FLAG_RIGHT + (flags & FLAG_LEFT) // FLAG_LEFT)
    return struct.Struct(fmt + "B")


def _flags_error(flags: int, offset: int, family: int) -> FlagsError | None:
    """Why no conforming encoder writes these flags, or None when they are fine."""
    if flags & ~known_flags(family):
        return FlagsError(
            offset, f"flags 0x{flags:02x} has bits protocol {family}{'+' if family == 5 else ''} does not define"
        )
    if flags & FLAG_STEALTH and flags != FLAG_STEALTH:
        return FlagsError(offset, f"stealth flags 0x{flags:02x} carry transform bits")
    if not flags & FLAG_HEAD and flags & (FLAG_RIGHT | FLAG_LEFT | FLAG_VIRTUALS):
        return FlagsError(offset, f"flags 0x{flags:02x}: hands/virtuals without a head")
    return None


# The fixed part's layout per family and flags byte; None for flags a conforming encoder never writes.
_LAYOUTS = {
    fam: tuple(None if _flags_error(f, 0, fam) else _fixed_struct(f, fam) for f in range(256)) for fam in (3, 4, 5)
}


def _truncated(data: bytes, offset: int, flags: int, family: int) -> TruncatedError:
    """Slow path: name the first block that runs past the end."""
    pos = offset + 4
    blocks = [
        ("physical block", 6 if family == 3 else 8, FLAG_PHYSICAL),
        ("head", 13, FLAG_HEAD),
        ("right hand", 10, FLAG_RIGHT),
        ("left hand", 10, FLAG_LEFT),
        ("virtualCount", 1, 0),
    ]
    for what, size, bit in blocks:
        if bit and not flags & bit:
            continue
        if pos + size > len(data):
            break
        pos += size
    return TruncatedError(pos, f"{what} needs {size} bytes, {max(0, len(data) - pos)} left")


_new = tuple.__new__  # NamedTuple(...) without its Python-level __new__: a dozen per peer per broadcast


def _part(
    hx: float, hy: float, hz: float, ax: float, ay: float, az: float, aw: float, qx: int, qy: int, qz: int, packed: int
) -> Transform:
    """A hand/virtual: head-relative wire values → absolute transform (shipped receiver math)."""
    bx, by, bz, bw = decompress_quat(packed)
    # q_mul inlined: this runs for every hand of every peer of every broadcast. Both factors
    # are unit, so the product is unit to rounding: no renormalisation needed.
    return _new(
        Transform,
        (
            (hx + qx * REL_POS_SCALE, hy + qy * REL_POS_SCALE, hz + qz * REL_POS_SCALE),
            (
                aw * bx + ax * bw + ay * bz - az * by,
                aw * by - ax * bz + ay * bw + az * bx,
                aw * bz + ax * by - ay * bx + az * bw,
                aw * bw - ax * bx - ay * by - az * bz,
            ),
        ),
    )


def _decode_body_checked(data: bytes, offset: int, family: int, size: int) -> tuple[PoseBody, int]:
    """One pose body of `family` (3, 4, 5) at `offset`: every check, each block's branch; the
    reference of the generated decoders below (which come back here with anything unusual)."""
    if offset + 4 > size:
        raise TruncatedError(offset, f"body header needs 4 bytes, {max(0, size - offset)} left")
    seq, flags, enc = _BODY_HEAD.unpack_from(data, offset)
    st = _LAYOUTS[family][flags]
    if st is None:
        error = _flags_error(flags, offset + 2, family)
        assert error is not None  # no layout: flags no conforming encoder writes
        raise error
    if flags & FLAG_PHYSICAL and not enc & ENC_XRORIGIN_DELTA and not flags & FLAG_MOVING_FLOOR:
        raise MissingDeltaEncodingError(
            offset + 3, f"PhysicalValid with encodingFlags 0x{enc:02x} (no XROrigin-Δ bit 4)"
        )
    pos = offset + 4
    if pos + st.size > size:
        raise _truncated(data, offset, flags, family)
    v = st.unpack_from(data, pos)
    pos += st.size
    n = v[-1]
    if n:
        if n > MAX_VIRTUALS:
            raise VirtualCountError(pos - 1, f"virtualCount {n} > {MAX_VIRTUALS}")
        if not flags & FLAG_VIRTUALS:
            raise FlagsError(pos - 1, f"virtualCount {n} without VirtualsValid")
        if pos + 10 * n > size:
            raise TruncatedError(pos, f"{n} virtual transforms need {10 * n} bytes, {size - pos} left")
    physical = delta = None
    k = 0
    if flags & FLAG_PHYSICAL:
        if family == 3:
            delta = _new(OriginDelta, (v[0] * DELTA_POS_SCALE, v[1] * DELTA_POS_SCALE, v[2] * DELTA_YAW_SCALE, 0.0))
            k = 3
        elif flags & FLAG_MOVING_FLOOR:
            physical = floor_local_physical(
                v[0] * DELTA_POS_SCALE, v[1] * DELTA_POS_SCALE, v[2] * DELTA_POS_SCALE, v[3] * DELTA_YAW_SCALE
            )
            k = 4
        else:  # dx, dy, dz, dyaw on the wire
            delta = _new(
                OriginDelta,
                (v[0] * DELTA_POS_SCALE, v[2] * DELTA_POS_SCALE, v[3] * DELTA_YAW_SCALE, v[1] * DELTA_POS_SCALE),
            )
            k = 4
    if not flags & FLAG_HEAD:
        return _new(PoseBody, (seq, flags, enc, delta, None, None, None, (), physical)), pos
    hx = (v[k + 1] << 16 | v[k]) * ABS_POS_SCALE
    hy = (v[k + 3] << 16 | v[k + 2]) * ABS_POS_SCALE
    hz = (v[k + 5] << 16 | v[k + 4]) * ABS_POS_SCALE
    hq = decompress_quat(v[k + 6])
    head = _new(Transform, ((hx, hy, hz), hq))
    ax, ay, az, aw = hq
    right = left = None
    k += 7
    if flags & FLAG_RIGHT:
        right = _part(hx, hy, hz, ax, ay, az, aw, v[k], v[k + 1], v[k + 2], v[k + 3])
        k += 4
    if flags & FLAG_LEFT:
        left = _part(hx, hy, hz, ax, ay, az, aw, v[k], v[k + 1], v[k + 2], v[k + 3])
    virtuals: tuple[Transform, ...] = ()
    if n:
        virtuals = tuple(_part(hx, hy, hz, ax, ay, az, aw, *e) for e in _REL_ITER(data[pos : pos + 10 * n]))
        pos += 10 * n
    if delta is not None:
        physical = reconstruct_physical(head, delta)
    return _new(PoseBody, (seq, flags, enc, delta, head, right, left, virtuals, physical)), pos


# ---------------------------------------------------------------- fast paths: one function per layout
#
# The checked paths above take any flags and branch on them per block, index the unpacked
# fields with running offsets and gather struct arguments in a list. In pure Python those steps
# cost about as much as the arithmetic itself, so each layout — (protocol, flags) for the
# encoder, (family, flags) for the decoder — gets its own straight-line function, generated on
# first use from the snippets below: fields unpacked into named locals, hands written out,
# one struct call. The arithmetic is the checked path's, operation for operation, so the bits
# are the same; the exceptions are cheaper spellings of the same values:
#   - round(v) as floor(v + R − R), R = 1.5·2**52: IEEE round-half-to-even for |v| < 2**51, and
#     anything larger is out of every field's range either way;
#   - a normalisation skipped when |q|² == 1.0 exactly (then 1/√m is 1.0 and each product is
#     the factor itself);
#   - a dequantised component's square from a table (the same product, computed once).
# Anything unusual — a field out of range (struct.error), NaN/inf, a malformed body, inputs of
# another type — goes back to the checked path, which clamps, raises or decodes as it always did.

_R = "6755399441055744.0"  # 1.5·2**52 (_ROUND)
# the generated code spells the module's scales and limits as literals
assert (ABS_POS_SCALE, DELTA_POS_SCALE, DELTA_YAW_SCALE, REL_POS_SCALE, MAX_VIRTUALS) == (0.01, 0.01, 0.1, 0.005, 50)
assert (_QMIN, _QMAX, _QRANGE, _QEPS, _ROUND, sys.float_info.max) == (
    -0.70710677,
    0.70710677,
    1.41421354,
    1e-12,
    float(_R),
    1.7976931348623157e308,
)
_DQ10_SQ = tuple(v * v for v in _DQ10)
_BODY_LAYOUTS = {
    fam: tuple(None if st is None else struct.Struct("<HBB" + st.format[1:]) for st in _LAYOUTS[fam])
    for fam in (3, 4, 5)
}
_FAMILY_OF = {p: _family(p) for p in PROTOCOLS}


def _src_round(expr: str) -> str:
    return f"floor({expr} + {_R} - {_R})"


def _src_normalize(q: tuple[str, str, str, str], pad: str, twice: bool = False) -> list[str]:
    """_wire_normalize(q) in place (twice: _wire_normalize(_wire_normalize(q)), the head)."""
    x, y, z, w = q
    sq = f"{x} * {x} + {y} * {y} + {z} * {z} + {w} * {w}"
    # one statement per component: a tuple assignment of four costs a tuple
    scale = ["inv = 1.0 / sqrt(m)", f"{x} = {x} * inv; {y} = {y} * inv; {z} = {z} * inv; {w} = {w} * inv"]
    lines = [
        f"m = {sq}",
        "if 1e-12 < m <= 1.7976931348623157e308:",
        "    if m != 1.0:",
        *["        " + s for s in scale],
    ]
    if twice:  # a second pass only after a first that changed q
        lines += [f"        m = {sq}", "        if m != 1.0:", *["            " + s for s in scale]]
    lines += ["else:", f"    {x} = 0.0; {y} = 0.0; {z} = 0.0; {w} = 1.0"]
    return [pad + s for s in lines]


def _src_pack(q: tuple[str, str, str, str], out: str, pad: str) -> list[str]:
    """_pack_unit(q) into `out` (q unit or the identity)."""
    x, y, z, w = q
    lines = [
        f"ax = {x} if {x} >= 0.0 else -{x}",
        f"ay = {y} if {y} >= 0.0 else -{y}",
        f"az = {z} if {z} >= 0.0 else -{z}",
        f"aw = {w} if {w} >= 0.0 else -{w}",
        "if ax >= ay and ax >= az and ax >= aw:",
        f"    i = 0.0; big = {x}; a = {y}; b = {z}; c = {w}",
        "elif ay >= az and ay >= aw:",
        f"    i = 1073741824.0; big = {y}; a = {x}; b = {z}; c = {w}",
        "elif az >= aw:",
        f"    i = 2147483648.0; big = {z}; a = {x}; b = {y}; c = {w}",
        "else:",
        f"    i = 3221225472.0; big = {w}; a = {x}; b = {y}; c = {z}",
        "if big < 0.0:",
        "    a = -a; b = -b; c = -c",
        "a = -0.70710677 if a < -0.70710677 else 0.70710677 if a > 0.70710677 else a",
        "b = -0.70710677 if b < -0.70710677 else 0.70710677 if b > 0.70710677 else b",
        "c = -0.70710677 if c < -0.70710677 else 0.70710677 if c > 0.70710677 else c",
        f"{out} = floor(i + ((a + 0.70710677) / 1.41421354 * 1023.0 + {_R} - {_R}) * 1048576.0"
        f" + ((b + 0.70710677) / 1.41421354 * 1023.0 + {_R} - {_R}) * 1024.0"
        f" + ((c + 0.70710677) / 1.41421354 * 1023.0 + {_R} - {_R}))",
    ]
    return [pad + s for s in lines]


def _src_relative(part: str, names: tuple[str, str, str, str], pad: str) -> list[str]:
    """_rel: `part` relative to the head — world-axis offset, then conj(head)·part, packed.
    Expects hx, hy, hz and cx, cy, cz, qw (= conj(head)) in scope."""
    x, y, z, p = names
    lines = [
        f"(px, py, pz), (bx, by, bz, bw) = {part}",
        f"{x} = {_src_round('(px - hx) / 0.005')}",
        f"{y} = {_src_round('(py - hy) / 0.005')}",
        f"{z} = {_src_round('(pz - hz) / 0.005')}",
        *_src_normalize(("bx", "by", "bz", "bw"), ""),
        "rx = qw * bx + cx * bw + cy * bz - cz * by",
        "ry = qw * by - cx * bz + cy * bw + cz * bx",
        "rz = qw * bz + cx * by - cy * bx + cz * bw",
        "rw = qw * bw - cx * bx - cy * by - cz * bz",
        # conj(head) and the part are unit (or the identity), so |r|² is 1 to a few ulp: the
        # range check _wire_normalize makes always passes here
        "m = rx * rx + ry * ry + rz * rz + rw * rw",
        "if m != 1.0:",
        "    inv = 1.0 / sqrt(m)",
        "    rx = rx * inv; ry = ry * inv; rz = rz * inv; rw = rw * inv",
        *_src_pack(("rx", "ry", "rz", "rw"), p, ""),
    ]
    return [pad + s for s in lines]


def _encoder_source(protocol: int, sf: int, tail: bool) -> str:
    family = _family(protocol)
    enc = ENCODING_FLAGS_MOVING_FLOOR if sf & FLAG_MOVING_FLOOR else ENCODING_FLAGS
    # module names bound as defaults: locals are the cheapest loads
    lines = [
        f"def encode(frame, seq, _st=_st, floor=floor, sqrt=sqrt):  # protocol {protocol}, flags 0x{sf:02x}"
        + (", tail" if tail else "")
    ]
    fields = [] if tail else ["seq"]
    fields += [str(sf), str(enc)]
    if sf & FLAG_PHYSICAL:
        if sf & FLAG_MOVING_FLOOR:
            lines.append(f"    d0, d1, d2, d3 = _physical_args(frame, {sf}, {family})")
            fields += ["d0", "d1", "d2", "d3"]
        else:
            lines.append("    dx, dz, dyaw, dy = frame.delta")
            lines += [
                f"    d0 = {_src_round('dx / 0.01')}",
                f"    d2 = {_src_round('dz / 0.01')}",
                f"    d3 = {_src_round('dyaw / 0.1')}",
            ]
            if family == 3:
                fields += ["d0", "d2", "d3"]
            else:
                lines.append(f"    d1 = {_src_round('dy / 0.01')}")
                fields += ["d0", "d1", "d2", "d3"]
    if sf & FLAG_HEAD:
        lines += [
            "    (hx, hy, hz), (qx, qy, qz, qw) = frame.head",
            f"    x = {_src_round('hx / 0.01')}",
            f"    y = {_src_round('hy / 0.01')}",
            f"    z = {_src_round('hz / 0.01')}",
        ]
        lines += _src_normalize(("qx", "qy", "qz", "qw"), "    ", twice=True)
        lines += _src_pack(("qx", "qy", "qz", "qw"), "hp", "    ")
        fields += ["x & 0xFFFF", "x >> 16", "y & 0xFFFF", "y >> 16", "z & 0xFFFF", "z >> 16", "hp"]
        if sf & (FLAG_RIGHT | FLAG_LEFT | FLAG_VIRTUALS):
            lines.append("    cx, cy, cz = -qx, -qy, -qz")
        if sf & FLAG_RIGHT:
            lines += _src_relative("frame.right", ("r0", "r1", "r2", "rp"), "    ")
            fields += ["r0", "r1", "r2", "rp"]
        if sf & FLAG_LEFT:
            lines += _src_relative("frame.left", ("l0", "l1", "l2", "lp"), "    ")
            fields += ["l0", "l1", "l2", "lp"]
    if sf & FLAG_VIRTUALS:
        lines += [
            "    vs = frame.virtuals",
            "    n = len(vs)",
            "    if n:",
            f"        if n > {MAX_VIRTUALS}:",
            f"            n = {MAX_VIRTUALS}",
            f"        args = [{', '.join(fields)}, n]",
            "        for v in vs[:n]:",
        ]
        lines += _src_relative("v", ("v0", "v1", "v2", "vp"), "            ")
        lines += [
            "            args += (v0, v1, v2, vp)",
            f"        return _body_struct({sf}, n, {not tail}, {family}).pack(*args)",
        ]
    lines.append(f"    return _st.pack({', '.join(fields)}, 0)")
    return "\n".join(lines) + "\n"


def _src_decompress(p: str, q: tuple[str, str, str, str], pad: str) -> list[str]:
    """decompress_quat(p) into q."""
    x, y, z, w = q
    lines = [
        f"j = {p} >> 30",
        f"ia, ib, ic = ({p} >> 20) & 0x3FF, ({p} >> 10) & 0x3FF, {p} & 0x3FF",
        "s = _DQ10_SQ[ia] + _DQ10_SQ[ib] + _DQ10_SQ[ic]",
        "if s <= 1.0:",
        "    big = sqrt(1.0 - s)",
        "    if j == 3:",
        f"        {x} = _DQ10[ia]; {y} = _DQ10[ib]; {z} = _DQ10[ic]; {w} = big",
        "    elif j == 0:",
        f"        {x} = big; {y} = _DQ10[ia]; {z} = _DQ10[ib]; {w} = _DQ10[ic]",
        "    elif j == 1:",
        f"        {x} = _DQ10[ia]; {y} = big; {z} = _DQ10[ib]; {w} = _DQ10[ic]",
        "    else:",
        f"        {x} = _DQ10[ia]; {y} = _DQ10[ib]; {z} = big; {w} = _DQ10[ic]",
        "else:",
        f"    {x}, {y}, {z}, {w} = decompress_quat({p})",
    ]
    return [pad + s for s in lines]


def _src_part(names: tuple[str, str, str, str], out: str, pad: str) -> list[str]:
    """_part: head-relative wire values → absolute transform (head in hx, hy, hz, qx, qy, qz, qw)."""
    x, y, z, p = names
    lines = [
        *_src_decompress(p, ("bx", "by", "bz", "bw"), ""),
        f"{out} = _new(Transform, ((hx + {x} * 0.005, hy + {y} * 0.005, hz + {z} * 0.005), (",
        "    qw * bx + qx * bw + qy * bz - qz * by,",
        "    qw * by - qx * bz + qy * bw + qz * bx,",
        "    qw * bz + qx * by - qy * bx + qz * bw,",
        "    qw * bw - qx * bx - qy * by - qz * bz)))",
    ]
    return [pad + s for s in lines]


def _decoder_source(family: int, flags: int) -> str:
    st = _BODY_LAYOUTS[family][flags]
    assert st is not None  # _make_decoder asks only for flags with a layout
    physical, head = flags & FLAG_PHYSICAL, flags & FLAG_HEAD
    floor_local = physical and flags & FLAG_MOVING_FLOOR
    names = ["seq", "_", "enc"]
    if physical:
        names += ["d0", "d2", "d3"] if family == 3 else ["d0", "d1", "d2", "d3"]
    if head:
        names += ["x0", "x1", "y0", "y1", "z0", "z1", "hp"]
        if flags & FLAG_RIGHT:
            names += ["r0", "r1", "r2", "rp"]
        if flags & FLAG_LEFT:
            names += ["l0", "l1", "l2", "lp"]
    names.append("n")
    lines = [
        "def decode(data, offset, size, _st=_st, sqrt=sqrt, _DQ10=_DQ10, _DQ10_SQ=_DQ10_SQ,"
        " _new=_new, Transform=Transform,"
        " cos=cos, sin=sin, atan2=atan2, _RAD=RAD, _DEG=DEG):"
        f"  # family {family}, flags 0x{flags:02x}",
        f"    end = offset + {st.size}",
        "    if end > size:",
        f"        return _decode_body_checked(data, offset, {family}, size)",
        f"    {', '.join(names)} = _st.unpack_from(data, offset)",
    ]
    checks = []
    if physical and not floor_local:
        checks.append(f"not enc & {ENC_XRORIGIN_DELTA}")
    checks.append(f"n and (n > {MAX_VIRTUALS} or end + 10 * n > size)" if flags & FLAG_VIRTUALS else "n")
    lines += [f"    if {' or '.join(checks)}:", f"        return _decode_body_checked(data, offset, {family}, size)"]
    delta = "None"
    physical_value = "None"
    if physical:
        if family == 3:
            lines.append("    dx, dz, dyaw, dy = d0 * 0.01, d2 * 0.01, d3 * 0.1, 0.0")
        elif floor_local:
            lines.append("    physical = floor_local_physical(d0 * 0.01, d1 * 0.01, d2 * 0.01, d3 * 0.1)")
            physical_value = "physical"
        else:
            lines.append("    dx, dy, dz, dyaw = d0 * 0.01, d1 * 0.01, d2 * 0.01, d3 * 0.1")
        if not floor_local:
            delta = "_new(OriginDelta, (dx, dz, dyaw, dy))"
    right = left = "None"
    virtuals = "()"
    if head:
        lines += [
            "    hx = (x1 << 16 | x0) * 0.01",
            "    hy = (y1 << 16 | y0) * 0.01",
            "    hz = (z1 << 16 | z0) * 0.01",
        ]
        lines += _src_decompress("hp", ("qx", "qy", "qz", "qw"), "    ")
        lines.append("    head = _new(Transform, ((hx, hy, hz), (qx, qy, qz, qw)))")
        if flags & FLAG_RIGHT:
            lines += _src_part(("r0", "r1", "r2", "rp"), "right", "    ")
            right = "right"
        if flags & FLAG_LEFT:
            lines += _src_part(("l0", "l1", "l2", "lp"), "left", "    ")
            left = "left"
        if flags & FLAG_VIRTUALS:
            lines += [
                "    virtuals = ()",
                "    if n:",
                "        out = []",
                "        append = out.append",
                "        for v0, v1, v2, vp in _REL_ITER(data[end:end + 10 * n]):",
            ]
            lines += _src_part(("v0", "v1", "v2", "vp"), "t", "            ")
            lines += ["            append(t)", "        virtuals = tuple(out)", "        end += 10 * n"]
            virtuals = "virtuals"
        if physical and not floor_local:  # origin.reconstruct_physical(head, delta)
            lines += [
                "    r = -dyaw * _RAD",
                "    c, s = cos(r), sin(r)",
                "    tx, tz = hx - dx, hz - dz",
                "    m = qx * qx + qy * qy + qz * qz + qw * qw",
                "    if m != 1.0:",
                "        inv = 1.0 / sqrt(m)",
                "        qx = qx * inv; qy = qy * inv; qz = qz * inv; qw = qw * inv",
                "    head_yaw = ((atan2(2.0 * (qw * qy + qz * qx), 1.0 - 2.0 * (qy * qy + qz * qz)) * _DEG"
                " + 180.0) % 360.0) - 180.0",
                "    half = (((head_yaw - dyaw + 180.0) % 360.0) - 180.0) * _RAD * 0.5",
                "    physical = _new(Transform, ((c * tx + s * tz, hy - dy, -s * tx + c * tz),"
                " (0.0, sin(half), 0.0, cos(half))))",
            ]
            physical_value = "physical"
        head_value = "head"
    else:
        head_value = "None"
    lines.append(
        f"    return _new(PoseBody, (seq, {flags}, enc, {delta}, {head_value}, {right}, {left}, {virtuals}, "
        f"{physical_value})), end"
    )
    return "\n".join(lines) + "\n"


def _compile(source: str, name: str, st: struct.Struct) -> Callable[..., Any]:
    """The function `name` defined by `source`, its struct bound as `_st` (module globals)."""
    title = source.partition("#")[2].partition("\n")[0].strip()  # "protocol 8, flags 0x1e" in tracebacks
    namespace: dict[str, Any] = {"_st": st}
    exec(compile(source, f"<netsync codec, generated: {title}>", "exec"), globals(), namespace)
    fn: Callable[..., Any] = namespace[name]
    return fn


# protocol → flags → generated encoder (None: flags the protocol does not define → checked path)
_Encoder = Callable[[PoseFrame, "int | None"], bytes]
_Decoder = Callable[[bytes, int, int], "tuple[PoseBody, int]"]
_ENCODERS: dict[int, dict[int, _Encoder | None]] = {p: {} for p in PROTOCOLS}
_TAIL_ENCODERS: dict[int, dict[int, _Encoder | None]] = {p: {} for p in PROTOCOLS}
# family → flags byte → generated decoder (or the checked path, for flags no encoder writes)
_DECODERS: dict[int, list[_Decoder | None]] = {fam: [None] * 256 for fam in (3, 4, 5)}


def _make_encoder(protocol: int, flags: object, tail: bool) -> _Encoder | None:
    if protocol not in PROTOCOLS or type(flags) is not int or not 0 <= flags < 256:
        return None  # not cached: the checked path deals with it (and raises)
    try:
        sf = sanitize_flags(flags, protocol)
    except PoseEncodeError:
        fn: _Encoder | None = None
    else:
        st = _body_struct(sf, 0, not tail, _family(protocol))
        fn = _compile(_encoder_source(protocol, sf, tail), "encode", st)
    (_TAIL_ENCODERS if tail else _ENCODERS)[protocol][flags] = fn
    return fn


def _make_decoder(family: int, flags: int) -> _Decoder:
    st = _BODY_LAYOUTS[family][flags]
    fn: _Decoder
    if st is None:
        fn = lambda data, offset, size: _decode_body_checked(data, offset, family, size)  # noqa: E731
    else:
        fn = _compile(_decoder_source(family, flags), "decode", st)
    _DECODERS[family][flags] = fn
    return fn


def _pack_body(frame: PoseFrame, protocol: int, seq: int | None) -> bytes:
    """encode_body (seq given) / encode_body_tail (seq None): the C accelerator's or the layout's
    generated encoder, or the checked path for anything they do not take."""
    if NATIVE is not None and type(protocol) is int and 3 <= protocol <= 8:
        out: bytes | None = NATIVE.encode(b"", frame, -1 if seq is None else seq, protocol)
        if out is not None:
            return out
    try:
        fn = (_ENCODERS if seq is not None else _TAIL_ENCODERS)[protocol][frame.flags]
    except (KeyError, TypeError):
        fn = _make_encoder(protocol, frame.flags, seq is None)
    if fn is not None:
        try:
            return fn(frame, seq)
        except Exception:  # out of range (clamped there), non-finite (raised there), wrong types
            pass
    return _pack_body_checked(frame, protocol, seq)


def _decode_body(data: bytes, offset: int, family: int, size: int) -> tuple[PoseBody, int]:
    """decode_body by family: the C accelerator, else the generated decoder of the body's flags byte."""
    if NATIVE is not None and 0 <= offset and size <= len(data):
        got: tuple[PoseBody, int] | None = NATIVE.decode_body(data, offset, family, size)
        if got is not None:
            return got
    if offset + 4 > size:
        return _decode_body_checked(data, offset, family, size)
    flags = data[offset + 2]
    return (_DECODERS[family][flags] or _make_decoder(family, flags))(data, offset, size)


_FAMILY_OF = {p: _family(p) for p in PROTOCOLS}


def decode_body(data: bytes, offset: int = 0, protocol: int = LATEST_PROTOCOL) -> tuple[PoseBody, int]:
    """One pose body of `protocol` starting at `offset`; returns it and the offset just past it."""
    family = _FAMILY_OF.get(protocol)
    if family is None:
        family = _family(check_protocol(protocol))  # the caller's mistake, not the network's: ValueError
    return _decode_body(data, offset, family, len(data))


def _string(data: bytes, offset: int, what: str) -> tuple[str, int]:
    _need(data, offset, 1, f"{what} length")
    n = data[offset]
    _need(data, offset + 1, n, what)
    try:
        return data[offset + 1 : offset + 1 + n].decode("utf-8"), offset + 1 + n
    except UnicodeDecodeError as e:
        raise StringError(offset + 1 + e.start, f"{what} is not UTF-8") from None


def _versioned(data: bytes, msg_type: int, expect: int | None) -> int:
    """The message's protocol byte, checked: one this codec speaks, and `expect` when given."""
    _need(data, 0, 2, "message header")
    if data[0] != msg_type:
        raise MessageTypeError(0, f"message type {data[0]}, expected {msg_type}")
    protocol = data[1]
    if expect is not None and protocol != expect:
        raise UnsupportedProtocolError(1, f"protocol version {protocol}, expected {expect}", protocol)
    if protocol not in PROTOCOLS:
        raise UnsupportedProtocolError(
            1, f"protocol version {protocol}, this codec speaks {PROTOCOLS[0]}–{PROTOCOLS[-1]}", protocol
        )
    return protocol


def _end(data: bytes, pos: int, what: str) -> None:
    if pos != len(data):
        raise TrailingBytesError(pos, f"{len(data) - pos} bytes after the {what}")


def decode_client_pose(data: bytes, expect: int | None = None) -> ClientPose:
    """Message 11 of any protocol headcast speaks (or only `expect`)."""
    if NATIVE is not None and (expect is None or type(expect) is int and 3 <= expect <= 8):
        got: ClientPose | None = NATIVE.decode_client_pose(data, expect or 0)
        if got is not None:
            return got
    size = len(data)
    # fast path: a well-formed envelope; anything else takes the checked one below, which
    # raises what it finds in the same order
    if (
        size > 2
        and data[0] == 11
        and (family := _FAMILY_OF.get(protocol := data[1]))
        and (expect is None or expect == protocol)
    ):
        start = 3 + data[2]
        if start + 4 <= size:
            try:
                device_id = data[3:start].decode()
            except UnicodeDecodeError:
                pass
            else:
                flags = data[start + 2]
                body, end = (_DECODERS[family][flags] or _make_decoder(family, flags))(data, start, size)
                if end == size:
                    raw = data[start:]
                    return _new(ClientPose, (device_id, body, raw if type(raw) is bytes else bytes(raw), protocol))
    protocol = _versioned(data, MSG_CLIENT_POSE, expect)
    device_id, start = _string(data, 2, "deviceId")
    body, end = _decode_body(data, start, _FAMILY_OF[protocol], size)
    if end != size:
        _end(data, end, "pose body")
    return _new(ClientPose, (device_id, body, bytes(data[start:]), protocol))


def decode_client_hello(data: bytes) -> ClientHello:
    protocol = _versioned(data, MSG_CLIENT_HELLO, None)
    if protocol < HELLO_PROTOCOL:
        raise UnsupportedProtocolError(
            1, f"client hello with protocol {protocol} (hello exists from {HELLO_PROTOCOL})", protocol
        )
    _need(data, 2, 1, "hello flags")
    flags = data[2]
    if flags & ~HELLO_FLAG_STEALTH:
        raise FlagsError(2, f"hello flags 0x{flags:02x}: only 0x01 (stealth) is defined")
    device_id, pos = _string(data, 3, "deviceId")
    _end(data, pos, "hello")
    return ClientHello(device_id, bool(flags), protocol)


def decode_room_pose(data: bytes, expect: int | None = None) -> RoomPose:
    """Message 12 of any protocol headcast speaks (or only `expect`): every entry, or an error."""
    protocol = _versioned(data, MSG_ROOM_POSE, expect)
    family, size = _FAMILY_OF[protocol], len(data)
    room_id, pos = _string(data, 2, "roomId")
    _need(data, pos, 10, "broadcastTime and count")
    broadcast_time, count = _ROOM_TAIL.unpack_from(data, pos)
    pos += 10
    if NATIVE is not None:  # every entry in C, or None: then the loop below decodes (and raises)
        got = NATIVE.decode_room_entries(data, pos, count, family)
        if got is not None:
            entries, pos = got
            _end(data, pos, f"{count} room entries")
            return RoomPose(room_id, broadcast_time, entries, protocol)
    entries = []
    for _ in range(count):
        _need(data, pos, 10, "room entry header")
        client_no, pose_time = _ENTRY_HEAD.unpack_from(data, pos)
        body, pos = _decode_body(data, pos + 10, family, size)
        entries.append(_new(RoomEntry, (client_no, pose_time, body)))
    # Bodies are not length-prefixed: junk relayed inside an entry shows up here or as a bad
    # field further on; either way the whole message is refused.
    _end(data, pos, f"{count} room entries")
    return RoomPose(room_id, broadcast_time, tuple(entries), protocol)


def decode_device_id_mapping(data: bytes) -> DeviceIdMapping:
    _need(data, 0, 6, "mapping header")
    if data[0] != MSG_DEVICE_ID_MAPPING:
        raise MessageTypeError(0, f"message type {data[0]}, expected {MSG_DEVICE_ID_MAPPING}")
    major, minor, patch, count = _MAP_HEAD.unpack_from(data, 1)
    pos = 6
    mappings = []
    for _ in range(count):
        _need(data, pos, 4, "mapping entry")
        client_no, stealth, _len = _MAP_ENTRY.unpack_from(data, pos)
        if stealth > 1:
            raise FlagsError(pos + 2, f"stealth byte {stealth} is not 0 or 1")
        device_id, pos = _string(data, pos + 3, "deviceId")
        mappings.append(DeviceMapping(client_no, device_id, bool(stealth)))
    _end(data, pos, f"{count} mappings")
    return DeviceIdMapping((major, minor, patch), tuple(mappings))


# ---------------------------------------------------------------- the C accelerator (optional)
#
# _nscodec.c does what the generated fast paths do, operation for operation, for the common case
# (exact floats in tuples, fields in range, well-formed bodies) and returns None for anything
# else, which then takes the paths above. Built by the build backend (setup.py) or in place by
# netcode/netsync/build_native.py (scripts/setup.sh); without it, or with HEADCAST_PURE_PYTHON=1,
# NATIVE is None and the pure-Python paths run: the same bytes and floats
# (tests/netsync/test_codec_native.py).


def _load_native() -> tuple[ModuleType | None, str]:
    if os.environ.get("HEADCAST_PURE_PYTHON", "") not in ("", "0"):
        return None, "disabled by HEADCAST_PURE_PYTHON=1"
    try:
        from . import _nscodec
    except ImportError as exc:
        return None, f"not built ({exc}); the pure-Python codec runs (same bytes)"
    # A build older than its source (a checkout after a pull) may not match the Python reference.
    here = os.path.dirname(__file__)
    source = os.path.join(here, "_nscodec.c")
    try:
        checkout = os.path.exists(os.path.join(here, os.pardir, os.pardir, "pyproject.toml"))
        if checkout and os.stat(_nscodec.__file__).st_mtime < os.stat(source).st_mtime:
            return None, "built from an older _nscodec.c; run netcode/netsync/build_native.py"
    except OSError:
        pass  # an installed package keeps no source: its extension was built with it
    _nscodec.init(Transform, OriginDelta, PoseBody, ClientPose, RoomEntry, _DQ10, _DQ10_SQ, RAD, DEG)
    return _nscodec, "in use"


NATIVE, NATIVE_STATUS = _load_native()
