"""Live sessions against real dedicated servers on 127.0.0.1 (stock OpenArena, plain ioq3).

Each test starts from servers the fixtures launched; every wait is bounded.
"""

from __future__ import annotations

import math
import time

import pytest

from headcast.netcode.q3.client import State
from headcast.netcode.q3.events import Disconnected, EnteredWorld, GamestateReceived, HeadTracking, SnapshotReceived
from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.vrhead import angle2short

from support import LONG

pytestmark = pytest.mark.live


def short_diff(a_deg: float, b_deg: float) -> int:
    """Distance in ANGLE2SHORT steps, modulo the circle."""
    d = (angle2short(a_deg) - angle2short(b_deg)) & 0xFFFF
    return min(d, 0x10000 - d)


def assert_view(session, intended, what: str) -> None:
    ps = session.client.status.ps
    assert ps is not None, what
    for axis, (got, want) in enumerate(zip(ps.viewangles, intended)):
        assert short_diff(got, want) <= 1, f"{what}: axis {axis} view {got} != intended {want} (ps {ps.viewangles})"


def settle_view(session, intended, what: str, timeout: float = 3.0) -> None:
    """Wait (bounded) until the server's playerState shows the intended view, then check it once more."""

    def ok() -> bool:
        ps = session.client.status.ps
        return ps is not None and all(short_diff(g, w) <= 1 for g, w in zip(ps.viewangles, intended))

    session.until(ok, timeout, what)
    session.pump(0.2)  # it must stay there, not just pass through
    assert_view(session, intended, what)


def no_drops(session) -> None:
    st = session.client.status
    assert st.drops == {}, f"drops: {st.drops} (last: {st.last_drop})"


def players(server: LocalQ3Server) -> int:
    return len(server.getstatus().players)


def stream_views(driver, set_input, seconds: float) -> float:
    """A new intended view every second for `seconds` (pitch within the ±87.9° clamp, roll within
    ±60°), each checked on the server's playerState before the next; returns the time it took.
    `driver` has `client` and `pump`."""
    start = time.monotonic()
    checks = segment = 0
    while time.monotonic() - start < seconds:
        segment += 1
        intended = (
            math.fmod(segment * 23.3, 120.0) - 60.0,
            segment * 47.7 - 180.0,
            math.fmod(segment * 13.1, 100.0) - 50.0,
        )
        set_input(intended, buttons=0)
        driver.pump(min(1.0, max(0.0, seconds - (time.monotonic() - start))))
        if driver.client.status.ps and time.monotonic() - start < seconds:
            assert_view(driver, intended, f"segment {segment}")
            checks += 1
    assert checks >= int(seconds) - 1
    return time.monotonic() - start


# 10 s per family (the figure); HEADCAST_LONG=1 streams for a minute each.
SECONDS = 60.0 if LONG else 10.0
STREAMS = [
    ("openarena", None, Family.LEGACY71, SECONDS),
    ("ioq3", Family.NEW71, Family.NEW71, SECONDS),
    ("ioq3", Family.LEGACY68, Family.LEGACY68, SECONDS),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,family,expect_family,seconds", STREAMS, ids=["openarena-legacy71-pure", "ioq3-new71", "ioq3-legacy68"]
)
def test_stream_60hz_usercmds_then_disconnect(request, session_factory, kind, family, expect_family, seconds):
    server = request.getfixturevalue("oa_server" if kind == "openarena" else "ioq3_server")
    s = session_factory(server, family=family, pure_paks=tuple(pk3_files()), name=f"stream{seconds:.0f}")
    intended = (-10.0, 30.0, 20.0)
    s.client.set_input(intended)
    s.enter()
    st = s.client.status
    assert st.family is expect_family
    assert st.sv_pure is (kind == "openarena") and st.pure_error == ""
    gs = s.of(GamestateReceived)[-1]
    assert gs.mapname == "oa_dm1" and gs.client_num == st.client_num >= 0
    # ioq3 spawns with our first cmd and resets delta_angles: the view is right after spawn too.
    settle_view(s, intended, "view after spawn")

    base = dict(s.client.status.counters)
    elapsed = stream_views(s, s.client.set_input, seconds)
    st = s.client.status
    cmds = st.counters["usercmds"] - base["usercmds"]
    snaps = st.counters["snapshots"] - base["snapshots"]
    assert cmds >= 0.9 * 60 * elapsed, f"{cmds} usercmds in {elapsed:.1f} s"
    assert cmds <= 1.05 * 60 * elapsed + 2
    assert snaps >= 0.8 * 20 * elapsed, f"{snaps} snapshots in {elapsed:.1f} s"
    assert st.counters.get("move_nodelta", 0) - base.get("move_nodelta", 0) <= 5  # deltas acknowledged
    assert st.state is State.ACTIVE and st.latency_ms is not None and st.latency_ms < 200
    no_drops(s)
    assert players(server) >= 1
    s.close()
    assert s.client.state is State.CLOSED
    assert isinstance(s.events[-1], Disconnected) and not s.events[-1].will_reconnect
    # The server frees the slot on our `disconnect` (not after its 200 s timeout).
    s.until(
        lambda: "headcast" not in server.rcon("status") and "stream" not in server.rcon("status"),
        5.0,
        "the server to drop the client after disconnect",
    )


# A known open floor on oa_dm1's lower level (z -120): probed clear for >= 169 units in every
# direction around where a teleport here comes to rest (it spits the player out at 400 u/s along
# the given yaw: ~113 units). Random spawn points are not usable for a movement check: from some,
# a direction is blocked or slides along a wall, and one (-432 1596 24) walks off ledges into a
# hurt volume, after which the dead player cannot move at all (this test failed ~1 run in 4).
OPEN_FLOOR = (83.0, 1160.0, -120.0)
PM_NORMAL, ENTITYNUM_NONE, EF_TELEPORT_BIT = 0, 1023, 4
MOVE_MS = 250  # of forward run by the server: ~80 units at 320 u/s, well inside the open floor's clearance


def teleport(session, origin, yaw: float, what: str) -> None:
    """`setviewpos` (a cheat: the ioq3 fixture runs devmap), waiting for EF_TELEPORT_BIT to toggle."""
    flags = session.client.status.ps.e_flags
    session.client.send_command("setviewpos {:.0f} {:.0f} {:.0f} {:.0f}".format(*origin, yaw))
    session.until(lambda: (session.client.status.ps.e_flags ^ flags) & EF_TELEPORT_BIT, 4.0, what)


def standing_still(session) -> bool:
    """Alive, on the ground, no pm_time (teleport/knockback) left, not moving: a move starts clean."""
    ps = session.client.status.ps
    v = ps.velocity
    return (
        ps.pm_type == PM_NORMAL
        and ps["stats[0]"] > 0
        and ps.ground_entity_num != ENTITYNUM_NONE
        and ps.pm_time == 0
        and math.hypot(*v) < 1.0
    )


def onto_open_floor(driver, intended) -> None:
    """In game on oa_dm1 with the intended view; then teleported to OPEN_FLOOR (the game rewrites
    delta_angles to face yaw 0; the client compensates from the next playerState so the view
    returns to what we intend). `driver` has `client`, `until` and `pump`."""
    assert driver.client.status.mapname == "oa_dm1"  # OPEN_FLOOR is a place on this map
    settle_view(driver, intended, "view after spawn")
    teleport(driver, OPEN_FLOOR, 0.0, "the teleport to the open floor (EF_TELEPORT_BIT toggle)")
    # Where the first snapshot after the toggle finds the player depends on when it was taken: the
    # teleport spits the player out along yaw 0 (+x) at 400 u/s, so a snapshot late by 150 ms (a
    # busy machine) shows it ~60 units on. The landing is right when y and z are OPEN_FLOOR's and x
    # is on that line, short of where the spit comes to rest (~113 units).
    x, y, z = driver.client.status.ps.origin
    assert abs(y - OPEN_FLOOR[1]) < 1.0 and abs(z - OPEN_FLOOR[2]) < 1.0, (x, y, z)
    assert -1.0 < x - OPEN_FLOOR[0] < 130.0, (x, y, z)
    settle_view(driver, intended, "view after teleport")


def move_and_check(driver, set_input, yaw: float) -> None:
    """From standing still, forward at `yaw` until the server has run MOVE_MS of it, then stop: the
    player must have moved on the same floor in the commanded direction. `driver` has `client`,
    `until` and `pump`. The move is counted in the server's time (the snapshots' commandTime from the
    first that shows the player moving), not ours: a stalled machine (the Debian 13 tier, loaded)
    once spent a wall-clock quarter second without a usercmd reaching the server, and the player
    did not move at all."""
    driver.until(lambda: standing_still(driver), 5.0, f"the player to stand still before moving at yaw {yaw}")
    o0 = driver.client.status.ps.origin
    set_input((0.0, yaw, 0.0), forward=127)
    started: list[int] = []

    def ran_the_move() -> bool:
        ps = driver.client.status.ps
        if not started:
            if math.hypot(*ps.velocity[:2]) > 1.0:
                started.append(ps.command_time)
            return False
        return ps.command_time - started[0] >= MOVE_MS

    driver.until(ran_the_move, 5.0, f"the server to run {MOVE_MS} ms of forward at yaw {yaw}")
    set_input((0.0, yaw, 0.0))
    driver.until(lambda: standing_still(driver), 5.0, f"the player to stop after moving at yaw {yaw}")
    o1 = driver.client.status.ps.origin
    dist = math.dist(o0[:2], o1[:2])
    heading = math.degrees(math.atan2(o1[1] - o0[1], o1[0] - o0[0]))
    err = (heading - yaw + 180.0) % 360.0 - 180.0
    what = f"forward at yaw {yaw}: {o0} -> {o1}, {dist:.1f} units at heading {heading:.2f}"
    assert dist > 60.0 and abs(o1[2] - o0[2]) < 1.0, what  # moved, on the same floor
    assert abs(err) < 2.0, what


def test_forward_moves_in_commanded_direction_and_teleport_keeps_intended_view(ioq3_server, session_factory):
    s = session_factory(ioq3_server, family=Family.NEW71, name="mover")
    intended = (15.0, -60.0, -25.0)
    s.client.set_input(intended)
    s.enter()
    onto_open_floor(s, intended)

    # Opposite directions in pairs, so the player stays near the middle of the floor.
    for yaw in (0.0, 180.0, 90.0, 270.0, 45.0, 225.0, 135.0, 315.0):
        move_and_check(s, s.client.set_input, yaw)

    # A second teleport, facing another yaw, after the view has been elsewhere.
    s.client.set_input(intended)
    teleport(s, OPEN_FLOOR, 120.0, "the second teleport (EF_TELEPORT_BIT toggle)")
    assert math.dist(s.client.status.ps.origin, OPEN_FLOOR) < 60
    settle_view(s, intended, "view after the second teleport")
    no_drops(s)


def test_vr_client_on_vanilla_server_sends_16bit_buttons_and_says_so(oa_server, session_factory, monkeypatch):
    from headcast.netcode.q3.netchan import Netchan

    widths = []
    real = Netchan.transmit_client_message

    def spy(self, server_id, msg_seq, cmd_seq, reliable, cmds, feed, ring, button_bits, *rest):
        if cmds:
            widths.append((button_bits, tuple(c.buttons for c in cmds)))
        return real(self, server_id, msg_seq, cmd_seq, reliable, cmds, feed, ring, button_bits, *rest)

    monkeypatch.setattr(Netchan, "transmit_client_message", spy)
    s = session_factory(oa_server, vr=True, pure_paks=tuple(pk3_files()), name="vrflat")
    intended = (5.0, 10.0, 12.0)
    s.client.set_input(intended, buttons=1, head=(30.0, 20.0))
    s.enter()
    ht = s.of(HeadTracking)
    assert ht and not ht[-1].sent and "vr_support" in ht[-1].reason
    st = s.client.status
    assert not st.vr_support and not st.vr_active
    s.pump(1.0)
    assert widths and all(w == 16 for w, _ in widths)
    assert all(b == 1 for _, bs in widths for b in bs)  # no head bits on a vanilla link
    # The server reads our 16-bit cmds fine: it runs them (commandTime advances) and the view is exact.
    t0 = s.client.status.ps.command_time
    s.pump(0.5)
    assert s.client.status.ps.command_time > t0
    settle_view(s, intended, "VR client's view on a vanilla server")
    no_drops(s)


@pytest.mark.parametrize("kind", ["openarena", "ioq3"])
def test_map_change_and_map_restart_via_rcon_are_followed(session_factory, kind):
    with LocalQ3Server(kind=kind) as server:
        s = session_factory(server, pure_paks=tuple(pk3_files()), name="mapper")
        intended = (-20.0, 100.0, 0.0)
        s.client.set_input(intended)
        s.enter()
        first_id = s.client.status.server_id
        server.rcon("map oa_dm2")
        s.until(lambda: len(s.of(EnteredWorld)) >= 2, 20.0, "entering the world on the new map")
        st = s.client.status
        assert st.mapname == "oa_dm2" and st.server_id != first_id and st.pure_error == ""
        assert len(s.of(GamestateReceived)) >= 2
        settle_view(s, intended, "view on the new map")
        server.rcon("map_restart 0")
        restart_id = st.server_id
        s.until(lambda: s.client.status.server_id != restart_id, 10.0, "the map_restart serverid")
        s.pump(1.0)
        assert s.client.status.state is State.ACTIVE
        settle_view(s, intended, "view after map_restart")
        s.close()


@pytest.mark.parametrize("kind", ["openarena", "ioq3"])
def test_server_kill_and_restart_is_recovered(session_factory, kind):
    with LocalQ3Server(kind=kind) as server:
        s = session_factory(server, pure_paks=tuple(pk3_files()), name="phoenix")  # default 10 s silence timeout
        intended = (0.0, -135.0, 10.0)
        s.client.set_input(intended)
        s.enter()
        server.kill()
        server.start()
        # ioq3 silently ignores a client it does not know; the client's getinfo probe notices that
        # well before its silence timeout.
        s.until(lambda: s.of(Disconnected), 6.0, "noticing the restarted server")
        first = s.of(Disconnected)[0]
        assert first.will_reconnect and "restarted" in first.reason
        s.until(
            lambda: len(s.of(EnteredWorld)) >= 2 and s.client.state is State.ACTIVE,
            20.0,
            "reconnecting to the restarted server",
        )
        settle_view(s, intended, "view after reconnect")
        assert s.client.status.counters["attempts"] >= 2
        assert any(isinstance(e, SnapshotReceived) for e in s.events[-20:])
        s.close()
