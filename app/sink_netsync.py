"""The NetSync sink: head, hands and XROrigin Δ to a room; everybody else decoded.

Without a server it encodes the body every frame and decodes it back the way a receiver
would, so the mirror shows the quantised head and the reconstructed physical pose anyway.
"""
from __future__ import annotations

from headcast.app.netsyncmap import pose_frame, rotation_error_deg
from headcast.app.rig import RigState
from headcast.app.telemetry import RateMeter, SinkStatus
from headcast.netcode.netsync.codec import decode_body, encode_body
from headcast.netcode.netsync.model import FLAG_HEAD, PoseBody, PoseFrame
from headcast.netcode.pose import unity_quat
from headcast.xr.frame import TrackingFrame


class NetSyncSink:
    name = "netsync"

    def __init__(self, *, stealth: bool = False, link=None) -> None:
        self.stealth = stealth
        self.link = link                 # a NetSyncLink, or None = offline
        self.meter = RateMeter()
        self.frame: PoseFrame | None = None
        self.sent_head_rot = None        # the OpenXR head orientation of the last frame (world)
        self.body_size = 0
        self.seen: PoseBody | None = None     # our own body as the far side decodes it

    def poll(self, now: float) -> None:
        if self.link is not None:
            self.link.poll(now)
            self.seen = self.link.own_body

    def send(self, state: RigState, frame: TrackingFrame, now: float) -> float | None:
        pf = pose_frame(state, self.stealth)
        self.frame = pf
        self.sent_head_rot = state.head.orientation if state.head.valid else None
        if self.link is None:
            body = encode_body(0, pf)
            self.body_size = len(body)
            self.seen = decode_body(body)[0]
            return None
        sent = self.link.send(pf, now)
        if sent is None:
            return None
        nbytes, body_size, t_wire = sent
        self.body_size = body_size
        self.meter.add(t_wire, nbytes)
        return t_wire

    @property
    def others(self) -> dict[int, PoseBody]:
        return {} if self.link is None else self.link.others

    def head_error_deg(self) -> float | None:
        if self.seen is None or self.seen.head is None or self.sent_head_rot is None:
            return None
        return rotation_error_deg(unity_quat(self.sent_head_rot), self.seen.head.rot)

    def status(self, now: float) -> SinkStatus:
        hz, bps = self.meter.rates(now)
        pf = self.frame
        packed = "" if pf is None else f"body {self.body_size} B flags {pf.flags:#04x}"
        detail = ""
        if pf is not None and not self.stealth and not pf.flags & FLAG_HEAD:
            detail = "tracking lost: head not valid"
        if self.link is None:
            return SinkStatus(self.name, "offline", packed=packed, error_deg=self.head_error_deg(),
                              detail=detail or "no server (--netsync HOST)")
        return SinkStatus(self.name, self.link.state, hz, bps, packed, self.head_error_deg(),
                          detail or self.link.detail)

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
