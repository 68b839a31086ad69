"""Run the swarm on Locust (`headcast swarm --locust`): the command line for the shipped
locustfile, and a bounded run of it.

Locust runs in its own process: importing it monkey-patches the standard library for gevent,
which headcast's own loop must not see. A team with several machines starts the same command
with `--master` on one and `--worker --master-host HOST` on the others (`command(role=...)`).

Ports: Locust's own defaults (master 5557, web UI 8089) are not used. 5557 is NetSync's
transform port: a master there failed to bind ("Socket bind failure"), and its forked workers
connected to the NetSync server instead. `free_port()` picks ports the system has free on the
bind address and that no server under test uses.

Processes: Locust and every worker it forks run in a process group of their own (POSIX). However
the master ends — its normal end, an error at start, a signal to headcast, a crash — `run()`
ends the group's remaining processes (SIGTERM, then SIGKILL `GROUP_GRACE` s later) before it
returns. On Linux each process also dies with its parent (PR_SET_PDEATHSIG, set by the
locustfile: the master with headcast, each forked worker with the master), for the case where
headcast itself is killed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

from headcast.app.swarm.players import Server

POLL = 0.1  # s between two looks at the stop request
PARENT_ENV = "HEADCAST_LOCUST_PARENT"  # the PID of the headcast that started Locust (locustfile.py)


def free_port(avoid: Iterable[int] = (), host: str = "127.0.0.1", tries: int = 50) -> int:
    """A TCP port free on `host` now (the system's choice) and not in `avoid` (the ports of the
    servers under test: a server elsewhere may use a port that is free here)."""
    avoid = set(avoid)
    for _ in range(tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in avoid:
            return port
    raise OSError(f"no free TCP port on {host} outside {sorted(avoid)} after {tries} tries")


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> bool:
    """Linux: this process gets `sig` when its parent ends (prctl PR_SET_PDEATHSIG); if the
    parent is already gone (`parent` is not our parent any more), at once. False where there is
    no such call (the caller's process group is then the only bound)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return True


def server_ports(server: Server) -> set[int]:
    """Every port a server under test listens on (NetSync: control, PUB, transform)."""
    return {p for p in (server.port, server.pub_port, server.transform_port) if p}


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


def command(
    proto: str,
    server: Server,
    users: int,
    spawn_rate: float,
    duration: float,
    *,
    report: str | Path | None = None,
    csv: str | Path | None = None,
    json_file: str | Path | None = None,
    motion: str | Path | None = None,
    trace: str | Path | None = None,
    marked: int = 4,
    slip_ms: float = 5.0,
    processes: int = 0,
    role: str = "local",
    master_host: str = "127.0.0.1",
    master_port: int | None = None,
    web_port: int | None = None,
    expect_workers: int = 0,
    headless: bool = True,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """The locust command line. `role`: "local" (one process, or `processes` forked workers),
    "master" (waits for `expect_workers`), "worker" (takes everything else from the master).

    Everything Locust listens on is bound to `master_host` (127.0.0.1 unless given: the master's
    port, and the web UI when not headless); Locust's own default is every interface. The
    master's port (`master_port`) and the web UI's (`web_port`) are free ports outside the
    server's unless given (Locust's defaults, 5557 and 8089: 5557 is NetSync's transform port)."""
    if master_port is None and role != "worker" and (role == "master" or processes):
        master_port = free_port(server_ports(server), master_host)
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile())]
    if role == "worker":
        if master_port is None:
            raise ValueError("a worker needs the master's port")
        return cmd + ["--worker", "--master-host", master_host, "--master-port", str(master_port), *extra]
    if role == "master":
        cmd += [
            "--master",
            "--master-bind-host",
            master_host,
            "--master-bind-port",
            str(master_port),
            "--expect-workers",
            str(max(1, expect_workers)),
        ]
    elif processes:
        # the forked workers connect to --master-host/--master-port, the master binds the others
        cmd += [
            "--processes",
            str(processes),
            "--master-bind-host",
            master_host,
            "--master-bind-port",
            str(master_port),
            "--master-host",
            master_host,
            "--master-port",
            str(master_port),
        ]
    if headless:
        cmd += ["--headless", "-u", str(users), "-r", f"{spawn_rate:g}", "-t", f"{max(1, round(duration))}s"]
    else:
        if web_port is None:
            web_port = free_port(server_ports(server) | ({master_port} if master_port else set()), master_host)
        cmd += ["--web-host", master_host, "--web-port", str(web_port)]
    cmd += [
        "--headcast-proto",
        proto,
        "--headcast-server",
        server.host,
        "--headcast-port",
        str(server.port),
        "--headcast-marked",
        str(marked),
        "--headcast-slip-ms",
        f"{slip_ms:g}",
    ]
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
GROUP_GRACE = 3.0  # s from the SIGTERM to what is left of Locust's group to its SIGKILL


def group_alive(pgid: int) -> list[int]:
    """The PIDs of the live processes (zombies are dead) in process group `pgid`. Linux: read from
    /proc; elsewhere killpg(pgid, 0) says only whether any remain ([pgid] then)."""
    proc = Path("/proc")
    if (proc / "self" / "stat").is_file():
        pids = []
        for d in proc.iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                pids.append(int(d.name))
        return pids
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass  # some member is not ours to signal, yet it is there
    return [pgid]


def end_group(pgid: int, grace: float = GROUP_GRACE) -> list[int]:
    """End what is left of process group `pgid` (Locust's workers after their master): SIGTERM
    (a worker's clean stop), then SIGKILL to those still there after `grace` s. Returns the PIDs
    that had been left running."""
    left = group_alive(pgid)
    if not left or not hasattr(os, "killpg"):
        return left
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        until = time.monotonic() + wait
        while group_alive(pgid) and time.monotonic() < until:
            time.sleep(0.05)
        if not group_alive(pgid):
            break
    return left


def run(cmd: list[str], timeout: float, should_stop: Callable[[], bool] = lambda: False, **popen) -> int:
    """Run a locust command to its end, bounded. Locust runs in its own process group, so a
    terminal's Ctrl-C reaches headcast only: when `should_stop()` says so (app/run/stop.py's first
    signal), or past `timeout`, Locust gets one SIGTERM, and `STOP_GRACE` s later a SIGKILL.
    SIGTERM is Locust's clean stop (users leave, the report is written) as SIGINT is, without
    the SIGINT's KeyboardInterrupt raised in gevent's hub, which prints it and a timestamp. A
    second Ctrl-C (stop's exit at once) SIGKILLs its whole group. However the master ends, the
    workers it forked that are still there are ended with it (`end_group`). Returns its exit code
    (Locust: 1 when any request failed — a kick, a lost update, a failed join)."""
    from headcast.app.run import stop

    group, clean_stop = _own_group()
    env = dict(popen.pop("env", None) or os.environ, **{PARENT_ENV: str(os.getpid())})
    proc = subprocess.Popen(cmd, **group, env=env, **popen)
    grouped = "process_group" in group
    # an exit at once (stop.py) kills by PID: the negative PID is the whole group (kill(2))
    forget = stop.own_process(lambda: (-proc.pid if grouped else proc.pid) if proc.returncode is None else None)
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
        if grouped:
            end_group(proc.pid)
