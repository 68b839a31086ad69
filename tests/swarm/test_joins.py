"""NetSync joins that hold under load (issue 26 item 5), against a real styly-netsync-server (the
current release): a player whose join answer (its device-ID mapping) is lost asks again on a new
control connection and gets in; the join latency the retries wait for is measured; a swarm over
several rooms fills them one after another (each join costs the server a mapping sent to every
member of its room, twice a second per room at most)."""

from __future__ import annotations

import time

import pytest

from headcast.app.run.mock import find_motion
from headcast.app.swarm import players as players_mod
from headcast.app.swarm.cli import Swarm
from headcast.app.swarm.motion import Script
from headcast.app.swarm.players import RETRY_FIRST, JoinLatency, Server
from headcast.netcode.netsync.client import LANE_CONTROL
from headcast.netcode.netsync.localserver import LocalNetSyncServer


def test_first_retry_is_sized_from_the_measured_joins():
    lat = JoinLatency(keep=10)
    assert lat.first_retry() == RETRY_FIRST[0]  # nothing measured yet
    for s in (0.1,) * 9 + (0.6,):
        lat.add(s)
    assert lat.p90() == 0.6 and lat.first_retry() == 2.4  # 4 × p90
    for s in (3.0,) * 10:
        lat.add(s)
    assert lat.first_retry() == RETRY_FIRST[1] and len(lat.recent) == 10


def test_rooms_fill_one_after_another():
    server = Server("127.0.0.1", 5555, 5556, 5557)
    swarm = Swarm(
        {"netsync": 20}, {"netsync": server}, Script.load(find_motion("look_around")), spawn_rate=10.0, rooms=4, seed=1
    )
    try:
        order = [p.server.room for _, p in swarm.loop._ramp]
        assert order == [f"default_room-{r}" for r in range(4) for _ in range(5)]
        assert sorted(p.index % 4 for _, p in swarm.loop._ramp) == sorted(i % 4 for i in range(20))
    finally:
        swarm.loop.close_all(pause=0.0)


@pytest.mark.live
def test_a_player_whose_join_answer_is_lost_asks_again(tmp_path):
    """The server's mapping reaches the player's socket and is dropped there by the test until the
    player has asked again (a loaded server drops it from its full control queue; our scripted
    loss stands in for that): the player registers on a new control connection, the server
    answers that, and the player gets in."""
    with LocalNetSyncServer(log_dir=tmp_path / "server") as ns:
        a = ns.address
        targets = {"netsync": Server(a.host, a.dealer_port, a.pub_port, a.transform_port)}
        swarm = Swarm(
            {"netsync": 1},
            targets,
            Script.load(find_motion("look_around")),
            spawn_rate=10.0,
            observers=0,
            marked=0,
            seed=3,
        )
        ((_, player),) = swarm.loop._ramp
        dropped = []
        receive = player.core.receive_datagram

        def lossy(data, now):
            if data.lane == LANE_CONTROL and player.retries == 0:
                dropped.append(now)
                return None
            return receive(data, now)

        player.core.receive_datagram = lossy
        t0 = time.monotonic()
        try:
            swarm.run(RETRY_FIRST[1] * 1.25 + 5.0, should_stop=lambda: player.got_in)
        finally:
            swarm.stop()
    assert dropped, "the server sent no mapping to drop"
    assert player.got_in and player.retries >= 1, (player.retries, time.monotonic() - t0)
    assert player.client_number is not None
    assert players_mod.NetSyncPlayer.latency.recent  # its join measured for the next retries
