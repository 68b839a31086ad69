"""Real styly-netsync-server processes on 127.0.0.1 and free ports, discovery off.

- `netsync_server`: the current release (the project venv's, 0.17.5, protocol 8).
- `netsync_edge`: 0.10.4 (protocol 3) and 0.17.5 (protocol 8).
- `netsync_release`: parametrised over every release in releases.RELEASES, one per protocol
  (0.10.4 … 0.17.5, from build/netsync/<version>); `netsync_release.address.protocol` and
  `.version` say which one a test got.

One server per test: the server's body cache is keyed by clientNo across rooms (docs/protocols/netsync.md#defects),
so tests sharing a server would see each other's poses.
"""

from __future__ import annotations

import pytest

from headcast.netcode.netsync.localserver import LocalNetSyncServer
from headcast.netcode.netsync.releases import RELEASES


def _started(version, log_dir):
    srv = LocalNetSyncServer(version, log_dir=log_dir)
    try:
        srv.start(timeout=60)
    except BaseException:
        srv.close()
        raise
    return srv


@pytest.fixture
def netsync_server(tmp_path):
    srv = _started(None, tmp_path)
    try:
        yield srv
    finally:
        srv.close()


EDGES = ("0.10.4", "0.17.5")  # the first protocol headcast speaks (3) and the current release (8)


@pytest.fixture(params=EDGES, ids=[f"v{v}-p{RELEASES[v]}" for v in EDGES])
def netsync_edge(request, tmp_path):
    """The oldest and the newest protocol: the client behaviour tests run against both."""
    srv = _started(request.param, tmp_path)
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture(params=list(RELEASES), ids=[f"v{v}-p{p}" for v, p in RELEASES.items()])
def netsync_release(request, tmp_path):
    srv = _started(request.param, tmp_path)
    try:
        yield srv
    finally:
        srv.close()
