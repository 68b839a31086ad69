"""What a NetSync far side sees of us: our pose body as the room broadcast relays it, matched to
the frame sent under its poseSeq (see app/sinks/farside.py for the views and the tracker)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from headcast.app.sinks import farside as fs
from headcast.netcode.netsync.model import FLAG_HEAD
from headcast.netcode.pose import quake_angles

if TYPE_CHECKING:  # the contract the sink and link fit (app/sinks/contract.py)
    from headcast.app.sinks.contract import NetSyncFarSink

UNITY_FRAME = "netsync room (OpenXR axes, metres)"
BASIS_NETSYNC = fs.plain(
    "your pose as the room sent it back vs the pose we sent (rotation, position)",
    "relayed vs sent under the same poseSeq",
)
WHY_NETSYNC_OFFLINE = fs.plain("no server: your pose encoded and decoded here", "the latest NetSync protocol")
WHY_NETSYNC_RELAYED = fs.plain(
    "your pose as the room sent it back", "our body in the room broadcast, matched to the frame sent under its poseSeq"
)
RT_NETSYNC = fs.plain(
    "relay: your pose back in the room broadcast; includes waiting up to 100 ms for the "
    "server's next broadcast and any time our own loop was late to read it",
    "our body back in the room broadcast, matched by poseSeq",
)


def unity_sample(t) -> fs.HeadSample:
    """A NetSync Transform (Unity: left-handed, +Z forward) as a sample on OpenXR axes."""
    ux, uy, uz, uw = t.rot
    x, y, z = t.pos
    p, yw, r = quake_angles((-ux, -uy, uz, uw))
    return fs.HeadSample(p, yw, r, (x, y, -z), UNITY_FRAME)


class FarSide(fs.FarSideModel):
    """The NetSync sink's view: rebuilt when a frame is sent or a broadcast shows our body."""

    def __init__(self) -> None:
        self._matched: Any = None

    def inputs(self, sink: Any) -> tuple:
        link = sink.link
        if link is None:
            return sink.frame, sink.seen
        return sink.frame, link.own_body, sink.matched, link.closed, link.joined, link.state

    def update(self, sink: NetSyncFarSink, now: float, add: fs.Add) -> None:
        frame = sink.frame
        if frame is None:
            return
        link = sink.link
        fresh: tuple = (None, None)  # a pair compared this frame (linked: a new match)
        has_head = bool(frame.flags & FLAG_HEAD) and not sink.stealth
        sent = unity_sample(frame.head) if has_head else None
        err_deg = err_m = None
        if link is None:
            body = sink.seen
            seen = unity_sample(body.head) if body is not None and body.head is not None else None
            transient = None
            basis = fs.BASIS_LOCAL
            err_deg = sink.last_error if sent is not None else None
            if seen is not None and sent is not None and seen.pos is not None and sent.pos is not None:
                err_m = math.dist(sent.pos, seen.pos)  # (unity_sample: always a position)
            fresh = (err_deg, err_m)
        else:
            matched = sink.matched
            body = link.own_body
            seen = unity_sample(body.head) if body is not None and body.head is not None else None
            basis = BASIS_NETSYNC
            state = link.state
            transient = (
                fs.DISCONNECTED
                if link.closed
                else fs.JOINING
                if matched is None
                else fs.SERVER_SILENT
                if state == "server silent"
                else None
            )
            if matched is not None:
                f, b, _ = matched
                if f.flags & FLAG_HEAD and b.head is not None:
                    err_deg, err_m = sink.last_error, math.dist(f.head.pos, b.head.pos)
            if matched is not self._matched:
                self._matched = matched
                fresh = (err_deg, err_m)
        if sent is None and transient is None and not sink.stealth:
            transient = fs.TRACKING_LOST
        elif sink.stealth and transient == fs.JOINING:
            transient = None  # never matched: a stealth body is not broadcast
        source, why = view_source(sink)
        add(
            now,
            fs.FarSideView(
                "netsync",
                "netsync",
                "head (pose body)",
                source,
                why,
                sent,
                seen,
                transient,
                None,
                fs.ErrorReadout(basis, err_deg, None, err_m),
            ),
            *fresh,
        )

    def sources(self, sink: Any) -> list[tuple[str, fs.Source, str]]:
        return [("netsync", *view_source(sink))]

    def round_trip(self, sink: Any) -> tuple[float | None, str]:
        link = sink.link
        if link is None:
            return None, ""
        return (sink.relay_ms if link.joined and not link.closed else None, RT_NETSYNC)

    def round_trip_name(self, sink: Any) -> str:
        return "relay"


def view_source(sink: NetSyncFarSink) -> tuple[fs.Source, str]:
    if sink.stealth:
        return (
            fs.Source.OFFLINE if sink.link is None else fs.Source.RELAYED,
            "stealth: no pose of ours in the room broadcast — the others see nothing of us",
        )
    if sink.link is None:
        return fs.Source.OFFLINE, WHY_NETSYNC_OFFLINE
    return fs.Source.RELAYED, WHY_NETSYNC_RELAYED
