"""`headcast swarm --locust N`: Locust's ports never collide with the server under test, and
nothing Locust started is left running, however its master ends.

Against a real styly-netsync-server (the current release). Locust's default master port, 5557, is
NetSync's default transform port: the master failed to bind it (a 34-line traceback) and the two
workers it had forked were left running with PPID 1. Leftovers are looked for in /proc by the
report path each Locust process carries on its command line (`--headcast-report DIR/swarm`), not
by the process group the code under test uses, so a process that left the group is found too.
Zombies (state Z) are dead processes waiting to be reaped by whoever inherited them: not counted.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from headcast.app.swarm import locust_run
from headcast.app.swarm.players import Server
from headcast.netcode.netsync.localserver import LocalNetSyncServer

from support import cli_env, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")

NETSYNC_DEFAULT = (5555, 5556, 5557)  # control, PUB, transform: styly-netsync-server's defaults
GONE_WITHIN = 10.0  # s after headcast (or locust_run.run) returns


def _stat(pid: str) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of a live process, None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = stat[stat.rindex(")") + 2 :].split()
    return f[0], int(f[1]), int(f[2])


def ours(marker: str) -> dict[int, tuple[str, int, int]]:
    """Every live (not zombie) process whose command line holds `marker`: {pid: (state, ppid, pgid)}."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            st = _stat(d.name)
            if st is not None and st[0] not in ("Z", "X"):
                found[int(d.name)] = st
    return found


def assert_none_left(marker: str) -> None:
    deadline = time.monotonic() + GONE_WITHIN
    while (left := ours(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        for pid in left:  # ours: the command line holds this test's own temporary path
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pytest.fail(f"Locust processes still running {GONE_WITHIN:g} s after the end: {left}")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@pytest.fixture
def netsync_default_ports(tmp_path):
    """The real server on its default ports 5555/5556/5557 when this machine has them free (a lock
    file keeps two test processes from both trying); else on free ports, where the test checks
    the same: the master's port is none of the server's."""
    import fcntl  # POSIX

    lock = open(Path(tempfile.gettempdir()) / "headcast-test-netsync-default-ports.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        ports = (
            dict(zip(("dealer_port", "pub_port", "transform_port"), NETSYNC_DEFAULT))
            if all(_bindable(p) for p in NETSYNC_DEFAULT)
            else {}
        )
        srv = LocalNetSyncServer(log_dir=tmp_path / "server", **ports)
        srv.start()
        try:
            yield srv
        finally:
            srv.stop()
    finally:
        lock.close()


@pytest.fixture
def netsync_server(tmp_path):
    srv = LocalNetSyncServer(log_dir=tmp_path / "server")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_command_never_puts_locust_on_a_servers_port():
    server = Server("127.0.0.1", 5555, 5556, 5557)
    for role, kw in (
        ("local", {"processes": 2}),
        ("master", {"expect_workers": 2}),
        ("local", {"processes": 2, "headless": False}),
    ):
        cmd = locust_run.command("netsync", server, 10, 5, 30, role=role, **kw)
        bind = int(cmd[cmd.index("--master-bind-port") + 1])
        assert bind not in NETSYNC_DEFAULT and bind != 8089
        if role == "local":  # the forked workers connect where the master listens
            assert int(cmd[cmd.index("--master-port") + 1]) == bind
        if not kw.get("headless", True):
            web = int(cmd[cmd.index("--web-port") + 1])
            assert web not in (*NETSYNC_DEFAULT, bind)
    # a worker started by hand must be told where its master is
    with pytest.raises(ValueError):
        locust_run.command("netsync", server, 0, 0, 0, role="worker")


def test_free_port_avoids_the_servers_ports(monkeypatch):
    """A server elsewhere may use a port that is free here: those are skipped too."""
    picks = iter([5557, 5555, 40001])

    class FakeSocket(socket.socket):
        def getsockname(self):
            return ("127.0.0.1", next(picks))

    monkeypatch.setattr(locust_run.socket, "socket", FakeSocket)
    assert locust_run.free_port({5555, 5556, 5557}) == 40001


@pytest.mark.live
def test_swarm_locust_2_beside_netsync_on_its_default_ports(tmp_path, netsync_default_ports):
    """The reported failure: `headcast swarm N --netsync 127.0.0.1 --locust 2` with the server on its
    default ports. Now the run works, and nothing is left running after it."""
    srv = netsync_default_ports
    a = srv.address
    out = tmp_path / "out"
    address = (
        "127.0.0.1"
        if (a.dealer_port, a.pub_port, a.transform_port) == NETSYNC_DEFAULT
        else f"127.0.0.1:{a.dealer_port}:{a.pub_port}:{a.transform_port}"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "swarm",
            "4",
            "--netsync",
            address,
            "--locust",
            "2",
            "--duration",
            "8",
            "--spawn-rate",
            "10",
            "--report",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=150,
        env=cli_env(),
    )
    assert "Traceback" not in r.stderr and "bind failure" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in (0, 1), r.stderr[-3000:]
    port = int(re.search(r"--master-bind-port (\d+)", r.stderr)[1])
    assert port not in (a.dealer_port, a.pub_port, a.transform_port)
    report = json.loads((out / "swarm.json").read_text())
    assert report["processes"] == 2
    players = report["protocols"]["netsync"]["players"]
    assert players["joined"] == 4 and players["left"] == 4, players
    # the server saw players only: no Locust worker talking ZeroMQ to its transform port
    assert "Invalid" not in srv.log_path.read_text(errors="replace")
    assert_none_left(str(out / "swarm"))


@pytest.mark.live
def test_workers_are_gone_when_the_master_cannot_start(tmp_path, netsync_server):
    """The old collision, forced: the master told to bind the server's transform port fails at
    start (Locust's own error), and locust_run.run ends the two workers it had already forked."""
    a = netsync_server.address
    server = Server("127.0.0.1", a.dealer_port, a.pub_port, a.transform_port)
    marker = tmp_path / "rep"
    cmd = locust_run.command("netsync", server, 4, 10, 30, report=marker, processes=2, master_port=a.transform_port)
    log = open(tmp_path / "locust.log", "w")
    try:
        rc = locust_run.run(cmd, timeout=120, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    finally:
        log.close()
    text = (tmp_path / "locust.log").read_text()
    assert rc != 0 and "Address already in use" in text, text[-3000:]
    assert_none_left(str(marker))


def _start(tmp_path, srv, players: int = 2) -> tuple[subprocess.Popen, str]:
    a = srv.address
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "swarm",
            str(players),
            "--netsync",
            f"127.0.0.1:{a.dealer_port}:{a.pub_port}:{a.transform_port}",
            "--locust",
            "2",
            "--duration",
            "120",
            "--spawn-rate",
            "20",
            "--report",
            str(out),
        ],
        cwd=tmp_path,
        stdout=open(tmp_path / "headcast.out", "w"),
        stderr=subprocess.STDOUT,
        env=cli_env(),
    )
    marker = str(out / "swarm")
    # running: the master and both workers up, every player numbered by the server
    wait_for(lambda: len(ours(marker)) >= 3, 60, "Locust's master and two workers")
    wait_for(
        lambda: srv.log_path.read_text(errors="replace").count("Assigned client number") >= players,
        60,
        "the server to number every player",
    )
    return proc, marker


def _master(proc: subprocess.Popen, marker: str) -> int:
    (pid,) = [pid for pid, (_, ppid, _) in ours(marker).items() if ppid == proc.pid]
    return pid


@pytest.mark.live
@pytest.mark.parametrize("ending", ["SIGINT", "SIGTERM", "SIGINT twice", "master killed", "headcast killed"])
def test_no_locust_process_outlives_the_run(tmp_path, netsync_server, ending):
    """Each way a `headcast swarm --locust 2` run can end mid-run; afterwards no process of it runs.
    A first SIGINT/SIGTERM is the clean stop (the report is written); a second one exits at once
    (stop.py kills Locust's whole group); a master killed by SIGKILL leaves its workers to
    headcast, which ends them; headcast killed by SIGKILL leaves Locust to die with its parent
    (PR_SET_PDEATHSIG: the master's clean stop, then its workers)."""
    proc, marker = _start(tmp_path, netsync_server)
    try:
        if ending in ("SIGINT", "SIGTERM"):
            proc.send_signal(getattr(signal, ending))
            rc = proc.wait(60)
            assert rc in (0, 1), (tmp_path / "headcast.out").read_text()[-3000:]
            assert (tmp_path / "out" / "swarm.json").is_file()
        elif ending == "SIGINT twice":
            proc.send_signal(signal.SIGINT)
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 128 + signal.SIGINT
        elif ending == "master killed":
            os.kill(_master(proc, marker), signal.SIGKILL)
            proc.wait(60)
        else:
            proc.kill()
            proc.wait(10)
        assert_none_left(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
