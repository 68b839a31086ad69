"""The Quake 3 sink: usercmds with VR head bits, and what the far side makes of them.

Without a server (`host` None) it still computes every usercmd field and the receiver's view,
so the mirror and the demo show the protocol's quantization on any machine.

The far side is what other players see of us (MODEL: our usercmd through the server's code): the
head as the server's game decodes the buttons — by the build named in `receiver`, Trinity's QVM
unless told otherwise — and the view angles and roll as SnapVector leaves them on our entity
(whole degrees), beside the roll our own playerState carries. The yaw offset is the one the link
sends: both come from vrhead's float AngleSubtract of the same angles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from headcast.app.run.rig import RigState
from headcast.app.run.telemetry import RateMeter, SinkStatus
from headcast.app.sinks.q3.mapping import Q3Intent, RemoteHead, q3_intent
from headcast.netcode.q3.entities import SnapshotEntities
from headcast.netcode.q3.vrhead import (
    DECODED,
    DEFAULT_RECEIVER,
    DISPLAY_LIMITS,
    HEAD_PITCH_CLAMP,
    HEAD_YAW_CLAMP,
    VR_BUTTON_MASK,
    HeadSmoother,
    Receiver,
    angle2short,
    pack7,
    roll_views,
    snap_angle,
    view_angle,
    yaw_offset,
)
from headcast.xr.frame import TrackingFrame

if TYPE_CHECKING:
    from headcast.app.sinks.q3.link import Q3Link

_new = tuple.__new__
_INF = math.inf
TICK_RING = 256  # command ticks held for the meter (4 s at 60/s): a full ring goes in at once


@dataclass(frozen=True, slots=True)
class FarSide:
    """The last usercmd as the server computes it, in degrees (not display-limited)."""

    receiver: Receiver
    pitch: float | None  # our entity's angles2[PITCH] (None: no head bits in this usercmd)
    yaw_offset: float | None  # our entity's angles2[ROLL]: head yaw minus weapon yaw
    sent_offset: float | None  # the yaw offset packed (float AngleSubtract, clamped ±80)
    roll_own: float  # our playerState's view roll: SHORT2ANGLE of the roll short
    roll_others: float  # the roll on our entity, as other players draw it (SnapVector)


class Q3Sink:
    name = "q3"
    unit = "packets"  # what the summary counts as sent (the handshake's, then one per command tick)

    def __init__(
        self,
        *,
        vr: bool = True,
        move_speed: float = 2.0,
        link: Q3Link | None = None,
        verify: bool = False,
        receiver: Receiver = DEFAULT_RECEIVER,
    ) -> None:
        self.vr = vr
        self.receiver = receiver  # the build assumed to decode the head bits, until one is seen
        self.verify = verify  # decode every usercmd's head bits (else: when shown)
        self.move_speed = move_speed
        self.link = link  # a connected Q3Link, or None = offline
        self.poll = None if link is None else self._poll
        # The loop calls send() from send_at on and poll() from poll_at on (app/run/loop.py): in game
        # the command ticks and the frames after a tick that read something; offline, every frame.
        self.send_at = -math.inf
        self.poll_at = math.inf
        self._meter = RateMeter()
        # The command ticks sent through the pump and not yet in the meter (see `meter`): a tick's
        # frame stores its tuple here, the meter takes them in off the frame (poll, status).
        self._ticks: list[tuple | None] = [None] * TICK_RING
        self._ticks_in = 0  # the slot the next tick goes to
        self._ticks_out = 0  # the oldest slot the meter has not taken in
        # The link's client, when the link is a Q3Link (send() then calls its pump's send_pose
        # itself, without the link's send_pose in between: a Python call fewer per command tick).
        # (Duck-typed: importing the link here would load the client for an offline sink.)
        self._client = getattr(link, "client", None) if hasattr(link, "pose_tick") else None
        self._armed: object = None  # the client's send_input that _pose_tick was found for
        self._pose_tick: Callable[..., Any] | None = None
        self.smoother = HeadSmoother()
        self._intent: Q3Intent | None = None
        # A tick made in C (Q3Link.send_pose's tuple) whose Q3Intent is built only when read, and its vr
        self._tick: tuple | None = None
        self._tick_vr = vr
        self.far_head_smoothed: tuple[float, float, float] | None = None
        self.lost_frames = 0  # usercmds built while the head was not tracked
        self.lost_cleared = 0  # ...of which carried no head bits
        self._fresh = False  # whether send() built an intent this frame
        # Linked, observe has nothing to do unless every usercmd is verified (send counts the lost
        # frames): the loop then makes no call for it on a command tick's frame.
        if link is not None and not verify:
            self.observe = None  # type: ignore[assignment]
        self._far: tuple[Q3Intent | None, FarSide | None, RemoteHead | None] = (None, None, None)
        self._quant_max = 0.0
        self._seen: tuple[SnapshotEntities | None, tuple[Receiver, str] | None] = (None, None)

    @property
    def intent(self) -> Q3Intent | None:
        """The last command tick's Q3Intent. A tick made in C leaves its fields; the intent is built
        from them here, when something reads it (the mirror, the far side, the status line)."""
        tick = self._tick
        if tick is not None:
            self._tick = None
            self._intent = _new(Q3Intent, (tick[5], tick[7], tick[8], tick[9], tick[10], tick[6], self._tick_vr))
        return self._intent

    @intent.setter
    def intent(self, intent: Q3Intent | None) -> None:
        self._tick = None
        self._intent = intent

    @property
    def head_bits_on_wire(self) -> bool:
        """Whether the link carries 32-bit buttons (a VR server and vr=1); offline: what we would send."""
        return self.vr if self.link is None else self.link.head_bits

    def send(self, state: RigState, frame: TrackingFrame, now: float) -> float | None:
        # Connected, a usercmd is built only at the client's command tick: between ticks the
        # intent would be overwritten unsent (and observe() has nothing new to decode).
        link = self.link
        if link is not None and now < link.due_at:
            self._fresh = False
            return None
        self._fresh = True
        if link is not None:
            # In game with the extension: the whole tick (q3_intent, the link's send) in one C call,
            # Q3Link.send_pose's, made here (the same arguments; a Python call fewer on the frame)
            vr = self.vr
            client = self._client
            if client is None:  # a link of another kind: its own send_pose
                tick = link.send_pose(state, frame.controls, vr, self.move_speed, now)
            else:
                tick = None
                fast = client.send_input
                if fast is not None:
                    if fast is not self._armed:  # re-armed (a hand-over): the same pump, found once per arming
                        self._armed = fast
                        self._pose_tick = link.pose_tick(fast)
                    pose_tick = self._pose_tick
                    if pose_tick is not None:
                        stage = state.frame
                        trig = state.trig
                        vx, vz = state.move_world
                        controls = frame.controls
                        tick = pose_tick(
                            now,
                            stage.head,
                            stage.right_aim,
                            trig[4],
                            trig[5],
                            state.origin.yaw,
                            controls.trigger_right,
                            controls.jump,
                            vx,
                            vz,
                            self.move_speed,
                            vr,
                            link.sent,
                            link.delta_angles,
                        )
                        if tick.__class__ is tuple:
                            link.due_at = tick[2]
                            if tick[4]:  # datagrams read after the tick (or a read failed): the next poll's
                                link.unread = True
                        else:
                            tick = None
            if tick is not None:
                self._tick = tick
                self._tick_vr = vr
                self.send_at = tick[2]
                if link.unread:
                    self.poll_at = -_INF
                if tick[6] is None:  # no head: the buttons are the user's (attack), never head bits
                    self.lost_frames += 1
                    self.lost_cleared += 1
                i = self._ticks_in
                self._ticks[i] = tick  # (bytes, sent_at, ...): the meter's, taken in off the frame
                i = i + 1 if i + 1 < TICK_RING else 0
                self._ticks_in = i
                if i == self._ticks_out:  # the ring is full: nothing took it in for TICK_RING ticks
                    self._take_ticks(full=True)
                return tick[1]
        intent = q3_intent(state, frame.controls, self.vr, self.move_speed)
        self._tick = None
        self._intent = intent
        if intent.head is None:
            self.lost_frames += 1
            if not intent.buttons & VR_BUTTON_MASK:
                self.lost_cleared += 1
        if link is None:
            return None
        sent = link.send(intent, now)
        self.send_at = link.due_at
        if sent is None:
            return None
        if link.unread:  # (set only by a send that sent)
            self.poll_at = -math.inf
        nbytes, t_wire = sent
        self.meter.add(t_wire, nbytes)
        return t_wire

    def _poll(self, now: float) -> None:
        """The link's poll (what the last tick read goes to the client's core), then when to call
        send and poll again."""
        link = self.link
        assert link is not None  # (poll is None offline)
        link.poll(now)
        self.poll_at = math.inf
        self.send_at = link.due_at
        if self._ticks_in != self._ticks_out:
            self._take_ticks()

    @property
    def meter(self) -> RateMeter:
        """The send meter, with the command ticks the frames left for it taken in."""
        if self._ticks_in != self._ticks_out:
            self._take_ticks()
        return self._meter

    def _take_ticks(self, full: bool = False) -> None:
        """The command ticks sent since the last call go to the meter, oldest first (`full`: the
        whole ring, which send() just filled)."""
        ring, add = self._ticks, self._meter.add
        i, end = self._ticks_out, self._ticks_in
        while full or i != end:
            full = False
            tick = ring[i]
            assert tick is not None  # (a slot between out and in holds a tick)
            ring[i] = None
            add(tick[1], tick[0])
            i = i + 1 if i + 1 < TICK_RING else 0
        self._ticks_out = i

    def observe(self, now: float) -> None:
        """After every sink has sent: with `verify`, decode this frame's usercmd as the server's
        game does. (send() counts the usercmds built without a head; the far side's decode
        otherwise waits until something shows it: `far_head`.) Linked without `verify` the sink
        has no observe (None)."""
        if self._fresh and self.verify:
            self._decode()

    @property
    def far_head(self) -> RemoteHead | None:
        """The head other players draw from the last usercmd: the server's decode of the 32-bit
        buttons, the roll on our entity (whole degrees), the cgame's display limits (None: lost or
        --no-vr). On a 16-bit link it never reaches the server: the mirror labels it hypothetical."""
        return self._decode()[1]

    @property
    def far_side(self) -> FarSide | None:
        """The last usercmd's far side, unrounded for display (the HUD's numbers)."""
        return self._decode()[0]

    @property
    def head_quant_max(self) -> float:
        """Worst 7-bit head error (sent, clamped, vs decoded) over the usercmds decoded so far, degrees."""
        self._decode()  # the latest usercmd counts too
        return self._quant_max

    def _decode(self) -> tuple[FarSide | None, RemoteHead | None]:
        """Decode the last usercmd once, when first asked for (the mirror each drawn frame, the demo
        at the end): without a window no per-usercmd decoding work."""
        intent = self.intent
        if intent is None:
            return None, None
        receiver = self.model_receiver
        cached = self._far
        known = cached[1]
        if cached[0] is intent and known is not None and known.receiver is receiver:
            return known, cached[2]
        own, others = roll_views(intent.roll_short)
        tracked = intent.head
        if tracked is None or not intent.vr:  # no head bits (Q3Intent.buttons): nothing to decode
            far, seen = FarSide(receiver, None, None, None, own, others), None
        else:
            # Q3Intent.buttons' pack_head and unpack_head, the yaw offset computed once: the same
            # functions on the same numbers. Packed values are 7..119, so the head bits are never clear.
            offset = yaw_offset(tracked[1], intent.angles[1])
            table = DECODED[receiver]
            p = table[pack7(tracked[0], HEAD_PITCH_CLAMP)]
            y = table[pack7(offset, HEAD_YAW_CLAMP)]
            sent = max(-HEAD_YAW_CLAMP, min(HEAD_YAW_CLAMP, offset))
            far = FarSide(receiver, p, y, sent, own, others)
            lp, ly, lr = DISPLAY_LIMITS  # vrhead.clamp_display
            seen = RemoteHead(min(lp, max(-lp, p)), min(ly, max(-ly, y)), min(lr, max(-lr, others)))
            pitch = max(-HEAD_PITCH_CLAMP, min(HEAD_PITCH_CLAMP, tracked[0]))
            self._quant_max = max(self._quant_max, abs(pitch - p), abs(sent - y))
        self._far = (intent, far, seen)
        return far, seen

    def smooth(self, now: float) -> tuple[float, float, float] | None:
        """Step the receiver's EMA towards the latest decoded head, as a VR client does once per
        rendered frame: called by whoever draws it (the mirror), not per usercmd."""
        h = self.far_head
        if h is None:
            self.smoother.reset()
            self.far_head_smoothed = None
        else:
            self.far_head_smoothed = self.smoother.update(now, h.pitch, h.yaw_offset, h.roll)
        return self.far_head_smoothed

    def server_view(self) -> tuple[float, float, float] | None:
        """The server's own view of us (playerState viewangles), once in game."""
        return None if self.link is None else self.link.view_angles

    def others_view(self) -> tuple[float, float, float]:
        """Our view (weapon) angles as other players see them on our entity: SnapVector's whole
        degrees of the server's view (offline: of the view the last usercmd asks for)."""
        view = self.server_view()
        if view is None:
            intent = self.intent
            if intent is None:
                view = (0.0, 0.0, 0.0)
            else:
                p, y, r = intent.angles
                view = (view_angle(angle2short(p)), view_angle(angle2short(y)), view_angle(angle2short(r)))
        return snap_angle(view[0]), snap_angle(view[1]), snap_angle(view[2])

    @property
    def receiver_seen(self) -> tuple[Receiver, str] | None:
        """The build the server's game is, betrayed by another VR player's relayed head angles
        (38 of the 128 decoded values differ between a QVM and a native build), and on whom."""
        ents = self.others
        if ents is None:
            return None
        cached = self._seen
        if cached[0] is ents:  # (the core gives the same frozen record per snapshot: entities.of_snapshot)
            return cached[1]
        seen = None
        for p in ents.players:
            if p.head is not None and p.head.decoded_by is not None:
                seen = p.head.decoded_by, p.name
                break
        self._seen = (ents, seen)
        return seen

    @property
    def model_receiver(self) -> Receiver:
        """The build whose decode the far side models: the one seen on the server, else `receiver`."""
        seen = self.receiver_seen
        return self.receiver if seen is None else seen[0]

    @property
    def others(self) -> SnapshotEntities | None:
        """The other players in the server's latest snapshot (RELAYED), None offline or before one."""
        return None if self.link is None else self.link.entities

    def status(self, now: float) -> SinkStatus:
        hz, bps = self.meter.rates(now)
        i = self.intent
        packed = ""
        values = None
        if i is not None:
            # The wire's roll short (unsigned) and what it means: 62842 reads as -15.0°.
            roll_deg = (i.roll_short - 65536 if i.roll_short >= 32768 else i.roll_short) * 360 / 65536
            roll = f"roll {i.roll_short} ({roll_deg:+.1f}°)"
            wide = self.head_bits_on_wire
            buttons = i.buttons if wide else i.buttons & 0xFFF
            packed = (
                f"buttons {buttons:#010x} {roll}" if wide else f"buttons {buttons:#06x} (16-bit, no head bits) {roll}"
            )
            values = {"buttons": buttons, "head_bits": wide, "roll_short": i.roll_short, "roll_deg": round(roll_deg, 3)}
        error = None if self.link is None else self.link.last_error
        detail = "tracking lost: head bits cleared" if i is not None and i.head is None else ""
        if self.link is None:
            return SinkStatus(
                self.name, "offline", packed=packed, detail=detail or "no server (--q3 HOST)", values=values
            )
        # the link's own words (a refusal, a retry) come first; tracking loss is added, not swapped in
        detail = "; ".join(d for d in (self.link.detail, detail) if d)
        return SinkStatus(
            self.name,
            self.link.state,
            hz,
            bps,
            packed,
            error,
            detail,
            drops=self.link.drops or None,
            ping_ms=self.link.ping_ms,
            values=values,
            live=self.link.state == "in game",
        )

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
