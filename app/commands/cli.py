"""The `headcast` command: argument parsing, and every failure turned into one clear line.

Handlers are imported lazily so `--help` and bad-flag errors answer at once, without loading
OpenXR, OpenGL or ZeroMQ.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from typing import Any, NoReturn, Sequence

from headcast.app.commands.args import path, room_id, seconds
from headcast.app.errors import AppError, one_line
from headcast.app.run import stop  # standard library only: cheap

EPILOG_MAIN = """\
examples:
  headcast demo                       mock headset + local servers, 20 s, then a verification summary
  headcast run                        your headset; add sinks below
  headcast run --q3 127.0.0.1:27960 --netsync 127.0.0.1 --room lobby
  headcast run --mock look_around --no-mirror --duration 10
  headcast probe q3 127.0.0.1         what a Quake 3 server says about itself (protocol, vr_support)
  headcast probe sauer 127.0.0.1      what a Sauerbraten server says (mode, map, players, password)
  headcast doctor                     check the OpenXR runtime, display, ports and servers

each command's flags: headcast COMMAND --help (e.g. headcast run --help, headcast probe q3 --help).

configuration: assets/config/default.toml < user file (--config, $HEADCAST_CONFIG,
~/.config/headcast/config.toml) < HEADCAST_<SECTION>_<KEY> variables < flags.
`headcast run --print-config` shows the merged values and where each came from.
"""

EPILOG_RUN = """\
sinks (any combination; none = compute and show only):
  --q3 HOST[:PORT]     join a Quake 3 / OpenArena server (default port 27960) as a player;
                       the weapon follows your right controller, the head rides in the usercmd
                       buttons when the server has vr_support=1 (--no-vr: never)
  --netsync HOST[:CONTROL[:PUB[:TRANSFORM]]]
                       join a STYLY NetSync room (default ports 5555, PUB = CONTROL + 1, TRANSFORM =
                       CONTROL + 2); head, hands and the XROrigin delta are sent when they change,
                       at most --send-rate Hz, and at least once a second
  --sauer HOST[:PORT]  join a Sauerbraten (Cube 2, 2020 Edition, protocol 260) server (default port
                       28785) as a player: head position and angles as N_POS at 30 Hz, walking
                       animation from the left stick; reconnects after a kick or a restart
NetSync protocols (--netsync-protocol, default auto: headcast detects the server's):
  3  styly-netsync-server 0.9.0-0.10.x     6  0.14.x (no network-variable timestamps)
  4  0.11.x (the XROrigin delta gains dy)  7  0.15.x (hello first; poses to the transform port)
  5  0.12.x-0.13.x (moving floor)          8  0.16.0 and later, the current release
  A server that speaks another protocol than the one given ends the run with exit code 4,
  naming the server's protocol and version.
controls: left stick moves, right stick snap-turns (--turn smooth for smooth turning),
right trigger fires, A/jump button jumps. Ctrl-C or closing the mirror window stops cleanly.
Quake 3 refusals ("Invalid password", "Server is full", "You are banned …", "Server uses
protocol version …") end the run with the server's words and exit code 1: at once when retrying
cannot help, after run.connect_timeout when it can (a full server is retried meanwhile).
Sinks fail alone: a server that does not answer is retried (with backoff) while the others
stream; the run fails when no server let us in (by run.connect_timeout, or by the end of a
shorter run), or with --require-all when any did not.
exit codes: 0 ok, 1 failure (a Quake 3 server refused us or is rate-limiting this address; a
Sauerbraten server refused the password or never let us in; --record ended early; sinks failing
for different reasons), 2 bad flag, configuration value or input file, 3 a server did not answer
at all (Quake 3, Sauerbraten; where nothing listens, at once) or did not let us in (NetSync), or
was lost mid-run and not back at the end, 4 a NetSync server speaks another protocol (or a
Sauerbraten server another than 260).
"""


class _Parser(argparse.ArgumentParser):
    """argparse with docs/guide/config.md's promise kept: a bad flag is one line on stderr and exit 2
    (the usage block is --help's job). It keeps its commands' parsers for "did you mean"
    (argparse keeps them only in private fields)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.commands: dict[str, argparse.ArgumentParser] = {}
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        self.commands = action.choices  # the same dict argparse fills as commands are added
        return action

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:  # a mistyped command or value: the closest one
            options = re.findall(r"'([^']*)'", choice[2]) or [c.strip() for c in choice[2].split(",")]
            close = difflib.get_close_matches(choice[1], options, n=1)
            if close:
                message += f"; did you mean {close[0]}?"
        self.exit(2, f"{self.prog}: error: {one_line(message)} (`{self.prog} --help` lists the options)\n")


def _unknown_flags_error(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> str:
    """One line for flags the command does not take: the closest flag it has ("did you mean"),
    or, for a command's flag given before the command, where it goes; and the command's own help."""
    names = [args.command] + ([args.kind] if getattr(args, "kind", None) else [])
    sub = parser
    for name in names:  # the parser of the command given (probe q3 is a command of probe)
        assert isinstance(sub, _Parser)
        sub = sub.commands[name]
    command = sub.prog
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][\w-]*", sub.format_help())))  # what its --help lists
    hints = []
    for extra in extras:
        flag = extra.split("=", 1)[0]
        if not flag.startswith("-"):
            continue
        if flag in flags:  # given before the command: argparse left it to the top level
            hints.append(f"{flag} is a flag of `{command}`: put it after the command ({command} … {flag})")
            continue
        close = difflib.get_close_matches(flag, flags, n=1, cutoff=0.6)
        if close:
            hints.append(f"did you mean {close[0]}?")
    text = f"unrecognized arguments: {' '.join(extras)}" + ("; " + "; ".join(hints) if hints else "")
    return f"headcast: error: {one_line(text)} (`{command} --help` lists the options)"


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        metavar="FILE",
        type=path,
        help="user TOML file (default: $HEADCAST_CONFIG or ~/.config/headcast/config.toml when it exists)",
    )
    p.add_argument(
        "--json", action="store_true", help="machine-readable output: one JSON object per line (status, final summary)"
    )


def _add_sink_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Quake 3 sink")
    g.add_argument("--q3", metavar="HOST[:PORT]", help="Quake 3 server to join")
    g.add_argument(
        "--vr",
        dest="vr",
        action="store_true",
        default=None,
        help="send head bits when the server supports VR (default)",
    )
    g.add_argument("--no-vr", dest="vr", action="store_false", help="play as a flat client: no head bits")
    g.add_argument("--name", help="player name (default: headcast)")
    g.add_argument("--pk3", nargs="+", metavar="PATH", help="pk3 files matching a pure server's (sv_pure 1)")
    g.add_argument("--password", help="the server's password (g_password), sent in the userinfo")
    g.add_argument(
        "--q3-protocol",
        choices=("auto", "68", "71", "71-legacy"),
        help="auto (default): taken from the server's answers; 68; 71 (checksummed netchan: ioq3, "
        "Quake3e); 71-legacy (stock OpenArena)",
    )
    g = p.add_argument_group("NetSync sink")
    g.add_argument("--netsync", metavar="HOST[:CONTROL[:PUB[:TRANSFORM]]]", help="NetSync server to join")
    g.add_argument(
        "--netsync-protocol",
        metavar="auto|3..8",
        help="NetSync protocol to speak: auto (default) detects the server's; 3 = styly-netsync-server "
        "0.9-0.10, 8 = 0.16 and later (current); list below",
    )
    g.add_argument(
        "--netsync-transform-port",
        type=int,
        metavar="PORT",
        help="protocol 7+: the server's transform port, where poses go (default: control port + 2)",
    )
    g.add_argument("--room", help="room id (default: default_room)")
    g.add_argument("--device-id", help="device id (default: stable per machine and user)")
    g.add_argument(
        "--send-rate",
        type=float,
        metavar="HZ",
        help="NetSync: most poses a second, sent while the pose changes "
        "(default 10, 0.5..60; a still pose goes once a second)",
    )
    g.add_argument("--stealth", action="store_true", default=None, help="join without a visible avatar")
    g = p.add_argument_group("Sauerbraten sink")
    g.add_argument("--sauer", metavar="HOST[:PORT]", help="Sauerbraten server to join (default port 28785)")
    g.add_argument(
        "--sauer-password", metavar="PASSWORD", help="the server's password (serverpass), sent hashed as the game does"
    )
    g = p.add_argument_group("rig and window")
    g.add_argument("--move-speed", type=float, metavar="M_PER_S", help="left-stick speed (default 2.0)")
    g.add_argument("--turn", choices=("snap", "smooth"), help="right-stick turning (default snap)")
    g.add_argument("--snap-angle", type=float, metavar="DEG", help="degrees per snap (default 45)")
    g.add_argument(
        "--mirror",
        dest="mirror",
        action="store_true",
        default=None,
        help="show the mirror window (default: when a display exists)",
    )
    g.add_argument("--no-mirror", dest="mirror", action="store_false", help="no window")
    g.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long (default: run until Ctrl-C)")
    g.add_argument(
        "--require-all",
        action="store_true",
        default=None,
        help="fail unless every server lets us in (default: one is enough; the others keep retrying)",
    )


def _netsync_releases() -> list[str]:
    from headcast.netcode.netsync.releases import RELEASES  # standard library only: cheap

    return list(RELEASES)


def _netsync_current() -> str:
    from headcast.netcode.netsync.releases import CURRENT

    return CURRENT


def _command_in(argv: Sequence[str]) -> str:
    """The command word of a command line ("" when there is none): its first non-option word."""
    return next((a for a in argv if not a.startswith("-")), "")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line. `command`, the command about to run, leaves out what only another
    command needs and costs imports (swarm's options: its module pulls in the swarm); None: all."""
    parser = _Parser(
        prog="headcast",
        description="Stream OpenXR head and controller tracking to Quake 3 (VR head bits), "
        "STYLY NetSync and Sauerbraten, and show what the far side sees.",
        epilog=EPILOG_MAIN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version="headcast 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    p = sub.add_parser(
        "run",
        help="track the headset (or a mock motion) and stream to servers",
        description="Run the tracking loop: headset (or --mock MOTION) → rig → sinks → mirror.",
        epilog=EPILOG_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--mock",
        metavar="MOTION",
        help="use the mock OpenXR runtime playing MOTION (a shipped motion name or a file) instead of a headset",
    )
    p.add_argument(
        "--record", metavar="FILE", help="record the XR frames to a trace file (replay with `headcast replay`)"
    )
    p.add_argument(
        "--headless-rate",
        type=float,
        metavar="HZ",
        help="frames per second of a headless XR session, which paces itself (default: the display's "
        "rate when the runtime says it, else 90)",
    )
    p.add_argument("--print-config", action="store_true", help="print the merged configuration and exit")
    _add_sink_flags(p)
    _add_common(p)

    p = sub.add_parser(
        "demo",
        help="the whole pipeline on this machine: mock headset + local servers",
        description="Start a local NetSync server (and local Quake 3 and Sauerbraten servers "
        "when installed), drive them from the mock OpenXR runtime playing a shipped "
        "motion, show the mirror window when a display exists, and end with a "
        "verification summary of what each server saw versus what was sent.",
    )
    p.add_argument(
        "--motion",
        type=path,
        default="tour",
        help="shipped motion or file to play (default tour: look around, aim, fire, walk, snap turns, a tracking loss)",
    )
    p.add_argument("--duration", type=float, default=20.0, metavar="SECONDS", help="how long to run (default 20)")
    p.add_argument("--mirror", dest="mirror", action="store_true", default=None, help="force the mirror window")
    p.add_argument("--no-mirror", dest="mirror", action="store_false", help="no window")
    p.add_argument("--no-q3", action="store_true", help="skip the local Quake 3 server")
    p.add_argument("--no-sauer", action="store_true", help="skip the local Sauerbraten server")
    p.add_argument("--no-netsync", action="store_true", help="skip the local NetSync server")
    if command in (None, "demo"):  # start-up: the release table (shutil, subprocess...) only for `demo`
        p.add_argument(
            "--netsync-server",
            metavar="VERSION",
            choices=_netsync_releases(),
            help=f"the styly-netsync-server release to run (default: the current one, "
            f"{_netsync_current()}, protocol 8; one per protocol: {', '.join(_netsync_releases())}; "
            "an older one is installed into build/netsync/ on first use)",
        )
    p.add_argument(
        "--synthetic", action="store_true", help="compute frames in Python instead of loading the mock OpenXR runtime"
    )
    _add_common(p)

    p = sub.add_parser(
        "replay",
        help="play a recorded trace through the sinks",
        description="Feed a trace recorded with `headcast run --record FILE` through the "
        "rig and sinks, at the recorded pace.",
    )
    p.add_argument(
        "file", metavar="FILE", type=path, help="trace file (from `headcast run --record FILE`); sinks as for run"
    )
    _add_sink_flags(p)
    _add_common(p)

    p = sub.add_parser(
        "probe", help="ask a server what it is (no joining)", description="Query a server without joining it."
    )
    psub = p.add_subparsers(dest="kind", metavar="KIND", required=True, parser_class=_Parser)
    q = psub.add_parser(
        "q3",
        help="Quake 3: getinfo/getstatus, protocol family, vr_support",
        description="Send getinfo and getstatus to each server at once; report the measured "
        "ping, protocol, map, g_needpass, vr_support, every rule and the players "
        "(colour codes stripped; raw in --json).",
    )
    q.add_argument(
        "host",
        metavar="HOST[:PORT]",
        nargs="+",
        help="one or more servers (default port 27960), e.g. 127.0.0.1:27960 [::1]:27961",
    )
    q.add_argument(
        "--timeout",
        type=seconds,
        default=2.0,
        metavar="SECONDS",
        help="how long to wait for the answers (default 2); a server with no answer exits 3",
    )
    _add_common(q)
    q = psub.add_parser(
        "netsync",
        help="NetSync: is the server there, which protocol and version, who is in the room",
        description="Join the room as a stealth client (never broadcast) that detects the "
        "server's NetSync protocol (3 = styly-netsync-server 0.9-0.10 … 8 = 0.16 and "
        "later), then report the protocol, the server version (from its device-id "
        "mapping) and the room's members: clientNo, deviceId, stealth, and whether "
        "the room broadcast carries a pose of theirs. No answer exits 3; a server "
        "in a protocol headcast does not speak exits 4.",
    )
    q.add_argument(
        "host", metavar="HOST[:CONTROL[:PUB]]", help="the server (default ports 5555/5556; PUB defaults to CONTROL + 1)"
    )
    q.add_argument("--room", type=room_id, default="default_room", help="room to look into (default: default_room)")
    q.add_argument(
        "--timeout",
        type=seconds,
        default=3.0,
        metavar="SECONDS",
        help="how long to wait for an answer (default 3); no answer exits 3",
    )
    _add_common(q)
    q = psub.add_parser(
        "sauer",
        help="Sauerbraten: protocol, mode, map, mastermode, password, players",
        description="Ask the server's info port (game port + 1) for its ping reply (players, "
        "protocol, game mode, seconds left, map, description, mastermode — "
        '"password" when one is needed) and its extinfo player stats (each '
        "player's client number, name, team, frags, deaths, ping, state). No answer "
        "exits 3.",
    )
    q.add_argument(
        "host", metavar="HOST[:PORT]", help="the server's game port (default 28785); the query goes to PORT + 1"
    )
    q.add_argument(
        "--timeout",
        type=seconds,
        default=2.0,
        metavar="SECONDS",
        help="how long to wait for the answers (default 2); no answer exits 3",
    )
    _add_common(q)

    p = sub.add_parser(
        "swarm",
        help="many simulated VR players against one server, with relay figures",
        description="Drive N players per protocol (each a full client: its own socket, handshake, "
        "client number) from a shipped motion or a trace on one event loop; report the "
        "server's relay latency and loss, broadcast rate, bytes, joins and kicks.",
    )
    if command in (None, "swarm"):  # start-up: only `swarm` imports the swarm
        from headcast.app.swarm.cli import add_arguments as _swarm_arguments

        _swarm_arguments(p)

    p = sub.add_parser(
        "doctor",
        help="check this machine: OpenXR runtime and loader, display/GL, ports, servers",
        description="Check everything headcast needs and print each problem with its fix.",
    )
    _add_common(p)
    return parser


def _lenient_stdout() -> None:
    """Windows writes a redirected stdout (a file, a pipe) in the ANSI code page (cp1252), which
    has no → ≥ −: replace what it cannot encode instead of dying in the middle of the output."""
    out = sys.stdout
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if out is not None and not encoding.startswith("utf") and hasattr(out, "reconfigure"):
        try:
            out.reconfigure(errors="replace")
        except (ValueError, OSError):
            pass


def main(argv: Sequence[str] | None = None) -> int:
    _lenient_stdout()
    parser = build_parser(_command_in(sys.argv[1:] if argv is None else argv))
    try:
        # one line and exit 2 on bad flags; --help, --version exit 0
        args, extras = parser.parse_known_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    if extras:
        print(_unknown_flags_error(parser, args, extras), file=sys.stderr)
        return 2
    from headcast.app.run.config import env_warnings

    for warning in env_warnings():
        print(f"headcast: warning: {one_line(warning)}", file=sys.stderr)
    # The loader's own error lines repeat, less clearly, what our typed errors say; set
    # XR_LOADER_DEBUG=error (or all) to see them.
    os.environ.setdefault("XR_LOADER_DEBUG", "none")
    try:
        if args.command == "run":
            from headcast.app.commands.run import cmd_run

            with stop.handled():  # SIGINT, SIGTERM, SIGHUP: a clean stop; a second one: at once
                return cmd_run(args)
        if args.command == "demo":
            from headcast.app.commands.demo import cmd_demo

            with stop.handled():
                return cmd_demo(args)
        if args.command == "replay":
            from headcast.app.commands.run import cmd_replay

            with stop.handled():
                return cmd_replay(args)
        if args.command == "swarm":
            from headcast.app.swarm.cli import cmd_swarm

            with stop.handled():
                return cmd_swarm(args)
        if args.command == "probe":
            from headcast.app.commands.probe import cmd_probe

            return cmd_probe(args)
        if args.command == "doctor":
            from headcast.app.commands.doctor import cmd_doctor

            return cmd_doctor(args)
    except AppError as e:
        print(f"headcast: error: {one_line(e)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        # stop.Interrupted (a signal before the run started) names the signal and its exit code.
        print(f"headcast: {e or 'interrupted'}", file=sys.stderr)
        return getattr(e, "exit_code", 130)
    except BrokenPipeError:
        # Output piped into `head` and closed: not an error worth a traceback.
        sys.stdout = None  # keep the interpreter's final flush quiet
        return 0
    parser.error(f"unknown command {args.command!r}")
    return 2
