"""Fixtures for the app tests: real local servers (127.0.0.1, free ports), the mock runtime."""
from __future__ import annotations

import pytest

from headcast.xr import mockrt

MOCK_VARS = ("HEADCAST_MOCK_MOTION", "HEADCAST_MOCK_SCRIPT", "HEADCAST_MOCK_PROFILE", "HEADCAST_MOCK_LOG",
             "HEADCAST_MOCK_THROTTLE")


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
    monkeypatch.setenv("XR_RUNTIME_JSON", str(mock_manifest))
    monkeypatch.setenv("XR_LOADER_DEBUG", "error")
    for var in MOCK_VARS:
        monkeypatch.delenv(var, raising=False)
    ctl = mockrt.MockControl(mock_manifest)
    ctl.reset()
    yield ctl
    alive = ctl.instance_alive
    ctl.reset()
    assert not alive, "the test left an XrInstance alive"
