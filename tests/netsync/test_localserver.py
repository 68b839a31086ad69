"""LocalNetSyncServer: start/stop by PID, restart on the same ports, clear errors."""
from __future__ import annotations

import pytest

from headcast.netcode.netsync.localserver import LocalNetSyncServer, ServerStartError, free_port

pytestmark = pytest.mark.live


def test_stop_start_same_ports_and_idempotent_stop(tmp_path):
    srv = LocalNetSyncServer(log_dir=tmp_path)
    try:
        srv.start(timeout=60)
        first = srv.pid
        assert srv.version() == "0.10.4"
        srv.stop()
        srv.stop()  # nothing left to stop: no error, no stray signal
        srv.start(timeout=60)
        assert srv.pid != first
        assert "Server is ready" in srv.log_path.read_text()
    finally:
        srv.close()
    assert srv.pid is None


def test_interpreter_without_the_server_is_a_clear_error(tmp_path):
    srv = LocalNetSyncServer(python="/usr/bin/python3", log_dir=tmp_path)  # the system Python: no server
    try:
        with pytest.raises(ServerStartError, match="exited"):
            srv.start(timeout=30)
        with pytest.raises(ServerStartError, match="no styly-netsync-server"):
            srv.version()
    finally:
        srv.close()


def test_busy_port_is_a_clear_error(tmp_path):
    a = LocalNetSyncServer(log_dir=tmp_path / "a")
    try:
        a.start(timeout=60)
        b = LocalNetSyncServer(dealer_port=a.address.dealer_port, pub_port=free_port(), log_dir=tmp_path / "b")
        try:
            with pytest.raises(ServerStartError):
                b.start(timeout=20)
        finally:
            b.close()
    finally:
        a.close()
