"""NetSync protocol 3 wire codec: client pose (11), room pose (12), device-ID mapping (6).

Byte-exact with the shipped serializer (styly-netsync-server 0.9.0–0.10.4, reference
netsync.md §2–§6): int24 head position, smallest-three rotations, hands/virtuals relative to
the *unquantised* head (world-axis position offset, conj(head)·part rotation), encodingFlags
0x1F, round-half-to-even then clamp, in float64 with the same operation order — so the same
input gives the same bits. Each layout is one precompiled struct per flag combination.

Decoding is strict where the shipped decoder is lenient (it relays junk, reads past limits):
any defect raises a `NetSyncDecodeError` subclass naming the byte offset, and nothing is
returned from a message that failed anywhere.
"""
from __future__ import annotations

import math
import struct
from math import sqrt
from functools import lru_cache

from headcast.netcode.pose import IDENTITY, Quat

from .model import (
    FLAG_HEAD,
    FLAG_LEFT,
    FLAG_PHYSICAL,
    FLAG_RIGHT,
    FLAG_STEALTH,
    FLAG_VIRTUALS,
    KNOWN_FLAGS,
    MAX_VIRTUALS,
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
from .origin import reconstruct_physical

PROTOCOL_VERSION = 3
MSG_DEVICE_ID_MAPPING = 6
MSG_CLIENT_POSE = 11
MSG_ROOM_POSE = 12

ENCODING_FLAGS = 0x1F  # yaw-only, right/left/virtual relative to head, physical = XROrigin Δ
ENC_XRORIGIN_DELTA = 0x10

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


class NetSyncDecodeError(ValueError):
    """Malformed NetSync bytes from the network; `offset` is where in the message it went wrong."""

    def __init__(self, offset: int, detail: str) -> None:
        super().__init__(f"offset {offset}: {detail}")
        self.offset = offset
        self.detail = detail


class TruncatedError(NetSyncDecodeError):
    pass


class TrailingBytesError(NetSyncDecodeError):
    pass


class MissingDeltaEncodingError(NetSyncDecodeError):
    """PhysicalValid without encoding bit 4: an old-V3 sender (seed §2.2, fail fast)."""


class VirtualCountError(NetSyncDecodeError):
    pass


class UnsupportedProtocolError(NetSyncDecodeError):
    pass


class MessageTypeError(NetSyncDecodeError):
    pass


class FlagsError(NetSyncDecodeError):
    """Undefined flag bits, or flags no conforming encoder writes (stealth with blocks, hands
    without a head, virtual entries without VirtualsValid)."""


class StringError(NetSyncDecodeError):
    pass


class PoseEncodeError(ValueError):
    """The local pose cannot be put on the wire (non-finite number, bad flags, deviceId too long)."""


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

def sanitize_flags(flags: int) -> int:
    """The shipped encoder's flag rules: stealth is 0x01 alone; no head, no hands/virtuals."""
    if flags & ~KNOWN_FLAGS:
        raise PoseEncodeError(f"flags 0x{flags:02x} has bits protocol 3 does not define")
    if flags & FLAG_STEALTH:
        return FLAG_STEALTH
    if not flags & FLAG_HEAD:
        flags &= ~(FLAG_RIGHT | FLAG_LEFT | FLAG_VIRTUALS)
    return flags


@lru_cache(maxsize=1024)
def _body_struct(flags: int, n_virtuals: int, with_seq: bool) -> struct.Struct:
    fmt = "<HBB" if with_seq else "<BB"
    if flags & FLAG_PHYSICAL:
        fmt += "hhh"
    if flags & FLAG_HEAD:
        fmt += "HbHbHbI"
        if flags & FLAG_RIGHT:
            fmt += "hhhI"
        if flags & FLAG_LEFT:
            fmt += "hhhI"
    fmt += "B" + "hhhI" * n_virtuals
    return struct.Struct(fmt)


def _rel(args: list, part: Transform, hx: float, hy: float, hz: float,
         ax: float, ay: float, az: float, aw: float) -> None:
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


def encode_body_tail(frame: PoseFrame) -> bytes:
    """The body after poseSeq (flags … last virtual): what the send policy compares (Unity signs it)."""
    flags, n, args = _body_args(frame, [])
    return _body_struct(flags, n, False).pack(*args)


def encode_body(pose_seq: int, frame: PoseFrame) -> bytes:
    flags, n, args = _body_args(frame, [pose_seq & 0xFFFF])
    return _body_struct(flags, n, True).pack(*args)


def _body_args(frame: PoseFrame, args: list) -> tuple[int, int, list]:
    """Sanitised flags, virtual count and the struct arguments of a body, appended to `args`."""
    flags = sanitize_flags(frame.flags)
    n = min(len(frame.virtuals), MAX_VIRTUALS) if flags & FLAG_VIRTUALS else 0
    args += (flags, ENCODING_FLAGS)
    try:
        if flags & FLAG_PHYSICAL:
            dx, dz, dyaw = frame.delta
            x, z, yaw = round(dx / DELTA_POS_SCALE), round(dz / DELTA_POS_SCALE), round(dyaw / DELTA_YAW_SCALE)
            if not (_I16_MIN <= x <= _I16_MAX and _I16_MIN <= z <= _I16_MAX and _I16_MIN <= yaw <= _I16_MAX):
                x, z, yaw = _q16(dx, DELTA_POS_SCALE), _q16(dz, DELTA_POS_SCALE), _q16(dyaw, DELTA_YAW_SCALE)
            args += (x, z, yaw)
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


@lru_cache(maxsize=64)
def client_pose_header(device_id: str) -> bytes:
    """`11 | 3 | len | deviceId`: constant per client, so it is built once."""
    raw = device_id.encode("utf-8")
    if len(raw) > 255:
        raise PoseEncodeError(f"deviceId is {len(raw)} bytes; the wire allows 255")
    return bytes((MSG_CLIENT_POSE, PROTOCOL_VERSION, len(raw))) + raw


def encode_client_pose(device_id: str, pose_seq: int, frame: PoseFrame) -> bytes:
    return client_pose_header(device_id) + encode_body(pose_seq, frame)


def encode_room_pose(room_id: str, broadcast_time: float, entries: list[tuple[int, float, bytes]]) -> bytes:
    """Message 12 from raw bodies, as the server relays them: (clientNo, poseTime, body)."""
    rid = room_id.encode("utf-8")
    parts = [bytes((MSG_ROOM_POSE, PROTOCOL_VERSION, len(rid))), rid, _ROOM_TAIL.pack(broadcast_time, len(entries))]
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


def _fixed_struct(flags: int) -> struct.Struct:
    """Everything of a body from the Δ block up to and including virtualCount."""
    fmt = "<"
    if flags & FLAG_PHYSICAL:
        fmt += "hhh"
    if flags & FLAG_HEAD:
        fmt += "HbHbHbI" + "hhhI" * ((flags & FLAG_RIGHT) // FLAG_RIGHT + (flags & FLAG_LEFT) // FLAG_LEFT)
    return struct.Struct(fmt + "B")


def _flags_error(flags: int, offset: int) -> FlagsError | None:
    """Why no conforming encoder writes these flags, or None when they are fine."""
    if flags & ~KNOWN_FLAGS:
        return FlagsError(offset, f"flags 0x{flags:02x} has bits protocol 3 does not define")
    if flags & FLAG_STEALTH and flags != FLAG_STEALTH:
        return FlagsError(offset, f"stealth flags 0x{flags:02x} carry transform bits")
    if not flags & FLAG_HEAD and flags & (FLAG_RIGHT | FLAG_LEFT | FLAG_VIRTUALS):
        return FlagsError(offset, f"flags 0x{flags:02x}: hands/virtuals without a head")
    return None


# The fixed part's layout per flags byte; None for flags a conforming encoder never writes.
_LAYOUTS = tuple(None if _flags_error(f, 0) else _fixed_struct(f) for f in range(256))


def _truncated(data: bytes, offset: int, flags: int) -> TruncatedError:
    """Slow path: name the first block that runs past the end."""
    pos = offset + 4
    blocks = [("XROrigin delta", 6, FLAG_PHYSICAL), ("head", 13, FLAG_HEAD),
              ("right hand", 10, FLAG_RIGHT), ("left hand", 10, FLAG_LEFT), ("virtualCount", 1, 0)]
    for what, size, bit in blocks:
        if bit and not flags & bit:
            continue
        if pos + size > len(data):
            break
        pos += size
    return TruncatedError(pos, f"{what} needs {size} bytes, {max(0, len(data) - pos)} left")


_new = tuple.__new__  # NamedTuple(...) without its Python-level __new__: a dozen per peer per broadcast


def _part(hx: float, hy: float, hz: float, ax: float, ay: float, az: float, aw: float,
          qx: int, qy: int, qz: int, packed: int) -> Transform:
    """A hand/virtual: head-relative wire values → absolute transform (shipped receiver math)."""
    bx, by, bz, bw = decompress_quat(packed)
    # q_mul inlined: this runs for every hand of every peer of every broadcast. Both factors
    # are unit, so the product is unit to rounding: no renormalisation needed.
    return _new(Transform, (
        (hx + qx * REL_POS_SCALE, hy + qy * REL_POS_SCALE, hz + qz * REL_POS_SCALE),
        (
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ),
    ))


def decode_body(data: bytes, offset: int = 0) -> tuple[PoseBody, int]:
    """One pose body starting at `offset`; returns it and the offset just past it."""
    size = len(data)
    if offset + 4 > size:
        raise TruncatedError(offset, f"body header needs 4 bytes, {max(0, size - offset)} left")
    seq, flags, enc = _BODY_HEAD.unpack_from(data, offset)
    st = _LAYOUTS[flags]
    if st is None:
        raise _flags_error(flags, offset + 2)
    if flags & FLAG_PHYSICAL and not enc & ENC_XRORIGIN_DELTA:
        raise MissingDeltaEncodingError(offset + 3, f"PhysicalValid with encodingFlags 0x{enc:02x} (no XROrigin-Δ bit 4)")
    pos = offset + 4
    if pos + st.size > size:
        raise _truncated(data, offset, flags)
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
    if flags & FLAG_PHYSICAL:
        delta = _new(OriginDelta, (v[0] * DELTA_POS_SCALE, v[1] * DELTA_POS_SCALE, v[2] * DELTA_YAW_SCALE))
        k = 3
    else:
        delta = None
        k = 0
    if not flags & FLAG_HEAD:
        return _new(PoseBody, (seq, flags, enc, delta, None, None, None, (), None)), pos
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
    physical = None if delta is None else reconstruct_physical(head, delta)
    return _new(PoseBody, (seq, flags, enc, delta, head, right, left, virtuals, physical)), pos


def _string(data: bytes, offset: int, what: str) -> tuple[str, int]:
    _need(data, offset, 1, f"{what} length")
    n = data[offset]
    _need(data, offset + 1, n, what)
    try:
        return data[offset + 1 : offset + 1 + n].decode("utf-8"), offset + 1 + n
    except UnicodeDecodeError as e:
        raise StringError(offset + 1 + e.start, f"{what} is not UTF-8") from None


def _versioned(data: bytes, msg_type: int) -> None:
    _need(data, 0, 2, "message header")
    if data[0] != msg_type:
        raise MessageTypeError(0, f"message type {data[0]}, expected {msg_type}")
    if data[1] != PROTOCOL_VERSION:
        raise UnsupportedProtocolError(1, f"protocol version {data[1]}, this codec speaks {PROTOCOL_VERSION}")


def _end(data: bytes, pos: int, what: str) -> None:
    if pos != len(data):
        raise TrailingBytesError(pos, f"{len(data) - pos} bytes after the {what}")


def decode_client_pose(data: bytes) -> ClientPose:
    if len(data) < 3 or data[0] != MSG_CLIENT_POSE or data[1] != PROTOCOL_VERSION:
        _versioned(data, MSG_CLIENT_POSE)
    device_id, start = _string(data, 2, "deviceId")
    body, end = decode_body(data, start)
    if end != len(data):
        _end(data, end, "pose body")
    return _new(ClientPose, (device_id, body, bytes(data[start:])))


def decode_room_pose(data: bytes) -> RoomPose:
    _versioned(data, MSG_ROOM_POSE)
    room_id, pos = _string(data, 2, "roomId")
    _need(data, pos, 10, "broadcastTime and count")
    broadcast_time, count = _ROOM_TAIL.unpack_from(data, pos)
    pos += 10
    entries = []
    for _ in range(count):
        _need(data, pos, 10, "room entry header")
        client_no, pose_time = _ENTRY_HEAD.unpack_from(data, pos)
        body, pos = decode_body(data, pos + 10)
        entries.append(RoomEntry(client_no, pose_time, body))
    # Bodies are not length-prefixed: junk relayed inside an entry shows up here or as a bad
    # field further on; either way the whole message is refused.
    _end(data, pos, f"{count} room entries")
    return RoomPose(room_id, broadcast_time, tuple(entries))


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
