"""`headcast swarm N`: N simulated VR players per protocol against real servers, one process.

Players join over a ramp (`--spawn-rate` per second, per protocol), play the motion (or trace)
each at its own time offset, speed and spot in the room, and leave cleanly at `--duration` or
at the first stop signal (app/run/stop.py: a second one exits at once). Player 0 of each protocol
is a sampled observer (`--observers`), the next `--marked` players send updates it can match
(observer.py). The terminal shows one line per protocol (console.py's styles: a live block on a
terminal, a line every 5 s otherwise, JSON lines with --json); the end prints the report's
figures and, with --report DIR, writes swarm.json and swarm.html there.

Exit status: 0 when the run ended with every player in at some time (kicks and lost updates
are findings, in the report), 1 when some players never got in (a full server: the summary
says how many and why), 2 for bad flags (an unwritable --report folder too, checked before the
run), 3 when no player of a protocol ever got in or nothing listens at a server's address
(found before the run: ICMP port unreachable for UDP, a refused TCP connect for NetSync).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import select
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from headcast.app.commands.args import path, positive, room_id, seconds
from headcast.app.errors import AppError, UnreachableError, UsageError
from headcast.app.run import stop
from headcast.app.run.console import LiveBlock, fit, mode_for, printable
from headcast.app.swarm import report as report_mod
from headcast.netcode.icmp import PORT_UNREACHABLE

DEFAULT_MOTION = "tour"
PLAIN_PERIOD = 5.0
STATUS_PERIOD = 0.5
MAX_PLAYERS = 5000
SPEED_SPREAD = (0.8, 1.2)  # each player's motion clock runs at a speed in this range
SPOTS = 16  # distinct places in the room (players beyond share them, offset in time)
LOCUST_GRACE = 30.0  # s past --duration before a Locust run is stopped


def _whole(lo: int, hi: int, unit: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number lo..hi (of `unit`)."""
    of = f" of {unit}" if unit else ""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number{of}: {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v}: must be {lo}..{hi}{' ' + unit if unit else ''}")
        return v

    return parse


_count = _whole(1, MAX_PLAYERS, "players per protocol")
_small = _whole(0, 64)


EXIT_STATUS = (
    "Exit status: 0 the run ended and every player got in (kicks, lost updates and slipped ticks "
    "are findings, in the summary and the report); 1 some players never got in (a full server: "
    '"12 of 20 players never got in: Server is full."); 2 bad flags, a --report folder that '
    "cannot be written, a motion or trace that does not load; 3 nothing listens at a server's address "
    "(found at once) or no player of a protocol got in. With --locust, after the same checks: "
    "Locust's exit status (1 when any kick, lost update or failed join; slipped ticks are the load "
    "generator running late, not a failure), 3 when no player got in."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EXIT_STATUS
    p.add_argument("players", metavar="N", type=_count, help=f"players per protocol (1..{MAX_PLAYERS})")
    p.add_argument("--q3", metavar="HOST[:PORT]", help="a Quake 3 server (default port 27960)")
    p.add_argument(
        "--netsync",
        metavar="HOST[:CONTROL[:PUB[:TRANSFORM]]]",
        help="a styly-netsync-server (default ports 5555/5556, transform CONTROL + 2)",
    )
    p.add_argument("--sauer", metavar="HOST[:PORT]", help="a Sauerbraten server (default port 28785)")
    p.add_argument(
        "--spawn-rate",
        type=positive("players per second"),
        default=10.0,
        metavar="R",
        help="players started per second, per protocol (default 10)",
    )
    p.add_argument(
        "--duration",
        type=seconds,
        default=60.0,
        metavar="S",
        help="seconds from the first start to the leave (default 60)",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--motion",
        metavar="M",
        default=None,
        type=path,
        help=f"a shipped motion or a motion file (default {DEFAULT_MOTION})",
    )
    src.add_argument("--trace", metavar="F", type=path, help="a trace recorded with `headcast run --record F`")
    p.add_argument("--report", metavar="DIR", type=path, help="write swarm.json and swarm.html into DIR")
    p.add_argument(
        "--observers",
        type=_small,
        default=1,
        metavar="K",
        help="sampled observer players per protocol (default 1; 0: no relay figures)",
    )
    p.add_argument(
        "--marked",
        type=_small,
        default=16,
        metavar="M",
        help="players per protocol whose updates the observers match (default 16; a Quake 3 "
        "observer sees only the players alive in its potentially visible set: a map with fewer "
        "spawn points than players kills one at each join beyond them)",
    )
    p.add_argument("--room", default="default_room", type=room_id, help="NetSync room (default default_room)")
    p.add_argument(
        "--rooms",
        type=_whole(1, 1000, "rooms"),
        default=1,
        metavar="K",
        help="spread the NetSync players over K rooms ROOM-0 … ROOM-(K-1), each with its own "
        "observers and marked players (default 1: all in ROOM)",
    )
    p.add_argument(
        "--pk3",
        metavar="PATH",
        nargs="+",
        action="extend",
        default=[],
        type=path,
        help="pk3 files or folders for a pure (sv_pure 1) Quake 3 server",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the per-player variation (default: random; the report records the one used)",
    )
    p.add_argument("--json", action="store_true", help="one JSON status object per line, then the report")
    p.add_argument(
        "--locust",
        nargs="?",
        type=_small,
        const=0,
        default=None,
        metavar="PROCESSES",
        help="run the players as Locust users instead (one protocol per run): Locust's runner, "
        "stats and --csv; PROCESSES > 0 forks that many Locust workers on this machine. "
        "Exit status is Locust's (1 when any kick, lost update or failed join; a slipped tick "
        "(> 5 ms late) is the load generator running late, its own row, not a failure). For "
        "several machines run the shipped locustfile with Locust's --master/--worker",
    )
    p.add_argument("--csv", metavar="BASE", type=path, help="with --locust: Locust's CSV files BASE_stats.csv …")


def servers(args: argparse.Namespace) -> dict[str, Any]:
    """The protocols asked for and their servers (UsageError for a bad address, or none)."""
    from headcast.app.sinks.netsync import link as netsync_link
    from headcast.app.sinks.q3 import link as q3_link
    from headcast.app.sinks.sauer import link as sauer_link
    from headcast.app.swarm.players import Server

    out: dict[str, Any] = {}
    if args.q3:
        host, port = q3_link.parse_address(args.q3)
        out["q3"] = Server(host, port, pk3=tuple(Path(p) for p in args.pk3))
    if args.netsync:
        host, control, pub, transform = netsync_link.parse_address(args.netsync)
        out["netsync"] = Server(host, control, pub, transform if transform is not None else control + 2, room=args.room)
    if args.sauer:
        host, port = sauer_link.parse_address(args.sauer)
        out["sauer"] = Server(host, port)
    if not out:
        raise UsageError("swarm: name at least one server: --q3 HOST, --netsync HOST or --sauer HOST")
    return out


def load_script(args: argparse.Namespace):
    from headcast.app.run.mock import find_motion, shipped_motions
    from headcast.app.swarm.motion import MotionError, Script

    try:
        if args.trace:
            return Script.load(trace=args.trace), f"trace {args.trace}"
        name = args.motion or DEFAULT_MOTION
        motion = Path(name) if Path(name).is_file() else find_motion(name)
        if motion is None:
            raise UsageError(
                f"--motion {name}: no such motion file or shipped motion (shipped: {', '.join(shipped_motions())})"
            )
        return Script.load(motion), f"motion {name}"
    except MotionError as e:
        raise UsageError(f"swarm: {e}") from None


def check_report_folder(folder: str) -> None:
    """UsageError unless `folder` can be made and written (a test file written and removed):
    a typo must not cost the run it was meant to record."""
    f = Path(folder)
    try:
        f.mkdir(parents=True, exist_ok=True)
        probe = f / f".headcast-swarm-{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(
            f"--report {folder}: {e.strerror or e}" + (" (name a folder)" if f.exists() and not f.is_dir() else "")
        ) from None


REFUSED = "nothing listens there (ICMP port unreachable)"
PORT_WAIT = 0.5  # s for a refusal: on loopback and a LAN the ICMP error comes in well under 1 ms


def closed_port(proto: str, server) -> str | None:
    """Why no player can get in, known before the run: nothing listens at the server's address
    (as `headcast probe` says it: a connected UDP socket gets the ICMP port unreachable as
    ECONNREFUSED; NetSync's TCP connect is refused), or None (an answer, or no word either way:
    a firewall that drops, a remote host — the players find out)."""
    try:
        host = socket.gethostbyname(server.host)
    except OSError:
        return None  # the players' start names it
    if proto == "netsync":
        try:
            socket.create_connection((host, server.port), timeout=2.0).close()
        except ConnectionRefusedError:
            return "nothing listens there (connection refused)"
        except OSError:
            return None
        return None
    # Q3: a getinfo (an answer settles it at once). Sauerbraten: one byte, shorter than an ENet
    # header, which an ENet server drops unread; only a closed port answers it (ICMP).
    datagram = b"\xff\xff\xff\xffgetinfo swarm" if proto == "q3" else b"\x00"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, server.port))
            s.send(datagram)
            if select.select([s], [], [], PORT_WAIT)[0]:
                s.recv(65535)
        except PORT_UNREACHABLE:  # Windows reads port unreachable as a ConnectionResetError
            return REFUSED
        except OSError:
            return None
    return None


FDS_PER_PLAYER = {"q3": 1, "sauer": 1, "netsync": 6}  # NetSync: 3 sockets, each a mailbox + a TCP connection


def raise_fd_limit(counts: dict[str, int]) -> None:
    """Raise the soft limit on open descriptors to what the players need (Debian's default soft
    limit, 1024, is 170 NetSync players); AppError when the hard limit is lower than that. Where
    there is no `resource` module (Windows) there is no such limit to raise: nothing to do."""
    try:
        import resource
    except ImportError:
        return
    need = 64 + sum(FDS_PER_PLAYER[p] * n for p, n in counts.items())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise AppError(
            f"swarm: {need} file descriptors needed and the hard limit is {hard} "
            "(raise it: ulimit -Hn, or /etc/security/limits.conf)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


SELECT_LIMIT = 512  # sockets one select() call watches on Windows (CPython's FD_SETSIZE there)
WATCHED_PER_PLAYER = {"q3": 1, "sauer": 1, "netsync": 3}  # sockets each player's loop watches


def check_select_limit(counts: dict[str, int]) -> None:
    """Where select() is the only selector (Windows: selectors.DefaultSelector is SelectSelector),
    one loop watches at most SELECT_LIMIT sockets: UsageError for a swarm that needs more,
    naming how many players fit."""
    import selectors

    if selectors.DefaultSelector is not selectors.SelectSelector:
        return  # epoll, kqueue, poll: no such limit
    need = sum(WATCHED_PER_PLAYER[p] * n for p, n in counts.items())
    if need > SELECT_LIMIT:
        per = sum(WATCHED_PER_PLAYER[p] for p in counts)
        raise UsageError(
            f"swarm: {need} sockets to watch and this system's select() takes at most {SELECT_LIMIT} "
            f"(Windows): at most {SELECT_LIMIT // per} players per protocol here ({', '.join(counts)}); "
            "run several swarms, or --locust"
        )


class Swarm:
    """The players of one run on one loop: built, run, stopped, reported."""

    def __init__(
        self,
        counts: dict[str, int],
        targets: dict[str, Any],
        script,
        *,
        spawn_rate: float,
        observers: int = 1,
        marked: int = 16,
        seed: int | None = None,
        rooms: int = 1,
        clock=time.perf_counter,
    ) -> None:
        from headcast.app.swarm.loop import SwarmLoop
        from headcast.app.swarm.metrics import SwarmMetrics
        from headcast.app.swarm.motion import spots
        from headcast.app.swarm.observer import Board
        from headcast.app.swarm.players import Player, Variation, source_address

        raise_fd_limit(counts)
        self.rooms = rooms
        self.clock = clock
        self.counts = counts
        self.t0 = clock()
        self.wall_t0 = time.time()
        self.metrics = SwarmMetrics(list(counts), self.t0)
        self.loop = SwarmLoop(clock)
        # NetSync players over `rooms` rooms (player i in room i mod rooms), each room with its own
        # observers and marked players: a room broadcast carries only its members.
        self.boards: dict[tuple[str, int], Board] = {}
        self.script = script
        # The seed is in the report: --seed SEED gives the next run the same variation.
        self.seed = random.randrange(2**32) if seed is None else seed
        rng = random.Random(self.seed)
        places = spots(SPOTS)
        starts = []
        for proto, n in counts.items():
            k = rooms if proto == "netsync" else 1
            for i in range(n):
                room, rank = i % k, i // k  # rank: the player's place in its room
                server = targets[proto]
                if k > 1:
                    server = replace(server, room=f"{server.room}-{room}")
                board = self.boards.get((proto, room))
                if board is None:
                    board = self.boards[(proto, room)] = Board(proto, self.metrics.relay, self.metrics.lost)
                var = Variation(
                    offset=rng.uniform(0.0, script.period),
                    speed=rng.uniform(*SPEED_SPREAD),
                    spot=places[rank % len(places)],
                    source=source_address(i, server.host),
                    observer=rank < observers,
                    marked=observers <= rank < observers + marked,
                    board=board,
                )
                # Rooms fill one after another (the ramp's slot: room by room, each in rank order):
                # every join makes styly-netsync-server send the room's whole device-ID mapping to
                # each member (at most twice a second per room), so joins spread over K rooms at
                # once cost it K rooms' worth of mappings a second, one room at a time one.
                slot = room * -(-n // k) + rank if k > 1 else i
                starts.append((self.t0 + slot / spawn_rate, Player(proto, i, server, script, self.metrics, var)))
        # one ramp per protocol, in parallel: the loop takes them in start order
        for at, player in sorted(starts, key=lambda e: e[0]):
            self.loop.add(player, at)
        # The motion tables and the players live as long as the run: out of the collector's
        # sight, a full collection does not walk them (one took 19 ms with 64 Q3 players, a
        # slipped 60 Hz tick).
        gc.collect()
        gc.freeze()

    def run(self, duration: float, should_stop=lambda: False, on_status=None, status_every: float = STATUS_PERIOD):
        self.loop.run(self.t0 + duration, should_stop, on_status, status_every)

    def stop(self) -> None:
        from headcast.app.swarm.players import close_context

        self.loop.close_all()
        close_context()
        gc.unfreeze()
        self.ended = self.clock()

    def report(self, source: str, targets: dict[str, Any]) -> dict:
        r = self.metrics.report(self.ended)
        r["started_utc"] = _utc(self.wall_t0)
        for proto, st in r["protocols"].items():
            started = [p for p in self.loop.players if p.proto == proto]
            st["players"]["started"] = len(started)
            st["players"]["never_in"] = len(started) - sum(1 for p in started if p.got_in)
        r["run"] = {
            "players": dict(self.counts),
            "source": source,
            "netsync_rooms": self.rooms,
            "seed": self.seed,
            "servers": {p: f"{s.host}:{s.port}" for p, s in targets.items()},
            "rates_hz": {p: _RATES[p] for p in self.counts},
            "errors": self.loop.errors[:20],
        }
        return r


def _utc(wall: float) -> str:
    """ISO 8601 UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


_RATES = {"q3": 60.0, "netsync": 10.0, "sauer": 30.0}
_NAMES = {"q3": "Quake 3", "netsync": "NetSync", "sauer": "Sauerbraten"}


def status_lines(swarm: Swarm, now: float) -> list[str]:
    live = swarm.metrics.live(now)
    waiting = swarm.loop.waiting
    lines = [
        f"[{now - swarm.t0:6.1f} s] swarm: "
        + (f"{waiting} players still to start" if waiting else "every player started")
        + (f", {len(swarm.loop.errors)} player errors" if swarm.loop.errors else "")
    ]
    for proto, v in live.items():
        ms = lambda s: "-" if s is None else f"{s * 1000:.0f}"  # noqa: E731
        loss = "-" if v["loss_pct"] is None else f"{v['loss_pct']:.1f} %"
        # The figures a server author watches first, so a narrow terminal cuts the least of them.
        lines.append(
            f"  {_NAMES[proto]:<11} {v['active']:>4}/{swarm.counts[proto]} in | relay "
            f"{ms(v['relay_p50_s'])}/{ms(v['relay_p99_s'])} ms p50/p99, loss {loss} | "
            f"{v['broadcast_hz_per_player']:.1f} bc/s each | kicks {v['kicked']}, failed joins "
            f"{v['join_failed']} | up {v['up_Bps'] / 1000:.1f} down {v['down_Bps'] / 1000:.1f} kB/s | "
            f"ours: slipped ticks (> 5 ms late) {v['slipped']}"
        )
    return lines


def _n(v, unit: str = "") -> str:
    return "-" if v is None else f"{v:g}{unit}"


def summary_lines(report: dict) -> list[str]:
    """The end of a run in the terminal: per protocol the server (what it is, then what it did, over
    the seconds our own ticks ran on time), then the load generator's own health apart."""
    out = [f"swarm: {report['duration_s']:.1f} s, {report['run']['source']}"]
    processes = int(report.get("processes") or 1)
    for proto, p in report["protocols"].items():
        pl, j, t = p["players"], p["join_ms"], p["ticks"]
        view = p.get("server_view") or {"relay_ms": p["relay_ms"], "relay": p["relay"]}
        rl, relay = view["relay_ms"], view["relay"]
        server = report_mod.server_text(proto, p, report["run"]["servers"].get(proto))
        out.append(
            f"{_NAMES[proto]} ({server}): {pl['joined']} joins, "
            f"peak {pl['peak_active']} in, {pl['left']} left, {pl['kicked']} kicked, "
            f"{pl['join_failed']} failed joins"
        )
        if pl["joined"]:
            over = (
                ""
                if view.get("seconds") is None or view["seconds"] == view.get("of_seconds")
                else f", over the {view['seconds']} of {view['of_seconds']} s our ticks ran on time"
            )
            loss = "" if relay.get("loss_pct") is None else f", {relay['loss_pct']:g} %"
            out.append(
                f"  server: join p50 {_n(j['p50'], ' ms')} p99 {_n(j['p99'], ' ms')}; relay p50 "
                f"{_n(rl['p50'], ' ms')} p99 {_n(rl['p99'], ' ms')} max {_n(rl['max'], ' ms')} "
                f"({relay['delivered']} matched, {relay['lost']} lost{loss}){over}"
            )
            out.append(
                f"  server: broadcasts/s per player p50 {_n(p['broadcast_hz']['p50'])}; up "
                f"{p['up']['bytes_per_s'] / 1000:.1f} kB/s, down {p['down']['bytes_per_s'] / 1000:.1f} kB/s"
            )
            gen = p.get("generator") or {}
            ours = (
                f"  ours (the load generator): {t['count']} ticks, {t['slipped']} slipped "
                f"(> {t['slip_after_ms']:g} ms late, p99 {_n(t['late_ms']['p99'], ' ms')})"
            )
            if t.get("seconds_with_slips"):
                inside = (gen.get("relay_ms_in_those_seconds") or {}).get("p99")
                ours += (
                    f" in {t['seconds_with_slips']} s; relay in those seconds p99 {_n(inside, ' ms')}, "
                    f"{t.get('lost_in_them', 0)} lost — ours, left out of the server's figures"
                )
            out.append(ours)
        verdict = report_mod.generator_text(p, processes)
        if verdict:
            out.append(f"  {verdict}")
        never = never_line(pl)
        if never:
            out.append(f"  {never}")
        for reasons in (pl["kick_reasons"], pl["join_failed_reasons"]):
            for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]:
                out.append(f"  {n} × {printable(why)}")
    for e in report["run"].get("errors", [])[:3]:
        out.append(f"  error: {e.splitlines()[0]}")
    return out


def never_line(players: dict) -> str:
    return printable(report_mod.never_text(players))


def run_locust(args: argparse.Namespace, targets: dict[str, Any]) -> int:
    """`--locust`: the same players as Locust users (app/swarm/locustfile.py), Locust run headless
    here, bounded (locust_run.run: one SIGTERM, Locust's clean stop, at the first stop signal or
    `LOCUST_GRACE` s after --duration). Then, as the native run: the summary from headcast's
    report (in a temporary folder without --report), the stop reason in it, Locust's exit code."""
    import tempfile

    from headcast.app.swarm import locust_run

    ((proto, server),) = targets.items()
    with tempfile.TemporaryDirectory(prefix="headcast-swarm-") as tmp:
        base = Path(args.report or tmp) / "swarm"
        cmd = locust_run.command(
            proto,
            server,
            args.players,
            args.spawn_rate,
            args.duration,
            report=base,
            csv=args.csv,
            motion=args.motion,
            trace=args.trace,
            marked=min(args.marked, 16),
            processes=args.locust,
        )
        print(f"headcast swarm: Locust: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        ramp = args.players / args.spawn_rate
        # --json: stdout carries JSON only; Locust's own tables go to stderr
        to = {"stdout": sys.stderr} if args.json else {}
        with stop.running():
            rc = locust_run.run(
                cmd,
                timeout=args.duration + ramp + LOCUST_GRACE,
                should_stop=lambda: stop.state.signum is not None,
                **to,
            )
        stop.stopping()
        json_path, html_path = Path(f"{base}.json"), Path(f"{base}.html")
        try:
            report = json.loads(json_path.read_text())
        except (OSError, ValueError):
            print(f"headcast: Locust wrote no headcast report (exit {rc})", file=sys.stderr)
            return rc
        if stop.state.signum is not None:
            report.setdefault("run", {})["stopped"] = stop.reason(stop.state.signum)
            if args.report:
                report_mod.write(report, json_path, html_path)
    if args.json:
        print(json.dumps({"type": "summary", "report": report, "locust_exit": rc}), flush=True)
    else:
        for line in summary_lines(report):
            print(line, flush=True)
        if args.report:
            print(f"report: {json_path}, {html_path}")
    never = [p for p, st in report.get("protocols", {}).items() if not st["players"]["joined"]]
    if never and stop.state.signum is None:
        raise UnreachableError(
            f"swarm: no player got in under Locust ({', '.join(_NAMES[p] for p in never)}; Locust's exit {rc})"
        )
    return rc


def cmd_swarm(args: argparse.Namespace) -> int:
    targets = servers(args)
    if args.rooms > 1 and "netsync" in targets:
        try:
            room_id(f"{args.room}-{args.rooms - 1}")
        except argparse.ArgumentTypeError as e:
            raise UsageError(f"--room with --rooms {args.rooms}: {e}") from None
    if args.csv and args.locust is None:
        raise UsageError("swarm --csv: Locust's CSV files come with --locust")
    if args.locust is not None and len(targets) != 1:
        raise UsageError("swarm --locust: one protocol per Locust run (--q3, --netsync or --sauer)")
    if args.locust is not None and args.rooms > 1:
        raise UsageError("swarm --locust: --rooms is not available with Locust (one room per run: --room)")
    if args.locust and not hasattr(os, "fork"):
        raise UsageError(
            f"swarm --locust {args.locust}: Locust's worker processes need fork(), which this system "
            "lacks (Windows: Locust does not support --processes there); use --locust alone "
            "(one process) or start Locust's master and workers by hand"
        )
    if args.report:
        check_report_folder(args.report)
    if args.locust is None:
        check_select_limit({p: args.players for p in targets})
        script, source = load_script(args)
    for proto, server in targets.items():
        why = closed_port(proto, server)
        if why:
            raise UnreachableError(f"swarm: {_NAMES[proto]} server {server.host}:{server.port}: {why}")
    from headcast.app.swarm.players import loopback_note

    for proto, server in targets.items():
        if proto != "netsync":  # NetSync players are TCP clients: their source address does not matter
            note = loopback_note(server.host, args.players)
            if note:
                print(f"headcast swarm: {_NAMES[proto]}: {note}", file=sys.stderr, flush=True)
    if args.locust is not None:
        return run_locust(args, targets)
    counts = {p: args.players for p in targets}
    out = sys.stdout
    mode = mode_for(args.json, out)
    try:
        swarm = Swarm(
            counts,
            targets,
            script,
            spawn_rate=args.spawn_rate,
            observers=args.observers,
            marked=args.marked,
            seed=args.seed,
            rooms=args.rooms,
        )
    except OSError as e:
        raise AppError(f"swarm: {e}") from None
    block = LiveBlock(out) if mode == "tty" else None
    last_plain = [swarm.t0]

    def on_status(now: float) -> None:
        if mode == "json":
            print(
                json.dumps({"type": "status", "t": round(now - swarm.t0, 3), "status": swarm.metrics.live(now)}),
                file=out,
                flush=True,
            )
        elif block is not None:
            block.draw(status_lines(swarm, now))
        elif now - last_plain[0] >= PLAIN_PERIOD:
            last_plain[0] = now
            for line in status_lines(swarm, now):
                print(fit(line, 400), file=out, flush=True)

    try:
        with stop.running():
            swarm.run(args.duration, lambda: stop.state.signum is not None, on_status)
    finally:
        stop.stopping()
        swarm.stop()  # every player leaves, whatever ended the run
    report = swarm.report(source, targets)
    if stop.state.signum is not None:
        report["run"]["stopped"] = stop.reason(stop.state.signum)
    if args.report:
        folder = Path(args.report)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            written = report_mod.write(report, folder / "swarm.json", folder / "swarm.html")
        except OSError as e:
            raise AppError(f"swarm: cannot write the report into {folder}: {e}") from None
    if mode == "json":
        print(json.dumps({"type": "summary", "report": report}), file=out, flush=True)
    else:
        for line in summary_lines(report):
            print(line, file=out)
        if args.report:
            print(f"report: {', '.join(str(p) for p in written)}", file=out)
    never = [p for p, st in report["protocols"].items() if not st["players"]["joined"]]
    if never:
        reasons = "; ".join(
            f"{_NAMES[p]}: "
            + (", ".join(sorted(report["protocols"][p]["players"]["join_failed_reasons"])) or "no answer")
            for p in never
        )
        raise UnreachableError(f"swarm: no player got in ({reasons[:300]})")
    some = [
        f"{_NAMES[p]}: {never_line(st['players'])}"
        for p, st in report["protocols"].items()
        if st["players"].get("never_in")
    ]
    if some:
        raise AppError("swarm: " + "; ".join(some))
    return 0
