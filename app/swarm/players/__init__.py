"""One swarm player per protocol (`q3`, `netsync`, `sauer`), each driving its protocol's core; the
API they share, the server and per-player variation are in `base`."""

from headcast.app.swarm.players.base import (
    JOIN_TICK,
    MAX_READS,
    PROTOCOLS,
    RATES,
    RETRY_FIRST,
    JoinLatency,
    Player,
    Server,
    Variation,
    bindable,
    loopback_note,
    source_address,
)
from headcast.app.swarm.players.netsync import NetSyncPlayer
from headcast.app.swarm.players.q3 import Q3Player
from headcast.app.swarm.players.sauer import SauerPlayer

__all__ = [
    "CLASSES",
    "JOIN_TICK",
    "MAX_READS",
    "PROTOCOLS",
    "RATES",
    "RETRY_FIRST",
    "JoinLatency",
    "NetSyncPlayer",
    "Player",
    "Q3Player",
    "SauerPlayer",
    "Server",
    "Variation",
    "bindable",
    "close_context",
    "loopback_note",
    "source_address",
]

CLASSES = {"q3": Q3Player, "netsync": NetSyncPlayer, "sauer": SauerPlayer}


def close_context() -> None:
    """End the NetSync players' shared ZeroMQ context (after every player closed)."""
    if NetSyncPlayer.context is not None:
        NetSyncPlayer.context.term()
        NetSyncPlayer.context = None
