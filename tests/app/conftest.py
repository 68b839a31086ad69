"""Fixtures for the app tests: real local servers (127.0.0.1, free ports), the mock runtime."""
from __future__ import annotations

import pytest

from headcast.xr import mockrt
from support import mock_control



@pytest.fixture(scope="module")
def netsync_server():
    from headcast.netcode.netsync.localserver import LocalNetSyncServer
    server = LocalNetSyncServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.close()


@pytest.fixture(scope="module")
def q3_server():
    from headcast.netcode.q3.localserver import LocalQ3Server
    server = LocalQ3Server(kind="ioq3", pure=False)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.cleanup()


@pytest.fixture(scope="session")
def mock_manifest():
    return mockrt.ensure_runtime()


@pytest.fixture
def mock(mock_manifest, monkeypatch):
    """The loader pointed at the mock runtime, paced at 90 Hz (the network sinks run on wall time)."""
    yield from mock_control(mock_manifest, monkeypatch, paced=True)
