"""A real styly-netsync-server 0.10.4 per test, on 127.0.0.1 and free ports, discovery off.

One server per test: the server's body cache is keyed by clientNo across rooms (reference §9.2),
so tests sharing a server would see each other's poses.
"""
from __future__ import annotations

import pytest

from headcast.netcode.netsync.localserver import LocalNetSyncServer


@pytest.fixture
def netsync_server(tmp_path):
    srv = LocalNetSyncServer(log_dir=tmp_path)
    try:
        srv.start(timeout=60)
        yield srv
    finally:
        srv.close()
