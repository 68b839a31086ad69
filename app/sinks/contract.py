"""The far-side contract: what app/sinks/farside.py — and through its views the mirror, the demo's summary
and --json — reads of the sinks and of their links, as typing.Protocol classes.

The sinks (sinks/{q3,netsync,sauer}/sink.py) and the links (sinks/{q3,netsync,sauer}/link.py)
satisfy these structurally: nothing subclasses them, and mypy checks the fit where a concrete sink
meets them. A member read-only here is a property (a plain attribute satisfies it too). A stand-in
in a test needs only these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from headcast.app.sinks.q3.mapping import Q3Intent
    from headcast.app.sinks.q3.sink import FarSide
    from headcast.app.sinks.sauer.mapping import GamePose
    from headcast.netcode.netsync.model import PoseBody, PoseFrame
    from headcast.netcode.q3.delta import PlayerState
    from headcast.netcode.q3.transport import Q3Client
    from headcast.netcode.q3.vrhead import Receiver
    from headcast.netcode.sauer.npos import NPos


class Meter(Protocol):
    """A sink's send meter (telemetry.RateMeter): messages, the last send, rates over its window."""

    @property
    def total_messages(self) -> int: ...
    @property
    def last_time(self) -> float | None: ...
    def rates(self, now: float) -> tuple[float, float]: ...


class FarSink(Protocol):
    """What every sink with a far side gives: its name ("q3", "netsync", "sauer") and send meter."""

    @property
    def name(self) -> str: ...
    @property
    def meter(self) -> Meter: ...


# --- Quake 3 ------------------------------------------------------------------------------------


class Q3SnapshotCheck(Protocol):
    """The link's check of our playerState against the usercmds we sent (q3_link.Q3Check)."""

    @property
    def matched(self) -> int: ...
    @property
    def rebased(self) -> int: ...
    @property
    def vr_flag_frames(self) -> int: ...


class Q3FarLink(Protocol):
    """A connected Quake 3 link (q3_link.Q3Link) as the far side reads it."""

    @property
    def client(self) -> Q3Client: ...
    @property
    def closed(self) -> bool: ...
    @property
    def entered(self) -> bool: ...
    @property
    def state(self) -> str: ...
    @property
    def snapshots(self) -> int: ...
    @property
    def head_bits(self) -> bool: ...
    @property
    def check(self) -> Q3SnapshotCheck: ...
    @property
    def ps(self) -> PlayerState | None: ...
    @property
    def view_angles(self) -> tuple[float, float, float] | None: ...
    @property
    def eflags(self) -> int: ...
    @property
    def last_error(self) -> float | None: ...
    @property
    def ping_ms(self) -> float | None: ...
    @property
    def last_cmd_time(self) -> int: ...


class Q3FarSink(FarSink, Protocol):
    """The Quake 3 sink (sinks/q3/sink.py Q3Sink): the intent it sent and its model of the receiver."""

    @property
    def link(self) -> Q3FarLink | None: ...
    @property
    def intent(self) -> Q3Intent | None: ...
    @property
    def head_bits_on_wire(self) -> bool: ...
    @property
    def model_receiver(self) -> Receiver: ...
    @property
    def far_side(self) -> FarSide | None: ...
    def others_view(self) -> tuple[float, float, float]: ...


# --- NetSync ------------------------------------------------------------------------------------


class NetSyncFarLink(Protocol):
    """A NetSync link (netsync_link.NetSyncLink): our body as the room broadcast carries it."""

    @property
    def closed(self) -> bool: ...
    @property
    def joined(self) -> bool: ...
    @property
    def state(self) -> str: ...
    @property
    def own_body(self) -> PoseBody | None: ...


class NetSyncFarSink(FarSink, Protocol):
    """The NetSync sink (sinks/netsync/sink.py NetSyncSink): the frame sent, the body seen, their match."""

    @property
    def link(self) -> NetSyncFarLink | None: ...
    @property
    def stealth(self) -> bool: ...
    @property
    def frame(self) -> PoseFrame | None: ...
    @property
    def seen(self) -> PoseBody | None: ...
    @property
    def matched(self) -> tuple[PoseFrame, PoseBody, float] | None: ...
    @property
    def last_error(self) -> float | None: ...
    @property
    def relay_ms(self) -> float | None: ...


# --- Sauerbraten --------------------------------------------------------------------------------


class SauerFarLink(Protocol):
    """A Sauerbraten link (sauer_link.SauerLink)."""

    @property
    def closed(self) -> bool: ...
    @property
    def live(self) -> bool: ...
    @property
    def ping_ms(self) -> float | None: ...


class SauerFarSink(FarSink, Protocol):
    """The Sauerbraten sink (sinks/sauer/sink.py SauerSink): the game pose and N_POS record sent, and the
    record a watching second client received (`watcher`: a sauer_link.SauerWatcher, or None)."""

    @property
    def link(self) -> SauerFarLink | None: ...
    @property
    def watcher(self) -> object | None: ...
    @property
    def game(self) -> GamePose | None: ...
    @property
    def record(self) -> NPos | None: ...
    @property
    def last_relayed(self) -> NPos | None: ...
    @property
    def relay_ms(self) -> float | None: ...


AnyFarSink = Q3FarSink | NetSyncFarSink | SauerFarSink


if TYPE_CHECKING:  # the sinks fit the contract (checked by mypy; nothing runs)
    from headcast.app.sinks.netsync.sink import NetSyncSink
    from headcast.app.sinks.q3.sink import Q3Sink
    from headcast.app.sinks.sauer.sink import SauerSink

    def _q3_fits(sink: Q3Sink) -> Q3FarSink:
        return sink

    def _netsync_fits(sink: NetSyncSink) -> NetSyncFarSink:
        return sink

    def _sauer_fits(sink: SauerSink) -> SauerFarSink:
        return sink
