"""SauerClientCore over ENet against the real Sauerbraten 2020 Edition server (Debian 12's
cube2-server, protocol 260) on 127.0.0.1: join and spawn, our records relayed byte for byte to a
second client through a map change and a death, the speed kick at 180 units/s (and none at 179),
a kick and an IP ban named and reconnected after, a server restart, passwords, the info query."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from headcast.netcode.sauer import events as sc
from headcast.netcode.sauer.client import Pose, State
from headcast.netcode.sauer.localserver import LocalSauerServer
from headcast.netcode.sauer.messages import build
from headcast.netcode.sauer.npos import encode_npos
from headcast.netcode.sauer.protocol import DISC_IPBAN, DISC_KICK, DISC_MSGERR, DISC_PASSWORD, MODE_INSTAGIB, Msg

from sauer_support import Clients, claim_admin, force_map, need_server, shoot
from support import REPO

pytestmark = pytest.mark.live

POSE = Pose(eye=(600.0, 700.0, 526.0), yaw=123.4, pitch=-21.7, roll=14.9, vel=(30.0, 90.0, 0.0), move=1, strafe=-1)


class Sent:
    """Every record a client sent (wrapping its core's position step)."""

    def __init__(self, c) -> None:
        self.records: list = []
        core = c.core
        step = core._send_position

        def wrapped():
            step()
            if core.last_record is not None and (not self.records or self.records[-1] is not core.last_record):
                self.records.append(core.last_record)

        core._send_position = wrapped


def test_join_spawn_and_our_records_relayed_byte_for_byte(sauer_server, clients):
    vr, obs = clients.add(sauer_server, "vrA"), clients.add(sauer_server, "obs")
    vr.core.pose = POSE
    sent = Sent(vr)
    clients.join(sauer_server, vr, obs)
    assert vr.core.cn != obs.core.cn and vr.core.lifesequence >= 1
    seen: list = []

    def each(now: float) -> None:
        # a new yaw every tick, so that each record differs; collect each one the observer accepts
        vr.core.pose = dataclasses.replace(POSE, yaw=(now * 40.0) % 360.0)
        p = obs.core.players.get(vr.core.cn)
        if p is not None and p.record is not None and (not seen or p.record is not seen[-1]):
            seen.append(p.record)

    clients.until(lambda: len(seen) >= 30, 5, "30 relayed records", each=each)
    assert all(r in sent.records for r in seen)  # each one we sent, unchanged
    assert len({r.yaw for r in seen}) > 10
    rec = seen[-1]
    assert encode_npos(rec) == encode_npos(sent.records[sent.records.index(rec)])
    assert (rec.cn, rec.pitch, rec.roll_deg, rec.move, rec.strafe) == (vr.core.cn, -22, 14, 1, -1)  # int(68.3) - 90
    assert rec.eye() == (600.0, 700.0, 526.0) and rec.vel == 94  # |(30, 90)| truncated
    assert obs.core.players[vr.core.cn].name == "vrA"
    assert vr.core.ping_ms is not None and vr.core.ping_ms < 100


def test_map_change_and_a_death_keep_the_relay_going(sauer_server, clients):
    vr, obs = clients.add(sauer_server, "vrB"), clients.add(sauer_server, "admin")
    vr.core.pose = POSE
    clients.join(sauer_server, vr, obs)
    claim_admin(obs, sauer_server)
    clients.pump(0.3)
    force_map(obs, "dust2", MODE_INSTAGIB)
    clients.until(
        lambda: vr.core.map == "dust2" and vr.core.state is State.ALIVE and obs.core.state is State.ALIVE,
        5,
        "the new map's spawn",
        server=sauer_server,
    )
    assert clients.of(vr, sc.MapChanged)[-1] == sc.MapChanged("dust2", MODE_INSTAGIB)
    theirs = lambda: obs.core.players.get(vr.core.cn)  # noqa: E731
    clients.until(
        lambda: (
            theirs() is not None and theirs().record is not None and theirs().record.lifebit == vr.core.lifesequence & 1
        ),
        3,
        "a record after the map change",
    )
    life = vr.core.lifesequence
    shoot(obs, vr.core.cn, theirs().lifesequence)  # instagib: one rifle hit kills
    clients.until(lambda: clients.of(vr, sc.Killed), 3, "our death", server=sauer_server)
    assert clients.of(vr, sc.Killed)[-1].by == "admin"
    clients.until(lambda: vr.core.state is State.ALIVE and vr.core.lifesequence != life, 5, "the respawn")
    assert vr.core.lifesequence == (life + 1) & 0x7F
    clients.until(
        lambda: theirs().record is not None and theirs().record.lifebit == vr.core.lifesequence & 1,
        3,
        "a record with the new life's parity",
    )
    assert vr.core.counters.deaths == 1 and vr.core.counters.spawns == 3


def test_speed_check_kicks_at_180_not_at_179():
    need_server()
    with LocalSauerServer() as server:
        cs = Clients()
        try:
            ok, fast = cs.add(server, "slow"), cs.add(server, "fast")
            ok.core.pose = Pose(eye=(500.0, 500.0, 514.0), yaw=0, pitch=0, roll=0, vel=(0.0, 179.0, 0.0))
            fast.core.pose = Pose(eye=(520.0, 500.0, 514.0), yaw=0, pitch=0, roll=0, vel=(0.0, 180.0, 0.0))
            cs.join(server, ok, fast)
            # the first PUSHMILLIS (3 s) + RTT of a game do not count; then 3 s + RTT exceeded
            cs.until(lambda: cs.of(fast, sc.Disconnected), 10, "the speed kick", server=server)
            kick = cs.of(fast, sc.Disconnected)[0]
            assert kick.reason == DISC_MSGERR and "message error (DISC_MSGERR)" in kick.text
            cs.pump(1.0)
            assert not cs.of(ok, sc.Disconnected) and ok.core.state is State.ALIVE
        finally:
            cs.close()


def test_a_kick_and_an_ip_ban_are_named_and_we_come_back(sauer_server, clients):
    vr, obs = clients.add(sauer_server, "vrC"), clients.add(sauer_server, "admin2")
    vr.core.pose = POSE
    clients.join(sauer_server, vr, obs)
    claim_admin(obs, sauer_server)
    clients.pump(0.3)
    obs.core.send_message(build(Msg.N_KICK, vr.core.cn, "test"))
    clients.until(lambda: len(clients.of(vr, sc.Disconnected)) >= 2, 6, "the kick and the ban")
    kick, ban = clients.of(vr, sc.Disconnected)[:2]
    assert (kick.reason, kick.was_in_game, ban.reason) == (DISC_KICK, True, DISC_IPBAN)
    assert kick.text == "server disconnected us: kicked/banned (DISC_KICK)"
    assert ban.text == "server disconnected us: ip is banned (DISC_IPBAN)"
    obs.core.send_message(build(Msg.N_CLEARBANS))
    clients.until(
        lambda: vr.core.state is State.ALIVE, 12, "the rejoin after the bans were cleared", server=sauer_server
    )


def test_server_restart_is_survived():
    need_server()
    with LocalSauerServer() as server:
        cs = Clients()
        try:
            vr = cs.add(server, "vrD")
            vr.core.pose = POSE
            cs.join(server, vr)
            server.restart()  # SIGKILL, then the same port again
            cs.until(
                lambda: cs.of(vr, sc.ServerSilent) or cs.of(vr, sc.Disconnected), 8, "the silence or the disconnect"
            )
            cs.until(
                lambda: cs.of(vr, sc.Disconnected) and vr.core.state is State.ALIVE, 15, "the rejoin", server=server
            )
            # the restarted server may answer our stale ENet peer with a disconnect before our
            # silence timer fires: either way the client names it and joins again
            text = cs.of(vr, sc.Disconnected)[0].text
            assert "went silent" in text or "server disconnected us" in text, text
            assert vr.core.counters.connects >= 2  # a loaded machine may need a second connect attempt
        finally:
            cs.close()


def test_passwords():
    need_server()
    with LocalSauerServer(password="s3cret ü") as server:
        cs = Clients()
        try:
            good, bad, none = (
                cs.add(server, "good", password="s3cret ü"),
                cs.add(server, "bad", password="x"),
                cs.add(server, "none"),
            )
            cs.until(
                lambda: (
                    good.core.state is State.ALIVE
                    and bad.core.state is State.CLOSED
                    and none.core.state is State.CLOSED
                ),
                6,
                "the three answers",
                server=server,
            )
            for c in (bad, none):
                assert c.core.last_disconnect.reason == DISC_PASSWORD and c.core.last_disconnect.retry_in is None
            info = server.info()
            assert info.password and info.players == 1
        finally:
            cs.close()


def test_probe_sauer_against_the_server(sauer_server, clients):
    vr = clients.add(sauer_server, "probed")
    clients.join(sauer_server, vr)
    clients.pump(0.3)
    r = subprocess.run(
        [sys.executable, "-m", "headcast.app", "probe", "sauer", "--json", f"127.0.0.1:{sauer_server.port}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["protocol"], out["compatible"], out["password"], out["mastermode_name"]) == (260, True, False, "open")
    assert out["description"] == "headcast test" and out["max_players"] == 8 and out["players"] >= 1
    assert "probed" in [p["name"] for p in out["players_listed"]]
    text = subprocess.run(
        [sys.executable, "-m", "headcast.app", "probe", "sauer", f"127.0.0.1:{sauer_server.port}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert text.returncode == 0 and "protocol 260, mastermode open (0), password no" in text.stdout
    assert "probed" in text.stdout
