"""LocalQ3Server: real dedicated servers on 127.0.0.1, ready within a bound, stopped by PID."""

from __future__ import annotations

import os
import time

import pytest

from headcast.netcode.q3.localserver import LocalQ3Server, LocalServerError

pytestmark = pytest.mark.live


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); our Popen.wait reaped it, so existence means running
    return True


@pytest.mark.parametrize("kind,protocol,pure", [("openarena", "71", "1"), ("ioq3", "68", "0")])
def test_server_kinds_answer_with_their_protocol_and_purity(kind, protocol, pure):
    server = LocalQ3Server(kind=kind)
    argv = server.command()
    assert argv[argv.index("net_ip") + 1] == "127.0.0.1"
    assert argv[argv.index("sv_master1") + 1] == ""
    assert argv[argv.index("fs_homepath") + 1] == str(server.home)
    t = time.monotonic()
    with server:
        assert time.monotonic() - t < 15
        info = server.getinfo()
        assert info["protocol"] == protocol and info["pure"] == pure and info["mapname"] == "oa_dm1"
        assert "map: oa_dm1" in server.rcon("status")
        pid = server.pid
        assert _alive(pid)
    assert not _alive(pid)
    assert not server.home.exists()


def test_kill_and_restart_on_the_same_port():
    with LocalQ3Server(kind="ioq3") as server:
        port, first = server.port, server.pid
        server.kill()
        assert not _alive(first)
        with pytest.raises(TimeoutError):
            server.getinfo(timeout=0.3)
        server.start()
        assert server.port == port and server.pid != first and server.starts == 2
        assert server.getinfo()["protocol"] == "68"


def test_a_server_that_never_gets_ready_fails_within_the_bound():
    server = LocalQ3Server(kind="ioq3", map_name="no_such_map", ready_timeout=3.0)
    t = time.monotonic()
    try:
        with pytest.raises(LocalServerError):
            server.start()
        assert time.monotonic() - t < 10
        assert not _alive(server.pid)  # start() stopped what it launched
    finally:
        server.cleanup()
    assert not _alive(server.pid)


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        LocalQ3Server(kind="quake2")
