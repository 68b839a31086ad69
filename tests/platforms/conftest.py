"""The simulated-platform tier: real local servers shared by every test of the tier (one of each,
module scope), and the marker `platform_sim`."""

from __future__ import annotations

import pytest


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "platform_sim: runs headcast under a simulated Windows or macOS standard "
        "library (tests/platforms/sim/sitecustomize.py)",
    )


@pytest.fixture(scope="module")
def netsync_server():
    """The venv's styly-netsync-server release (the current one), as tests/app's fixture."""
    from headcast.netcode.netsync.localserver import LocalNetSyncServer

    server = LocalNetSyncServer(None)
    try:
        server.start(timeout=60)
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def sauer_server():
    """Debian's cube2-server (Sauerbraten 2020 Edition) on 127.0.0.1."""
    from headcast.netcode.sauer.localserver import LocalSauerServer

    from sauer_support import need_server

    need_server()
    with LocalSauerServer(max_clients=16) as server:
        yield server
