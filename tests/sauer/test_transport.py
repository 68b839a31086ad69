"""SauerClient as a netcode/driver.py Transport, against the real Sauerbraten 2020 Edition server
(Debian's cube2-server on 127.0.0.1): driven by driver.drive() alone, it connects, spawns, sends
positions the server relays to a second client, counts its traffic through the metrics hook, and
leaves so that the server sees it go."""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from headcast.netcode import driver
from headcast.netcode.sauer import events as se
from headcast.netcode.sauer.client import Pose, SauerClientCore, State
from headcast.netcode.sauer.errors import SauerError, TransportError
from headcast.netcode.sauer.transport import SauerClient

pytestmark = pytest.mark.live

POSE = Pose(eye=(600.0, 700.0, 526.0), yaw=45.0, pitch=0.0, roll=0.0, vel=(0.0, 0.0, 0.0))


def drive_until(clients, pred, timeout, what, on_event=None):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"no {what} within {timeout} s: " + ", ".join(
            c.core.state.value for c in clients
        )
        driver.drive(clients, time.monotonic() + 0.05, on_event)


def test_driven_by_drive_alone_it_joins_sends_and_counts(sauer_server):
    counts: Counter[str] = Counter()
    seen: list = []
    vr = SauerClient(sauer_server.address, SauerClientCore("drvA"))
    obs = SauerClient(sauer_server.address, SauerClientCore("drvObs"))
    try:
        assert isinstance(vr, driver.Transport) and isinstance(vr.core, driver.Core)
        (fd,) = vr.filenos()
        assert os.fstat(fd) and fd not in obs.filenos()  # the ENet host's own UDP socket
        assert vr.next_deadline() is not None and vr.core.state is State.CONNECTING
        vr.metrics = lambda name, n: counts.update({name: n})
        vr.core.pose = obs.core.pose = POSE

        def on_event(t, ev):
            if t is vr:
                seen.append(ev)

        drive_until(
            [vr, obs],
            lambda: vr.core.state is State.ALIVE and obs.core.state is State.ALIVE,
            10,
            "spawn",
            on_event,
        )
        assert [type(e) for e in seen][:2] == [se.Welcomed, se.Spawned]
        theirs = lambda: obs.core.players.get(vr.core.cn)  # noqa: E731
        drive_until([vr, obs], lambda: theirs() is not None and theirs().records >= 10, 5, "relayed records")
        assert theirs().record.yaw == 45
        c = vr.core.counters
        assert counts["sent_datagrams"] == c["packets_out"] and counts["sent_bytes"] == c["bytes_out"]
        assert counts["received_datagrams"] == c["packets_in"] and counts["received_bytes"] == c["bytes_in"]
        assert counts["send_errors"] == 0 and counts["position_packets"] > 0  # obs's records relayed to us
        # alive: the next deadline is the next position tick, at most 33 ms ahead
        now = time.monotonic()
        assert now - 0.01 <= vr.next_deadline() <= now + 1 / 30 + 0.005
    finally:
        vr.close()
    assert vr.filenos() == () and vr.next_deadline() is None and vr.core.state is State.CLOSED
    drive_until([obs], lambda: vr.core.cn not in obs.core.players, 5, "our leave seen by the other client")
    obs.close()


def test_the_peer_follows_the_core_state(sauer_server):
    """When the core gives up on a connection (here: closed by itself, not through the
    transport), the transport's next turn drops the ENet peer, which the server hears at once:
    the other client sees us leave."""
    c = SauerClient(sauer_server.address, SauerClientCore("drvB"))
    obs = SauerClient(sauer_server.address, SauerClientCore("drvObs2"))
    try:
        drive_until([c, obs], lambda: c.core.state is State.ALIVE and c.core.cn in obs.core.players, 10, "spawn")
        cn = c.core.cn
        c.core.close(time.monotonic())
        assert not c.core.wants_connection
        drive_until([c, obs], lambda: cn not in obs.core.players, 3, "the leave, seen by the other client")
        assert c.core.get_timer() is None
    finally:
        c.close()
        obs.close()


def test_a_name_that_does_not_resolve_is_a_transport_error():
    core = SauerClientCore("drvC")
    with pytest.raises(TransportError, match="cannot resolve 'nosuchhost.invalid'") as e:
        SauerClient(("nosuchhost.invalid", 28785), core)
    assert isinstance(e.value, SauerError) and isinstance(e.value, OSError)
    assert core.state is State.IDLE  # nothing was started
