"""What the loop asks of every sink (Quake 3, NetSync, Sauerbraten)."""

from __future__ import annotations

from typing import Callable, Protocol

from headcast.app.run.rig import RigState
from headcast.app.run.telemetry import SinkStatus
from headcast.xr.frame import TrackingFrame


class Sink(Protocol):
    """`poll` and `observe` are None on a sink with nothing to do in that phase: the loop then
    skips the call (one costs microseconds on a cache-cold frame)."""

    name: str

    # poll(now): drain this sink's sockets and run its protocol timers (non-blocking).
    poll: Callable[[float], None] | None

    def send(self, state: RigState, frame: TrackingFrame, now: float) -> float | None:
        """Map this frame and hand it to the protocol; the clock time the bytes reached the
        socket, or None when nothing went out this frame (policy, not connected, offline)."""

    # observe(now): after every sink has sent this frame: the far side's view, checks, display
    # state (kept out of send() so no sink's bookkeeping delays another sink's bytes).
    observe: Callable[[float], None] | None

    def status(self, now: float) -> SinkStatus: ...

    def close(self) -> None:
        """Disconnect cleanly (bounded: never waits long for a peer)."""


def shown(sink) -> bool:
    """Whether the terminal and the mirror show a sink: Sauerbraten only when a server was asked
    for (--sauer) or its players are seen; Quake 3 and NetSync always (offline they show what would
    be sent). `--json` carries every sink, with this as `shown`."""
    return sink.name != "sauer" or sink.link is not None or bool(getattr(sink, "others", None))
