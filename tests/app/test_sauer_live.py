"""The Sauerbraten sink against the real 2020 Edition server (Debian's cube2-server) on 127.0.0.1,
seen by a second client (SauerClientCore, the game's acceptance rules):

- in process: rig → sink → link, frames chosen here; the second client sees the spawn point, the
  walk, yaw, pitch, roll and the walking animation; a map change and a death re-anchor the player
  at the spawn and the records keep coming with the new life's parity; the status names a kick.
- `headcast run --mock tour --sauer HOST` (a subprocess): joins, spawns, streams without a kick
  through a map change and a death forced by an admin client, the tour's head and walk seen by
  the second client; a bounded soak (marked slow: 20 s here, 5 minutes with HEADCAST_LONG=1).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import pytest

from headcast.app.run.rig import Rig, RigSettings
from headcast.app.run.synthetic import orientation
from headcast.app.sinks.sauer.link import SauerLink
from headcast.app.sinks.sauer.mapping import UNITS_PER_METRE, SauerWorld
from headcast.app.sinks.sauer.sink import SauerSink
from headcast.netcode.sauer.client import State
from headcast.netcode.sauer.localserver import LocalSauerServer
from headcast.netcode.sauer.messages import build
from headcast.netcode.sauer.protocol import DISC_KICK, MODE_INSTAGIB, Msg
from headcast.xr.frame import Controls, Pose, TrackingFrame

from sauer_support import Clients, claim_admin, force_map, need_server, shoot
from support import LONG, REPO

pytestmark = pytest.mark.live

WORLD = SauerWorld(spawn=(800.0, 900.0, 128.0), spawn_yaw=30.0)


@pytest.fixture(scope="module")
def server():
    need_server()
    with LocalSauerServer() as s:
        yield s


def frame(head=(0.0, 0.0, 0.0), pos=(0.0, 1.6, 0.0), move=(0.0, 0.0), t_ns=0):
    h = Pose(pos, orientation(*head), True, True, True, True)
    a = Pose((0.2, 1.2, -0.3), orientation(0, 0, 0), True, True, True, True)
    return TrackingFrame(t_ns, t_ns, h, a, a, a, a, Controls(move=move))


class Player:
    """Rig → SauerSink → SauerLink in this process, stepped like the frame loop steps it."""

    def __init__(self, server, name="vr", move_speed=2.0) -> None:
        self.link = SauerLink(*server.address, name=name, clock=time.monotonic)
        self.sink = SauerSink(world=WORLD, link=self.link)
        self.rig = Rig(RigSettings(move_speed=move_speed))
        self.frame = frame()
        self.t = None

    def step(self, now: float) -> None:
        dt = 0.0 if self.t is None else now - self.t
        self.t = now
        self.sink.poll(now)
        self.sink.send(self.rig.update(self.frame, dt), self.frame, now)


def run(clients, player, seconds, pred=None, what=""):
    if pred is None:
        clients.pump(seconds, player.step)
    else:
        clients.until(pred, seconds, what, player.step)


def theirs(obs, player):
    return obs.core.players.get(player.link.core.cn)


def test_a_second_client_sees_the_spawn_the_head_and_the_walk(server):
    cs = Clients()
    player = Player(server)
    try:
        obs = cs.add(server, "obs")
        run(cs, player, 8, lambda: player.link.live and obs.core.state is State.ALIVE, "both in game")
        assert player.link.state == "in game" and player.sink.status(time.monotonic()).live
        # standing at the spawn, looking 20° left of where the head faced at the spawn, up 15°, tilted 10°
        player.frame = frame(head=(-15.0, 20.0, 10.0))
        run(
            cs,
            player,
            3,
            lambda: (p := theirs(obs, player)) is not None and p.record is not None and p.record.yaw == 50,
            "the turned head relayed",
        )
        rec = theirs(obs, player).record
        assert rec.position == pytest.approx((800.0, 900.0, 128.0), abs=1 / 16)  # feet on the spawn point
        assert (rec.yaw, rec.pitch, rec.roll_deg, rec.move, rec.strafe) == (50, 15, 10, 0, 0)
        assert rec.lifebit == player.link.core.lifesequence & 1
        # walk forward with the stick for a second (2 m/s): the walking animation, then standing still
        player.frame = frame(move=(0.0, 1.0))
        run(cs, player, 3, lambda: theirs(obs, player).record.move == 1, "the walking animation")
        run(cs, player, 1.0)
        walking = theirs(obs, player).record
        assert walking.vel == 16 and walking.strafe == 0  # 2 m/s = 16 units/s
        dx, dy = walking.position[0] - 800.0, walking.position[1] - 900.0
        # along the spawn's heading (yaw 30: the game's forward is (−sin, cos))
        assert math.hypot(dx, dy) > 8 and math.degrees(math.atan2(-dx, dy)) == pytest.approx(30.0, abs=3)
        player.frame = frame()
        run(cs, player, 3, lambda: theirs(obs, player).record.move == 0, "standing still again")
        assert player.sink.check.records > 25 and player.sink.check.angle_err_max < 1.0
    finally:
        player.sink.close()
        cs.close()


def test_the_speed_cap_bites_says_so_and_keeps_us_in(server):
    """30 m/s on the stick (240 units/s) for 7 s: every record says 179, the status line says the
    cap bit, the server never kicks (it would after 3 s over 180, once 3 s of the game have gone)."""
    cs = Clients()
    player = Player(server, "fast", move_speed=30.0)
    try:
        obs = cs.add(server, "obs2")
        run(cs, player, 8, lambda: player.link.live and obs.core.state is State.ALIVE, "both in game")
        player.frame = frame(move=(0.0, 1.0))
        run(cs, player, 7.0)
        rec = theirs(obs, player).record
        assert rec.vel == 179 and rec.move == 1 and player.link.core.last_disconnect is None
        detail = player.sink.status(time.monotonic()).detail
        assert detail.startswith("speed capped: 240 → 179 units/s (the server kicks at 180)"), detail
        assert player.sink.check.capped > 150 and player.sink.check.speed_max == pytest.approx(240.0)
        assert math.dist(rec.position[:2], WORLD.spawn[:2]) > 1000  # the position moves at the rig's speed
    finally:
        player.sink.close()
        cs.close()


def test_a_map_change_and_a_death_reanchor_at_the_spawn_and_the_records_go_on(server):
    cs = Clients()
    player = Player(server, "vr2")
    try:
        admin = cs.add(server, "admin")
        run(cs, player, 8, lambda: player.link.live and admin.core.state is State.ALIVE, "both in game")
        claim_admin(admin, server)
        player.frame = frame(move=(0.0, 1.0))  # walk away from the spawn point
        run(cs, player, 1.5)
        player.frame = frame()
        run(cs, player, 0.2)
        away = player.link.core.last_record.position
        assert math.dist(away[:2], WORLD.spawn[:2]) > 8
        force_map(admin, "dust2", MODE_INSTAGIB)
        run(
            cs,
            player,
            5,
            lambda: (
                player.link.core.map == "dust2"
                and player.link.live
                and player.sink.anchor is not None
                and player.link.spawns == 2
            ),
            "the map change's spawn",
        )
        run(
            cs,
            player,
            3,
            lambda: (
                (p := theirs(admin, player)) is not None
                and p.record is not None
                and p.record.lifebit == player.link.core.lifesequence & 1
            ),
            "a record of the new map",
        )
        assert theirs(admin, player).record.position[:2] == pytest.approx(WORLD.spawn[:2], abs=1 / 16)
        player.frame = frame(move=(0.0, 1.0))
        run(cs, player, 1.0)
        player.frame = frame()
        life = player.link.core.lifesequence
        shoot(admin, player.link.core.cn, theirs(admin, player).lifesequence)
        run(
            cs,
            player,
            5,
            lambda: player.link.core.lifesequence not in (life, -1) and player.link.live and player.link.spawns == 3,
            "the respawn",
        )
        assert "killed by admin" in player.link.texts[-1] or player.link.core.counters.deaths == 1
        run(
            cs,
            player,
            3,
            lambda: (
                theirs(admin, player).record is not None
                and theirs(admin, player).record.lifebit == player.link.core.lifesequence & 1
            ),
            "a record of the new life",
        )
        assert theirs(admin, player).record.position[:2] == pytest.approx(WORLD.spawn[:2], abs=1 / 16)
        # a kick: the status names it and the link comes back by itself (the ban cleared meanwhile)
        admin.core.send_message(build(Msg.N_KICK, player.link.core.cn, "test"))
        run(cs, player, 3, lambda: player.link.core.last_disconnect is not None, "the kick")
        assert player.link.core.last_disconnect.reason == DISC_KICK
        status = player.sink.status(time.monotonic())
        assert status.state == "reconnecting" and "kicked/banned (DISC_KICK)" in status.detail and not status.live
        admin.core.send_message(build(Msg.N_CLEARBANS))
        run(cs, player, 20, lambda: player.link.live and player.link.spawns == 4, "the rejoin")
    finally:
        player.sink.close()
        cs.close()


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_run_mock_tour_streams_through_a_map_change_and_a_death_without_a_kick(tmp_path):
    """`headcast run --mock tour --sauer HOST`: 20 s (HEADCAST_LONG=1: 5 minutes) with a second
    client watching and forcing, a third of the way in, a map change (instagib) and, two thirds in,
    a death (a rifle hit)."""
    need_server()
    duration = 300.0 if LONG else 20.0
    with LocalSauerServer() as server:
        cs = Clients()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_", "XR_"))}
        # Files, not pipes: a status line every 0.5 s fills a pipe nobody reads in about a minute,
        # and the run would block writing it.
        out_path, err_path = tmp_path / "run.out", tmp_path / "run.err"
        with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "headcast.app",
                    "run",
                    "--mock",
                    "tour",
                    "--no-mirror",
                    "--json",
                    "--duration",
                    str(duration),
                    "--sauer",
                    f"127.0.0.1:{server.port}",
                ],
                cwd=REPO,
                env=env,
                stdout=out_file,
                stderr=err_file,
                text=True,
            )
        try:
            admin = cs.add(server, "admin")
            cs.join(server, admin)
            claim_admin(admin, server)
            seen = []
            vr = lambda: next((p for p in admin.core.players.values() if p.name == "headcast"), None)  # noqa: E731

            def watch(now):
                p = vr()
                if p is not None and p.record is not None and (not seen or p.record is not seen[-1][1]):
                    seen.append((now, p.record, p.lifesequence))

            cs.until(lambda: seen, 30, "the VR player's first record", watch, server=server)
            start = seen[0][0]
            cs.until(lambda: time.monotonic() > start + duration / 3, duration, "a third of the run", watch)
            force_map(admin, "dust2", MODE_INSTAGIB)
            cs.until(
                lambda: admin.core.map == "dust2" and admin.core.state is State.ALIVE,
                5,
                "the map change",
                watch,
                server=server,
            )
            cs.until(lambda: time.monotonic() > start + 2 * duration / 3, duration, "two thirds of the run", watch)
            cs.until(
                lambda: vr() is not None and vr().state == 0 and vr().lifesequence >= 0,
                5,
                "the VR player alive on the new map",
                watch,
            )
            life = vr().lifesequence
            shoot(admin, vr().cn, life)
            cs.until(
                lambda: vr() is not None and vr().lifesequence not in (life, -1),
                6,
                "the VR player's respawn",
                watch,
                server=server,
            )
            cs.until(lambda: proc.poll() is not None, duration + 30, "the run's end", watch)
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.wait(timeout=30)
            cs.close()
        out, err = out_path.read_text(), err_path.read_text()
        lines = _json_lines(out)
        summary = lines[-1]
        assert proc.returncode == 0, err[-3000:]
        sauer = summary["sinks"][2]
        assert sauer["name"] == "sauer" and sauer["outcome"].startswith("joined at"), sauer
        assert sauer["sent"] > 25 * duration * 0.8, sauer  # ~30 records a second, the tracking loss aside
        statuses = [st["sinks"][2] for st in lines if st.get("type") == "status"]
        assert all(s["state"] in ("connecting", "joining", "loading", "in game", "dead") for s in statuses), sorted(
            {s["state"] for s in statuses}
        )  # never kicked, never reconnecting
        assert "reconnect" not in " ".join(s["detail"] for s in statuses)
        assert "DISC_" not in server.log_tail(200) and "disconnected because" not in server.log_tail(200)
        recs = [r for _, r, _ in seen]
        lives = {ls for _, _, ls in seen}
        assert len(lives) >= 3  # first spawn, the map change's, the death's
        assert all(r.lifebit == ls & 1 for _, r, ls in seen)  # every record in the parity of its life
        yaws = {r.yaw for r in recs}
        assert len(yaws) > 20 and max(r.pitch for r in recs) >= 35 and min(r.pitch for r in recs) <= -35
        assert max(abs(r.roll_deg) for r in recs) >= 25  # the tour tilts the head 30°
        assert {(r.move, r.strafe) for r in recs} >= {(1, 0), (0, -1)}  # walking forward, strafing right
        assert max(r.vel for r in recs) == round(2.0 * UNITS_PER_METRE)  # the stick's 2 m/s
        gaps = [b - a for (a, *_), (b, *_) in zip(seen, seen[1:])]
        # the longest pause: the tour's second without tracking, or a respawn; never a kick's
        assert max(gaps) < 3.0


def _live_player(server, name):
    """A Player stepped at 90 Hz until the server has it in game (at most 8 s)."""
    player = Player(server, name)
    end = time.monotonic() + 8
    while not player.link.live and time.monotonic() < end:
        player.step(time.monotonic())
        time.sleep(1 / 90)
    assert player.link.live, player.link.detail
    return player


def _count_polls(player):
    """The link's polls from now on, each True when it serviced ENet."""
    polls = []
    real = player.link.poll

    def counted(now, full=False):
        did = real(now, full)
        polls.append(did)
        return did

    player.link.poll = counted
    return polls


def test_alone_in_game_the_link_services_enet_when_a_datagram_or_a_timer_asks(server):
    """Alive, the link's poll (every frame here) services ENet only when the socket has a datagram
    or the core's next timer falls due (a ping every 250 ms): not every 50 ms as well, since each
    position's flush (30 Hz) already sends ENet's own pings and acknowledgements (its resends wait
    for a service: the next test). Alone on the server the
    datagrams are the pongs and ENet's pings: well under 20 services a second (the 50-ms floor),
    and the pings, the positions and the join stay as they were."""
    player = _live_player(server, "alone")
    try:
        clock = time.monotonic
        polls = _count_polls(player)
        pings0, sent0 = player.link.core.counters.packets_out, player.sink.check.records
        t0 = clock()
        while clock() - t0 < 3.0:
            player.step(clock())
            time.sleep(1 / 90)
        seconds = clock() - t0
        serviced = sum(polls) / seconds
        assert 4 <= serviced < 15, f"{serviced:.1f} services a second over {len(polls)} polls"
        assert player.link.live and player.link.ping_ms is not None
        records = player.sink.check.records - sent0
        assert records >= 60  # the positions at ~30 Hz go on (a loaded machine steps late: >= 20 Hz)
        assert player.link.core.counters.packets_out - pings0 - records >= 8  # pings (4 Hz) and their N_CLIENTPINGs
    finally:
        player.sink.close()


def test_reliable_data_in_transit_is_seen_until_the_server_acknowledges_it(server):
    """The link's cadence rests on `SauerClient.resends_pending()`: ENet's count of reliable data
    sent and not yet acknowledged, read from the real ENet peer. A reliable ping handed to ENet and
    flushed is in transit until a service reads the server's acknowledgement (a flush alone never
    reads it); then it is not."""
    player = _live_player(server, "reliable")
    try:
        client, core = player.link.client, player.link.core
        polls_done = 0
        while client.resends_pending() and polls_done < 100:  # nothing of the join left in transit
            client.poll(time.monotonic(), positions=False)
            polls_done += 1
            time.sleep(0.01)
        assert not client.resends_pending()
        core.send_message(build(Msg.N_PING, int(time.monotonic() * 1000) & 0x7FFFFFFF), reliable=True)
        client.send_due(time.monotonic())
        assert client.resends_pending()  # on the wire, its acknowledgement not read yet
        end = time.monotonic() + 3
        while client.resends_pending() and time.monotonic() < end:
            client.poll(time.monotonic(), positions=False)
            time.sleep(0.005)
        assert not client.resends_pending()
        assert player.link.live
    finally:
        player.sink.close()


def test_while_reliable_data_waits_for_its_ack_the_link_services_enet_every_50_ms(server):
    """ENet resends lost reliable data, and notices a peer gone, only in a service, never in a
    flush: while `resends_pending()` the alive link services at least every POLL_EVERY (50 ms), as
    it did before the alive cadence went to 250 ms. Loopback loses nothing, so the pending state is
    held on by a stand-in for ENet's count; the services are the real ones."""
    from headcast.app.sinks.sauer.link import POLL_EVERY

    player = _live_player(server, "resends")
    try:
        polls = _count_polls(player)
        player.link.client.resends_pending = lambda: True
        clock = time.monotonic
        t0 = clock()
        while clock() - t0 < 2.0:
            player.step(clock())
            time.sleep(1 / 90)
        serviced = sum(polls) / (clock() - t0)
        assert serviced >= 0.8 / POLL_EVERY, f"{serviced:.1f} services a second over {len(polls)} polls"
        assert player.link.live
    finally:
        player.sink.close()
