"""The NetSync sink: head, hands and XROrigin Δ to a room; everybody else decoded.

Without a server it encodes the body every frame (in the latest protocol) and decodes it back
the way a receiver would, so the mirror shows the quantised head and the reconstructed physical
pose anyway. With one, our body as the server relayed it (our own entry of the room broadcast)
is matched to the frame sent under the same poseSeq: the error shown is what the wire did, not
network lag. The physical pose is the official receivers' reconstruction (their yaw formula,
headcast.netcode.netsync.origin), so it is checked against that reconstruction of the bytes we
sent, in the protocol the link speaks; its yaw's distance from the true (stage) yaw is measured
and reported, not hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headcast.app.run.rig import Origin, RigState
from headcast.app.run.telemetry import RateMeter, SinkStatus
from headcast.app.sinks.netsync.mapping import native_frame, pose_frame, rotation_error_deg, xrorigin_delta
from headcast.netcode.netsync.codec import LATEST_PROTOCOL, decode_body, encode_body
from headcast.netcode.netsync.model import FLAG_HEAD, ORIGIN, OriginDelta, PoseBody, PoseFrame
from headcast.netcode.netsync.origin import receiver_yaw, unity_yaw
from headcast.netcode.netsync.policy import HEARTBEAT_S, SEND_RATE_MAX, SEND_RATE_MIN
from headcast.netcode.pose import Vec3, unity_position, unity_quat
from headcast.xr.frame import Pose, TrackingFrame

if TYPE_CHECKING:
    from headcast.app.sinks.netsync.link import NetSyncLink

SENT_HISTORY = 256
# Relayed bodies read but not yet checked against what was sent: checked together when anything
# reads the check (the status line, the mirror, close) or once this many wait. One at a time, a
# check after a frame's sleep cost ~80 us of CPU (its code cold); in a batch all but the first run warm.
VERIFY_BATCH = 16


@dataclass
class NetSyncCheck:
    """Sent vs relayed, accumulated over the run (for the demo's verification summary)."""

    matched: int = 0  # relayed bodies matched to the frame sent with that poseSeq
    head_rot_max: float = 0.0  # degrees
    head_pos_max: float = 0.0  # metres
    physical_max: float = 0.0  # metres: reconstructed physical pose vs the stage head
    # The relayed physical pose vs the official receivers' reconstruction from the bytes we sent
    # (position in metres, yaw in degrees): the same bytes decode the same, so any error is a fault.
    physical_model_pos_max: float = 0.0
    physical_model_yaw_max: float = 0.0
    # The receivers' physical yaw vs the true yaw of the stage head (degrees): their formula
    # ignores the head's pitch and roll, so this grows with them. Measured, not a fault of ours.
    physical_true_yaw_max: float = 0.0
    mismatched: int = 0  # relayed bodies that differ from our bytes decoded in our protocol
    lost_reported: int = 0  # bodies relayed without a head while tracking was lost
    lost_stale: int = 0  # bodies relayed WITH a head for a frame sent without one
    dyaws: set = field(default_factory=set)  # distinct XROrigin yaw deltas seen (0.1° steps)


def _dist(a: Vec3, b: Vec3) -> float:
    return math.dist(a, b)


def _yaw_diff(a: float, b: float) -> float:
    return abs(math.remainder(a - b, 360.0))


class NetSyncSink:
    name = "netsync"
    unit = "poses"  # what the summary counts as sent

    def __init__(self, *, stealth: bool = False, send_rate: float = 10.0, link: NetSyncLink | None = None) -> None:
        self.stealth = stealth
        self.link = link  # a NetSyncLink, or None = offline
        # Deferrable while linked (app/run/loop.py): a frame where another protocol's bytes went out
        # holds this send for at most two frames, so each frame's motion-to-wire is one send's. The
        # send policy's rate cap counts from the last send: held, it counts from the frame the send
        # was due on (`held_from`, set by the loop), so the send rate is the same as never held.
        self.deferrable = link is not None
        self.held_from: float | None = None
        # Per frame the loop calls only what has work: poll while linked. Offline there is nothing
        # to observe per frame: our body as a receiver decodes it is worked out when read (seen,
        # body_size, last_error: the mirror, the status line), for the frame built last.
        self.poll = self._poll_linked if link is not None else None
        self.observe = None
        # What the loop reads each frame (app/run/loop.py): no call before the rate cap lets a pose go
        # (`send_at`) nor before the link's next poll (`poll_at`); offline (`follow`), none at all.
        self.send_at = -math.inf
        self.poll_at = -math.inf
        self._loop = None  # offline, once the loop is followed: its latest frame is read from it
        self._followed: TrackingFrame | None = None  # the loop's frame self._frame was built from
        # The send policy's rate cap, mirrored so a frame that cannot go out is not even built.
        self._interval = 1.0 / min(max(float(send_rate), SEND_RATE_MIN), SEND_RATE_MAX)
        self._last_send: float | None = None
        # The policy's "unchanged" test, mirrored as the rate cap is: the frame built from the same
        # stage poses under the same origin is the same PoseFrame object (_build), so the same body
        # as the last one sent; before the heartbeat the policy would refuse it. A still headset
        # (the mock's pauses: a third of the calls) then costs the loop this test, not the five
        # calls down to the policy (~0.12 ms cold). Set by a send that went out; any send that did
        # not (refused, failed: the policy forgets the body) clears it, and so does a protocol
        # change (the same frame, other bytes) the link saw since (`protocol_changes`).
        self._sent_pf: PoseFrame | None = None
        self._sent_epoch = 0
        self._skipped = link.skipped if link is not None else None  # the core's skip counts
        self.meter = RateMeter()
        self._frame: PoseFrame | None = None
        self._pending: tuple[RigState, TrackingFrame] | None = None  # offline: the last frame, built when read
        self._body_size = 0
        self._seen: PoseBody | None = None  # our own body as the far side decodes it
        self._check = NetSyncCheck()
        self._last_err: float | None = None
        self._offline_frame: PoseFrame | None = None  # the frame the offline round trip was for
        # The last SENT_HISTORY poseSeqs' sends, each in slot poseSeq % SENT_HISTORY: (poseSeq, frame
        # sent, the stage head pose it was built from, clock time it went out, the message, its body's
        # size, the link's protocol_changes then). A ring: no allocation, no eviction on the send path.
        self._sent: list[tuple[int, PoseFrame, Pose, float, bytes, int, int] | None] = [None] * SENT_HISTORY
        self._relay_ms: float | None = None  # `relay_ms`
        self._matched: tuple[PoseFrame, PoseBody, float] | None = None  # `matched`
        self._delta_start: Origin | None = None  # the rig origins self._delta was computed for
        self._delta_origin: Origin | None = None
        self._delta: OriginDelta | None = None
        self._built_from: tuple[Pose, Pose, Pose] | None = None  # the stage poses self.frame was built from
        # Our relayed bodies read by the polls, not checked yet, oldest first (VERIFY_BATCH): (body, clock
        # time read, its bytes as relayed, the protocol and the link's protocol_changes then)
        self._unverified: list[tuple[PoseBody, float, bytes | None, int, int]] = []

    @property
    def protocol(self) -> int:
        """The protocol our bodies are encoded in: the link's (the latest while it detects), or the
        latest offline."""
        return LATEST_PROTOCOL if self.link is None else self.link.model_protocol

    def follow(self, loop) -> None:
        """Offline: the frame loop (app/run/loop.py) is handed once; it calls this sink no more, and
        the PoseFrame is built from its latest frame when something reads it."""
        if self.link is None:
            self._loop = loop
            self.send_at = math.inf

    def _poll_linked(self, now: float) -> None:
        link = self.link
        assert link is not None  # the poll of a linked sink
        link.poll(now)
        self.poll_at = link.next_poll
        body = link.own_body
        if body is not None and body is not self._seen:  # (the fields: the properties are offline's)
            self._seen = body
            pending = self._unverified
            pending.append((body, now, link.own_raw, link.model_protocol, link.protocol_changes))
            if len(pending) >= VERIFY_BATCH:
                self._verify_pending()

    def _verify_pending(self) -> None:
        """The bodies read but not checked yet are checked now, oldest first (what reads the check:
        `check`, `matched`, `relay_ms`, the status line, the mirror, close; or VERIFY_BATCH of them)."""
        pending = self._unverified
        if pending:
            self._unverified = []
            verify = self._verify
            for p in pending:
                verify(*p)

    @property
    def check(self) -> NetSyncCheck:
        """Sent vs relayed over the run, every body read so far checked."""
        self._verify_pending()
        return self._check

    @property
    def relay_ms(self) -> float | None:
        """Our last matched pose's round trip through the room broadcast (ms)."""
        self._verify_pending()
        return self._relay_ms

    @property
    def matched(self) -> tuple[PoseFrame, PoseBody, float] | None:
        """The last relayed body matched to the frame sent under its poseSeq: (frame, body, clock time seen)."""
        self._verify_pending()
        return self._matched

    def _verify(
        self, body: PoseBody, now: float, raw: bytes | None = None, protocol: int | None = None, epoch_read: int = -1
    ) -> None:
        """Match a relayed body (`raw`: its bytes as relayed, when known) to the frame sent under its
        poseSeq; `protocol` and `epoch_read`: the link's protocol and protocol_changes when it was read."""
        sent = self._sent[body.pose_seq % SENT_HISTORY]
        if sent is None or sent[0] != body.pose_seq:
            return
        _, frame, stage, t_sent, msg, size, epoch = sent
        # Includes the wait for the server's next room broadcast (≤ 100 ms) and our poll period.
        self._relay_ms = (now - t_sent) * 1000.0
        self._matched = (frame, body, now)
        c = self._check
        c.matched += 1
        # What the official receivers make of the bytes we sent under this poseSeq, decoded in the
        # protocol the link spoke when the body was read (the server relays bodies as they came).
        link = self.link
        if protocol is None:
            protocol = self.protocol
        if epoch_read < 0 and link is not None:
            epoch_read = link.protocol_changes
        # the bytes sent under this poseSeq, as sent; encoded again only if the protocol changed since
        if link is not None and epoch == epoch_read:
            ours = msg[len(msg) - size :]
        else:
            ours = encode_body(body.pose_seq, frame, protocol)
        # The relayed bytes equal to ours decode to the same body: no second decode (the common case).
        model = body if raw is not None and raw == ours else decode_body(ours, 0, protocol)[0]
        if model is not body and body != model:
            c.mismatched += 1
        if body.delta is not None:
            c.dyaws.add(round(body.delta.dyaw, 1))
        if not frame.flags & FLAG_HEAD:
            if body.head is None:
                c.lost_reported += 1
            else:
                c.lost_stale += 1
            self._last_err = None
            return
        if body.head is None:
            return
        err = rotation_error_deg(frame.head.rot, body.head.rot)
        self._last_err = err
        c.head_rot_max = max(c.head_rot_max, err)
        c.head_pos_max = max(c.head_pos_max, _dist(frame.head.pos, body.head.pos))
        if model is not body and body.physical is not None and model.physical is not None:  # (else both 0)
            c.physical_model_pos_max = max(c.physical_model_pos_max, _dist(body.physical.pos, model.physical.pos))
            c.physical_model_yaw_max = max(
                c.physical_model_yaw_max, _yaw_diff(receiver_yaw(body.physical.rot), receiver_yaw(model.physical.rot))
            )
        if body.physical is not None and stage.valid:
            c.physical_max = max(c.physical_max, _dist(body.physical.pos, unity_position(stage.position)))
            c.physical_true_yaw_max = max(
                c.physical_true_yaw_max,
                _yaw_diff(receiver_yaw(body.physical.rot), unity_yaw(unity_quat(stage.orientation))),
            )

    @property
    def frame(self) -> PoseFrame | None:
        """The last PoseFrame built; offline, built from the last frame when first read (the mirror,
        the status line): an offline sink does no work per frame."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            self._build(*pending)
        loop = self._loop
        if loop is not None:
            frame, state = loop.frame, loop.state
            if frame is not None and state is not None and frame is not self._followed:
                self._followed = frame
                self._build(state, frame)
        return self._frame

    def _build(self, state: RigState, frame: TrackingFrame) -> PoseFrame:
        start, origin = state.start, state.origin
        if origin is not self._delta_origin or start is not self._delta_start:
            # The Δ changes only when the rig moves the origin (a snap, the stick): kept between.
            self._delta_start, self._delta_origin = start, origin
            self._delta = xrorigin_delta(start, origin)
            self._built_from = None
        parts = (frame.head, frame.right_grip, frame.left_grip)
        pf = self._frame
        # The same stage poses under the same origin: the same frame (kept). A still headset gives this
        # until the policy's 1 s heartbeat, each frame past the rate cap, as an unchanged body.
        if pf is None or parts != self._built_from:
            # pose_frame's C path called straight away (one call from the rig's numbers to the frame);
            # its Python path for anything else (stealth, no extension, anything unusual: None)
            stage = state.frame
            pf = (
                None
                if native_frame is None or self.stealth
                else native_frame(
                    state.trig, stage.head, stage.right_grip, stage.left_grip, self._delta, PoseFrame, ORIGIN
                )
            )
            if pf is None:
                pf = pose_frame(state, self.stealth, self._delta)
            self._frame = pf
            self._built_from = parts
        return pf

    def send(self, state: RigState, frame: TrackingFrame, now: float) -> float | None:
        link = self.link
        if link is None:  # offline nothing goes out: the PoseFrame is built when read (`frame`)
            self._pending = (state, frame)
            return None
        held = self.held_from
        if held is not None:  # held by the loop: the rate counts from the frame it was due on
            now = held
        last = self._last_send
        if last is not None and now - last < self._interval:
            return None  # the policy's own test, on the same `now`: it would refuse this frame
        pf = self._build(state, frame)
        if pf is self._sent_pf and now - last < HEARTBEAT_S and link.protocol_changes == self._sent_epoch:  # type: ignore[operator]
            self._skipped["unchanged"] += 1  # type: ignore[index]  # as the policy counts its own skip
            return None
        sent = link.send(pf, now)
        if sent is None:
            self._sent_pf = None
            return None
        self._sent_pf, self._sent_epoch = pf, link.protocol_changes
        self._last_send = now
        # the loop's test, a hair before the cap's own (above, on the same `now`): never later than it
        self.send_at = now + self._interval * (1.0 - 1e-9)
        nbytes, body_size, t_wire, seq, msg = sent
        self._body_size = body_size
        self.meter.add(t_wire, nbytes)
        self._sent[seq % SENT_HISTORY] = (seq, pf, frame.head, t_wire, msg, body_size, self._sent_epoch)
        return t_wire

    def _offline(self) -> None:
        """Offline: our body as a receiver would decode it, for the frame built last, worked out
        once when first read. (Linked, the server's broadcast shows it, read at poll.)"""
        if self._unverified:
            self._verify_pending()  # linked: the check of the bodies read, when read before it ran
        frame = self.frame
        if self.link is not None or frame is None or frame is self._offline_frame:
            return
        self._offline_frame = frame
        body = encode_body(0, frame, LATEST_PROTOCOL)
        self._body_size = len(body)
        seen = self._seen = decode_body(body, 0, LATEST_PROTOCOL)[0]
        self._last_err = rotation_error_deg(frame.head.rot, seen.head.rot) if seen.head is not None else None

    @property
    def seen(self) -> PoseBody | None:
        """Our own body as the far side decodes it (offline: as a receiver would decode it)."""
        self._offline()
        return self._seen

    @seen.setter
    def seen(self, body: PoseBody | None) -> None:
        self._seen = body

    @property
    def body_size(self) -> int:
        """Bytes of the last body sent (offline: of the last frame's, encoded in the latest protocol)."""
        self._offline()
        return self._body_size

    @body_size.setter
    def body_size(self, n: int) -> None:
        self._body_size = n

    @property
    def _last_error(self) -> float | None:
        self._offline()
        return self._last_err

    @_last_error.setter
    def _last_error(self, err: float | None) -> None:
        self._last_err = err

    @property
    def last_error(self) -> float | None:
        """Head rotation error of the last pair compared (relayed vs sent; offline: the local round
        trip), degrees; None without a head."""
        return self._last_error

    @property
    def others(self) -> dict[int, PoseBody]:
        return {} if self.link is None else self.link.others

    def status(self, now: float) -> SinkStatus:
        self._verify_pending()
        hz, bps = self.meter.rates(now)
        pf = self.frame
        packed = "" if pf is None else f"body {self.body_size} B flags {pf.flags:#04x}"
        values: dict[str, float] | None = None if pf is None else {"body_bytes": self.body_size, "flags": pf.flags}
        if pf is not None and values is not None and pf.flags & 0x02 and not self.stealth:
            packed += f" dyaw {pf.delta.dyaw:.1f}"
            values["dyaw"] = round(pf.delta.dyaw, 3)
        detail = ""
        if pf is not None and not self.stealth and not pf.flags & FLAG_HEAD:
            detail = "tracking lost: head not valid"
        if self.link is None:
            return SinkStatus(
                self.name,
                "offline",
                packed=packed,
                error_deg=self._last_error,
                detail=detail or "no server (--netsync HOST)",
                values=values,
            )
        link = self.link
        others = len(link.others)
        extra = f"; {others} other{'s' if others != 1 else ''} in the room" if others else ""
        drops = link.drops
        if drops:
            extra += "; " + link.drops_text()
        # no round trip while the server is silent: the last one is stale (issue 25 item 4)
        relay = self.relay_ms if link.joined and not link.closed and link.state != "server silent" else None
        return SinkStatus(
            self.name,
            link.state,
            hz,
            bps,
            packed,
            self._last_error,
            detail + extra if detail else link.detail + extra,
            drops=drops,
            ping_ms=relay,
            values=values,
            label="relay",
            live=link.joined and not link.closed,
        )

    def close(self) -> None:
        self._verify_pending()
        if self.link is not None:
            self.link.close()
