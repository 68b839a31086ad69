"""The swarm's players as Locust users: Locust headless with a master and two workers on
127.0.0.1 against a real styly-netsync-server (the current release), and headcast's report
checked against Locust's own stats (the files it writes: its final --json-file, its --csv) and
against the server's log."""

from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from headcast.app.swarm import locust_run
from headcast.app.swarm.locust_stats import row
from headcast.app.swarm.players import Server
from headcast.netcode.netsync.localserver import LocalNetSyncServer, free_port

from support import wait_for

# --- Locust's files, read as Locust writes them ----------------------------------------------------


def locust_percentile(response_times: dict, n: int, percent: float) -> float:
    """Locust's percentile over its rounded response times (its stats.py
    calculate_response_time_percentile): the largest time with more than (1 - percent) of the
    requests at or above it."""
    want, seen = int(n * percent), 0
    for t in sorted(response_times, key=float, reverse=True):
        seen += response_times[t]
        if n - seen <= want:
            return float(t)
    return 0.0


def from_json(path: Path) -> dict:
    """The rows of Locust's `--json-file NAME` (NAME.json, written after the run)."""
    rows = []
    for e in json.loads(path.read_text()):
        n = e["num_requests"]
        rows.append(
            {
                "type": e["method"],
                "name": e["name"],
                "requests": n,
                "failures": e["num_failures"],
                "median_ms": locust_percentile(e["response_times"], n, 0.5) if n else None,
                "max_ms": float(e["max_response_time"]) if n else None,
                "total_bytes": int(e["total_content_length"]),
            }
        )
    return {"rows": rows}


def from_csv(prefix: Path) -> dict:
    """The rows of Locust's `--csv PREFIX` (PREFIX_stats.csv, rewritten each second of the run)."""
    with open(f"{prefix}_stats.csv", newline="") as f:
        return {
            "rows": [
                {
                    "type": r["Type"],
                    "name": r["Name"],
                    "requests": int(r["Request Count"]),
                    "failures": int(r["Failure Count"]),
                }
                for r in csv.DictReader(f)
                if r["Type"]
            ]
        }


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=300),
    st.sampled_from([0.5, 0.95, 0.99, 1.0]),
)
def test_locust_percentile_is_an_order_statistic(values, q):
    """The reader's percentile of n times is the (int(n·q)+1)-th smallest (the max for q = 1)."""
    times: dict[str, int] = {}
    for v in values:
        times[str(v)] = times.get(str(v), 0) + 1  # JSON keys are strings
    n = len(values)
    assert locust_percentile(times, n, q) == float(np.sort(values)[min(n, int(n * q) + 1) - 1])


USERS, RATE, SECONDS = 20, 10, 10
WORKERS = 2


@pytest.fixture
def netsync_server(tmp_path):
    srv = LocalNetSyncServer(log_dir=tmp_path / "server")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def _run_locust(tmp_path, srv) -> tuple[int, str]:
    a = srv.address
    server = Server("127.0.0.1", a.dealer_port, a.pub_port, a.transform_port)
    port = free_port()
    master = locust_run.command(
        "netsync",
        server,
        USERS,
        RATE,
        SECONDS,
        report=tmp_path / "report",
        csv=tmp_path / "locust",
        json_file=tmp_path / "locust_stats",
        role="master",
        master_port=port,
        expect_workers=WORKERS,
    )
    worker = locust_run.command("netsync", server, 0, 0, 0, role="worker", master_port=port)
    logs = [open(tmp_path / f"{name}.log", "w") for name in ("master", "worker1", "worker2")]
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen(master, cwd=tmp_path, stdout=logs[0], stderr=subprocess.STDOUT))
        for log in logs[1:]:
            procs.append(subprocess.Popen(worker, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT))
        rc = procs[0].wait(SECONDS + 60)  # start-up, ramp, run, the workers' final states, report
        for p in procs[1:]:
            p.wait(30)  # workers quit when the master tells them
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    return rc, (tmp_path / "master.log").read_text()


@pytest.mark.live
def test_master_and_two_workers_against_netsync(tmp_path, netsync_server):
    rc, master_log = _run_locust(tmp_path, netsync_server)
    netsync_server.stop()  # its totals are logged at its end
    server_log = netsync_server.log_path.read_text()

    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["processes"] == WORKERS and rep["incomplete_processes"] == 0, master_log[-3000:]
    ns = rep["protocols"]["netsync"]
    pl = ns["players"]
    assert pl["joined"] == USERS and pl["peak_active"] == USERS and pl["left"] == USERS, pl
    assert pl["kicked"] == 0 and pl["join_failed"] == 0 and pl["silent"] == 0, pl

    # Locust's final stats (its --json-file, written after the run) hold the same events.
    final = from_json(tmp_path / "locust_stats.json")
    send, receive, join = (row(final, "netsync", n) for n in ("send", "receive", "join"))
    relay, broadcast = row(final, "netsync", "relay"), row(final, "netsync", "broadcast")
    assert send["requests"] == ns["up"]["messages"] and send["total_bytes"] == ns["up"]["bytes"]
    assert receive["requests"] == ns["down"]["messages"] and receive["total_bytes"] == ns["down"]["bytes"]
    assert join["requests"] == USERS and join["failures"] == 0
    assert relay["requests"] - relay["failures"] == ns["relay"]["delivered"]
    assert relay["failures"] == ns["relay"]["lost"]
    # A player's first broadcast has no gap before it: one fewer gap per player.
    assert broadcast["requests"] == ns["down"]["broadcasts"] - USERS
    # Percentiles: ours within 1 % of exact, Locust's over times rounded to whole ms (10 ms
    # steps from 100 ms on): they agree within that rounding.
    assert abs(ns["relay_ms"]["p50"] - relay["median_ms"]) <= 1 + 0.06 * relay["median_ms"]
    assert abs(ns["relay_ms"]["max"] - relay["max_ms"]) <= 0.01
    # The report's own Locust section is the master's stats at its end: the same counts.
    for r in rep["locust"]["rows"]:
        f = row(final, r["type"], r["name"])
        assert (r["requests"], r["failures"], r["total_bytes"]) == (f["requests"], f["failures"], f["total_bytes"])
    assert rc == (1 if sum(r["failures"] for r in final["rows"]) else 0)  # Locust's exit code on failures

    # Locust's CSV is rewritten each second while it runs, not at the end: it may miss the last
    # second (the steady per-message rows by a second's share at most; the rare events, such as
    # slipped ticks when every player leaves at once, may all fall in it).
    # Locust's Aggregated row (its header's RPS) counts the sends only, added up over the workers
    with open(tmp_path / "locust_stats.csv", newline="") as f:
        at_once = {(r["Type"], r["Name"]): int(r["Request Count"]) for r in csv.DictReader(f)}
    assert at_once[("", "Aggregated")] == at_once[("netsync", "send")], at_once
    for r in from_csv(tmp_path / "locust")["rows"]:
        f = row(final, r["type"], r["name"])
        assert r["requests"] <= f["requests"], (r, f)
        if r["name"] in ("send", "receive", "broadcast"):
            assert r["requests"] >= f["requests"] * (1 - 2.0 / SECONDS), (r, f)

    # The server's view: every player got a client number; every message we sent was processed;
    # every control unicast it sent reached a player (ours is every message that is not a broadcast).
    assert len(re.findall(r"Assigned client number \d+ to device ID", server_log)) == USERS
    totals = re.search(
        r"Total messages processed: (\d+), Broadcasts sent: (\d+).*Control unicasts sent: (\d+)", server_log
    )
    assert totals, server_log[-2000:]
    processed, broadcasts_sent, unicasts = map(int, totals.groups())
    # A player's sockets close with LINGER 0: a pose still queued then is discarded (at most its last).
    assert ns["up"]["messages"] - USERS <= processed <= ns["up"]["messages"]
    assert unicasts == ns["down"]["messages"] - ns["down"]["broadcasts"]
    assert ns["down"]["broadcasts"] <= broadcasts_sent * USERS

    # What a server author reads: each player got the room at its 10 Hz; each worker's observer
    # matched its marked players' poses relayed.
    assert 7.0 <= ns["broadcast_hz"]["min"] and ns["broadcast_hz"]["max"] <= 11.0, ns["broadcast_hz"]
    # (Each worker's 4 marked players send 10 poses/s; the broadcast is latest-wins at 10 Hz, so
    # about half are superseded before one goes out. On a loaded machine a worker may take
    # seconds to start: counted over the seconds every player was in.)
    full = sum(1 for n in rep["series"]["netsync"]["active"] if n == USERS)
    assert full >= 2, rep["series"]["netsync"]["active"]
    assert ns["relay"]["delivered"] >= WORKERS * 4 * 10 * (full - 1) // 4, (ns["relay"], full)
    assert ns["relay_ms"]["p50"] < 250.0

    html = (tmp_path / "report.html").read_text()
    root = ET.fromstring(html.split("\n", 1)[1])
    assert "Locust" in "".join(root.itertext()) and len(root.findall(".//svg")) == 5


@pytest.mark.parametrize(
    "flags, says",
    [
        ((), "headcast: --headcast-port is required"),
        (
            ("--headcast-port", "27960", "--headcast-motion", "no_such_motion"),
            "headcast: --headcast-motion no_such_motion: no such motion file or shipped motion",
        ),
    ],
)
def test_bad_options_end_locust_with_one_line(tmp_path, flags, says):
    """Checked when Locust starts (on the master or a lone process), before any user."""
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(locust_run.locustfile()),
        "--headless",
        "-u",
        "1",
        "-t",
        "2s",
        "--headcast-proto",
        "q3",
        *flags,
    ]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and says in r.stderr + r.stdout, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_swarm_locust_flag_runs_the_players_under_locust(tmp_path, netsync_server):
    """`headcast swarm N --netsync … --locust`: Locust (one process) runs the N players against the
    real server; headcast's report and Locust's CSV are written, every player joined and left."""
    a = netsync_server.address
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "headcast.app",
        "swarm",
        "8",
        "--netsync",
        f"127.0.0.1:{a.dealer_port}:{a.pub_port}:{a.transform_port}",
        "--locust",
        "--duration",
        "6",
        "--spawn-rate",
        "8",
        "--report",
        str(out),
        "--csv",
        str(tmp_path / "locust"),
    ]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr[-3000:]  # Locust: 1 when any update was lost or a tick slipped
    assert "headcast swarm: Locust:" in r.stderr
    report = json.loads((out / "swarm.json").read_text())
    players = report["protocols"]["netsync"]["players"]
    assert players["joined"] == 8 and players["left"] == 8, players
    assert (out / "swarm.html").is_file() and (tmp_path / "locust_stats.csv").is_file()


def test_swarm_locust_flag_takes_one_protocol():
    r = subprocess.run(
        [sys.executable, "-m", "headcast.app", "swarm", "4", "--netsync", "127.0.0.1", "--q3", "127.0.0.1", "--locust"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "one protocol per Locust run" in r.stderr


def numbered_and_told(log_path, players: int = 6) -> bool:
    """The server numbered `players` clients and has sent the room its device-ID mappings since the
    last number (it assigns a number at once and sends the mappings up to 0.5 s later, debounced:
    a player is in only once its mapping came)."""
    log = log_path.read_text(errors="replace")
    last = log.rfind("Assigned client number")
    return log.count("Assigned client number") >= players and "Broadcasted ID mappings" in log[last:]


def joined_in_stats(prefix: Path, players: int = 6) -> bool:
    """The players themselves have joined: Locust's stats (its --csv, rewritten each second) count
    `players` successful "join" events, each fired when a player read its own device-ID mapping.
    The server's log says only that the mappings went out: on a loaded machine a player reads its
    own later, and a Ctrl-C in between ends the run with that player never in."""
    try:
        rows = from_csv(prefix)["rows"]
    except (OSError, KeyError, ValueError):  # not written yet, or caught mid-rewrite
        return False
    return sum(r["requests"] - r["failures"] for r in rows if r["name"] == "join") >= players


def test_swarm_locust_ctrl_c_stops_locust_cleanly_and_counts_the_leaves(tmp_path, netsync_server):
    """Ctrl-C (SIGINT to headcast's PID; Locust runs in its own process group, so a terminal's
    Ctrl-C reaches headcast only) mid-run: headcast sends Locust one SIGTERM (its clean stop, without
    gevent's printed KeyboardInterrupt), Locust's players leave
    before its report is made, and headcast ends as the native swarm does: the summary, "stopped":
    "interrupted (Ctrl-C)" in the report, Locust's exit code (not 130)."""
    a = netsync_server.address
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "swarm",
            "6",
            "--netsync",
            f"127.0.0.1:{a.dealer_port}:{a.pub_port}:{a.transform_port}",
            "--locust",
            "--duration",
            "60",
            "--spawn-rate",
            "20",
            "--report",
            str(out),
            "--csv",
            str(tmp_path / "locust"),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: numbered_and_told(netsync_server.log_path), 45, "the server to number every player and tell them"
        )
        # mid-run means every player in, as the players see it (not only as the server's log says)
        wait_for(lambda: joined_in_stats(tmp_path / "locust"), 30, "Locust's stats to count every player's join")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (0, 1), stderr[-3000:]  # Locust's: 1 only for a failure it counted
    assert "before the run started" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    report = json.loads((out / "swarm.json").read_text())
    players = report["protocols"]["netsync"]["players"]
    assert players["joined"] == 6 and players["left"] == 6 and players["active"] == 0, players
    assert report["run"]["stopped"] == "interrupted (Ctrl-C)"
    assert "NetSync (127.0.0.1:" in stdout and "6 joins" in stdout, stdout
