"""What a Sauerbraten far side sees of us: our N_POS as a watching second client received it
(RELAYED), or through the game's decode when nothing watches (MODEL: the server passes a position
to the others only); see app/sinks/farside.py for the views and the tracker."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from headcast.app.sinks import farside as fs
from headcast.app.sinks.sauer.sink import angle_error

if TYPE_CHECKING:  # the contract the sink and link fit (app/sinks/contract.py)
    from headcast.app.sinks.contract import SauerFarSink

SAUER_FRAME = "sauerbraten world (metres = cube units / 8)"
SAUER_UNITS_PER_METRE = 8.0
BASIS_SAUER = fs.plain(
    "the game's decode of the record vs the pose we sent",
    "N_POS decode (whole degrees, 1/16 unit) vs the game pose sent",
)
WHY_SAUER_OFFLINE = fs.plain("no server: your position record decoded here", "N_POS: whole degrees, 1/16 unit")
WHY_SAUER_RELAYED = fs.plain(
    "your position as a second client received it", "our N_POS, relayed by the server to a watching client"
)
WHY_SAUER_MODEL = fs.plain(
    "your position through the game's decode (the server passes it to the others, not back to us)",
    "our N_POS through the game's decode",
)
RT_SAUER_RELAY = fs.plain(
    "relay: your position through the server to a second client",
    "our N_POS relayed to a watching client, the record matched",
)
RT_SAUER_PING = fs.plain("ping: the game's ping (the server passes your position to the others only)", "N_PING/N_PONG")


def sauer_sample(yaw: float, pitch: float, roll: float, eye) -> fs.HeadSample:
    """Sauerbraten's angles (yaw + left from +y, pitch + up) and eye (cube units) as a sample."""
    k = 1.0 / SAUER_UNITS_PER_METRE
    return fs.HeadSample(-pitch, fs.wrap180(yaw), roll, (eye[0] * k, eye[1] * k, eye[2] * k), SAUER_FRAME)


class FarSide(fs.FarSideModel):
    """The Sauerbraten sink's view: rebuilt when a record is sent or a watcher sees one."""

    def inputs(self, sink: Any) -> tuple:
        link = sink.link
        if link is None:
            return sink.record, sink.game
        return sink.record, sink.game, sink.last_relayed, link.closed, link.live

    def update(self, sink: SauerFarSink, now: float, add: fs.Add) -> None:
        rec = sink.record
        gp = sink.game
        link = sink.link
        if rec is None and gp is None:
            return
        sent = None
        if gp is not None:
            p = gp.pose
            sent = sauer_sample(p.yaw, p.pitch, p.roll, p.eye)
        err_deg = err_m = None
        relayed = sink.last_relayed
        source, why = view_source(sink)
        if link is None:
            seen_rec, transient = rec, None
        elif sink.watcher is not None:
            seen_rec = relayed
            transient = fs.DISCONNECTED if link.closed else fs.JOINING if relayed is None else None
        else:
            seen_rec = rec
            transient = fs.DISCONNECTED if link.closed else None if link.live else fs.JOINING
        seen = (
            None if seen_rec is None else sauer_sample(seen_rec.yaw, seen_rec.pitch, seen_rec.roll_deg, seen_rec.eye())
        )
        if gp is not None and rec is not None:
            err_deg = angle_error(gp, rec)
            err_m = math.dist(gp.pose.eye, rec.eye()) / SAUER_UNITS_PER_METRE
        if sent is None and transient is None:
            transient = fs.TRACKING_LOST
        add(
            now,
            fs.FarSideView(
                "sauer",
                "sauer",
                "player (N_POS record)",
                source,
                why,
                sent,
                seen,
                transient,
                None,
                fs.ErrorReadout(BASIS_SAUER, err_deg, None, err_m),
            ),
            err_deg,
            err_m,
        )

    def sources(self, sink: Any) -> list[tuple[str, fs.Source, str]]:
        return [("sauer", *view_source(sink))]

    def round_trip(self, sink: Any) -> tuple[float | None, str]:
        link = sink.link
        if link is None:
            return None, ""
        if sink.watcher is not None:
            return sink.relay_ms, RT_SAUER_RELAY
        return link.ping_ms, RT_SAUER_PING

    def round_trip_name(self, sink: Any) -> str:
        return "relay" if getattr(sink, "watcher", None) is not None else "ping"


def view_source(sink: SauerFarSink) -> tuple[fs.Source, str]:
    if sink.link is None:
        return fs.Source.OFFLINE, WHY_SAUER_OFFLINE
    if sink.watcher is not None:
        return fs.Source.RELAYED, WHY_SAUER_RELAYED
    return fs.Source.MODEL, WHY_SAUER_MODEL
