"""The health light heading each sink's panel in the mirror (app/mirror/panels.py health): every state
a link can report has a deliberate colour — green streaming, amber on the way in or degraded,
red lost or refused, grey with no server asked for. (The lights as drawn, on real servers:
test_mirror_demo.py.)"""

from __future__ import annotations

import pytest

from headcast.app.mirror import panels as mp
from headcast.app.run.telemetry import SinkStatus
from headcast.app.sinks.netsync import link as netsync_link
from headcast.app.sinks.q3 import link as q3_link
from headcast.app.sinks.sauer import link as sauer_link


def _states() -> set[str]:
    """Every state the three links (and the loop, for a failed sink) report."""
    out = set(q3_link.STATE_TEXT.values()) | set(sauer_link.STATE_TEXT.values())
    out |= {q3_link.PURE_FAILED, q3_link.REFUSED, q3_link.RATE_LIMITED, q3_link.NO_ANSWER, q3_link.DISCONNECTED}
    out |= {"refused", "stopped", "no answer", "disconnected"}  # sauer_link.SauerLink.state
    source = open(netsync_link.__file__, encoding="utf-8").read()
    out |= {
        s
        for s in ("connecting", "connected", "server silent", "protocol mismatch", "no answer", "disconnected")
        if f'"{s}"' in source
    }
    return out | {"failed"}


def test_every_link_state_has_a_deliberate_colour():
    states = _states()
    assert len(states) >= 15
    unclassified = states - mp.GREEN_STATES - mp.RED_STATES - mp.AMBER_STATES
    assert not unclassified, unclassified
    assert not (mp.GREEN_STATES & mp.RED_STATES or mp.GREEN_STATES & mp.AMBER_STATES or mp.RED_STATES & mp.AMBER_STATES)


@pytest.mark.parametrize(
    "state, live, light",
    [
        ("in game", True, "green"),
        ("connected", True, "green"),
        ("connecting", False, "amber"),
        ("loading", False, "amber"),
        ("joining", False, "amber"),
        ("reconnecting", False, "amber"),
        ("server silent", True, "amber"),
        ("rate-limited", False, "amber"),
        ("dead", True, "amber"),
        ("spectator", True, "amber"),
        ("in game", False, "amber"),  # in game but not streaming yet: not green
        ("no answer", False, "red"),
        ("refused", False, "red"),
        ("pure check failed", False, "red"),
        ("protocol mismatch", False, "red"),
        ("disconnected", False, "red"),
        ("failed", False, "red"),
        ("offline", False, "off"),
    ],
)
def test_state_to_light(state, live, light):
    assert mp.health(SinkStatus("x", state, live=live)) == light
    assert mp.HEALTH_COLORS[light] == {"green": mp.GREEN, "amber": mp.AMBER, "red": mp.RED, "off": mp.DIM}[light]
