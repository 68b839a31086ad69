"""`run` against an address where nothing listens ends at once with the clear error (issue 25 item 9).

Before, a Quake 3 address whose UDP port is closed (the kernel answers ICMP port unreachable to
every getchallenge) and a NetSync address whose TCP port refuses the connection both waited the
whole run.connect_timeout (10 s) before saying "no answer". The error was already clear; now it
comes as soon as the refusal is certain (two refused getchallenges / three refused connects), exit
3. A server that is merely slow still gets the whole timeout (tests/app/test_sinks_alone.py), and
with another sink streaming the refused one keeps retrying (sinks fail alone).
"""

from __future__ import annotations

import socket
import time

import pytest

from support import free_port, headcast

pytestmark = pytest.mark.live


@pytest.mark.parametrize(
    "flag, words",
    [
        ("--q3", "ICMP port unreachable: nothing listens on that UDP port"),
        ("--netsync", "nothing listens there"),
    ],
)
def test_nothing_listening_fails_fast_with_the_clear_error(mock_manifest, flag, words):
    t0 = time.monotonic()
    r = headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--duration",
        "30",
        flag,
        f"127.0.0.1:{free_port(socket.SOCK_DGRAM if flag == '--q3' else socket.SOCK_STREAM)}",
        timeout=60,
    )
    took = time.monotonic() - t0
    assert r.returncode == 3, (r.returncode, r.stderr)
    (err,) = [ln for ln in r.stderr.splitlines() if ln.startswith("headcast: error:")]
    assert words in err, err
    assert took < 8, f"took {took:.1f} s: waited for the connect timeout (10 s)"
