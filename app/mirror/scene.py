"""The mirror's 3D scene as numpy geometry (no GL here): matrices, boxes, avatars.

Avatars in a row, each drawn with its world orientation about its anchor: the tracked pose as it
is, then each far side (app/mirror/view.py says which and where its numbers come from): the
Quake 3 head as other players draw it (on a 16-bit server the view angles and roll only, with the
VR head a vr_support server would decode beside it), the NetSync head and hands as the room
broadcast them, the Sauerbraten head as a receiving game decodes our N_POS (whole degrees).
Other NetSync members, Quake 3 players and Sauerbraten players stand around their protocol's
avatar in the direction they are in the room / on the map, squeezed to within PEER_RADIUS (the
minimap shows true distances). Vertex rows are (x, y, z, r, g, b) float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from headcast.app.run.synthetic import orientation
from headcast.netcode.pose import Quat, Vec3, unity_position, unity_quat

# The camera looks at the avatars from the front (a mirror), so +X is the left of the screen. The
# avatars stand in a row, ours first (screen left), SPACING apart; the camera backs off until the
# row fits the view's width (fit_view).
SPACING = 1.1
HEAD_Y = 1.6
COLORS = {
    "tracked": ((0.85, 0.85, 0.85), (0.2, 0.9, 0.3)),  # head, nose/aim
    "q3": ((0.95, 0.55, 0.1), (1.0, 0.9, 0.1)),
    "q3vr": ((0.6, 0.36, 0.1), (1.0, 1.0, 0.6)),  # the VR head (a model): darker, a pale nose
    "netsync": ((0.2, 0.7, 0.95), (0.9, 0.2, 0.9)),
    "sauer": ((0.65, 0.45, 0.95), (0.3, 0.95, 0.8)),
}
VIEW_DIR = np.array([1.6, 0.7, -3.4]) / np.linalg.norm([1.6, 0.7, -3.4])  # from the target to the eye
TARGET_Y = 1.85  # above the heads: their labels get the upper part of the view, the floor less
FOVY = 50.0
PEER_RADIUS = 1.0  # m: others are drawn within about this of their protocol's avatar (true offsets: minimap)


def lineup(keys: list[str]) -> dict[str, Vec3]:
    """Anchors for avatars in a row, the first on the screen's left."""
    n = len(keys)
    return {k: ((n - 1) / 2 * SPACING - i * SPACING, HEAD_Y, 0.0) for i, k in enumerate(keys)}


def fit_view(width: int, height: int, half_row: float) -> np.ndarray:
    """View-projection that frames a row of avatars `half_row` metres either side of x = 0, plus
    the room their other members stand in (PEER_RADIUS) and their hands."""
    aspect = width / max(height, 1)
    tan_v = math.tan(math.radians(FOVY) / 2)
    need = half_row + PEER_RADIUS + 0.3
    dist = max(2.8, need / (tan_v * aspect) + 0.6, 1.35 / tan_v)
    target = np.array([0.0, TARGET_Y, 0.0])
    return perspective(FOVY, aspect, 0.05, 80.0) @ look_at(target + VIEW_DIR * dist, target)


def perspective(fovy_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2.0)
    m = np.zeros((4, 4), dtype=np.float32)
    m[0, 0] = f / max(aspect, 1e-6)
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def look_at(eye: np.ndarray, target: np.ndarray, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    f = target - eye
    f = f / np.linalg.norm(f)
    s = np.cross(f, up)
    s = s / np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.identity(4, dtype=np.float32)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def project(mvp: np.ndarray, p: Vec3, width: int, height: int) -> tuple[float, float] | None:
    """Window pixel (x right, y down) of a world point, None when behind the camera."""
    c = mvp @ np.array([p[0], p[1], p[2], 1.0])
    if c[3] <= 1e-6:
        return None
    return ((c[0] / c[3] + 1.0) * 0.5 * width, (1.0 - c[1] / c[3]) * 0.5 * height)


def quat_matrix(q: Quat) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


# A unit cube as 12 triangles, with a fixed shade per face so solid boxes read as 3D.
_FACES = [  # (normal axis, sign, shade)
    (0, 1, 0.75),
    (0, -1, 0.6),
    (1, 1, 1.0),
    (1, -1, 0.45),
    (2, 1, 0.55),
    (2, -1, 0.9),
]


def _cube() -> tuple[np.ndarray, np.ndarray]:
    pos, shade = [], []
    for axis, sign, s in _FACES:
        a, b = [i for i in range(3) if i != axis]
        corners = []
        for u, v in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            c = [0.0, 0.0, 0.0]
            c[axis], c[a], c[b] = 0.5 * sign, 0.5 * u, 0.5 * v
            corners.append(c)
        for i in (0, 1, 2, 0, 2, 3):
            pos.append(corners[i])
            shade.append(s)
    return np.array(pos), np.array(shade)


CUBE_POS, CUBE_SHADE = _cube()


@lru_cache(maxsize=64)
def _parts(parts: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (size, colour, offset) sharing one rotation, as local vertices and their colours: built
    once per colour set, so an avatar part costs one matrix product per frame, not one per box."""
    pos = np.vstack([CUBE_POS * np.asarray(size) + np.asarray(offset) for size, _, offset in parts])
    col = np.vstack([np.outer(CUBE_SHADE, color) for _, color, _ in parts])
    return pos, col


def _posed(parts: tuple, center: Vec3, q: Quat) -> np.ndarray:
    pos, col = _parts(parts)
    out = np.empty((len(pos), 6), dtype=np.float32)
    out[:, :3] = pos @ quat_matrix(q).T + np.asarray(center)
    out[:, 3:] = col
    return out


def head_triangles(center: Vec3, q: Quat, color: Vec3, nose: Vec3) -> np.ndarray:
    return _posed(
        (
            ((0.18, 0.22, 0.20), tuple(color), (0.0, 0.0, 0.0)),
            ((0.16, 0.05, 0.02), (0.1, 0.1, 0.12), (0.0, 0.03, -0.105)),  # visor
            ((0.045, 0.045, 0.22), tuple(nose), (0.0, -0.02, -0.2)),
        ),  # nose: forward
        center,
        q,
    )


def hand_triangles(center: Vec3, q: Quat, color: Vec3) -> np.ndarray:
    color = (color[0], color[1], color[2])  # a plain tuple (a caller may pass a list)
    return _posed(
        (((0.06, 0.06, 0.1), color, (0.0, 0.0, 0.0)), ((0.015, 0.015, 0.25), color, (0.0, 0.0, -0.17))), center, q
    )


def grid_lines(extent: float = 4.0, step: float = 0.5) -> np.ndarray:
    rows = []
    n = int(extent / step)
    for i in range(-n, n + 1):
        v = i * step
        c = (0.45, 0.45, 0.5) if i == 0 else (0.25, 0.25, 0.3)
        rows += [(v, 0.0, -extent, *c), (v, 0.0, extent, *c), (-extent, 0.0, v, *c), (extent, 0.0, v, *c)]
    return np.array(rows, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class AvatarPose:
    """One avatar in world orientation; hands relative to the head (world axes)."""

    head: Quat | None
    right: tuple[Vec3, Quat] | None = None
    left: tuple[Vec3, Quat] | None = None
    aim: tuple[float, float] | None = None  # weapon pitch, yaw (Quake) for the Q3 avatar


def q3_head_quat(pitch: float, yaw_offset: float, roll: float, weapon_yaw: float) -> Quat:
    """The receiver's head: absolute yaw = weapon (view) yaw + the decoded offset."""
    return orientation(pitch, weapon_yaw + yaw_offset, roll)


def near(base: Vec3, d: Vec3) -> Vec3:
    """`base` + the offset `d` (world metres) with its floor distance squeezed into PEER_RADIUS
    (direction kept, r·tanh(d/r): near ones almost true, far ones at the edge), its height to ±0.5 m."""
    flat = math.hypot(d[0], d[2])
    k = 1.0 if flat < 1e-9 else PEER_RADIUS * math.tanh(flat / PEER_RADIUS) / flat
    return (base[0] + d[0] * k, base[1] + max(-0.5, min(0.5, d[1])), base[2] + d[2] * k)


def peer_anchor(base: Vec3, own_head_u: Vec3 | None, peer_head_u: Vec3) -> Vec3:
    """Where another NetSync member is drawn: near our NetSync avatar (`base`), in the direction
    it stands in the room from our own relayed head (world axes)."""
    if own_head_u is None:
        return base
    (px, py, pz), (ox, oy, oz) = peer_head_u, own_head_u
    return near(base, unity_position((px - ox, py - oy, pz - oz)))


def netsync_avatar(head_pos_u: Vec3, head_rot_u: Quat, right, left) -> AvatarPose:
    """A decoded NetSync body (Unity frame) back in OpenXR terms, hands relative to the head."""
    hp = unity_position(head_pos_u)

    def part(t):
        if t is None:
            return None
        p = unity_position(t.pos)
        return (p[0] - hp[0], p[1] - hp[1], p[2] - hp[2]), unity_quat(t.rot)

    return AvatarPose(unity_quat(head_rot_u), part(right), part(left))


PEER_COLORS = ((0.55, 0.8, 0.45), (0.3, 0.45, 0.95))  # other NetSync members: head, nose
Q3_PEER_COLORS = ((0.7, 0.3, 0.25), (0.95, 0.6, 0.55))  # other players on the Quake 3 server
Q3_UNITS_PER_METRE = 32.0  # a Quake 3 player is 56 units tall standing: about 1.75 m


def q3_peer_anchor(base: Vec3, own_origin: Vec3, peer_origin: Vec3) -> Vec3:
    """Where another Quake 3 player is drawn: near our Q3 avatar (`base`), in its direction on the
    map from our own playerState origin (Quake X forward, Y left, Z up → OpenXR x = −Y, y = Z, z = −X)."""
    dx, dy, dz = (p - o for p, o in zip(peer_origin, own_origin))
    k = 1.0 / Q3_UNITS_PER_METRE
    return near(base, (-dy * k, dz * k, -dx * k))


def q3_player_avatar(angles: Vec3, head: tuple[float, float, float] | None) -> AvatarPose:
    """Another player as their cgame draws them: the VR head (pitch, absolute yaw, roll) when the
    entity carries one, else the view angles; the weapon from the view angles."""
    pitch, yaw, roll = head if head is not None else angles
    return AvatarPose(orientation(pitch, yaw, roll), aim=(angles[0], angles[1]))


SAUER_PEER_COLORS = ((0.45, 0.4, 0.65), (0.85, 0.85, 0.95))  # other players on the Sauerbraten server
SAUER_UNITS_PER_METRE = 8.0  # the sink's scale (app/sinks/sauer/mapping.py): a player's eye is 14 units up


def sauer_head_quat(yaw: float, pitch: float, roll: float, turn: float) -> Quat:
    """A Sauerbraten head (the game's yaw, pitch up positive, roll) in the rig's world: the game's
    yaw less the spawn's `turn` (app/sinks/sauer/mapping.py Anchor.turn), so it sits beside the tracked head."""
    return orientation(-pitch, yaw - turn, roll)


def sauer_peer_anchor(base: Vec3, own_eye: Vec3, peer_eye: Vec3, turn: float) -> Vec3:
    """Where another Sauerbraten player is drawn: near our Sauerbraten avatar (`base`), in its
    direction on the map from our own record (game x right, y forward, z up; turned back into the
    rig's world)."""
    dx, dy, dz = (p - o for p, o in zip(peer_eye, own_eye))
    t = math.radians(turn)
    rx, ry = dx * math.cos(t) + dy * math.sin(t), -dx * math.sin(t) + dy * math.cos(t)
    k = 1.0 / SAUER_UNITS_PER_METRE
    return near(base, (rx * k, dz * k, -ry * k))


def avatar_triangles(kind: str, a: AvatarPose, anchor: Vec3) -> np.ndarray:
    head_c, nose_c = (
        PEER_COLORS
        if kind == "peer"
        else Q3_PEER_COLORS
        if kind == "q3peer"
        else SAUER_PEER_COLORS
        if kind == "sauerpeer"
        else COLORS[kind]
    )
    parts = []
    if a.head is not None:
        parts.append(head_triangles(anchor, a.head, head_c, nose_c))
    for hand in (a.right, a.left):
        if hand is not None:
            rel, q = hand
            parts.append(hand_triangles((anchor[0] + rel[0], anchor[1] + rel[1], anchor[2] + rel[2]), q, head_c))
    if a.aim is not None:
        q = orientation(a.aim[0], a.aim[1], 0.0)
        parts.append(hand_triangles((anchor[0] + 0.2, anchor[1] - 0.4, anchor[2] - 0.3), q, head_c))
    if not parts:
        return np.zeros((0, 6), dtype=np.float32)
    return np.vstack(parts)
