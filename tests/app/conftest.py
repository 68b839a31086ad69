"""Fixtures for the app tests: real local servers (127.0.0.1, free ports), the mock runtime."""

from __future__ import annotations

import pytest

from headcast.xr import mockrt

from support import mock_control


def _netsync(version):
    from headcast.netcode.netsync.localserver import LocalNetSyncServer

    server = LocalNetSyncServer(version)
    try:
        server.start(timeout=60)
    except BaseException:
        server.close()
        raise
    return server


@pytest.fixture(scope="module")
def netsync_server():
    """The current styly-netsync-server release (the venv's, 0.17.5: protocol 8)."""
    server = _netsync(None)
    try:
        yield server
    finally:
        server.close()


# The current release and the last protocol-3 one (0.10.4, from build/netsync/): what `auto` must join.
NETSYNC_RELEASES = [None, "0.10.4"]


@pytest.fixture(scope="module", params=NETSYNC_RELEASES, ids=["current", "0.10.4"])
def netsync_release(request):
    """Each of NETSYNC_RELEASES in turn; `.address.protocol` / `.address.version` say which."""
    server = _netsync(request.param)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def mock_manifest():
    return mockrt.ensure_runtime()


@pytest.fixture
def mock(mock_manifest, monkeypatch):
    """The loader pointed at the mock runtime, paced at 90 Hz (the network sinks run on wall time),
    its headless session focused as `headcast run --mock` has it (the motions' input arrives)."""
    gen = mock_control(mock_manifest, monkeypatch, paced=True)
    ctl = next(gen)
    monkeypatch.setenv("HEADCAST_MOCK_HEADLESS_FOCUS", "1")
    yield ctl
    yield from gen
