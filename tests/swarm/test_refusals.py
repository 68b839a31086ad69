"""What a run cannot do, said at once and plainly: an unwritable --report folder (exit 2,
before the run), nothing listening at a server's address (exit 3 in well under a second: the
ICMP port unreachable for UDP, a refused TCP connect for NetSync), and a full server (ioq3ded
with sv_maxclients 2: the players that never got in are counted, named with the server's words
and a hint, exit 1)."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

from headcast.app.commands.cli import main
from headcast.app.run.mock import find_motion
from headcast.app.swarm.cli import Swarm
from headcast.app.swarm.motion import Script
from headcast.app.swarm.players import Server
from headcast.netcode.q3.localserver import LocalQ3Server

from support import free_port


@pytest.mark.parametrize("bad", ["/proc/nope", "a-file"])
def test_a_bad_report_folder_exits_2_before_the_run(tmp_path, capsys, bad):
    if bad == "a-file":
        bad = str(tmp_path / "a-file")
        (tmp_path / "a-file").write_text("x")
    t = time.monotonic()
    assert main(["swarm", "2", "--q3", f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}", "--report", bad]) == 2
    assert time.monotonic() - t < 2.0
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"headcast: error: --report {bad}: ") and len(err.splitlines()) == 1, err
    assert list(tmp_path.iterdir()) in ([], [tmp_path / "a-file"])  # the test file went again


@pytest.mark.parametrize(
    "flag, kind", [("--q3", socket.SOCK_DGRAM), ("--sauer", socket.SOCK_DGRAM), ("--netsync", socket.SOCK_STREAM)]
)
def test_nothing_listening_exits_3_at_once_naming_the_address(capsys, flag, kind):
    port = free_port(kind)
    t = time.monotonic()
    assert main(["swarm", "3", flag, f"127.0.0.1:{port}", "--duration", "30"]) == 3
    assert time.monotonic() - t < 3.0  # not the 30 s of --duration
    err = capsys.readouterr().err.strip()
    assert f"127.0.0.1:{port}: nothing listens there" in err and len(err.splitlines()) == 1, err


def test_a_full_server_counts_the_players_that_never_got_in(tmp_path, capsys):
    with LocalQ3Server(kind="ioq3", extra_cvars={"sv_maxclients": "2"}) as q3:
        host, port = q3.address
        rc = main(
            [
                "swarm",
                "4",
                "--q3",
                f"{host}:{port}",
                "--duration",
                "4",
                "--spawn-rate",
                "20",
                "--motion",
                "look_around",
                "--report",
                str(tmp_path / "rep"),
            ]
        )
    out, err = capsys.readouterr()
    assert rc == 1, out + err
    # the server's own words: "Server is full." (ioq3 up to 1.36), "Server is full" (newer ioq3)
    words = "Server is full." if "Server is full." in err else "Server is full"
    said = f"2 of 4 players never got in: {words} (raise sv_maxclients; ioq3/OpenArena default 8)"
    assert said in out and said in err and len(err.strip().splitlines()) == 1, out + err
    report = json.loads((tmp_path / "rep" / "swarm.json").read_text())
    pl = report["protocols"]["q3"]["players"]
    assert pl["never_in"] == 2 and pl["started"] == 4 and pl["joined"] == 2
    assert pl["join_failed_reasons"].get(f"server refused: {words}", 0) >= 2  # refused attempts, counted apart
    assert said in (tmp_path / "rep" / "swarm.html").read_text()
    # the wall-clock start and the seed used, to repeat the run with --seed
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["started_utc"])
    assert isinstance(report["run"]["seed"], int)


def test_the_same_seed_gives_the_same_variation():
    script = Script.load(find_motion("look_around"))

    def variation(seed):
        swarm = Swarm({"q3": 5}, {"q3": Server("127.0.0.1", 27960)}, script, spawn_rate=10.0, seed=seed)
        try:
            return swarm.seed, [(p.var.offset, p.var.speed, p.var.spot) for _, p in swarm.loop._ramp]
        finally:
            swarm.stop()

    assert variation(7) == variation(7) != variation(8)
    assert variation(None)[0] != variation(None)[0]  # a random one, recorded
