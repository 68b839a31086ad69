"""`headcast probe q3 HOST...` against real servers on this machine, with quakestat as a peer.

Two servers for the whole module: plain ioq3ded listening on 127.0.0.1 and on [::1] (same port),
with a coloured hostname and two headcast players with coloured names; and stock OpenArena with
`g_password` set. ioq3 answers 10 getinfo/getstatus/getchallenge per source address at once,
then one per second (docs/protocols/quake3.md#servers): readiness (1) + the probes below (6 from 127.0.0.1) stay
under it (the players join from 127.0.0.2 and .3, buckets of their own), so no test sleeps to
let the bucket refill.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from headcast.app.commands import probe
from headcast.app.errors import UsageError
from headcast.netcode.q3.client import ClientConfig, State
from headcast.netcode.q3.localserver import LocalQ3Server, free_udp_port
from headcast.netcode.q3.status import clean
from headcast.netcode.q3.transport import Q3Client

from support import REPO, free_port

NAMES = ("^1Red^7Bot", "^4Blue^7Bird")  # names quakestat and ioq3 strip alike (see tests/q3/test_status.py)
HOSTNAME = "^1Red^7 Server"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


IPV6 = _ipv6_loopback()


@pytest.fixture(scope="module")
def open_server():
    """ioq3ded on 127.0.0.1 and, where this machine has IPv6 loopback, on [::1] at the same port
    (net_enabled 11 = IPv4 + IPv6, no multicast; net_port6 is its own cvar)."""
    port = free_udp_port()
    cvars = {"sv_hostname": HOSTNAME}
    if IPV6:
        cvars |= {"net_enabled": "11", "net_ip6": "::1", "net_port6": str(port)}
    with LocalQ3Server(kind="ioq3", port=port, extra_cvars=cvars) as server:
        yield server


@pytest.fixture(scope="module")
def locked_server():
    """Stock OpenArena (legacy 71, pure) with a password: g_needpass 1."""
    with LocalQ3Server(kind="openarena", extra_cvars={"g_password": "secret", "sv_hostname": "Locked"}) as server:
        yield server


def _source(i: int) -> str:
    """127.0.0.2, 127.0.0.3 …: a player's own source address, so its joins (getinfo +
    getchallenge) come out of its own rate-limit bucket, not the probes' (127.0.0.1)."""
    address = f"127.0.0.{2 + i}"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((address, 0))
        return address
    except OSError:
        return "127.0.0.1"


class Players:
    """Headcast clients in game on a server; pump() keeps them answering snapshots."""

    def __init__(self, server: LocalQ3Server, names: tuple[str, ...]) -> None:
        self.clients = [
            Q3Client(server.address, ClientConfig(name=n), bind=(_source(i), 0)) for i, n in enumerate(names)
        ]
        now = time.monotonic()
        for c in self.clients:
            c.start(now)
        end = now + 15
        while not all(c.state is State.ACTIVE for c in self.clients):
            assert time.monotonic() < end, f"players not in game: {[c.state for c in self.clients]}"
            self.pump()

    def pump(self) -> None:
        for c in self.clients:
            c.poll(time.monotonic())
        time.sleep(0.003)

    def run(self, *argvs: list[str]) -> list[subprocess.CompletedProcess]:
        """Run commands side by side while the players stay in game (their pings stay real)."""
        procs = [
            subprocess.Popen(a, cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for a in argvs
        ]
        end = time.monotonic() + 30
        while any(p.poll() is None for p in procs) and time.monotonic() < end:
            self.pump()
        out = []
        for a, p in zip(argvs, procs):
            stdout, stderr = p.communicate(timeout=5)
            out.append(subprocess.CompletedProcess(a, p.returncode, stdout, stderr))
        return out

    def close(self) -> None:
        for c in self.clients:
            c.close(time.monotonic())


@pytest.fixture(scope="module")
def players(open_server):
    p = Players(open_server, NAMES)
    yield p
    p.close()


def env() -> dict[str, str]:
    """No user config, no HEADCAST_ variables (as tests/app/test_cli.py runs the command)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_", "XR_"))}
    e["HOME"] = str(REPO / "build" / "no-home")
    return e


def headcast_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "headcast.app", "probe", "q3", *args]


@pytest.mark.live
def test_one_call_asks_every_server_at_once_ipv4_ipv6_password_and_a_dead_port(open_server, locked_server, players):
    a, b, dead = open_server.port, locked_server.port, free_port(socket.SOCK_DGRAM)
    targets = [f"127.0.0.1:{a}", *([f"[::1]:{a}"] if IPV6 else []), f"localhost:{b}", f"127.0.0.1:{dead}"]
    started = time.monotonic()
    [r] = players.run(headcast_argv(*targets, "--json", "--timeout", "10"))
    elapsed = time.monotonic() - started
    # The dead port is refused at once (ICMP): nobody waits for the 10 s timeout.
    assert elapsed < 5, elapsed
    assert r.returncode == 3 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    assert f"no answer from the Quake 3 server 127.0.0.1:{dead}: nothing listens there" in r.stderr
    results = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["server"] for x in results] == targets
    v4, *v6, locked, gone = results

    assert v4["address"] == f"127.0.0.1:{a}" and 0 < v4["ping_ms"] < 1000
    assert v4["hostname"] == HOSTNAME and v4["map"] == "oa_dm1" and v4["max_clients"] == "8"
    assert (v4["protocol"], v4["family"], v4["pure"], v4["g_needpass"], v4["vr_support"]) == (
        "68",
        "new71",
        "0",
        False,
        False,
    )
    assert sorted(p["name"] for p in v4["players"]) == sorted(NAMES)  # raw: colour codes kept
    assert all(p["score"] == 0 and 0 <= p["ping"] < 999 for p in v4["players"])
    rules = v4["rules"]
    assert len(rules) >= 40 and "challenge" not in rules and rules["sv_hostname"] == HOSTNAME
    assert rules["g_needpass"] == "0" and rules["version"].startswith("ioq3 1.36")
    assert v4["info"]["clients"] == "2" and v4["info"]["g_humanplayers"] == "2"
    if v6:
        [v6] = v6
        assert v6["address"] == f"[::1]:{a}" and 0 < v6["ping_ms"] < 1000
        assert v6["rules"] == rules and v6["info"] == v4["info"]
        assert sorted(p["name"] for p in v6["players"]) == sorted(NAMES)

    assert locked["address"] == f"127.0.0.1:{b}" and locked["hostname"] == "Locked"
    assert locked["g_needpass"] is True and locked["rules"]["g_needpass"] == "1" and locked["info"]["g_needpass"] == "1"
    assert (locked["protocol"], locked["family"], locked["pure"], locked["players"]) == ("71", "legacy71", "1", [])
    assert gone == {
        "server": f"127.0.0.1:{dead}",
        "error": f"no answer from the Quake 3 server 127.0.0.1:{dead}: nothing listens there (ICMP port unreachable)",
    }

    text = probe.format_q3_text(v4)
    assert text[0] == f"127.0.0.1:{a}: 'Red Server' map oa_dm1, 2/8 players, ping {v4['ping_ms']:.1f} ms"
    assert text[1] == "  protocol 68 (new71), pure 0, password no, vr_support no"
    assert sorted(line.split()[-1] for line in text[3:5]) == ["BlueBird", "RedBot"]  # stripped
    assert f"  rules ({len(rules)}):" in text and any(
        line.split() == ["sv_hostname", "^1Red^7", "Server"] for line in text
    )
    assert len(text) == 5 + 1 + len(rules)


@pytest.mark.live
@pytest.mark.skipif(shutil.which("quakestat") is None, reason="quakestat (Debian package qstat) is not installed")
def test_quakestat_sees_the_same_rules_and_players(open_server, players):
    """quakestat -q3s -R -P (qstat 2.17) as a third-party peer, asked at the same time as we are.
    It sends getinfo then getstatus, merges both info strings (getinfo's value first) and lifts
    mapname/sv_maxclients/hostname/clients out of the rules into its own fields."""
    address = f"127.0.0.1:{open_server.port}"
    ours, theirs = players.run(headcast_argv(address, "--json"), ["quakestat", "-json", "-q3s", address, "-R", "-P"])
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    mine, [qs] = json.loads(ours.stdout), json.loads(theirs.stdout)
    assert qs["status"] == "online"
    assert qs["name"] == clean(mine["hostname"]) == "Red Server"
    assert (qs["map"], qs["maxplayers"], qs["numplayers"]) == (mine["map"], int(mine["max_clients"]), 2)
    merged = {**mine["rules"], **mine["info"]}
    lifted = {"mapname", "sv_maxclients", "hostname", "clients"}
    assert qs["rules"] == {k: v for k, v in merged.items() if k not in lifted}
    assert sorted((p["name"], p["score"]) for p in qs["players"]) == sorted(
        (clean(p["name"]), p["score"]) for p in mine["players"]
    )
    # Each side's player pings are the server's cl->ping at its own query; both real, not 999.
    assert all(0 <= p["ping"] < 999 for p in qs["players"] + mine["players"])


@pytest.mark.live
def test_text_output_and_a_name_with_both_families(locked_server, monkeypatch):
    b, dead = locked_server.port, free_port(socket.SOCK_DGRAM)
    r = subprocess.run(
        headcast_argv(f"localhost:{b}", f"127.0.0.1:{dead}", "--timeout", "3"),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 3 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"localhost:{b} (127.0.0.1:{b}): 'Locked' map oa_dm1, 0/8 players, ping ")
    assert lines[1] == "  protocol 71 (legacy71), pure 1, password yes, vr_support no"
    assert lines[2].startswith("  rules (") and lines[-1].startswith(
        f"no answer from the Quake 3 server 127.0.0.1:{dead}"
    )
    assert r.stderr.startswith(f"headcast: error: no answer from the Quake 3 server 127.0.0.1:{dead}")

    # A name with an IPv6 and an IPv4 address, the server on IPv4 only: both asked, IPv4 answers.
    real = socket.getaddrinfo

    def dual(host, port, *args):
        if host == "dual.test":
            return [
                (socket.AF_INET6, socket.SOCK_DGRAM, 17, "", ("::1", port, 0, 0)),
                (socket.AF_INET, socket.SOCK_DGRAM, 17, "", ("127.0.0.1", port)),
            ]
        return real(host, port, *args)

    monkeypatch.setattr(socket, "getaddrinfo", dual)
    [result] = probe.probe_q3([f"dual.test:{b}"], 3.0)
    assert result["server"] == f"dual.test:{b}" and result["address"] == f"127.0.0.1:{b}"
    assert result["g_needpass"] is True


class FakeServer:
    """A UDP socket on 127.0.0.1 answering getinfo/getstatus with `answer(request, count)`."""

    def __init__(self, answer) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.seen: list[tuple[float, bytes]] = []
        self.stop = False
        self.thread = threading.Thread(target=self._serve, args=(answer,), daemon=True)
        self.thread.start()

    def _serve(self, answer) -> None:
        while not self.stop:
            try:
                data, src = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            self.seen.append((time.monotonic(), data))
            reply = answer(data, sum(d.split()[0] == data.split()[0] for _, d in self.seen))
            if reply is not None:
                self.sock.sendto(reply, src)

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.sock.close()


def test_a_silent_request_is_asked_again_after_a_second_and_timed_from_its_own_send():
    def answer(data: bytes, count: int) -> bytes | None:
        nonce = data.split()[-1].decode()
        if data.startswith(b"\xff\xff\xff\xffgetinfo"):
            return b"\xff\xff\xff\xffinfoResponse\n\\protocol\\68\\challenge\\" + nonce.encode()
        if count == 1:
            return None  # the first getstatus is lost (or rate-limited)
        return b"\xff\xff\xff\xffstatusResponse\n\\challenge\\" + nonce.encode() + b'\\g_needpass\\1\n3 40 "^3x"\n'

    fake = FakeServer(answer)
    try:
        [result] = probe.probe_q3([f"127.0.0.1:{fake.port}"], 3.0)
    finally:
        fake.close()
    assert [d.split()[0][4:] for _, d in fake.seen] == [b"getinfo", b"getstatus", b"getstatus"]
    assert 0.95 < fake.seen[2][0] - fake.seen[1][0] < 1.3
    assert result["ping_ms"] < 100  # from the second getstatus, not the first
    assert result["players"] == [{"name": "^3x", "score": 3, "ping": 40}] and result["g_needpass"] is True


def test_replies_that_cannot_be_read_are_an_error_of_their_own_not_silence():
    fake = FakeServer(lambda data, count: b"\xff\xff\xff\xffstatusResponse\n\\challenge\n")
    try:
        [result] = probe.probe_q3([f"127.0.0.1:{fake.port}"], 0.5)
    finally:
        fake.close()
    assert result["exit_code"] == 1
    assert result["error"].startswith(
        f"the Quake 3 server 127.0.0.1:{fake.port} answered, but not with a "
        "getinfo/getstatus reply we can read (2 dropped; last: "
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("example.org", ("example.org", 27960)),
        ("10.0.0.1:27961", ("10.0.0.1", 27961)),
        ("[::1]:27962", ("::1", 27962)),
        ("[::1]", ("::1", 27960)),
        ("::1", ("::1", 27960)),
        ("fe80::1%eth0", ("fe80::1%eth0", 27960)),
    ],
)
def test_targets(text, expected):
    assert probe.parse_q3_target(text) == expected


@pytest.mark.parametrize(
    "text", ["", ":27960", "host:", "host:0", "host:65536", "host:x", "[::1", "[::1]x", "[::1]:", "[]:1"]
)
def test_bad_targets_are_usage_errors(text):
    with pytest.raises(UsageError, match="probe q3"):
        probe.parse_q3_target(text)
