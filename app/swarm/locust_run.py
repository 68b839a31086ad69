"""Run the swarm on Locust (`headcast swarm --locust`): the command line for the shipped
locustfile, and a bounded run of it.

Locust runs in its own process: importing it monkey-patches the standard library for gevent,
which headcast's own loop must not see. A team with several machines starts the same command
with `--master` on one and `--worker --master-host HOST` on the others (`command(role=...)`).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from headcast.app.swarm.players import Server

POLL = 0.1  # s between two looks at the stop request


def _own_group() -> tuple[dict, int]:
    """Popen's arguments for a process group of Locust's own (a terminal's Ctrl-C reaches headcast
    only), and the signal that is Locust's clean stop there: POSIX, a new process group and
    SIGTERM; Windows, CREATE_NEW_PROCESS_GROUP and CTRL_BREAK_EVENT (the locustfile makes its
    SIGBREAK a Ctrl-C; SIGTERM would be TerminateProcess, no report); else neither."""
    if hasattr(os, "setpgid"):
        return {"process_group": 0}, signal.SIGTERM
    flag = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", None)
    if flag is not None and hasattr(signal, "CTRL_BREAK_EVENT"):
        return {"creationflags": flag}, signal.CTRL_BREAK_EVENT
    return {}, signal.SIGTERM


def locustfile() -> Path:
    return Path(__file__).with_name("locustfile.py")


def command(proto: str, server: Server, users: int, spawn_rate: float, duration: float, *,
            report: str | Path | None = None, csv: str | Path | None = None, json_file: str | Path | None = None,
            motion: str | Path | None = None, trace: str | Path | None = None, marked: int = 4,
            slip_ms: float = 5.0, processes: int = 0, role: str = "local", master_host: str = "127.0.0.1",
            master_port: int = 5557, expect_workers: int = 0, headless: bool = True,
            extra: tuple[str, ...] = ()) -> list[str]:
    """The locust command line. `role`: "local" (one process, or `processes` forked workers),
    "master" (waits for `expect_workers`), "worker" (takes everything else from the master).

    Everything Locust listens on is bound to `master_host` (127.0.0.1 unless given: the master's
    port, and the web UI when not headless); Locust's own default is every interface."""
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile())]
    if role == "worker":
        return cmd + ["--worker", "--master-host", master_host, "--master-port", str(master_port), *extra]
    if role == "master":
        cmd += ["--master", "--master-bind-host", master_host, "--master-bind-port", str(master_port),
                "--expect-workers", str(max(1, expect_workers))]
    elif processes:
        cmd += ["--processes", str(processes), "--master-bind-host", master_host]
    if headless:
        cmd += ["--headless", "-u", str(users), "-r", f"{spawn_rate:g}", "-t", f"{max(1, round(duration))}s"]
    else:
        cmd += ["--web-host", master_host]
    cmd += ["--headcast-proto", proto, "--headcast-server", server.host, "--headcast-port", str(server.port),
            "--headcast-marked", str(marked), "--headcast-slip-ms", f"{slip_ms:g}"]
    if proto == "q3" and server.pk3:
        cmd += ["--headcast-pk3", ",".join(str(p) for p in server.pk3)]
    if proto == "netsync":
        cmd += ["--headcast-room", server.room, "--headcast-netsync-protocol", str(server.protocol)]
        if server.pub_port:
            cmd += ["--headcast-pub-port", str(server.pub_port)]
        if server.transform_port:
            cmd += ["--headcast-transform-port", str(server.transform_port)]
    if motion:
        cmd += ["--headcast-motion", str(motion)]
    if trace:
        cmd += ["--headcast-trace", str(trace)]
    if report:
        cmd += ["--headcast-report", str(report)]
    if csv:
        cmd += ["--csv", str(csv)]
    if json_file:
        cmd += ["--json-file", str(json_file)]
    return cmd + list(extra)


STOP_GRACE = 15.0  # s from the SIGTERM (Locust's clean stop) to a SIGKILL


def run(cmd: list[str], timeout: float, should_stop: Callable[[], bool] = lambda: False, **popen) -> int:
    """Run a locust command to its end, bounded. Locust runs in its own process group, so a
    terminal's Ctrl-C reaches headcast only: when `should_stop()` says so (app/stop.py's first
    signal), or past `timeout`, Locust gets one SIGTERM, and `STOP_GRACE` s later a SIGKILL.
    SIGTERM is Locust's clean stop (users leave, the report is written) as SIGINT is, without
    the SIGINT's KeyboardInterrupt raised in gevent's hub, which prints it and a timestamp. A
    second Ctrl-C (stop's exit at once) SIGKILLs it. Returns its exit code (Locust: 1 when any
    request failed — a kick, a lost update, a slipped tick)."""
    from headcast.app import stop
    group, clean_stop = _own_group()
    proc = subprocess.Popen(cmd, **group, **popen)
    forget = stop.own_process(lambda: proc.pid if proc.returncode is None else None)
    deadline = time.monotonic() + timeout
    asked = False
    try:
        while True:
            try:
                return proc.wait(POLL)
            except subprocess.TimeoutExpired:
                pass
            if asked:
                if time.monotonic() >= deadline:
                    proc.kill()
                    return proc.wait()
            elif should_stop() or time.monotonic() >= deadline:
                proc.send_signal(clean_stop)
                asked, deadline = True, time.monotonic() + STOP_GRACE
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        raise
    finally:
        forget()
