"""headcast swarm players as Locust users: `locust -f <this file> --headcast-proto netsync ...`.

Each Locust user is one swarm player (`players.Player`: a real client of the protocol with its
own socket(s), handshake and client number) driven from a shipped motion or a recorded trace,
in its own greenlet: it waits in gevent's poll for its sockets or its next deadline, as the
swarm's own loop does for all players at once. Everything a player counts goes to Locust's
stats (`locust_metrics.py`: send/receive/broadcast/relay/join/kick rows per protocol), so
Locust's master adds up its workers, its web UI and `--csv` show the swarm, and `--headless`
runs end with its summary; each process's headcast figures travel to the master in Locust's
own worker reports, and the master (or a lone process) writes headcast's report from their
sum and Locust's stats when it quits (`--headcast-report BASE`: BASE.json and BASE.html).

Per process the first user is the sampled observer and the next `--headcast-marked` users send
marked updates it matches (observer.py): relay latency and loss are measured within each
process, on its one clock. Players are numbered across workers (user k of worker w of W is
k·W + w), which also spreads Q3/Sauerbraten players over 127.0.x.y source addresses when the
server is on loopback.

Importing locust monkey-patches the standard library for gevent; headcast's sockets are all
non-blocking (UDP, ZeroMQ with NOBLOCK, ENet serviced with timeout 0), so the sans-IO cores
run unchanged in greenlets.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import gevent
from gevent import select as gselect
from locust import User, constant, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from headcast.app.run.mock import find_motion, shipped_motions
from headcast.app.swarm import locust_run, report as swarm_report
from headcast.app.swarm.cli import DEFAULT_MOTION
from headcast.app.swarm.locust_metrics import LocustMetrics
from headcast.app.swarm.locust_stats import from_stats
from headcast.app.swarm.metrics import SwarmMetrics
from headcast.app.swarm.motion import MotionError, Script, spots
from headcast.app.swarm.observer import Board
from headcast.app.swarm.players import PROTOCOLS, RATES, Player, Server, Variation, source_address

log = logging.getLogger("headcast.swarm.locust")

# Windows: `headcast swarm --locust` stops Locust (started in a process group of its own) with
# CTRL_BREAK_EVENT, which Python sees as SIGBREAK and would end the process on at once; as Ctrl-C
# it is Locust's clean stop (users leave, the report is written). Not on POSIX (SIGTERM there).
if hasattr(signal, "SIGBREAK"):
    try:
        signal.signal(signal.SIGBREAK, signal.default_int_handler)
    except ValueError:
        pass  # not the main thread: Locust's own handling stands
# Nothing left running when the process that started us ends (Linux; elsewhere locust_run's
# process group is the bound): Locust started by `headcast swarm --locust` stops cleanly when
# that headcast dies, and each worker Locust forks (--processes) when its master dies.
if os.environ.get(locust_run.PARENT_ENV, "").isdigit():
    locust_run.die_with_parent(signal.SIGTERM, int(os.environ[locust_run.PARENT_ENV]))
if hasattr(os, "register_at_fork"):
    _master_pid = os.getpid()
    os.register_at_fork(after_in_child=lambda: locust_run.die_with_parent(signal.SIGTERM, _master_pid))
IDLE_WAIT = 0.1  # the longest wait when a player has no deadline (a stop is seen by then anyway)
SPOTS = 16  # places on the room's circle players are spread over
STOP_WAIT = 10.0  # the master's bound on its workers' final states; a worker's on its players' leave


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    g = parser.add_argument_group("headcast swarm")
    g.add_argument("--headcast-proto", choices=PROTOCOLS, default="netsync", help="protocol every user speaks")
    g.add_argument("--headcast-server", default="127.0.0.1", help="the server's host")
    g.add_argument(
        "--headcast-port",
        type=int,
        default=0,
        help="Q3/Sauerbraten: the server's port; NetSync: its control (dealer) port",
    )
    g.add_argument("--headcast-pub-port", type=int, default=0, help="NetSync: the PUB port (default control+1)")
    g.add_argument(
        "--headcast-transform-port", type=int, default=0, help="NetSync: the transform port (default control+2)"
    )
    g.add_argument("--headcast-room", default="default_room", help="NetSync room")
    g.add_argument("--headcast-netsync-protocol", type=int, default=8, help="NetSync protocol (3-8)")
    g.add_argument("--headcast-pk3", default="", help="Q3: pk3 files for a pure server, comma-separated")
    g.add_argument(
        "--headcast-motion", default="", help=f"a shipped motion or a motion file (default {DEFAULT_MOTION})"
    )
    g.add_argument("--headcast-trace", default="", help="a recorded trace instead of a motion")
    g.add_argument(
        "--headcast-marked",
        type=int,
        default=4,
        help="players per process whose updates the observer matches (relay latency, loss)",
    )
    g.add_argument("--headcast-slip-ms", type=float, default=5.0, help="a tick this late counts as slipped")
    g.add_argument("--headcast-report", default="", help="the master writes headcast's report to BASE.json/.html")


class _Process:
    """This process's metrics, boards and script (made at test start: options known)."""

    metrics: LocustMetrics | None = None
    wall_started = 0.0
    boards: dict[str, Board] = {}
    script: Script | None = None
    server: Server | None = None
    spots = spots(SPOTS)
    next_user = 0
    reports = 0  # Locust worker reports so far
    live: set = set()  # players started and not yet closed
    stopping = False  # the master asked for the final state: no new player
    states: dict[str, dict] = {}  # master: each worker's latest headcast state
    final: set[str] = set()  # master: workers whose final state came
    seen: set[str] = set()  # master: workers that reported at all


def _server(o) -> Server:
    if not o.headcast_port:
        raise SystemExit("headcast: --headcast-port is required")
    return Server(
        o.headcast_server,
        o.headcast_port,
        o.headcast_pub_port or None,
        o.headcast_transform_port or None,
        o.headcast_room,
        o.headcast_netsync_protocol,
        tuple(Path(p) for p in o.headcast_pk3.split(",") if p),
    )


def _script(o) -> Script:
    if o.headcast_trace:
        return Script.load(trace=o.headcast_trace)
    name = o.headcast_motion or DEFAULT_MOTION
    motion = Path(name) if Path(name).is_file() else find_motion(name)
    if motion is None:
        raise SystemExit(
            f"headcast: --headcast-motion {name}: no such motion file or shipped motion "
            f"(shipped: {', '.join(shipped_motions())})"
        )
    return Script.load(motion=motion)


def _slot(runner, o) -> tuple[int, int]:
    """(this process's worker index, the number of workers): player k here is k·W + w."""
    if isinstance(runner, WorkerRunner):
        return max(0, runner.worker_index), max(1, int(getattr(o, "expect_workers", 1) or 1))
    return 0, 1


def _prepare(o, proto: str, w: int, workers: int) -> Script:
    """The script, with the inputs of every spot this process's players stand on built now rather
    than in a user's first tick (tens of milliseconds each, which would make every other player's
    tick late)."""
    script = _script(o)
    for i in sorted({(k * workers + w) % SPOTS for k in range(SPOTS)}):
        getattr(script, proto)(_Process.spots[i])
    return script


TOTAL_ROWS = ("send",)  # the rows Locust's Aggregated row (its header's RPS) adds up


def total_counts_sends(stats) -> None:
    """Locust's Aggregated row adds every row's requests, so its RPS would be sends, receives,
    broadcasts, relays … added up, a figure of nothing. Here it counts the players' sends only
    (the load on the server: messages sent per second); each row keeps its own rate, and every
    failure (lost update, failed join, kick) still counts in the total's failures. Each process
    counts its own total; the master adds its workers' totals."""

    def log_request(method: str, name: str, response_time, content_length) -> None:
        if name in TOTAL_ROWS:
            stats.total.log(response_time, content_length)
        stats.entries[(name, method)].log(response_time, content_length)

    stats.log_request = log_request


@events.init.add_listener
def _init(environment, **_) -> None:
    runner = environment.runner
    total_counts_sends(environment.stats)
    if not isinstance(runner, WorkerRunner):  # workers get the options from the master later
        o = environment.parsed_options
        srv = _server(o)
        try:
            _script(o)
        except (MotionError, OSError) as e:
            raise SystemExit(f"headcast: {e}") from None
        if not environment.host:  # Locust's Host field: the server under test
            environment.host = f"{o.headcast_proto}://{srv.host}:{srv.port}"
    if isinstance(runner, MasterRunner):
        runner.register_message("headcast_final", _final_state)
    elif isinstance(runner, WorkerRunner):
        runner.register_message("headcast_stop", _stop_players)


@events.test_start.add_listener
def _test_start(environment, **_) -> None:
    _Process.stopping = False
    if isinstance(environment.runner, MasterRunner):
        _Process.states, _Process.final, _Process.seen = {}, set(), set()
        return
    o = environment.parsed_options
    proto = o.headcast_proto
    m = LocustMetrics([proto], time.perf_counter(), environment.events.request.fire, o.headcast_slip_ms / 1000.0)
    _Process.metrics, _Process.wall_started = m, time.time()
    _Process.server = _server(o)
    t0 = time.monotonic()
    # In a thread of gevent's pool: the greenlets (Locust's heartbeats among them) run meanwhile.
    # On a loaded machine this takes seconds, and a worker silent for 3 s is declared missing.
    _Process.script = gevent.get_hub().threadpool.apply(_prepare, (o, proto, *_slot(environment.runner, o)))
    log.info("headcast: %s inputs built in %.2f s", proto, time.monotonic() - t0)
    _Process.boards = {proto: Board(proto, m.relay, m.lost)}
    _Process.next_user = 0


def _state() -> dict:
    m = _Process.metrics
    assert m is not None  # made at the test's start
    state = m.state(_Process.wall_started)
    state["wall_now"] = time.time()
    return state


@events.report_to_master.add_listener
def _report_to_master(client_id, data, **_) -> None:
    # The whole state grows with the run (a row per second): with every 10th of Locust's 3-second
    # reports it is a fallback for a worker whose final state never comes, not a per-report load.
    _Process.reports += 1
    if _Process.metrics is not None and _Process.reports % 10 == 1:
        data["headcast"] = _state()


@events.worker_report.add_listener
def _worker_report(client_id, data, **_) -> None:
    _Process.seen.add(client_id)
    if "headcast" in data:
        _Process.states[client_id] = data["headcast"]  # cumulative: the latest replaces the last


# The end of a run, in order. Locust's master, when the run time is up, sends its workers "quit"
# and gives their last reports 0.5 s; on a loaded machine a worker's players leave later than
# that, and their leave (and the last second's figures) would be missing from the report. So when
# the test stops, the master first asks each worker for its final state ("headcast_stop"): the
# worker's players leave, it answers with its state ("headcast_final"), and the master waits for
# every answer (bounded) before Locust goes on to quit.


def _stop_players(environment, msg, **_) -> None:
    """Worker: every player leaves (each user's loop sees `stopping` within IDLE_WAIT), then the
    state goes to the master."""
    _Process.stopping = True
    until = time.monotonic() + STOP_WAIT
    while _Process.live and time.monotonic() < until:
        gevent.sleep(0.02)
    if _Process.metrics is not None:
        state = _state()
        state["final"] = not _Process.live
        environment.runner.send_message("headcast_final", state)


def _final_state(environment, msg, **_) -> None:
    _Process.states[msg.node_id] = msg.data
    if msg.data.get("final"):
        _Process.final.add(msg.node_id)


@events.test_stop.add_listener
def _test_stop(environment, **_) -> None:
    runner = environment.runner
    if not isinstance(runner, MasterRunner):
        return
    workers = {c.id for c in runner.clients.all}
    if not workers:
        return
    runner.send_message("headcast_stop")
    until = time.monotonic() + STOP_WAIT
    while not workers <= _Process.final and time.monotonic() < until:
        gevent.sleep(0.05)
    missing = workers - _Process.final
    if missing:
        log.warning(
            "headcast: no final state from %d worker(s) within %g s: their figures end at their last report",
            len(missing),
            STOP_WAIT,
        )


def _players_leave(environment) -> None:
    """Every player leaves (bounded by STOP_WAIT) before the report is made: on SIGTERM or SIGINT Locust
    fires `quitting` before it stops its users (and, on a master, before `test_stop`), so the
    leaves would be missing and the players counted as still in."""
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        if not {c.id for c in runner.clients.all} <= _Process.final:
            _test_stop(environment)
        return
    _Process.stopping = True
    until = time.monotonic() + STOP_WAIT
    while _Process.live and time.monotonic() < until:
        gevent.sleep(0.02)


@events.quitting.add_listener
def _quitting(environment, **_) -> None:
    runner = environment.runner
    o = environment.parsed_options
    if isinstance(runner, WorkerRunner) or not getattr(o, "headcast_report", ""):
        return
    _players_leave(environment)
    states = (
        list(_Process.states.values())
        if isinstance(runner, MasterRunner)
        else ([_state()] if _Process.metrics is not None else [])
    )
    if not states:
        log.warning("headcast: no player reported; no report written")
        return
    merged = SwarmMetrics.merged(states)
    rep = merged.report(max(s["wall_now"] for s in states))
    rep["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(merged.started))  # wall clock here
    rep["source"] = f"Locust ({len(states)} process{'es' if len(states) != 1 else ''})"
    rep["processes"] = len(states)
    if isinstance(runner, MasterRunner):
        rep["incomplete_processes"] = len((_Process.seen | set(_Process.states)) - _Process.final)
        if rep["incomplete_processes"]:
            rep["subtitle"] = (
                f"{rep['incomplete_processes']} worker(s) sent no final state: their figures end at their last report."
            )
    proto, srv = o.headcast_proto, _server(o)
    rep["run"] = {
        "source": f"trace {o.headcast_trace}" if o.headcast_trace else f"motion {o.headcast_motion or DEFAULT_MOTION}",
        "servers": {proto: f"{srv.host}:{srv.port}"},
        "rates_hz": {proto: RATES[proto]},
    }
    rep["locust"] = from_stats(runner.stats)
    base = o.headcast_report
    paths = swarm_report.write(rep, base + ".json", base + ".html")
    log.info("headcast report: %s", ", ".join(map(str, paths)))


class SwarmPlayer(User):
    """One headcast swarm player for the whole life of the Locust user."""

    wait_time = constant(1)  # only between a failed start and the next try

    def on_start(self) -> None:
        self.player: Player | None = None

    @task
    def play(self) -> None:
        if _Process.stopping:
            raise StopUser()
        env = self.environment
        o, runner = env.parsed_options, env.runner
        proto = o.headcast_proto
        w, workers = _slot(runner, o)
        k = _Process.next_user
        _Process.next_user += 1
        index = k * workers + w
        server, script = _Process.server, _Process.script
        assert server is not None and script is not None  # made at the test's start
        var = Variation(
            offset=(index * 0.61803) % 1.0 * script.period,
            speed=0.9 + 0.2 * ((index * 0.7548) % 1.0),
            spot=_Process.spots[index % SPOTS],
            source=source_address(index, server.host),
            observer=k == 0,
            marked=1 <= k <= o.headcast_marked,
            board=_Process.boards[proto],
        )
        p = self.player = Player(proto, index, server, script, _Process.metrics, var)
        clock = time.perf_counter  # the metrics' clock (fine-grained on Windows, unlike monotonic before 3.13)
        _Process.live.add(p)
        try:
            p.start(clock())
            # poll, not select: a few hundred players' sockets (ZeroMQ's among them) pass
            # select's FD_SETSIZE (1024) in one process.
            poller = gselect.poll()
            watched: tuple[int, ...] = ()
            while not _Process.stopping:
                fds = tuple(p.filenos())
                if fds != watched:
                    for fd in watched:
                        poller.unregister(fd)
                    for fd in fds:
                        poller.register(fd, gselect.POLLIN)
                    watched = fds
                deadline = p.next_deadline()
                now = clock()
                wait = IDLE_WAIT if deadline is None else min(IDLE_WAIT, max(0.0, deadline - now))
                readable = poller.poll(wait * 1000.0) if fds else gevent.sleep(wait)
                now = clock()
                if readable:
                    p.on_readable(now)
                deadline = p.next_deadline()
                if deadline is not None and now >= deadline:
                    p.on_timer(now)
        finally:
            p.close(clock())
            _Process.live.discard(p)

    def on_stop(self) -> None:
        if self.player is not None:
            self.player.close(time.perf_counter())
            _Process.live.discard(self.player)
