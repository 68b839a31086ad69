"""What a Quake 3 far side sees of us (see app/sinks/farside.py for the views and the tracker).

Two views: `q3` (the usercmd's view angles and roll, which every server runs and echoes in our
playerState: RELAYED — on a vanilla server that is the whole of what it carries of the head: the
roll) and `q3.head` (the VR head bits: RELAYED once a VR server's game has echoed its decode in our
playerState — EF_VR_PLAYER, stats 7/8 — else MODEL: not sent to a vanilla server, or sent and not
echoed; OFFLINE without a server).

Transients are named, not reported as error. The one seen at every Quake 3 join: the server's
first in-game snapshot carries the spawn point's view angles (ClientSpawn sets the view and
`delta_angles`; its playerState's commandTime is the spawn's, not one of our usercmds), so the
seen yaw sits at the spawn yaw — ±90–180° off what we aim — until the next snapshot shows the
first usercmd built against the new delta_angles (one snapshot, 50–100 ms). A respawn or a
teleport does the same (delta_angles move under a usercmd already sent). Such samples are marked
`transient` and left out of the error readout, as the link's own check already leaves them out.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from headcast.app.sinks import farside as fs
from headcast.netcode.q3.vrhead import (
    EF_VR_PLAYER,
    HEAD_PITCH_CLAMP,
    HEAD_YAW_CLAMP,
    RECEIVER_NAMES,
    angle2short,
    deg_from_stat,
    view_angle,
    yaw_offset,
)

if TYPE_CHECKING:  # the contract the sink and link fit (app/sinks/contract.py)
    from headcast.app.sinks.contract import Q3FarLink, Q3FarSink
    from headcast.app.sinks.q3.mapping import Q3Intent

CMD_HISTORY = 256  # Q3 usercmds remembered for matching a snapshot's commandTime (4 s at 60/s)
VR_STAT_PITCH, VR_STAT_YAW_OFFSET = 7, 8  # Trinity's ps.stats indexes (baseq3 build; docs/protocols/quake3.md#vr-head)
Q3_FRAME = "quake 3 view (angles only: the usercmd carries no position)"
# playerState pm_type (bg_public.h) under which the server's view does not follow the usercmd
# PM_DEAD, PM_FREEZE, PM_INTERMISSION, PM_SPINTERMISSION
FROZEN_VIEW = {3: fs.DEAD, 4: "frozen", 5: fs.INTERMISSION, 6: fs.INTERMISSION}
# Plain names of the Q3 head decode's builds (vrhead.RECEIVER_NAMES are the precise ones)
RECEIVER_PLAIN = {name: ("Trinity" if "Trinity" in text else "native build") for name, text in RECEIVER_NAMES.items()}

BASIS_Q3_VIEW = fs.plain(
    "the aim the server ran vs the aim we sent (pitch, yaw)",
    "the server's view vs the usercmd it ran, matched by commandTime (wire only)",
)
BASIS_Q3_HEAD_RELAYED = fs.plain(
    "the server's own decode of your head vs the head we sent (7-bit steps)",
    "stats 7/8 in our playerState vs the head of the usercmd it ran, matched by commandTime",
)
BASIS_Q3_HEAD_MODEL = fs.plain(
    "head pitch and turn (up to ±80°) vs their 7-bit decode",
    "head pitch and yaw offset, clamped ±80°, vs the 7-bit decode of our buttons",
)
WHY_Q3_OFFLINE = fs.plain(
    "no server: your aim encoded and decoded here", "the usercmd's angle shorts: ANGLE2SHORT, then SHORT2ANGLE"
)
WHY_Q3_RELAYED = fs.plain(
    "the aim the server ran, from its snapshot",
    "the view angles in our playerState, matched to our usercmd by commandTime",
)
WHY_Q3_HEAD_RELAYED = fs.plain(
    "the server's own decode of your head, sent back to us", "EF_VR_PLAYER and stats 7/8 in our playerState"
)
RT_Q3 = fs.plain(
    "ping: the server's snapshot acknowledging what we sent", "the snapshot acknowledging our usercmd (commandTime)"
)


_new = tuple.__new__  # a NamedTuple from a tuple of every field, without its Python-level __new__
_wrap = math.remainder  # fs.wrap180(a) is math.remainder(a, 360.0)
_RELAYED = fs.Source.RELAYED
HEAD_TITLE = "VR head (buttons bits 12–25, roll)"


class Snapshots:
    """Which of the Q3 link's snapshots show a usercmd of ours: the link's own check counts a
    snapshot matched (its commandTime is a cmd we sent, built against the delta_angles it carries)
    or rebased (spawn, teleport); one that is neither shows the server's placement (the first
    one in game: the spawn point's view). The state holds until the next matched snapshot."""

    def __init__(self) -> None:
        self.snapshots = self.matched = self.rebased = 0
        self.link: Q3FarLink | None = None
        self.transient: str | None = fs.JOINING
        self.fresh_error: float | None = None  # the link's check of the snapshot matched this update
        self.last_error: float | None = None  # ... of the last matched one
        self.last_head_error: float | None = None  # a VR server's echo of our head vs the usercmd it ran
        self.cmds: OrderedDict[int, Any] = OrderedDict()  # usercmd serverTime → the intent it carried

    def sent(self, link: Q3FarLink, intent: Q3Intent) -> None:
        """Note the intent of the usercmd the link last sent (keyed as the snapshots' commandTime)."""
        t = link.last_cmd_time
        cmds = self.cmds
        if cmds.get(t) is None:
            cmds[t] = intent
            if len(cmds) > CMD_HISTORY:
                cmds.popitem(last=False)

    def update(self, link: Q3FarLink) -> None:
        if link is not self.link:
            Snapshots.__init__(self)
            self.link = link
        self.fresh_error = None
        n = link.snapshots
        if n == self.snapshots:
            return
        c = link.check
        ps = link.ps
        frozen = None if ps is None else FROZEN_VIEW.get(ps.pm_type)
        if frozen is not None:
            # PM_UpdateViewAngles leaves the view alone (dead, frozen, intermission): it does not
            # follow our usercmds, so the link's check of it says nothing about the wire.
            self.transient = frozen
        elif c.matched != self.matched and link.last_error is not None:
            # The latest check ran on a matched snapshot (a later unmatched one would not have
            # moved the counter; a rebase after it in the same poll is caught below).
            self.transient = None if c.rebased == self.rebased else fs.SPAWN
            if self.transient is None:
                self.fresh_error = self.last_error = link.last_error
        elif c.rebased != self.rebased:
            self.transient = fs.SPAWN
        else:
            self.transient = fs.JOINING if self.matched == 0 else fs.SPAWN
        self.snapshots, self.matched, self.rebased = n, c.matched, c.rebased


class FarSide(fs.FarSideModel):
    """The Quake 3 sink's two views, rebuilt when a usercmd or a snapshot changed them.

    A usercmd comes at 60 of every 90 frames, a snapshot at 20: what depends on the snapshot only
    (the view the server ran, the head's words, a VR server's decode of the head, the view the
    others see) is kept until the next one, and the records are built with `tuple.__new__` (a
    NamedTuple's own constructor is a Python call: microseconds each, cache-cold)."""

    def __init__(self) -> None:
        self.snapshots = Snapshots()
        # What the latest snapshot gives, by (sink, link, snapshots, head bits on the wire): the
        # seen view, the title, the head's (source, why) and the weapon yaw the others see (None:
        # not asked yet, or not the server's: offline_view of the usercmd).
        self._snap: tuple = (None,)
        self._offline: tuple = (None, None)  # (sink, head bits wanted) → the head's (source, why)

    def inputs(self, sink: Any) -> tuple:
        link = sink.link
        if link is None:
            return (sink.intent,)
        return sink.intent, link.snapshots, link.closed, link.entered, link.head_bits

    def update(self, sink: Q3FarSink, now: float, add: fs.Add) -> None:
        intent = sink.intent
        if intent is None:
            return
        link = sink.link
        if link is None:
            self._update_offline(sink, now, add, intent)
            return
        a = intent.angles
        sent_view = _new(fs.HeadSample, (a[0], _wrap(a[1], 360.0), a[2], None, Q3_FRAME))
        on_wire = link.head_bits  # (the sink's head_bits_on_wire, linked)
        snaps = self.snapshots
        n = link.snapshots
        if link is snaps.link and n == snaps.snapshots:
            snaps.fresh_error = None  # (what Snapshots.update does without a new snapshot)
        else:
            snaps.update(link)
        if on_wire:
            # snaps.sent(link, intent), inline. Only a usercmd with head bits can be matched to a VR
            # server's decode (the server clears EF_VR_PLAYER for one without: _head_relayed stops
            # there), and reading the cmd's time makes the client take over its C ticks at once.
            t = link.last_cmd_time
            cmds = snaps.cmds
            if cmds.get(t) is None:
                cmds[t] = intent
                if len(cmds) > CMD_HISTORY:
                    cmds.popitem(last=False)
        c = self._snap
        if c[0] is not sink or c[1] is not link or c[2] != n or c[3] != on_wire:
            va = link.view_angles
            seen_view = None if va is None else _new(fs.HeadSample, (va[0], _wrap(va[1], 360.0), va[2], None, Q3_FRAME))
            title = (
                "view angles and head roll (usercmd → playerState)"
                if on_wire
                else "view angles and head roll: all of the head a vanilla server carries"
            )
            c = self._snap = (sink, link, n, on_wire, seen_view, title, head_source(sink), None)
        transient: str | None
        if link.closed:
            transient = fs.DISCONNECTED
        else:
            state = link.state
            if state != "in game":
                # not in game (yet, or again): "connecting", "loading" a new map, "reconnecting" ...
                transient = state if link.entered else fs.JOINING
            else:
                transient = snaps.transient
        view_err = snaps.fresh_error
        add(
            now,
            _new(
                fs.FarSideView,
                (
                    "q3",
                    "q3",
                    c[5],
                    _RELAYED,
                    WHY_Q3_RELAYED,
                    sent_view,
                    c[4],
                    transient,
                    on_wire,
                    _new(fs.ErrorReadout, (BASIS_Q3_VIEW, snaps.last_error, None, None, None, 0)),
                ),
            ),
            view_err,
        )
        # the head
        head = intent.head
        sent = None if head is None else _new(fs.HeadSample, (head[0], _wrap(head[1], 360.0), head[2], None, Q3_FRAME))
        source, why = c[6]
        if source is _RELAYED:
            seen, err, basis = self._head_relayed(sink, link)
            if seen is None and transient is None:
                transient = fs.TRACKING_LOST  # the server clears EF_VR_PLAYER for a usercmd without head bits
            shown = snaps.last_head_error
        else:
            far = sink.far_side
            # (pitch, yaw_offset and sent_offset are None together: no head bits in the usercmd)
            if far is None or far.pitch is None or far.yaw_offset is None or far.sent_offset is None:
                seen = err = None
            else:
                weapon_yaw = c[7]
                if weapon_yaw is None:
                    weapon_yaw = sink.others_view()[1]
                    if link.view_angles is not None:  # the server's view: until the next snapshot
                        self._snap = (*c[:7], weapon_yaw)
                seen = _new(
                    fs.HeadSample,
                    (far.pitch, _wrap(weapon_yaw + far.yaw_offset, 360.0), far.roll_others, None, Q3_FRAME),
                )
                if head is None:
                    err = None
                else:
                    pitch = max(-HEAD_PITCH_CLAMP, min(HEAD_PITCH_CLAMP, head[0]))
                    err = max(abs(pitch - far.pitch), abs(far.sent_offset - far.yaw_offset))
            basis = BASIS_Q3_HEAD_MODEL
            shown = err
        if head is None:
            transient = fs.TRACKING_LOST
        add(
            now,
            _new(
                fs.FarSideView,
                (
                    "q3.head",
                    "q3",
                    HEAD_TITLE,
                    source,
                    why,
                    sent,
                    seen,
                    transient,
                    on_wire,
                    _new(fs.ErrorReadout, (basis, shown, None, None, None, 0)),
                ),
            ),
            err,
        )

    def _update_offline(self, sink: Q3FarSink, now: float, add: fs.Add, intent: Q3Intent) -> None:
        a = intent.angles
        sent_view = fs.HeadSample(a[0], fs.wrap180(a[1]), a[2], None, Q3_FRAME)
        on_wire = sink.head_bits_on_wire
        p, y, r = (view_angle(angle2short(x)) for x in a)
        seen_view = fs.HeadSample(p, fs.wrap180(y), r, None, Q3_FRAME)
        view_err = fs.angle_err(sent_view, seen_view)
        source, why = view_source(sink)
        add(
            now,
            fs.FarSideView(
                "q3",
                "q3",
                "view angles and head roll (usercmd → playerState)",
                source,
                why,
                sent_view,
                seen_view,
                None,
                on_wire,
                fs.ErrorReadout(fs.BASIS_LOCAL, view_err, None),
            ),
            view_err,
        )
        head = intent.head
        sent = None if head is None else fs.HeadSample(head[0], fs.wrap180(head[1]), head[2], None, Q3_FRAME)
        if self._offline[0] != (sink, on_wire):
            self._offline = ((sink, on_wire), head_source(sink))
        source, why = self._offline[1]
        seen, err = self._head_model(sink)
        add(
            now,
            fs.FarSideView(
                "q3.head",
                "q3",
                HEAD_TITLE,
                source,
                why,
                sent,
                seen,
                fs.TRACKING_LOST if head is None else None,
                on_wire,
                fs.ErrorReadout(BASIS_Q3_HEAD_MODEL, err, None),
            ),
            err,
        )

    @staticmethod
    def _head_model(sink: Q3FarSink) -> tuple[fs.HeadSample | None, float | None]:
        far = sink.far_side
        # (pitch, yaw_offset and sent_offset are None together: no head bits in the usercmd)
        if far is None or far.pitch is None or far.yaw_offset is None or far.sent_offset is None:
            return None, None
        weapon_yaw = sink.others_view()[1]
        seen = fs.HeadSample(far.pitch, fs.wrap180(weapon_yaw + far.yaw_offset), far.roll_others, None, Q3_FRAME)
        intent = sink.intent
        head = None if intent is None else intent.head
        if head is None:
            return seen, None
        pitch = max(-HEAD_PITCH_CLAMP, min(HEAD_PITCH_CLAMP, head[0]))
        return seen, max(abs(pitch - far.pitch), abs(far.sent_offset - far.yaw_offset))

    def _head_relayed(self, sink: Q3FarSink, link: Q3FarLink | None) -> tuple[fs.HeadSample | None, float | None, str]:
        """A VR server's decode of our head bits, as its game writes it into our playerState each
        frame (Trinity: stats[7] = pitch, stats[8] = yaw offset, ·182.04 as shorts; reference
        docs/protocols/quake3.md#vr-head), with the view yaw and roll the server ran."""
        basis = BASIS_Q3_HEAD_RELAYED
        if link is None:  # (RELAYED: there is a link)
            return None, None, basis
        ps, va = link.ps, link.view_angles
        if ps is None or va is None or not link.eflags & EF_VR_PLAYER:
            return None, None, basis
        receiver = sink.model_receiver
        pitch = deg_from_stat(ps.stats[VR_STAT_PITCH], receiver)
        offset = deg_from_stat(ps.stats[VR_STAT_YAW_OFFSET], receiver)
        seen = fs.HeadSample(pitch, fs.wrap180(va[1] + offset), va[2], None, Q3_FRAME)
        snaps = self.snapshots
        if snaps.fresh_error is None:
            return seen, None, basis
        ran = snaps.cmds.get(ps.commandTime)
        if ran is None or ran.head is None:
            return seen, None, basis
        sent_pitch = max(-HEAD_PITCH_CLAMP, min(HEAD_PITCH_CLAMP, ran.head[0]))
        sent_offset = max(-HEAD_YAW_CLAMP, min(HEAD_YAW_CLAMP, yaw_offset(ran.head[1], ran.angles[1])))
        err = max(abs(sent_pitch - pitch), abs(sent_offset - offset))
        snaps.last_head_error = err
        return seen, err, basis

    def sources(self, sink: Any) -> list[tuple[str, fs.Source, str]]:
        return [("q3", *view_source(sink)), ("q3.head", *head_source(sink))]

    def round_trip(self, sink: Any) -> tuple[float | None, str]:
        link = sink.link
        return (None, "") if link is None else (link.ping_ms, RT_Q3)

    def round_trip_name(self, sink: Any) -> str:
        return "ping"


def view_source(sink: Q3FarSink) -> tuple[fs.Source, str]:
    if sink.link is None:
        return fs.Source.OFFLINE, WHY_Q3_OFFLINE
    return fs.Source.RELAYED, WHY_Q3_RELAYED


def head_source(sink: Q3FarSink) -> tuple[fs.Source, str]:
    link = sink.link
    receiver = RECEIVER_NAMES[sink.model_receiver]
    plain_name = RECEIVER_PLAIN[sink.model_receiver]
    if link is None:
        return fs.Source.OFFLINE, fs.plain(
            f"no server: your head as {plain_name} would decode it, here",
            f"our buttons' head bits through the {receiver} decode",
        )
    if sink.head_bits_on_wire:
        if link.check.vr_flag_frames:
            return fs.Source.RELAYED, WHY_Q3_HEAD_RELAYED
        return fs.Source.MODEL, fs.plain(
            f"head sent; the server has not shown its decode yet: {plain_name}'s decode, here",
            f"no EF_VR_PLAYER in our playerState yet; our usercmd through the {receiver} decode",
        )
    return fs.Source.MODEL, fs.plain(
        f"NOT SENT: this server has no VR support (only the roll goes out); shown: "
        f"what a VR server ({plain_name}) would see",
        f"no vr_support: 16-bit buttons; the head bits through the {receiver} decode",
    )
