"""What the mirror shows, read from the loop's sinks: the far sides with their source, the room's
members, and the sent-vs-seen series the plots draw (no GL, no ImGui: testable as data).

Every far side names where its numbers come from (DESIGN.md, the mirror):
RELAYED — decoded from what the server sent back (the NetSync room broadcast, the Q3 snapshot's
playerState, a second Sauerbraten client's copy of our record); MODEL — our own bytes through the
receiver's decode, because the server gives nothing back for it (a Q3 server never sends us our
own entity; a 16-bit server drops the head bits altogether); OFFLINE — no server: computed only.

Angles are one convention for every sink so the plots compare like with like: Quake degrees of
the head in the rig's world (pitch + down, yaw + left, roll + right side down); positions are the
head's, OpenXR world metres.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from headcast.app import scene
from headcast.app.mirror_labels import plain_name
from headcast.app.telemetry import Ring
from headcast.netcode.pose import quake_angles, unity_position, unity_quat

RELAYED, MODEL, OFFLINE = "RELAYED", "MODEL", "OFFLINE"
TRANSIENT_SECONDS = 0.5   # after a join or a spawn the seen pose is the server's, not ours, this long
SINK_TITLES = {"q3": "Quake 3", "netsync": "NetSync", "sauer": "Sauerbraten"}

# Series columns (one Ring per sink): time, sent p/y/r, seen p/y/r, sent x/y/z, seen x/y/z,
# transient (1 while joining/spawning), round trip ms, messages/s, bytes/s, motion-to-wire ms.
T, SENT, SEEN, SENT_POS, SEEN_POS, TRANSIENT, RTT, HZ, BPS, WIRE = 0, 1, 4, 7, 10, 13, 14, 15, 16, 17
COLUMNS = 18
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Far:
    """One far side as an avatar: which slot, whose, where its numbers come from and why."""

    key: str                     # avatar slot: "q3", "q3vr", "netsync", "sauer"
    sink: str
    title: str                   # short: the label above the avatar
    source: str                  # RELAYED / MODEL / OFFLINE
    why: str                     # one line
    pose: scene.AvatarPose
    angles: tuple[float, float, float] | None = None   # seen head, Quake degrees (rig world)
    position: tuple[float, float, float] | None = None  # seen head, OpenXR world metres
    transient: str = ""          # "joining" / "spawning" while the far side is not yet ours


@dataclass(frozen=True, slots=True)
class Member:
    """Someone in a protocol's room/map, top-down: east/north metres from us, heading CCW from east."""

    label: str                   # name as it is (Q3 colour codes kept: the label draws them)
    east: float
    north: float
    heading: float | None
    us: bool = False
    note: str = ""               # "VR", "walking", "dead", distance ...


def _wrap180(a: float) -> float:
    return (a + 180.0) % 360.0 - 180.0


class Transients:
    """When each sink last joined or spawned: its far side is the server's own until settled."""

    def __init__(self) -> None:
        self._marks: dict[str, tuple[object, float]] = {}

    def mark(self, sink: str, key: object, now: float) -> str:
        """`key` changes at a join/spawn (the link's state, its spawn count): the name of the
        transient while it is fresh, else ""."""
        old = self._marks.get(sink)
        if old is None:  # the first look: whatever state it is in is not news
            old = self._marks[sink] = (key, -math.inf)
        elif old[0] != key:
            old = self._marks[sink] = (key, now)
        return "joining" if now - old[1] < TRANSIENT_SECONDS else ""


def _q3_fars(q3, now: float, trans: Transients) -> list[Far]:
    if q3.intent is None:
        return [Far("q3", "q3", "Q3", OFFLINE, "no usercmd yet", scene.AvatarPose(None))]
    view = q3.others_view()
    far = q3.far_side
    smoothed = q3.smooth(now)
    model_pose, model_angles = scene.AvatarPose(None, aim=view[:2]), None
    if smoothed is not None:
        p, yo, r = smoothed
        model_pose = scene.AvatarPose(scene.q3_head_quat(p, yo, r, view[1]), aim=view[:2])
        model_angles = (p, _wrap180(view[1] + yo), r)
    receiver = far.receiver.name if far is not None else ""
    link = q3.link
    if link is None:
        why = "no server (--q3 HOST): computed, not sent; the head as a VR server decodes it"
        return [Far("q3", "q3", "Q3", OFFLINE, why, model_pose, model_angles)]
    transient = trans.mark("q3", (link.state, getattr(link, "entered", None)), now)
    in_game = link.state == "in game"
    if not in_game:
        return [Far("q3", "q3", "Q3", OFFLINE, f"not in game: {link.detail}"[:120], scene.AvatarPose(None))]
    roll = far.roll_others if far is not None else 0.0
    if q3.head_bits_on_wire:
        why = f"our head bits through the server's decode ({receiver}): it never echoes our own entity"
        return [Far("q3", "q3", "Q3", MODEL, why, model_pose, model_angles, transient=transient)]
    # 16-bit: the server has the view angles and the roll only; that is what others see of us.
    sv = q3.server_view() or view
    real = scene.AvatarPose(scene.q3_head_quat(view[0], 0.0, roll, view[1]), aim=view[:2])
    real_why = "no vr_support: others see our view (aim) angles and roll only"
    vr_why = "the head a vr_support server would decode: not sent here"
    return [Far("q3", "q3", "Q3 16-bit", RELAYED, real_why, real, (sv[0], sv[1], roll), transient=transient),
            Far("q3vr", "q3", "Q3 VR head", MODEL, vr_why, model_pose, model_angles, transient=transient)]


def _netsync_far(ns, now: float, trans: Transients) -> Far:
    body = ns.seen
    pose, angles, position = scene.AvatarPose(None), None, None
    if body is not None and body.head is not None:
        pose = scene.netsync_avatar(body.head.pos, body.head.rot, body.right, body.left)
        angles = quake_angles(unity_quat(body.head.rot))
        position = unity_position(body.head.pos)
    link = ns.link
    if link is None:
        return Far("netsync", "netsync", "NetSync", OFFLINE,
                   "no server (--netsync HOST): encoded and decoded here", pose, angles, position)
    transient = trans.mark("netsync", link.joined, now)
    if not link.joined or body is None:
        return Far("netsync", "netsync", "NetSync", OFFLINE, f"not in the room: {link.detail}"[:120],
                   scene.AvatarPose(None), transient=transient)
    return Far("netsync", "netsync", "NetSync", RELAYED,
               f"our body from the room broadcast (protocol {ns.protocol})", pose, angles, position,
               transient)


def _sauer_far(sauer, now: float, trans: Transients) -> Far:
    rec = sauer.seen
    pose, angles = scene.AvatarPose(None), None
    turn = sauer.anchor.turn if sauer.anchor is not None else 0.0
    if rec is not None:
        pose = scene.AvatarPose(scene.sauer_head_quat(rec.yaw, rec.pitch, rec.roll_deg, turn))
        angles = (-rec.pitch, _wrap180(rec.yaw - turn), rec.roll_deg)
    link = sauer.link
    if link is None:
        return Far("sauer", "sauer", "Sauer", OFFLINE,
                   "no server (--sauer HOST): N_POS as a game decodes it", pose, angles)
    transient = trans.mark("sauer", (link.live, getattr(link, "spawns", 0)), now)
    if not link.live:
        return Far("sauer", "sauer", "Sauer", OFFLINE, f"not in game: {link.detail}"[:120], scene.AvatarPose(None))
    if sauer.watcher is not None and sauer.check.relayed:
        why = "our N_POS as a second client received it"
        return Far("sauer", "sauer", "Sauer", RELAYED, why, pose, angles, transient=transient)
    why = "our N_POS as a game decodes it (relayed byte for byte)"
    return Far("sauer", "sauer", "Sauer", MODEL, why, pose, angles, transient=transient)


def far_sides(loop, now: float, trans: Transients) -> list[Far]:
    out = []
    for s in loop.sinks:
        if s.name == "q3":
            out += _q3_fars(s, now, trans)
        elif s.name == "netsync":
            out.append(_netsync_far(s, now, trans))
        elif s.name == "sauer":
            out.append(_sauer_far(s, now, trans))
    return out


def tracked(loop) -> tuple[scene.AvatarPose, tuple[float, float, float] | None, tuple[float, float, float] | None]:
    """Our tracked head (hands relative to it), its Quake angles and world position."""
    st = loop.state
    if st is None:
        return scene.AvatarPose(None), None, None
    head = st.head
    hp = head.position

    def rel(pose):
        if not pose.valid:
            return None
        p = pose.position
        return (p[0] - hp[0], p[1] - hp[1], p[2] - hp[2]), pose.orientation
    if not head.orientation_valid:
        return scene.AvatarPose(None, rel(st.right_grip), rel(st.left_grip)), None, None
    return (scene.AvatarPose(head.orientation, rel(st.right_grip), rel(st.left_grip)),
            quake_angles(head.orientation), hp if head.position_valid else None)


class SeriesBook:
    """A ring of samples per far side (key), taken each time the mirror draws."""

    def __init__(self, points: int = 2048) -> None:
        self.points = points
        self.rings: dict[str, Ring] = {}

    def add(self, now: float, fars: list[Far], sent_angles, sent_pos, status: dict, wire_ms: float) -> None:
        sa = sent_angles or (NAN, NAN, NAN)
        sp = sent_pos or (NAN, NAN, NAN)
        for f in fars:
            ring = self.rings.get(f.key)
            if ring is None:
                ring = self.rings[f.key] = Ring(self.points, COLUMNS)
            seen = f.angles or (NAN, NAN, NAN)
            pos = f.position or (NAN, NAN, NAN)
            st = status.get(f.sink)
            rtt = NAN if st is None or st.ping_ms is None else st.ping_ms
            hz, bps = (NAN, NAN) if st is None else (st.send_hz, st.bytes_per_s)
            ring.add(now, *sa, *seen, *sp, *pos, 1.0 if f.transient else 0.0, rtt, hz, bps, wire_ms)

    def window(self, key: str, t0: float, t1: float) -> np.ndarray:
        ring = self.rings.get(key)
        if ring is None:
            return np.zeros((0, COLUMNS))
        v = ring.values()
        return v[(v[:, T] >= t0) & (v[:, T] <= t1)]


def angle_errors(rows: np.ndarray) -> np.ndarray:
    """Seen minus sent per angle (wrapped to ±180), rows × 3."""
    return (rows[:, SEEN:SEEN + 3] - rows[:, SENT:SENT + 3] + 180.0) % 360.0 - 180.0


def error_readout(rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(latest, worst) |seen − sent| per angle outside transients; None where nothing was seen."""
    ok = rows[(rows[:, TRANSIENT] == 0) & np.isfinite(rows[:, SEEN]) & np.isfinite(rows[:, SENT])] if len(rows) else rows
    if len(ok) == 0:
        return None, None
    err = np.abs(angle_errors(ok))
    return err[-1], err.max(axis=0)


def transient_spans(rows: np.ndarray) -> list[tuple[float, float]]:
    """Time spans where the transient column is set."""
    if len(rows) == 0:
        return []
    flag = rows[:, TRANSIENT] > 0
    spans, start = [], None
    for t, f in zip(rows[:, T], flag):
        if f and start is None:
            start = t
        elif not f and start is not None:
            spans.append((start, t))
            start = None
    if start is not None:
        spans.append((start, rows[-1, T]))
    return spans


# --- the room: members top-down, per protocol -------------------------------------------------

def _heading_xr(q) -> float:
    """Heading CCW from east of an OpenXR orientation, on a map with north = −Z (forward)."""
    return quake_angles(q)[1] + 90.0


def netsync_members(ns) -> list[Member]:
    body = ns.seen
    if body is not None and body.head is not None:
        ox, _, oz = unity_position(body.head.pos)
        out = [Member("you", 0.0, 0.0, _heading_xr(unity_quat(body.head.rot)), us=True)]
    else:  # our head not in the room's last broadcast (tracking lost): the room's own origin
        ox = oz = 0.0
        out = [Member("you (no head)", 0.0, 0.0, None, us=True)] if body is not None else []
    for cn, other in sorted(ns.others.items()):
        if other.head is None:
            continue
        x, _, z = unity_position(other.head.pos)
        out.append(Member(f"client #{cn}", x - ox, -(z - oz), _heading_xr(unity_quat(other.head.rot))))
    return out


def q3_members(q3) -> list[Member]:
    ents = q3.others
    if ents is None:
        return []
    k = 1.0 / scene.Q3_UNITS_PER_METRE
    view = q3.server_view()
    out = [Member("you", 0.0, 0.0, None if view is None else view[1], us=True)]
    ox, oy, _ = ents.origin
    for p in ents.players:
        name = p.name if plain_name(p.name).strip() else f"client {p.client_num}"
        yaw = p.head.yaw if p.head is not None else p.angles[1]
        note = " ".join(n for n in ("VR" if p.head is not None else "", "dead" if p.dead else "") if n)
        out.append(Member(name, (p.origin[0] - ox) * k, (p.origin[1] - oy) * k, yaw, note=note))
    return out


def sauer_members(sauer) -> list[Member]:
    own = sauer.seen
    if own is None:
        return []
    k = 1.0 / scene.SAUER_UNITS_PER_METRE
    ex, ey, _ = own.eye()
    out = [Member("you", 0.0, 0.0, own.yaw + 90.0, us=True)]
    for p in sauer.others.values():
        rec = p.record
        if rec is None:
            continue
        x, y, _ = rec.eye()
        note = "walking" if rec.move or rec.strafe else ""
        out.append(Member(p.name or f"client {p.cn}", (x - ex) * k, (y - ey) * k, rec.yaw + 90.0, note=note))
    return out


def rooms(loop) -> dict[str, list[Member]]:
    """Per sink with a server: everyone in its room/map, us first."""
    out = {}
    for s in loop.sinks:
        if s.name == "q3" and s.others is not None:
            out["q3"] = q3_members(s)
        elif s.name == "netsync" and (s.link is not None or s.others):
            out["netsync"] = netsync_members(s)
        elif s.name == "sauer" and (s.link is not None or s.others):
            out["sauer"] = sauer_members(s)
    return {k: v for k, v in out.items() if v}


def fit(members: list[Member], min_half: float = 2.0) -> float:
    """Half the side of the square (metres) that frames every member with a margin."""
    far = max((max(abs(m.east), abs(m.north)) for m in members), default=0.0)
    return max(min_half, far * 1.2)


def distance(m: Member) -> float:
    return math.hypot(m.east, m.north)
