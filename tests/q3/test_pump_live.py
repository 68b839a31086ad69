"""Live tests of `Q3Client.run(until, batch)` — the in-game loop, its command ticks in C — against
real dedicated servers on 127.0.0.1 (stock OpenArena, plain ioq3).

As in an application: a network thread calls `run` in slices and keeps the events; the test
thread is the application (the XR loop): it sets the input at ~90 Hz, sends commands and reads
`status` while `run` pumps. `App` has the shape of test_live_session's Session (client, until,
pump), so that file's helpers (settle_view, teleport, ...) drive it unchanged. Every wait is bounded.
"""

from __future__ import annotations

import math
import select
import socket
import struct
import threading
import time
from typing import Callable

import pytest

from headcast.netcode.q3.client import ClientConfig, State
from headcast.netcode.q3.clientmsg import read_client_message
from headcast.netcode.q3.events import Disconnected, EnteredWorld, Event, GamestateReceived, HeadTracking, ServerCommand
from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files
from headcast.netcode.q3.native import NATIVE
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.transport import DEFAULT_BATCH, Q3Client

from q3.test_live_session import (
    STREAMS,
    assert_view,
    move_and_check,
    no_drops,
    onto_open_floor,
    players,
    settle_view,
    stream_views,
)
from support import wait_for

pytestmark = pytest.mark.live

FRAME = 1.0 / 90.0  # the application's frame (an XR loop at 90 Hz)
SLICE = 0.25  # run() per call: events reach the application at most this late
INTERRUPT_BOUND = 2.0  # interrupt() returns run() within a tick; generous for a loaded 2-core machine


class App:
    """One Q3Client: a thread runs it (`run` in slices of `slice_s`), the caller acts as the app."""

    def __init__(
        self,
        server: LocalQ3Server,
        batch: float = DEFAULT_BATCH,
        slice_s: float = SLICE,
        address: tuple[str, int] | None = None,
        **config,
    ) -> None:
        self.server = server
        self.client = Q3Client(address or server.address, ClientConfig(**config), bind=("127.0.0.1", 0))
        self.batch = batch
        self.slice_s = slice_s
        self.events: list[Event] = []  # extended by the run thread only
        self.failure: BaseException | None = None
        self.run_until = 0.0  # the running slice's `until`, and when the last run() returned
        self.returned_at = 0.0
        self.core_ticks = 0  # usercmd ticks the core ran itself, as of the last return
        self._input: tuple = ((0.0, 0.0, 0.0), {})
        self._stop = threading.Event()
        self._close = False
        self._thread = threading.Thread(target=self._drive, name="q3-run", daemon=True)

    # ------------------------------------------------------------------ the run thread

    def _drive(self) -> None:
        client = self.client
        try:
            client.start(time.perf_counter())
            while not self._stop.is_set():
                self.run_until = time.perf_counter() + self.slice_s
                events = client.run(self.run_until, self.batch)
                self.returned_at = time.perf_counter()
                # run() absorbed every tick before returning: the two counts agree here (and are
                # set before the events show, so whoever sees an event sees them at least this new).
                self.core_ticks = client.core.counters["usercmds"] - client.native_ticks
                self.events += events
            if self._close:  # close from the thread that ran it, after run returned
                self.events += client.close(time.perf_counter())
        except BaseException as exc:  # raised in the test thread by _frame and stop
            self.failure = exc

    # ------------------------------------------------------------------ the application side

    def start(self) -> None:
        self._thread.start()

    def set_input(self, angles, **kw) -> None:
        self._input = (tuple(angles), kw)
        self.client.set_input(angles, **kw)

    def _frame(self, each: Callable[[float], None] | None) -> None:
        if self.failure is not None:
            raise AssertionError("the run thread failed") from self.failure
        if not self._thread.is_alive() and not self._stop.is_set():
            pytest.fail("the run thread ended on its own")
        if each:
            each(time.monotonic())
        angles, kw = self._input
        self.client.set_input(angles, **kw)  # every frame, as the XR loop does
        time.sleep(FRAME)

    def pump(self, seconds: float, each: Callable[[float], None] | None = None) -> None:
        """Be the application for `seconds` (run() keeps pumping in its thread)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._frame(each)

    def until(
        self, pred: Callable[[], object], timeout: float, what: str, each: Callable[[float], None] | None = None
    ) -> None:
        end = time.monotonic() + timeout
        while not pred():
            if time.monotonic() >= end:
                st = self.client.status
                pytest.fail(
                    f"timed out after {timeout:.1f} s waiting for {what}; state {st.state}, "
                    f"last drop {st.last_drop!r}, last disconnect {st.last_disconnect!r}, "
                    f"pure {st.pure_error!r}\nserver log:\n{self.server.log_tail(15)}"
                )
            self._frame(each)

    def mark(self) -> tuple[int, dict]:
        """native_ticks, then the counters: a hand-over in between counts for the pump's share."""
        ticks = self.client.native_ticks
        return ticks, dict(self.client.status.counters)

    def of(self, kind: type) -> list:
        return [e for e in list(self.events) if isinstance(e, kind)]

    def enter(self, timeout: float = 15.0) -> None:
        def in_game() -> bool:
            st = self.client.status
            return st.state is State.ACTIVE and st.ps is not None

        self.until(in_game, timeout, "entering the world through run()")

    def stop(self, close: bool) -> None:
        """interrupt() + join (bounded); with `close`, the run thread closes the client after its
        run() returned. With slices longer than the bound, a return in time proves the interrupt."""
        prove = self.slice_s >= 2 * INTERRUPT_BOUND
        if prove and self.run_until - time.perf_counter() < INTERRUPT_BOUND + 0.5:
            # The slice ends soon: wait for the next one, so that a return proves the interrupt.
            end = self.run_until
            self.until(lambda: self.run_until != end, self.slice_s + 5.0, "the next run() slice")
        self._close = close
        self._stop.set()
        asked = time.perf_counter()
        self.client.interrupt()
        self._thread.join(INTERRUPT_BOUND + self.slice_s)
        assert not self._thread.is_alive(), "run() did not return after interrupt()"
        if self.failure is not None:
            raise AssertionError("the run thread failed") from self.failure
        if prove:
            took = self.returned_at - asked
            assert self.returned_at < self.run_until, "run() returned at its until, not on interrupt()"
            assert took < INTERRUPT_BOUND, f"run() returned {took:.3f} s after interrupt()"

    def abort(self) -> None:
        """After a failed test: stop the run thread (bounded) and say goodbye to the server."""
        if self._thread.is_alive():
            self._stop.set()
            self.client.interrupt()
            self._thread.join(5.0)
        if not self._thread.is_alive() and self.client.state is not State.CLOSED:
            self.client.close(time.perf_counter())


@pytest.fixture
def apps():
    made: list[App] = []

    def make(server: LocalQ3Server, **kw) -> App:
        app = App(server, **kw)
        made.append(app)
        return app

    yield make
    for app in made:
        app.abort()


def assert_native(ticks: int, cmds: int, what: str) -> None:
    """The pump ran (nearly) every tick; without the extension run() is the Python loop (none)."""
    if NATIVE is None:
        assert ticks == 0, f"{what}: {ticks} native ticks without the extension"
    else:
        assert ticks >= 0.95 * cmds, f"{what}: {ticks} of {cmds} usercmds ran in the pump"


def assert_streams(app: App, base: dict, ticks0: int, elapsed: float, what: str) -> None:
    """60 usercmds/s (the pump's), 20 snapshots/s, acknowledged deltas, since `app.mark()`."""
    st = app.client.status
    cmds = st.counters["usercmds"] - base["usercmds"]
    snaps = st.counters["snapshots"] - base["snapshots"]
    # The counters trail the pump by up to a hand-over (batch, plus a snapshot gap and a tick), at
    # either end of the window.
    slack = 60 * (app.batch + 0.1)
    assert 0.9 * 60 * elapsed - slack <= cmds <= 1.05 * 60 * elapsed + slack, (
        f"{what}: {cmds} usercmds in {elapsed:.2f} s"
    )
    assert snaps >= 0.8 * 20 * elapsed - 20 * (app.batch + 0.1), f"{what}: {snaps} snapshots in {elapsed:.2f} s"
    assert_native(app.client.native_ticks - ticks0, cmds, what)  # read after the counters: never fewer
    assert st.counters.get("move_nodelta", 0) - base.get("move_nodelta", 0) <= 5, what  # deltas acknowledged


# test_live_session's three families at the default batch, and one with every datagram handed
# over at the tick that read it.
PUMP_STREAMS = [(*s, DEFAULT_BATCH) for s in STREAMS] + [(*STREAMS[1], 0.0)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,family,expect_family,seconds,batch",
    PUMP_STREAMS,
    ids=["openarena-legacy71-pure", "ioq3-new71", "ioq3-legacy68", "ioq3-new71-batch0"],
)
def test_run_streams_60hz_with_the_intended_view_then_closes(
    request, apps, kind, family, expect_family, seconds, batch
):
    server = request.getfixturevalue("oa_server" if kind == "openarena" else "ioq3_server")
    name = f"pumped{expect_family.protocol}{'l' if expect_family.legacy_netchan else 'n'}{'b0' if batch == 0 else ''}"
    # Slices longer than the stream: only interrupt() ends the run() in progress at the end.
    app = apps(server, batch=batch, slice_s=seconds + 25.0, family=family, pure_paks=tuple(pk3_files()), name=name)
    intended = (-10.0, 30.0, 20.0)
    app.set_input(intended)
    app.start()
    app.enter()
    st = app.client.status
    assert st.family is expect_family
    assert st.sv_pure is (kind == "openarena") and st.pure_error == ""
    assert st.mapname == "oa_dm1"
    settle_view(app, intended, "view after spawn")

    ticks0, base = app.mark()
    elapsed = stream_views(app, app.set_input, seconds)
    assert_streams(app, base, ticks0, elapsed, f"{seconds:.0f} s stream")
    st = app.client.status
    assert st.state is State.ACTIVE and st.latency_ms is not None and st.latency_ms < 200, st.latency_ms
    no_drops(app)
    assert app.client.socket_errors == 0
    assert players(server) >= 1

    app.stop(close=True)
    assert app.client.state is State.CLOSED
    gs = app.of(GamestateReceived)
    assert len(gs) == 1 and gs[0].mapname == "oa_dm1" and gs[0].client_num == st.client_num >= 0
    assert len(app.of(EnteredWorld)) == 1
    assert isinstance(app.events[-1], Disconnected) and not app.events[-1].will_reconnect
    assert len(app.of(Disconnected)) == 1
    # The server frees the slot on our `disconnect` (not after its timeout).
    wait_for(lambda: name not in server.rcon("status"), 5.0, "the server to drop the client after disconnect")


def test_forward_stick_moves_the_player_while_run_pumps(ioq3_server, apps):
    app = apps(ioq3_server, family=Family.NEW71, name="pumpmover")
    intended = (15.0, -60.0, -25.0)
    app.set_input(intended)
    app.start()
    app.enter()
    # setviewpos goes out through send_command from this (the application's) thread: it must reach
    # the server while run() pumps (send_command interrupts the pump; the core sends it).
    onto_open_floor(app, intended)

    ticks0, base = app.mark()
    for yaw in (0.0, 180.0, 90.0, 270.0):  # opposite pairs: the player stays near the middle
        move_and_check(app, app.set_input, yaw)
    cmds = app.client.status.counters["usercmds"] - base["usercmds"]
    assert_native(app.client.native_ticks - ticks0, cmds, "the moves")
    no_drops(app)
    app.stop(close=True)


@pytest.mark.parametrize("kind", ["openarena", "ioq3"])
def test_run_recovers_from_a_server_kill_and_restart(apps, kind):
    with LocalQ3Server(kind=kind) as server:
        app = apps(server, pure_paks=tuple(pk3_files()), name="pumpphoenix")  # default 10 s silence timeout
        intended = (0.0, -135.0, 10.0)
        app.set_input(intended)
        app.start()
        app.enter()
        settle_view(app, intended, "view before the kill")
        core0 = app.core_ticks
        server.kill()
        server.start()
        # The pump hands the silence probe's tick to the core; the answer shows the restart.
        app.until(lambda: app.of(Disconnected), 6.0, "noticing the restarted server")
        first = app.of(Disconnected)[0]
        assert first.will_reconnect and "restarted" in first.reason, first
        assert app.core_ticks > core0, "no tick ran in the core (the silence probe's should)"
        app.until(
            lambda: len(app.of(EnteredWorld)) >= 2 and app.client.state is State.ACTIVE,
            20.0,
            "reconnecting to the restarted server",
        )
        assert app.client.status.counters["attempts"] >= 2
        settle_view(app, intended, "view after reconnect")
        # It streams again, in the pump.
        ticks0, base = app.mark()
        start = time.monotonic()
        app.pump(2.0)
        assert_streams(app, base, ticks0, time.monotonic() - start, "after the restart")
        assert_view(app, intended, "view streaming after the restart")
        app.stop(close=True)


def test_run_times_out_a_dead_server_and_reconnects_when_it_is_back(apps):
    with LocalQ3Server(kind="ioq3") as server:
        app = apps(server, family=Family.NEW71, timeout=2.5, name="pumplazarus")
        intended = (-30.0, 60.0, 0.0)
        app.set_input(intended)
        app.start()
        app.enter()
        server.kill()
        killed = time.monotonic()
        # Nobody answers the probe (the port is closed): the pump hands the timeout's tick to the core.
        app.until(lambda: app.of(Disconnected), 2.5 + 2.0, "the silence timeout")
        gone = app.of(Disconnected)[0]
        assert gone.will_reconnect and "silent" in gone.reason, gone
        assert time.monotonic() - killed >= 2.5 - 0.1
        app.pump(0.5)  # run() goes on, reconnecting into a closed port
        assert app.client.state is not State.ACTIVE
        server.start()
        app.until(
            lambda: len(app.of(EnteredWorld)) >= 2 and app.client.state is State.ACTIVE,
            20.0,
            "reconnecting once the server is back",
        )
        settle_view(app, intended, "view after reconnect")
        ticks0, base = app.mark()
        start = time.monotonic()
        app.pump(1.5)
        assert_streams(app, base, ticks0, time.monotonic() - start, "after the reconnect")
        app.stop(close=True)


@pytest.mark.parametrize("kind", ["openarena", "ioq3"])
def test_run_follows_a_map_change_and_map_restart(apps, kind):
    with LocalQ3Server(kind=kind) as server:
        app = apps(server, pure_paks=tuple(pk3_files()), name="pumpmapper")
        intended = (-20.0, 100.0, 0.0)
        app.set_input(intended)
        app.start()
        app.enter()
        first_id = app.client.status.server_id
        server.rcon("map oa_dm2")
        app.until(lambda: len(app.of(EnteredWorld)) >= 2, 20.0, "entering the world on the new map")
        st = app.client.status
        assert st.mapname == "oa_dm2" and st.server_id != first_id and st.pure_error == ""
        assert len(app.of(GamestateReceived)) >= 2 and not app.of(Disconnected)
        settle_view(app, intended, "view on the new map")
        restart_id = app.client.status.server_id
        server.rcon("map_restart 0")
        app.until(lambda: app.client.status.server_id != restart_id, 10.0, "the map_restart serverid")
        ticks0, base = app.mark()
        start = time.monotonic()
        app.pump(1.5)
        assert app.client.status.state is State.ACTIVE
        settle_view(app, intended, "view after map_restart")
        assert_streams(app, base, ticks0, time.monotonic() - start, "after map_restart")
        no_drops(app)
        app.stop(close=True)


RACE_SECONDS = 3.0  # with the race open, the run thread met a refused input within ~1 s (6 of 6 runs)


def test_a_refused_non_finite_view_never_reaches_a_tick_while_run_pumps(ioq3_server, apps):
    """set_input with a non-finite angle raises ValueError and leaves the old input: no tick may
    meet it either, not even a tick of the core in run()'s thread while this thread is mid-call
    (a lost tracking pose must not end the network thread). A stress, as fast as it goes."""
    app = apps(ioq3_server, family=Family.NEW71, name="pumpnan")
    intended = (12.0, 34.0, -8.0)
    app.set_input(intended)
    app.start()
    app.enter()
    base = app.client.status.counters["usercmds"]
    refused = 0
    next_command = 0.0
    end = time.monotonic() + RACE_SECONDS
    while (now := time.monotonic()) < end and app.failure is None:
        if now >= next_command:  # commands waiting for their turn: the core runs the ticks itself
            app.client.send_command("say nan")
            next_command = now + 0.6
        try:
            app.client.set_input((math.nan, 34.0, -8.0))
        except ValueError:
            refused += 1
        app.client.set_input(intended)
    if app.failure is not None:
        raise AssertionError(f"run() raised after {refused} refused inputs") from app.failure
    assert refused > 100 and app.client.status.counters["usercmds"] - base >= 30, refused
    settle_view(app, intended, "the view after the refused inputs")
    no_drops(app)
    app.stop(close=True)


class Relay:
    """A UDP forwarder between one client and a server that keeps the client's datagrams (bounded):
    what the pump put on the wire, as the server received it."""

    MAX_KEPT = 4000

    def __init__(self, server: tuple[str, int]) -> None:
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind(("127.0.0.1", 0))
        self.back.connect(server)
        self.upstream: list[bytes] = []
        self._client: tuple[str, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="q3-relay", daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        return self.front.getsockname()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.front, self.back], [], [], 0.1)
            try:
                if self.front in ready:
                    data, self._client = self.front.recvfrom(65535)
                    if len(self.upstream) < self.MAX_KEPT:
                        self.upstream.append(data)
                    self.back.send(data)
                if self.back in ready:
                    data = self.back.recv(65535)
                    if self._client is not None:
                        self.front.sendto(data, self._client)
            except OSError:  # an ICMP error on either side: the peers resend
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5.0)
        self.front.close()
        self.back.close()


def test_vr_client_on_a_vanilla_server_pumps_16bit_buttons_without_head_bits(ioq3_server, apps):
    relay = Relay(ioq3_server.address)
    try:
        app = apps(ioq3_server, address=relay.address, family=Family.NEW71, vr=True, name="pumpvr")
        intended = (5.0, 10.0, 12.0)
        app.set_input(intended, buttons=1, head=(30.0, 20.0))
        app.start()
        app.enter()
        app.until(lambda: app.of(HeadTracking), 2.0, "the HeadTracking event")
        ht = app.of(HeadTracking)[-1]
        assert not ht.sent and "vr_support" in ht.reason
        st = app.client.status
        assert not st.vr_support and not st.vr_active
        settle_view(app, intended, "VR client's view on a vanilla server")
        t0 = app.client.status.ps.command_time
        app.pump(1.0)
        assert app.client.status.ps.command_time > t0  # the server runs our cmds
        assert_view(app, intended, "VR client's view after 1 s")
        no_drops(app)
        app.stop(close=True)
    finally:
        relay.close()
    assert NATIVE is None or app.client.native_ticks >= 60
    # Decode every usercmd packet as the server did (16-bit buttons): the head bits were kept out.
    checksum_feed = app.of(GamestateReceived)[0].checksum_feed
    ring = [""] * 64
    for ev in app.of(ServerCommand):
        ring[ev.seq & 63] = ev.text
    buttons = []
    for data in relay.upstream:
        if data[:4] == b"\xff\xff\xff\xff":
            continue  # out-of-band: the handshake
        (seq,) = struct.unpack_from("<I", data)
        assert not seq & 0x80000000, "a fragmented client message"
        msg = read_client_message(data[10:], checksum_feed, ring, button_bits=16)  # NEW71: 10-byte header
        buttons += [c.buttons for c in msg.cmds]
    assert len(buttons) >= 2 * 60, len(buttons)  # two cmds a packet, > 1 s of them
    assert set(buttons) == {1}, sorted(set(buttons))
