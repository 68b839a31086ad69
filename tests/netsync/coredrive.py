"""The NetSync core's driver API as a transport calls it (netcode/driver.py), for tests that
drive a core with bytes and an injected clock: a DEALER message, a SUB message, the pose a
frame offers, what goes on the control lane, the events."""

from __future__ import annotations

from headcast.netcode.netsync.client import LANE_CONTROL, LANE_ROOM, Incoming, NetSyncClientCore
from headcast.netcode.netsync.model import PoseFrame


def unicast(core: NetSyncClientCore, now: float, frames: list[bytes]) -> None:
    core.receive_datagram(Incoming(LANE_CONTROL, frames), now)


def broadcast(core: NetSyncClientCore, now: float, frames: list[bytes]) -> None:
    core.receive_datagram(Incoming(LANE_ROOM, frames), now)


def send_pose(core: NetSyncClientCore, now: float, frame: PoseFrame) -> bytes | None:
    """Offer `frame` and send: the pose message, if one went out (control messages due go too)."""
    core.set_pose(frame)
    sent = [o.frames[1] for o in core.datagrams_to_send(now) if o.kind == "pose"]
    return sent[0] if sent else None


def control(core: NetSyncClientCore, now: float) -> list[bytes]:
    """What goes on the control lane now (no pose offered)."""
    out = core.datagrams_to_send(now)
    assert all(o.lane == LANE_CONTROL and o.frames[0] == core.room_topic for o in out)
    return [o.frames[1] for o in out]


def drain(core: NetSyncClientCore) -> list:
    out = []
    while (e := core.next_event()) is not None:
        out.append(e)
    return out


def record_poses(core: NetSyncClientCore, into: list[tuple[float, bytes]]) -> None:
    """Append (now, message) of every pose `core` sends from now on to `into`."""
    orig = core.datagrams_to_send

    def recording(now: float):
        out = orig(now)
        into.extend((now, o.frames[1]) for o in out if o.kind == "pose")
        return out

    core.datagrams_to_send = recording  # type: ignore[method-assign]
    pose_now = core.pose_now  # the transport's one-call way for a frame where only the pose is due

    def recording_pose(now: float, frame):
        msg = pose_now(now, frame)
        if msg:
            into.append((now, msg))
        return msg

    core.pose_now = recording_pose  # type: ignore[method-assign]
