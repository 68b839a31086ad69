"""A hostile server ends its own sink, not the run (issue 27): the failing sink is named in the
status line, the summary and --json, the other sinks stream on (a real styly-netsync-server on
127.0.0.1), every server gets its disconnect and the summary is printed.

The hostile servers are scripted here — no real server misbehaves on demand: a Quake 3 server
that keeps resending sv_pure gamestates and never acknowledges our `cp` (tests/q3/
test_hostile_server.py), and a Sauerbraten server over real ENet that sends one channel-1 packet of
1,000 nested N_CLIENT headers (tests/sauer/test_hostile_server.py). Both on 127.0.0.1, each run
bounded (--duration, subprocess timeout, the servers' own time limit)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile

import pytest

from support import REPO, cli_env

pytestmark = pytest.mark.live


def _run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "headcast.app", *args],
        cwd=REPO,
        env=cli_env(HEADCAST_RUN_CONNECT_TIMEOUT="20"),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _check(r: subprocess.CompletedProcess, name: str, words: str, other: str) -> dict:
    """The run went on to its duration with exit 0; `name` failed with `words`; `other` streamed
    after the failure. Returns the summary."""
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    lines = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["stopped"].startswith("ran for "), summary["stopped"]
    sinks = {s["name"]: s for s in summary["sinks"]}
    assert words in (sinks[name]["failure"] or ""), sinks[name]
    assert "failed:" in sinks[name]["outcome"]
    assert sinks[other]["failure"] is None and sinks[other]["outcome"].startswith("joined at "), sinks[other]
    statuses = [ln for ln in lines if ln["type"] == "status"]
    failed_at = next(
        ln["t"] for ln in statuses if any(s["name"] == name and s["state"] == "failed" for s in ln["sinks"])
    )
    later = [ln for ln in statuses if ln["t"] > failed_at + 1.0]
    assert later, "the run did not go on after the failure"
    for ln in later:
        st = {s["name"]: s for s in ln["sinks"]}
        assert st[name]["state"] == "failed" and words in st[name]["detail"], st[name]
        assert st[other]["send_hz"] > 5, st[other]  # still streaming
    assert f"{name}: stopped on the server's data" in r.stderr  # the notice, one line, as it happened
    return summary


def _netsync(server) -> str:
    a = server.address
    return f"{a.host}:{a.dealer_port}:{a.pub_port}:{a.transform_port}"


def test_a_q3_server_that_never_acks_cp_ends_only_the_q3_sink(tmp_path, netsync_server):
    from q3.test_hostile_server import HostilePureServer

    pk3 = tmp_path / "pak0.pk3"
    with zipfile.ZipFile(pk3, "w") as z:
        z.writestr("vm/cgame.qvm", b"c")
        z.writestr("vm/ui.qvm", b"u")
    srv = HostilePureServer(interval=0.02, limit=60.0)
    srv.start()
    try:
        host, port = srv.address
        r = _run(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--duration",
            "7",
            "--q3",
            f"{host}:{port}",
            "--pk3",
            str(pk3),
            "--netsync",
            _netsync(netsync_server),
        )
        t_end = time.monotonic() + 3.0
        while "disconnect" not in srv.commands and time.monotonic() < t_end:
            time.sleep(0.01)
    finally:
        srv.stop()
    _check(r, "q3", "acknowledged none of our last 64 reliable commands", "netsync")
    assert "disconnect" in srv.commands


def test_a_sauer_packet_of_1000_nested_n_client_headers_is_a_counted_drop(netsync_server):
    """The packet that raised RecursionError and ended the run (defect 2), over real ENet: now read
    as the game reads it; the unknown type after the nest is a counted drop; the Sauerbraten sink
    stays up (never let in: this server sends no welcome), NetSync streams, exit 0."""
    from sauer.test_hostile_server import HostileSauerServer, nested_clients

    from headcast.netcode.sauer.messages import build
    from headcast.netcode.sauer.protocol import Msg

    packet = nested_clients(1000, build(Msg.N_SERVMSG, "deep")) + bytes([0x7E])
    srv = HostileSauerServer(packet, limit=60.0)
    srv.start()
    try:
        r = _run(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--duration",
            "5",
            "--sauer",
            f"127.0.0.1:{srv.port}",
            "--netsync",
            _netsync(netsync_server),
        )
        t_end = time.monotonic() + 3.0
        while not srv.disconnected and time.monotonic() < t_end:
            time.sleep(0.01)
    finally:
        srv.stop()
    assert "Traceback" not in r.stderr and r.returncode == 0, (r.returncode, r.stderr[-3000:])
    assert srv.sent >= 1 and srv.disconnected  # it got our ENet disconnect
    lines = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    summary = lines[-1]
    sinks = {s["name"]: s for s in summary["sinks"]}
    assert summary["type"] == "summary" and summary["stopped"] == "ran for 5 s"
    ((reason, count),) = sinks["sauer"]["drops"].items()  # the one drop: the unknown type after the nest
    assert count == 1 and reason.startswith("channel 1: unknown message type 126"), sinks["sauer"]
    assert sinks["netsync"]["outcome"].startswith("joined at ")
    statuses = [ln for ln in lines if ln["type"] == "status" and ln["t"] > 2.5]
    assert statuses and all({s["name"]: s for s in ln["sinks"]}["netsync"]["send_hz"] > 5 for ln in statuses)
