"""Live Sauerbraten fixtures: the real 2020 Edition server (Debian's cube2-server) on 127.0.0.1, and
the clients of a test (closed after it)."""

from __future__ import annotations

import pytest

from headcast.netcode.sauer import localserver

from sauer_support import Clients, need_server


@pytest.fixture(scope="module")
def sauer_server():
    """ffa on "complex" (the speed check on), an admin password for the tests' admin client."""
    need_server()
    with localserver.LocalSauerServer() as server:
        yield server


@pytest.fixture
def clients():
    cs = Clients()
    yield cs
    cs.close()
