"""Protocol detection leaves the server operator's log clean (issue 25 item 7).

Every styly-netsync-server release (0.10.4 … 0.17.5, one per protocol 3–8) runs on 127.0.0.1;
`headcast probe netsync` (a real process) and the link `headcast run --netsync` uses join it with
the protocol detected. The server logs every join message of another protocol than its own as a
WARNING ("Received invalid control-lane message type 11", "Deserialization failed for message type
11: Unsupported protocol version: 3", "Received message with None data"): before this, every join
wrote five such rejections (ten lines on 0.16+). Detection now asks one protocol at a time, newest
first, and stops once one answers: a current server (0.16.0, 0.17.5) logs no warning at all; an
older one at most one rejected probe per newer protocol (one or two lines each), once per join.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from headcast.app.sinks.netsync.link import NetSyncLink
from headcast.netcode.netsync.client import DETECT_ORDER
from headcast.netcode.netsync.model import PoseFrame, Transform

from support import headcast, wait_for

pytestmark = pytest.mark.live

# The lines a styly-netsync-server logs for a message it rejects (0.10.4 … 0.17.5).
REJECTED = re.compile(
    r"Received invalid|Deserialization failed|Received message with None data|"
    r"Unknown binary msg_type|Dropped wrong-lane|Unsupported protocol"
)


def _warnings(srv) -> list[str]:
    srv.stop()  # the log is complete once the server has exited (stopped by its PID)
    return [line for line in srv.log_path.read_text(errors="replace").splitlines() if "WARNING" in line]


def test_detection_writes_no_rejected_message_into_the_servers_log(netsync_release):
    srv = netsync_release
    a = srv.address
    address = f"127.0.0.1:{a.dealer_port}:{a.pub_port}:{a.transform_port}"
    # 1. `headcast probe netsync`, a real process
    out = headcast("probe", "netsync", address, "--room", "quiet", "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["protocol"], result["server_version"]) == (a.protocol, a.version)
    # 2. the link `headcast run --netsync` streams through
    link = NetSyncLink(
        "127.0.0.1",
        a.dealer_port,
        a.pub_port,
        "quiet",
        "headcast-quiet-test",
        10.0,
        False,
        time.monotonic,
        transform_port=a.transform_port,
    )
    try:
        frame = PoseFrame.build(Transform((0.0, 1.6, 0.0)))

        def streaming():
            now = time.monotonic()
            link.send(frame, now)
            link.poll(now)
            return link.joined and link.own_body is not None

        wait_for(streaming, 15, f"the link to join {a.version} and see its own pose relayed")
        assert link.protocol == a.protocol
    finally:
        link.close()
    rejected = [w for w in _warnings(srv) if REJECTED.search(w)]
    newer = DETECT_ORDER.index(a.protocol)  # protocols asked before the server's own
    if newer == 0:
        assert rejected == [], f"{a.version} logged rejections:\n" + "\n".join(rejected)
    else:
        # two joins, each at most one rejected probe per newer protocol, logged in one or two lines
        assert len(rejected) <= 2 * 2 * newer, "\n".join(rejected)
