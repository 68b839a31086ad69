"""`headcast run` and `headcast replay`: build the pipeline from the configuration and run it."""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any, Callable

from headcast.app.commands.args import flag_overrides
from headcast.app.errors import AppError, UsageError
from headcast.app.run import config as config_mod
from headcast.app.run.console import Console, mode_for
from headcast.app.run.loop import FrameLoop, SourceEnded
from headcast.app.run.outcome import Outcomes
from headcast.app.run.rig import Rig, RigSettings
from headcast.app.run.telemetry import Telemetry
from headcast.app.sinks.base import shown as sink_shown
from headcast.app.sinks.netsync.sink import NetSyncSink
from headcast.app.sinks.q3.sink import Q3Sink
from headcast.app.sinks.sauer.sink import SauerSink
from headcast.xr.frame import TrackingFrame


def load_config(args: argparse.Namespace, flags: dict | None = None) -> config_mod.Config:
    try:
        return config_mod.load(
            Path(args.config) if getattr(args, "config", None) else None,
            flags=flags if flags is not None else flag_overrides(args),
        )
    except config_mod.ConfigError as e:
        raise UsageError(str(e)) from None


def rig_from(cfg: config_mod.Config) -> Rig:
    r = cfg.section("rig")
    try:
        return Rig(
            RigSettings(
                move_speed=r["move_speed"],
                turn_mode=r["turn"],
                snap_angle=r["snap_angle"],
                smooth_speed=r["smooth_speed"],
                deadzone=r["deadzone"],
            )
        )
    except ValueError as e:
        raise UsageError(f"rig.{e}") from None


def check_config(cfg: config_mod.Config) -> None:
    """Refuse unusable addresses and values before anything is opened (a typo fails at once,
    not after the headset session and the first server are up)."""
    from headcast.app.sinks.netsync import link as netsync_link
    from headcast.app.sinks.q3 import link as q3_link

    # Host names are resolved here too: ZeroMQ resolves in the background and retries forever,
    # so a typo would only show as "no answer" after the connect timeout.
    if cfg[("q3", "host")]:
        _resolve("--q3", q3_link.parse_address(cfg[("q3", "host")])[0])
    q3_settings(cfg)
    netsync_settings(cfg)
    if cfg[("netsync", "host")]:
        _resolve("--netsync", netsync_link.parse_address(cfg[("netsync", "host")])[0])
    if cfg[("sauer", "host")]:
        from headcast.app.sinks.sauer.link import parse_address as sauer_address

        _resolve("--sauer", sauer_address(cfg[("sauer", "host")])[0])
    rate = cfg[("netsync", "send_rate")]
    if not 0.5 <= rate <= 60:
        raise UsageError(f"--send-rate {rate:g}: must be 0.5..60 Hz (Unity's clamp)")
    rig_from(cfg)
    want_mirror(cfg)
    record = cfg[("run", "record")]
    if record:
        from headcast.xr.trace import unusable

        problem = unusable(record)
        if problem:
            raise UsageError(f"--record {record}: {problem}")


def q3_settings(cfg: config_mod.Config) -> dict[str, Any]:
    """The Quake 3 link's protocol (a forced family, None = auto) and password, each checked."""
    from headcast.netcode.q3 import oob

    q = cfg.section("q3")
    try:
        protocol = oob.family_from_option(q["protocol"])
    except oob.OobError as e:
        raise UsageError(f"q3.protocol ({cfg.sources[('q3', 'protocol')]}): {e}") from None
    password = q["password"]
    if set(password) & set('\\";') or len(password) > 255:
        # The userinfo cannot carry them (the engine would split or mangle it).
        raise UsageError(
            f"q3.password ({cfg.sources[('q3', 'password')]}): a Quake 3 password cannot "
            'hold \\, " or ; (and is at most 255 characters)'
        )
    return {"protocol": protocol, "password": password}


def netsync_settings(cfg: config_mod.Config) -> dict[str, Any]:
    """The NetSync link's arguments from the configuration (address, protocol, transform port),
    each checked: a bad value is a UsageError naming where it came from."""
    from headcast.app.sinks.netsync import link as netsync_link

    n = cfg.section("netsync")
    protocol = netsync_link.parse_protocol(n["protocol"], cfg.sources[("netsync", "protocol")])
    device_id = n["device_id"]
    if len(device_id.encode("utf-8")) > 255:
        raise UsageError(
            f"netsync.device_id ({cfg.sources[('netsync', 'device_id')]}): "
            f"{len(device_id.encode('utf-8'))} bytes; the protocol allows 255"
        )
    out: dict[str, Any] = {"protocol": protocol}
    if n["host"]:
        host, control, pub, transform = netsync_link.parse_address(n["host"])
        transform = netsync_link.resolve_transform_port(
            control, transform, n["transform_port"], cfg.sources[("netsync", "transform_port")]
        )
        out.update(host=host, dealer_port=control, pub_port=pub, transform_port=transform)
    elif not 0 <= n["transform_port"] < 65536:
        netsync_link.resolve_transform_port(0, None, n["transform_port"], cfg.sources[("netsync", "transform_port")])
    return out


def _resolve(flag: str, host: str) -> None:
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as e:
        raise UsageError(f"{flag} {host}: cannot resolve host ({getattr(e, 'strerror', None) or e})") from None


def make_sinks(cfg: config_mod.Config, clock: Callable[[], float], verify: bool = False) -> list:
    """Q3, NetSync and Sauerbraten sinks; those without a host compute and show only.
    `verify`: check every usercmd's head bits as a receiver decodes them (the demo's summary)."""
    sinks: list = []
    try:
        q = cfg.section("q3")
        q3_link = None
        if q["host"]:
            from headcast.app.sinks.q3.link import Q3Link, parse_address as q3_address

            host, port = q3_address(q["host"])
            q3_link = Q3Link(host, port, name=q["name"], vr=q["vr"], pk3=q["pk3"], clock=clock, **q3_settings(cfg))
        sinks.append(Q3Sink(vr=q["vr"], move_speed=cfg[("rig", "move_speed")], link=q3_link, verify=verify))
        n = cfg.section("netsync")
        ns_link = None
        if n["host"]:
            from headcast.app.sinks.netsync.link import NetSyncLink, default_device_id

            ns = netsync_settings(cfg)
            ns_link = NetSyncLink(
                ns["host"],
                ns["dealer_port"],
                ns["pub_port"],
                n["room"],
                n["device_id"] or default_device_id(),
                n["send_rate"],
                n["stealth"],
                clock,
                protocol=ns["protocol"],
                transform_port=ns["transform_port"],
            )
        sinks.append(NetSyncSink(stealth=n["stealth"], send_rate=n["send_rate"], link=ns_link))
        sinks.append(sauer_sink(cfg, clock, verify))
    except BaseException:
        for s in sinks:
            s.close()
        raise
    return sinks


def sauer_sink(cfg: config_mod.Config, clock: Callable[[], float], verify: bool = False) -> SauerSink:
    """The Sauerbraten sink: its world (spawn point, heading, eye height) and, with a host, its link;
    `verify` (the demo): a second connection that watches what the server relays of us."""
    from headcast.app.sinks.sauer.mapping import SauerWorld

    s = cfg.section("sauer")
    world = SauerWorld(config_mod.sauer_spawn(s["spawn"]), s["spawn_yaw"], s["eye_height"])
    link = watcher = None
    if s["host"]:
        from headcast.app.sinks.sauer.link import SauerLink, SauerWatcher, parse_address as sauer_address

        host, port = sauer_address(s["host"])
        link = SauerLink(host, port, name=s["name"], model=s["model"], password=s["password"], clock=clock)
        if verify:
            watcher = SauerWatcher(host, port, password=s["password"], clock=clock)
    return SauerSink(world=world, link=link, watcher=watcher)


def mirror_setting(cfg: config_mod.Config) -> str:
    v = str(cfg[("mirror", "enabled")]).lower()
    if v in ("auto", ""):
        return "auto"
    if v in ("true", "1", "yes", "on"):
        return "true"
    if v in ("false", "0", "no", "off"):
        return "false"
    raise UsageError(f"mirror.enabled = {v!r}: expected auto, true or false")


def want_mirror(cfg: config_mod.Config) -> bool:
    v = mirror_setting(cfg)
    if v != "auto":
        return v == "true"  # start-up: --no-mirror never imports the mirror
    from headcast.app.mirror.window import display_available

    return display_available()


def open_mirror(cfg: config_mod.Config):
    """The mirror window, or None. It is optional in fact: when the display cannot be opened (a
    stale DISPLAY over ssh, a container) the run goes on without it and says why in one line —
    unless it was asked for (--mirror, mirror.enabled = true): then that line is the error."""
    if not want_mirror(cfg):
        return None
    from headcast.app.mirror.window import MirrorError, MirrorWindow

    m = cfg.section("mirror")
    try:
        return MirrorWindow(m["width"], m["height"], m["plot_seconds"])
    except MirrorError as e:
        if mirror_setting(cfg) == "true":
            where = cfg.sources[("mirror", "enabled")]
            where = "--mirror" if where.startswith("--mirror") else where
            raise AppError(f"no mirror window: {e} ({where} asks for one; --no-mirror runs without)") from None
        note(f"no mirror window: {e}; running without it")
        return None


def open_xr(cfg: config_mod.Config, mirror) -> Any:
    """The OpenXR session: the headset's runtime, or the mock runtime playing a motion."""
    motion = cfg[("xr", "mock")]
    if motion:
        from headcast.app.run.mock import activate_mock

        activate_mock(motion)
    return xr_session(mirror, cfg[("xr", "session")], cfg[("xr", "headless_rate")])


def xr_session(mirror, mode: str = "auto", rate_hz: float = 0.0) -> Any:
    """An XRSession on whatever runtime the loader finds; an OpenGL session binds to the
    mirror window's context (one GL context in the process); a headless one paces itself at
    `rate_hz` (0: the display's rate when the runtime says it, else 90 Hz)."""
    from headcast.xr.errors import XRError

    try:
        import xr  # noqa: F401  pyopenxr: its import finds the OpenXR loader for this system
    except Exception as e:  # noqa: BLE001 - macOS: NotImplementedError; a broken install: ImportError, OSError
        raise AppError(
            f"OpenXR is not available here: pyopenxr does not load ({type(e).__name__}: {e}). "
            "pyopenxr ships the OpenXR loader for Windows and Linux only; on macOS headcast "
            "runs the network side: probe, replay, swarm"
        ) from None
    from headcast.xr.session import MODES, XRSession

    if mode not in MODES:
        raise UsageError(f"xr.session = {mode!r}: expected one of {', '.join(MODES)}")
    try:
        return XRSession(mode, window=None if mirror is None else mirror.window, rate_hz=rate_hz)
    except XRError as e:
        raise AppError(str(e)) from None


class ReplaySource:
    """Frames of a recorded trace at their recorded pace (XrTime differences)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.perf_counter, sleep=time.sleep) -> None:
        from headcast.xr.trace import TraceEndsEarly, TraceError, iter_trace

        self.path = path
        self._frames = self._playable(iter_trace(path))
        self._error, self._ends_early = TraceError, TraceEndsEarly
        self.clock, self.sleep = clock, sleep
        self._t0: float | None = None
        self._first_ns = 0
        self.count = 0
        self.dropped = 0  # frames holding numbers no tracking frame can (xr.frame.frame_problem)
        self.first_drop = ""

    def _playable(self, frames):
        """The trace's frames without those no runtime could have produced (a value of 1e300
        would crash a sink's encoder): each is dropped and counted, the first named at once."""
        from headcast.xr.frame import frame_problem

        try:
            for frame in frames:
                problem = frame_problem(frame)
                if problem is None:
                    yield frame
                    continue
                self.dropped += 1
                if not self.first_drop:
                    self.first_drop = f"frame {frame.seq}: {problem}"
                    print(
                        f"headcast: {self.path}: {self.first_drop} — frame dropped, no tracking frame "
                        "holds that (later ones are counted)",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            frames.close()

    def _drops(self) -> str:
        return (
            f"; {self.dropped} frames dropped for values out of range, the first at {self.first_drop}"
            if self.dropped
            else ""
        )

    def next_frame(self) -> TrackingFrame:
        try:
            frame = next(self._frames)
        except StopIteration:
            raise SourceEnded(f"replay finished ({self.count} frames from {self.path}{self._drops()})") from None
        except self._ends_early as e:  # a recording cut short (killed, power loss, disk full): play what is there
            raise SourceEnded(f"replay finished: {e}; played the {e.frames} frames it holds{self._drops()}") from None
        except self._error as e:  # a damaged line: a bad input file, as `swarm --trace` says (exit 2)
            raise UsageError(str(e)) from None
        if self._t0 is None:
            self._t0, self._first_ns = self.clock(), frame.time_ns
        delay = self._t0 + (frame.time_ns - self._first_ns) / 1e9 - self.clock()
        if delay > 0:
            self.sleep(min(delay, 1.0))
        self.count += 1
        return frame

    def close(self) -> None:
        self._frames.close()


def say(message: str, json_mode: bool) -> None:
    """A progress line (stdout: it is part of the run's story, not an error)."""
    if json_mode:
        print(json.dumps({"type": "progress", "message": message}), flush=True)
    else:
        print(f"headcast: {message}", flush=True)


def note(message: str) -> None:
    """A warning the run goes on after (stderr, one line, also with --json: stdout stays JSON)."""
    print(f"headcast: {message}", file=sys.stderr, flush=True)


def recording_of(recorder, frames_run: int) -> dict | None:
    """What became of --record: the file, the frames it kept of the frames run, and why it ended
    early (None: it did not; the writer keeps every whole frame it wrote, and the file reads as a
    trace that ends early at that frame)."""
    if recorder is None:
        return None
    failed = recorder.failed
    return {
        "path": str(recorder.path),
        "frames_kept": recorder.count,
        "frames_run": frames_run,
        "ended_early": None if failed is None else (failed.strerror or str(failed)),
    }


def recording_text(rec: dict) -> str:
    if rec["ended_early"] is None:
        return f"{rec['frames_kept']} frames recorded in {rec['path']}"
    return (
        f"recording ended early: {rec['frames_kept']} of {rec['frames_run']} frames kept, {rec['ended_early']} "
        f"({rec['path']} plays up to there: the trace ends early at frame {rec['frames_kept']})"
    )


class RecordingError(AppError):
    """--record lost frames (a full disk, a size limit): the run went on, its recording did not (exit 1)."""


def summary_of(
    loop: FrameLoop, reason: str, outcomes: Outcomes, error: AppError | None = None, recording: dict | None = None
) -> dict:
    """The run in numbers, and each sink's outcome: when it joined and what it sent, or why never."""
    now = loop.clock()
    sinks = []
    for sink in loop.sinks:
        d = sink.status(now).as_dict()
        d["shown"] = sink_shown(sink)
        o = outcomes.of(sink.name)
        messages, nbytes = o.sent()
        d.update(sent=messages, sent_bytes=nbytes, outcome=outcome_text(o, now, outcomes))
        if o.linked:
            d.update(
                joined_at=None if o.joined_at is None else round(o.joined_at, 2),
                failure=None if o.failure is None else str(o.failure),
                lost=[{"at": at, "until": None if back is None else round(back, 2)} for at, back in o.lost],
            )
        sinks.append(d)
    out = {
        "type": "summary",
        "stopped": reason,
        **loop.telemetry.summary(),
        "sinks": sinks,
        "exit_code": 0 if error is None else error.exit_code,
        "error": None if error is None else str(error),
    }
    if recording is not None:
        out["recording"] = recording
    return out


def outcome_text(o, now: float, outcomes: Outcomes) -> str:
    """One sink's outcome as the summary says it."""
    if not o.linked:
        return "computed and shown only (no server)"
    messages, nbytes = o.sent()
    unit = getattr(o.sink, "unit", "messages")
    sent = f"{messages} {unit if messages != 1 else unit.rstrip('s')} sent ({nbytes / 1000:.1f} kB)"
    own = f"{o.name}: "  # the line starts with the sink's name already
    if o.failure is not None:
        where = "" if o.joined_at is None else f"joined at {o.joined_at:.1f} s, then "
        return f"{where}failed: {str(o.failure).removeprefix(own)}; {sent}"
    if o.joined_at is None:
        waited = 0.0 if outcomes.start is None else round(now - outcomes.start, 1)
        return f"never joined: {str(o.never_joined_error(waited)).removeprefix(own)}; {sent}"
    end = 0.0 if outcomes.start is None else now - outcomes.start
    lost = o.lost_text(end)
    return f"joined at {o.joined_at:.1f} s; {lost + '; ' if lost else ''}{sent}; {o.sink.status(now).state}"


def print_summary(summary: dict, json_mode: bool, out=None) -> None:
    out = out or sys.stdout
    if json_mode:
        print(json.dumps(summary), file=out, flush=True)
        return
    print(f"stopped: {summary['stopped']}", file=out)
    fc, lat = summary["frame_cost_ms"], summary["latency_ms"]
    ms = lambda v: "-" if v is None else f"{v} ms"  # noqa: E731 - None: nothing went on a wire
    # plain words first; the precise names (frame cost, motion-to-wire, p99) in brackets and --json
    print(
        f"frames {summary['frames']} (tracking lost in {summary['tracking_lost_frames']}); "
        f"work per frame {ms(fc['median'])} typically, {ms(fc['p99'])} in the slowest 1 % (frame cost); "
        f"tracked pose to network {ms(lat['median'])} typically, {ms(lat['p99'])} in the slowest 1 % "
        f"(motion-to-wire median, p99)",
        file=out,
    )
    if summary.get("recording") is not None:
        print(recording_text(summary["recording"]), file=out)
    for s in summary["sinks"]:
        if not s.get("shown", True):
            continue
        last = f"; last {s['packed']}" if s["state"] == "offline" and s["packed"] else ""
        print(f"  {s['name']:8} {s['outcome']}{last}", file=out)
    out.flush()


UNFOCUSED_NOTE_AFTER = 3.0  # seconds of a running headless session never focused


def unfocused_note(on_status, source, notice, after: float = UNFOCUSED_NOTE_AFTER):
    """The status callback, plus one notice when a headless session has not been focused for
    `after` s: a runtime may keep it READY for good (Monado 21 does), and then the head is tracked
    but the controllers give no input — which looks like broken controllers unless it is said."""
    start: list[float] = []

    def status(loop, now: float) -> None:
        on_status(loop, now)
        if not start:
            start.append(now)
        elif start[0] >= 0 and now - start[0] >= after:
            start[0] = -1.0
            if not source.focused:
                notice(
                    "the runtime keeps this headless session unfocused (READY): the head is tracked, "
                    "the controllers give no input; for controller input use an OpenGL session "
                    '(HEADCAST_XR_SESSION=gl or xr.session = "gl"; it needs a display)'
                )

    return status


def run_pipeline(
    cfg: config_mod.Config,
    source_factory: Callable[[Any], Any],
    json_mode: bool,
    clock: Callable[[], float] = time.perf_counter,
    verify: bool = False,
) -> tuple[FrameLoop, dict]:
    """Open mirror → source → sinks (each closed again if a later one fails), run, summarise.
    The summary is printed however the run ended; then the run's error, if any, is raised."""
    check_config(cfg)
    mirror = open_mirror(cfg)
    source = sinks = None
    try:
        # Start-up: the servers are contacted first (their handshakes are under way while the XR
        # session opens, and pyopenxr's import is not in front of the first datagram).
        sinks = make_sinks(cfg, clock, verify)
        source = source_factory(mirror)
        info = getattr(source, "info", None)
        if info is not None:
            if info.fallback:
                note(info.fallback)
            kind = f"headless session paced at {info.rate_hz:g} Hz" if info.headless else "OpenGL session"
            say(
                f"OpenXR: {info.runtime}, {info.system}, {kind}, "
                f"{info.base_space} space, bindings for {len(info.profiles)} controller profiles",
                json_mode,
            )
        recorder = None
        if cfg[("run", "record")]:
            from headcast.xr.trace import TraceWriter

            try:
                recorder = TraceWriter(cfg[("run", "record")], {"tool": "headcast run"})
            except OSError as e:
                raise UsageError(f"--record {cfg[('run', 'record')]}: {e.strerror or e}") from None
        outcomes = Outcomes(sinks, cfg[("run", "connect_timeout")], cfg[("run", "require_all")])
        console = Console(mode_for(json_mode, sys.stdout), outcomes, duration=cfg[("run", "duration")])
        on_status = console
        if info is not None and info.headless:
            on_status = unfocused_note(console, source, console.notice)
        loop = FrameLoop(
            source,
            rig_from(cfg),
            sinks,
            Telemetry(),
            mirror=mirror,
            recorder=recorder,
            duration=cfg[("run", "duration")],
            clock=clock,
            on_status=on_status,
            notice=console.notice,
            polls_after=True,  # the sockets read after each frame, on its thread (app/run/loop.py)
        )
    except BaseException:
        for s in sinks or []:
            s.close()
        if source is not None:
            source.close()
        if mirror is not None:
            mirror.close()
        raise
    error: AppError | None = None
    try:
        reason = loop.run()
    except AppError as e:  # the console ended the run: no sink can stream (or --require-all)
        error, reason = e, str(e)
    finally:
        console.close()
    if error is None and loop.failure is not None:  # the runtime failed: its call and XrResult, one line
        error = AppError(f"OpenXR: {loop.failure}")
    if error is None:
        error = outcomes.final(loop.clock())
    recording = recording_of(recorder, loop.telemetry.frames)
    if error is None and recording is not None and recording["ended_early"] is not None:
        error = RecordingError(recording_text(recording))
    summary = summary_of(loop, reason, outcomes, error, recording)
    print_summary(summary, json_mode)
    if error is not None:
        raise error
    return loop, summary


def cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if args.print_config:
        shown = cfg.redacted()
        if args.json:
            print(json.dumps(shown.as_dict()))
        else:
            print(shown.to_toml())
        return 0
    run_pipeline(cfg, lambda mirror: open_xr(cfg, mirror), args.json)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"replay: {path} {'is not a file' if path.exists() else 'does not exist'}")
    from headcast.xr.trace import TraceError, cut_short, read_meta

    try:  # not a trace at all: said before anything opens, with what the file is (exit 2, as swarm --trace)
        read_meta(path)
    except TraceError as e:
        raise UsageError(f"replay: {e}") from None
    if cut_short(path):  # said at once; where it ends, when the replay gets there
        say(f"{path} has no end record (the recording was cut short): playing the frames it holds", args.json)
    run_pipeline(cfg, lambda mirror: ReplaySource(path), args.json)
    return 0
