"""Two headcast clients in one real server (ioq3ded + OpenArena's native game): one sees the other.

`Q3ClientCore.entities` on B must show A — its name from CS_PLAYERS, its place, and its view
angles as the server's game put them on A's entity: SnapVector truncates to whole degrees (toward
zero), while A's own playerState keeps SHORT2ANGLE of what A sent (30° → 29.998° for A, 29° for
B). A vanilla server has no VR head: eFlags 0x400 stays clear and `head` is None.
"""

from __future__ import annotations

import math
import time

import pytest

from headcast.netcode.q3.client import State
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.vrhead import angle2short, snap_angle, view_angle

from q3.test_live_session import OPEN_FLOOR

pytestmark = pytest.mark.live

EF_TELEPORT_BIT = 4


def pump_until(sessions, pred, timeout: float, what: str) -> None:
    """Poll every session (each must keep answering its server) until `pred()` holds, bounded."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() >= end:
            pytest.fail(
                f"timed out after {timeout:.1f} s waiting for {what}\nserver log:\n{sessions[0].server.log_tail(15)}"
            )
        now = time.monotonic()
        for s in sessions:
            s.events += s.client.poll(now)
        time.sleep(0.002)


def teleport(sessions, s, origin, yaw: float) -> None:
    flags = s.client.status.ps.e_flags
    s.client.send_command("setviewpos {:.0f} {:.0f} {:.0f} {:.0f}".format(*origin, yaw))
    pump_until(
        sessions, lambda: (s.client.status.ps.e_flags ^ flags) & EF_TELEPORT_BIT, 4.0, f"{s.client.status} teleport"
    )


def seen_by_others(view: tuple[float, float, float]) -> tuple[float, ...]:
    """The angles B must see on A's entity: the server's view of each short, then SnapVector."""
    return tuple(snap_angle(view_angle(angle2short(v))) for v in view)


def test_one_client_sees_the_other_with_snapped_angles(ioq3_server, session_factory):
    a = session_factory(ioq3_server, family=Family.NEW71, name="alice")
    a.client.set_input((10.0, 30.7, 30.0))
    a.enter()
    b = session_factory(ioq3_server, family=Family.NEW71, name="bob")
    both = [a, b]
    pump_until(both, lambda: b.client.state is State.ACTIVE, 15.0, "bob entering the world")
    assert b.client.core.entities is not None
    # Back to back: a teleport pushes the player forward (400 u/s), so they drift apart, not into each other.
    teleport(both, a, OPEN_FLOOR, 180.0)
    teleport(both, b, (OPEN_FLOOR[0] + 160.0, OPEN_FLOOR[1], OPEN_FLOOR[2]), 0.0)
    me = a.client.status.client_num

    def alice():
        ents = b.client.core.entities
        return next((p for p in ents.players if p.client_num == me), None) if ents else None

    for view in ((10.0, 30.7, 30.0), (-10.0, -30.7, -30.0)):
        a.client.set_input(view)
        want = seen_by_others(view)
        own_want = tuple(view_angle(angle2short(v)) for v in view)  # 29.998, not 29
        # the two clients' snapshots arrive independently: wait for both views
        pump_until(
            both,
            lambda: alice() is not None and alice().angles == want and tuple(a.client.status.ps.viewangles) == own_want,
            4.0,
            f"bob to see alice's view {view} as {want} (sees {alice()}) and alice's own as {own_want}",
        )
        p = alice()
        own = a.client.status.ps.viewangles
        assert tuple(own) == own_want
        assert abs(own[2]) - abs(p.angles[2]) > 0.99  # others: whole degrees
        assert p.name == "alice" and p.head is None and not p.eflags & 0x400 and not p.dead
        ents = b.client.core.entities
        assert math.dist(p.origin, OPEN_FLOOR) < 120 and math.dist(ents.origin, p.origin) > 100
        assert all(q.client_num != ents.client_num for q in ents.players)  # never ourselves
        assert b.client.core.entities is ents  # one record per snapshot
