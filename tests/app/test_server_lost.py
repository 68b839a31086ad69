"""A server that dies mid-run is in the status line, the summary and the exit status (issue 25 item 4).

Real servers on 127.0.0.1, killed by their PID (SIGKILL: no goodbye) while `headcast run --mock`
streams to them. Before: the NetSync line said "server silent … (still sending)" and then showed
a stale "relay 44 ms" for the rest of the run; the summary said "joined at 0.2 s; 63 poses sent;
disconnected" and the exit status was 0. Now the status line says the server is lost and for how
long, with no round trip; the summary says when it was lost and that it never came back; exit 3
(README: no answer).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from support import REPO, cli_env, wait_for

pytestmark = pytest.mark.live


class Headcast:
    """A `headcast` subprocess whose output lines are read as they come (threads)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "headcast.app", *args],
            cwd=REPO,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(s, b), daemon=True)
            for s, b in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for t in self._readers:
            t.start()

    def _read(self, stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def finish(self, timeout: float) -> None:
        self.proc.wait(timeout=timeout)
        for t in self._readers:
            t.join(timeout=10)


def _status_lines(hc: Headcast) -> list[dict]:
    out = []
    for line in hc.out:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        out.append(msg)
    return out


def _sink(msg: dict, name: str) -> dict:
    return next(s for s in msg["sinks"] if s["name"] == name)


def _killed_mid_run(hc: Headcast, name: str, kill, duration: float) -> tuple[float, list[dict]]:
    """Wait until `name` streams with a round trip, kill its server, let the run end; (run time at
    the kill, every JSON line)."""

    def streaming():
        lines = [m for m in _status_lines(hc) if m.get("type") == "status"]
        return lines and _sink(lines[-1], name)["ping_ms"] is not None and lines[-1]

    last = wait_for(streaming, 30, f"{name} to stream with a round trip")
    kill()
    killed_at = last["t"]
    hc.finish(timeout=duration + 30)
    return killed_at, _status_lines(hc)


def test_a_netsync_server_that_dies_mid_run_is_in_the_status_the_summary_and_the_exit_code(tmp_path):
    from headcast.netcode.netsync.localserver import LocalNetSyncServer

    srv = LocalNetSyncServer(None, log_dir=tmp_path)
    srv.start(timeout=60)
    try:
        a = srv.address
        hc = Headcast(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--duration",
            "12",
            "--json",
            "--netsync",
            f"127.0.0.1:{a.dealer_port}:{a.pub_port}:{a.transform_port}",
        )
        try:
            killed_at, lines = _killed_mid_run(hc, "netsync", srv.proc.kill, 12)
        finally:
            if hc.proc.poll() is None:
                hc.proc.kill()
    finally:
        srv.close()
    assert hc.proc.returncode == 3, "".join(hc.err)[-2000:]
    statuses = [m for m in lines if m["type"] == "status"]
    late = [_sink(m, "netsync") for m in statuses if m["t"] > killed_at + 4.5]
    assert late, statuses[-1]
    for st in late:  # no stale round trip; lost, and for how long
        assert st["ping_ms"] is None and st["state"] == "server lost", st
        assert "nothing from the server for" in st["detail"], st
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["exit_code"] == 3
    ns = _sink(summary, "netsync")
    assert ns["lost"] and ns["lost"][0]["until"] is None and abs(ns["lost"][0]["at"] - killed_at) < 1.5, ns
    assert "lost the server at " in ns["outcome"] and "never came back" in ns["outcome"], ns["outcome"]
    (err,) = [ln for ln in hc.err if ln.startswith("headcast: error:")]
    assert "netsync: lost the server" in err and "never came back" in err, err


def test_a_quake3_server_that_dies_mid_run_is_in_the_summary_and_the_exit_code():
    from headcast.netcode.q3.localserver import LocalQ3Server

    with LocalQ3Server(kind="ioq3", pure=False) as server:
        host, port = server.address
        hc = Headcast(
            "run", "--mock", "look_around", "--no-mirror", "--duration", "10", "--json", "--q3", f"{host}:{port}"
        )
        try:
            killed_at, lines = _killed_mid_run(hc, "q3", server.kill, 10)
        finally:
            if hc.proc.poll() is None:
                hc.proc.kill()
    assert hc.proc.returncode == 3, "".join(hc.err)[-2000:]
    statuses = [m for m in lines if m["type"] == "status"]
    late = [_sink(m, "q3") for m in statuses if m["t"] > killed_at + 4.5]
    assert late and all(st["ping_ms"] is None and st["state"] == "server lost" for st in late), late[-1:]
    q3 = _sink(lines[-1], "q3")
    assert q3["lost"] and q3["lost"][0]["until"] is None, q3
    assert "lost the server at " in q3["outcome"], q3["outcome"]


def test_a_sauerbraten_server_that_dies_mid_run_is_in_the_summary_and_the_exit_code():
    from headcast.netcode.sauer.localserver import LocalSauerServer

    with LocalSauerServer() as server:
        host, port = server.address
        hc = Headcast(
            "run", "--mock", "look_around", "--no-mirror", "--duration", "10", "--json", "--sauer", f"{host}:{port}"
        )
        try:
            killed_at, lines = _killed_mid_run(hc, "sauer", server.kill, 10)
        finally:
            if hc.proc.poll() is None:
                hc.proc.kill()
    assert hc.proc.returncode == 3, "".join(hc.err)[-2000:]
    statuses = [m for m in lines if m["type"] == "status"]
    late = [_sink(m, "sauer") for m in statuses if m["t"] > killed_at + 4.5]
    assert late and all(st["ping_ms"] is None and st["state"] == "server lost" for st in late), late[-1:]
    sauer = _sink(lines[-1], "sauer")
    assert sauer["lost"] and sauer["lost"][0]["until"] is None, sauer
    assert "lost the server at " in sauer["outcome"] and "never came back" in sauer["outcome"], sauer["outcome"]


def test_a_quake3_server_that_comes_back_is_a_noted_outage_not_a_failure():
    """Killed, then started again on the same port 5 s later: the summary says for how long it was
    lost and when it came back; the run is not failed for it (exit 0)."""
    from headcast.netcode.q3.localserver import LocalQ3Server

    with LocalQ3Server(kind="ioq3", pure=False) as server:
        host, port = server.address
        hc = Headcast(
            "run", "--mock", "look_around", "--no-mirror", "--duration", "16", "--json", "--q3", f"{host}:{port}"
        )
        try:

            def back():
                server.kill()
                lost = wait_for(
                    lambda: any(
                        m.get("type") == "status" and _sink(m, "q3")["state"] == "server lost"
                        for m in _status_lines(hc)
                    ),
                    15,
                    "the status to say server lost",
                )
                server.start()
                return lost

            killed_at, lines = _killed_mid_run(hc, "q3", back, 16)
        finally:
            if hc.proc.poll() is None:
                hc.proc.kill()
    assert hc.proc.returncode == 0, "".join(hc.err)[-2000:]
    q3 = _sink(lines[-1], "q3")
    assert len(q3["lost"]) == 1 and q3["lost"][0]["until"] is not None, q3
    at, until = q3["lost"][0]["at"], q3["lost"][0]["until"]
    assert f"lost the server at {at:.1f} s for {until - at:.1f} s (back at {until:.1f} s)" in q3["outcome"], q3
