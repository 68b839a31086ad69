"""What the mirror draws, read from the loop: an avatar per far-side view (the views, their
source — RELAYED / MODEL / OFFLINE — and why, the transients and the series are app/sinks/farside.py's),
and everyone in each protocol's room, top-down (no GL, no ImGui: testable as data).
"""

from __future__ import annotations

from dataclasses import dataclass

from headcast.app.mirror import scene
from headcast.app.mirror.labels import plain_name
from headcast.app.sinks import farside as fs
from headcast.app.sinks.base import shown as sink_shown
from headcast.netcode.pose import quake_angles, unity_position, unity_quat

SINK_TITLES = {"q3": "Quake 3", "netsync": "NetSync", "sauer": "Sauerbraten"}
SOURCE_NAMES = {fs.Source.RELAYED: "RELAYED", fs.Source.MODEL: "MODEL", fs.Source.OFFLINE: "OFFLINE"}
SLOTS = {"q3": "q3", "q3.head": "q3vr", "netsync": "netsync", "sauer": "sauer"}  # view key → avatar slot


@dataclass(frozen=True, slots=True)
class Avatar:
    """A far side drawn as an avatar: its view (source, why, transient: app/sinks/farside.py), its slot
    (scene colours), a short title and the pose the receiver draws."""

    slot: str
    view: fs.FarSideView
    title: str
    pose: scene.AvatarPose

    @property
    def source(self) -> str:
        return SOURCE_NAMES[self.view.source]

    @property
    def not_sent(self) -> bool:
        """A Q3 VR head a linked server never gets (16-bit buttons)."""
        v = self.view
        return v.key == "q3.head" and v.source is fs.Source.MODEL and v.head_bits_on_wire is False


def _q3_pose(q3, key: str, now: float) -> scene.AvatarPose:
    if q3.intent is None:
        return scene.AvatarPose(None)
    view = q3.others_view()  # whole degrees, as SnapVector leaves them on our entity
    if key == "q3":  # what every server carries: the view (aim) angles and the roll
        return scene.AvatarPose(scene.q3_head_quat(view[0], 0.0, view[2], view[1]), aim=view[:2])
    smoothed = q3.smooth(now)  # the VR head as a receiver draws it (EMA, display limits)
    if smoothed is None:
        return scene.AvatarPose(None, aim=view[:2])
    p, yo, r = smoothed
    return scene.AvatarPose(scene.q3_head_quat(p, yo, r, view[1]), aim=view[:2])


def _netsync_pose(ns) -> scene.AvatarPose:
    body = ns.seen
    if body is None or body.head is None:
        return scene.AvatarPose(None)
    return scene.netsync_avatar(body.head.pos, body.head.rot, body.right, body.left)


def _sauer_pose(sauer) -> scene.AvatarPose:
    rec = sauer.last_relayed if sauer.link is not None and sauer.watcher is not None else sauer.seen
    if rec is None:
        return scene.AvatarPose(None)
    turn = sauer.anchor.turn if sauer.anchor is not None else 0.0
    return scene.AvatarPose(scene.sauer_head_quat(rec.yaw, rec.pitch, rec.roll_deg, turn))


shown = sink_shown  # the rule the terminal follows too (app/sinks/base.py)


def shown_sinks(loop) -> list:
    return [s for s in loop.sinks if shown(s)]


def avatars(loop, views: list[fs.FarSideView], now: float) -> list[Avatar]:
    """One avatar per far-side view of a shown sink, in the tracker's order."""
    sinks = {s.name: s for s in loop.sinks if shown(s)}
    out = []
    for v in views:
        s = sinks.get(v.sink)
        if s is None or v.key not in SLOTS:
            continue
        if v.sink == "q3":
            pose = _q3_pose(s, v.key, now)
            title = (
                "Q3 VR head"
                if v.key == "q3.head"
                else ("Q3 16-bit" if v.head_bits_on_wire is False and s.link is not None else "Q3 view")
            )
        elif v.sink == "netsync":
            pose, title = _netsync_pose(s), "NetSync"
        else:
            pose, title = _sauer_pose(s), "Sauer"
        out.append(Avatar(SLOTS[v.key], v, title, pose))
    return out


def tracked(loop) -> scene.AvatarPose:
    """Our tracked head (hands relative to it)."""
    st = loop.state
    if st is None:
        return scene.AvatarPose(None)
    head = st.head
    hp = head.position

    def rel(pose):
        if not pose.valid:
            return None
        p = pose.position
        return (p[0] - hp[0], p[1] - hp[1], p[2] - hp[2]), pose.orientation

    return scene.AvatarPose(head.orientation if head.orientation_valid else None, rel(st.right_grip), rel(st.left_grip))


@dataclass(frozen=True, slots=True)
class Member:
    """Someone in a protocol's room/map, top-down: east/north metres from us, heading CCW from east."""

    label: str  # name as it is (Q3 colour codes kept: the label draws them)
    east: float
    north: float
    heading: float | None
    us: bool = False
    note: str = ""  # "VR", "walking", "dead"


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


def room_title(sink, members: list[Member]) -> str:
    """A room map's title: the protocol and how many are in it. Quake 3 sends only the players in
    our view (PVS): its title says how many of the server's players that is ("1 of 6 in view")."""
    title = SINK_TITLES.get(sink.name, sink.name)
    n = len(members)
    if sink.name == "q3":
        link = sink.link
        total = None if link is None else link.player_count
        if total is not None and total >= n:
            return f"{title} · {n} of {total} in view"
        return f"{title} · {n} in view"
    return f"{title} · {n}"


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
