"""`headcast run --q3` against servers that will not let it in, as a user runs it (a subprocess):
the server's own words, the exit code (1 refused, 3 only for no answer at all), no waiting where
waiting cannot help, and the status line (what the HUD shows) while it retries where it can.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from headcast.netcode.q3 import oob
from headcast.netcode.q3.client import ClientConfig, State
from headcast.netcode.q3.localserver import LocalQ3Server
from headcast.netcode.q3.transport import Q3Client

from support import REPO, cli_env

pytestmark = pytest.mark.live


def run(*args: str, pump=None, timeout: float = 40, **extra: str) -> tuple[subprocess.CompletedProcess, float]:
    """`headcast run --mock look_around --no-mirror ARGS`; `pump()` runs while it does (a filler
    player answering its snapshots). Returns the result and how long it took."""
    argv = [sys.executable, "-m", "headcast.app", "run", "--mock", "look_around", "--no-mirror", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=REPO, env=cli_env(**extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    try:
        while proc.poll() is None:
            assert time.monotonic() - t0 < timeout, "headcast run did not end"
            if pump is not None:
                pump()
            time.sleep(0.003)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    took = time.monotonic() - t0
    reader.join(5)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(out), proc.stderr.read()), took


def error_line(r: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("headcast: error:")]
    return line


@pytest.fixture(scope="module")
def locked():
    with LocalQ3Server(kind="ioq3", extra_cvars={"g_password": "secret"}) as server:
        yield server


@pytest.fixture(scope="module")
def q3e_style():
    """Reports 71 and speaks only the checksummed netchan (a Quake3e `protocol 71`)."""
    with LocalQ3Server(kind="ioq3", extra_cvars={"com_legacyprotocol": "0"}) as server:
        yield server


def test_a_password_server_ends_the_run_at_once_without_it_and_lets_it_in_with_it(locked):
    host, port = locked.address
    r, took = run("--q3", f"{host}:{port}", HEADCAST_RUN_CONNECT_TIMEOUT="15")
    assert r.returncode == 1 and error_line(r) == (
        f"headcast: error: q3: {host}:{port} refused the connection: Invalid password — give the server's "
        "password with --password"
    )
    assert took < 10, f"{took:.1f} s: it waited although retrying cannot help"
    r, _ = run("--q3", f"{host}:{port}", HEADCAST_Q3_PASSWORD="wrong")
    assert r.returncode == 1 and error_line(r).endswith(
        "Invalid password — the password given (--password) is not the server's"
    )
    r, _ = run("--q3", f"{host}:{port}", "--password", "secret", "--duration", "4", "--json")
    assert r.returncode == 0, r.stderr
    states = [
        s["state"]
        for ln in r.stdout.splitlines()
        if json.loads(ln).get("type") == "status"
        for s in json.loads(ln)["sinks"]
        if s["name"] == "q3"
    ]
    assert "in game" in states and "refused" not in states


def test_a_forced_protocol_the_server_does_not_speak_ends_the_run_naming_it(q3e_style):
    host, port = q3e_style.address
    r, took = run("--q3", f"{host}:{port}", "--q3-protocol", "68", HEADCAST_RUN_CONNECT_TIMEOUT="15")
    assert r.returncode == 1 and error_line(r) == (
        f"headcast: error: q3: {host}:{port} refused the connection: Server uses protocol version 71 (yours is "
        "68). — --q3-protocol 68 is not what the server speaks: leave it at auto"
    )
    assert took < 10
    r, _ = run("--q3", f"{host}:{port}", HEADCAST_Q3_PROTOCOL="71-legacy")
    assert (
        r.returncode == 1
        and "refused the connection: the server speaks protocol 71 on the checksummed netchan "
        "(ioq3, Quake3e), not protocol 71 on the legacy netchan (stock OpenArena)"
        in error_line(r)
    )


def test_a_full_server_is_retried_showing_its_words_then_ends_with_exit_1():
    with LocalQ3Server(kind="ioq3", extra_cvars={"sv_maxclients": "1"}) as server:
        filler = Q3Client(server.address, ClientConfig(name="filler"), bind=("127.0.0.1", 0))
        filler.start(time.monotonic())
        end = time.monotonic() + 5
        while filler.state is not State.ACTIVE:
            assert time.monotonic() < end, "the filler did not get in"
            filler.poll(time.monotonic())
            time.sleep(0.002)
        try:
            host, port = server.address
            r, took = run(
                "--q3",
                f"{host}:{port}",
                "--json",
                pump=lambda: filler.poll(time.monotonic()),
                HEADCAST_RUN_CONNECT_TIMEOUT="4",
            )
        finally:
            filler.close(time.monotonic())
    # the server's own words: "Server is full." (ioq3 up to 1.36), "Server is full" (newer ioq3)
    assert r.returncode == 1 and re.fullmatch(
        rf"headcast: error: q3: {re.escape(host)}:{port} refused the connection: Server is full\.? "
        r"\(still refused after 4 s\)",
        error_line(r),
    ), error_line(r)
    assert 4 <= took < 15
    # Meanwhile the status (the HUD's lines) said so, with the retry coming.
    shown = [
        s
        for ln in r.stdout.splitlines()
        if json.loads(ln).get("type") == "status"
        for s in json.loads(ln)["sinks"]
        if s["name"] == "q3"
    ]
    refused = [s for s in shown if s["state"] == "refused"]
    assert refused and all(re.match(r"server refused: Server is full\.? — retrying", s["detail"]) for s in refused)
    assert any("retrying in" in s["detail"] for s in refused)


def test_a_rate_limiting_server_is_named_not_called_unreachable():
    """Every getinfo from 127.0.0.1, as fast as the server drops them: the run's getchallenge
    (same address) is never answered, its challenge-less connect is."""
    with LocalQ3Server(kind="ioq3") as server:
        stop = threading.Event()

        def flood() -> None:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.1", 0))
                s.setblocking(False)
                while not stop.is_set():
                    try:
                        s.sendto(oob.getinfo("flood"), server.address)
                        while True:
                            s.recv(65535)
                    except OSError:
                        pass
                    stop.wait(0.002)

        flooder = threading.Thread(target=flood, daemon=True)
        flooder.start()
        try:
            host, port = server.address
            r, took = run("--q3", f"{host}:{port}", HEADCAST_RUN_CONNECT_TIMEOUT="4")
        finally:
            stop.set()
            flooder.join(5)
    # it answered something (our connect without a challenge), so the first join was given up to
    # JOIN_STRETCH × the 4 s connect timeout before giving up (app/run/outcome.py)
    assert r.returncode == 1 and re.match(
        rf"headcast: error: q3: the server at {re.escape(host)}:{port} is rate-limiting this address: it is up but "
        r"answered none of our getchallenge requests within (4|\d+\.\d) s",
        error_line(r),
    ), error_line(r)
