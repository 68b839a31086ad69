"""`headcast demo`: the whole pipeline on this machine, on an embedded default.

Starts a real NetSync server (the current styly-netsync-server release, protocol 8, or the
release `--netsync-server VERSION` names, e.g. 0.10.4 for protocol 3) and, when installed, a
real Quake 3 server (ioq3ded with the OpenArena data, sv_pure 0) and a real Sauerbraten server
(cube2-server, the 2020 Edition), all on 127.0.0.1 and free ports; plays a shipped motion
through the mock OpenXR runtime (or the embedded Python script when the runtime cannot be
built); runs the loop for a bounded time; stops the servers; ends
with a verification summary: what each server saw versus what was sent.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from headcast.app.commands import run as commands
from headcast.app.errors import AppError, UsageError
from headcast.app.run import stop
from headcast.app.run.mock import find_motion, shipped_motions
from headcast.app.run.synthetic import LOOK_AROUND, SyntheticSource
from headcast.app.sinks import farside
from headcast.app.sinks.netsync.link import version_str

# Quantisation bounds the checks allow, each derived from the protocol (docs/protocols/quake3.md#usercmd, #vr-head,
# docs/protocols/netsync.md#quantisation); tests/app/test_tolerances.py shows each holds and is nearly reached.
F32_ANGLE_EPS = 4 * 360 * 2.0**-24  # a few float32 roundings of an angle ≤ 360° (ioq3's float maths)
ANGLE_STEP = 360 / 65536  # ANGLE2SHORT truncates: the server's view is < one step off
Q3_VIEW_TOL = ANGLE_STEP + F32_ANGLE_EPS
Q3_HEAD_TOL = 180 / 127 + F32_ANGLE_EPS  # 7-bit truncation: < one step
# Smallest-three: the three small components are each ≤ half a step h = 1.41421354/1023/2 off
# (|δ3| ≤ √3·h); the largest w ≥ 1/2, rebuilt from them, moves ≤ (|c|/w)·|δ3| ≤ √3·|δ3|; so
# |δq| ≤ 2|δ3| ≤ 2√3·h and the rotation angle 2|δq| ≤ 4√3·h.
NS_ROT_STEP = 1.41421354 / 1023
NS_ROT_TOL = math.degrees(4 * math.sqrt(3) * NS_ROT_STEP / 2)  # 0.274°
NS_POS_TOL = 0.005 * math.sqrt(3) + 1e-9  # int24 × 0.01 m, rounded: half a step per axis
# Physical pose = R(−dyaw)·(head − t): head x/z and t's dx/dz are each ≤ 0.005 m off per axis
# (≤ 2·√2·0.005 on the floor), dyaw ≤ 0.05° turns a stage point r metres out by r·0.05°, head y ≤ 0.005.
STAGE_RADIUS = 4.0  # m: the tracked head's farthest floor distance from the stage centre
NS_PHYS_TOL = math.hypot(2 * math.sqrt(2) * 0.005 + STAGE_RADIUS * math.radians(0.05), 0.005)
# The relayed physical pose vs the official receivers' reconstruction of the bytes we sent: the
# server relays bodies as they came, and the same bytes decode to the same floats. (Their yaw is
# not the true yaw under head pitch/roll — origin.py — so the yaw is checked against theirs.)
NS_MODEL_TOL = 1e-9


# No Quake 3 server that decodes head bits (vr_support 1: the Trinity engine with the Trinity game
# mod) can be installed from Debian, PyPI or npm — looked up for this demo; the Trinity builds are
# GitHub releases only. The demo's server is vanilla ioq3ded. Announcing vr_support on it would be
# worse than honest silence: its engine reads 16-bit buttons whatever serverinfo says, so 32-bit
# buttons would desync every usercmd after them (garbage roll, stalled commandTime, no error on
# either side), and no game code there decodes the bits anyway.
NO_VR_SERVER = (
    "Quake 3 head bits are NOT SENT in this demo: its server is vanilla ioq3ded (no vr_support 1), "
    "and no VR-aware Quake 3 server (the Trinity engine and game mod) can be installed from Debian, "
    "PyPI or npm. The server gets 16-bit buttons and the head roll; the head pitch and yaw bits are "
    "computed and checked through Trinity's decode here (MODEL), not put on the wire."
)


@dataclass
class Check:
    """One line of the verification. `ok` None: neither a pass nor a failure — something the demo
    could not do on this machine, said as such (`status` is then the word shown)."""

    name: str
    ok: bool | None
    text: str  # the precise statement, in the protocols' own terms (--json: "text")
    status: str = ""
    plain: str = ""  # the same in plain words, for the terminal (--json: "plain"); "" = `text`

    @property
    def shown(self) -> str:
        return self.plain or self.text

    @property
    def word(self) -> str:
        return self.status or ("ok" if self.ok else "FAIL")


_say = commands.say


class Owned:
    """A local server the demo started, registered for the exit at once (app/run/stop.py SIGKILLs it
    by PID). The PID is remembered once seen: LocalNetSyncServer.stop() forgets its process
    before it waits for it to end."""

    def __init__(self, server) -> None:
        self.server, self.pid = server, None
        self.forget = stop.own_process(self)

    def __call__(self) -> int | None:
        self.pid = self.server.pid or self.pid
        return self.pid


def start_netsync(json_mode: bool, version: str | None = None, started: list | None = None):
    """A local styly-netsync-server: the venv's current release (None) or `version` from
    build/netsync/ (installed on first use). The link detects its protocol (auto). `started`
    gets (server, Owned) before the server starts, so a stop signal meanwhile stops it too."""
    from headcast.netcode.netsync import releases
    from headcast.netcode.netsync.localserver import LocalNetSyncServer, ServerStartError

    if version is None:
        fix = f"pip install 'styly-netsync-server=={releases.CURRENT}' into the venv"
    else:
        fix = f"python -m headcast.netcode.netsync.releases {version}"
        if not releases.is_installed(version):
            _say(
                f"installing styly-netsync-server {version} into {releases.release_dir(version)} (first use) ...",
                json_mode,
            )
    t = time.monotonic()
    try:
        server = LocalNetSyncServer(version)
    except ServerStartError as e:
        _say(f"styly-netsync-server {version} is not available ({e}; {fix}): the NetSync sink runs offline", json_mode)
        return None, ""
    what = (
        f"styly-netsync-server {server.server_version}, protocol {server.protocol}"
        if server.server_version
        else "styly-netsync-server"
    )
    _say(f"starting a local NetSync server ({what}) on 127.0.0.1 ...", json_mode)
    entry = (server, Owned(server))
    if started is not None:
        started.append(entry)
    try:
        server.start()
    except ServerStartError as e:
        _forget(entry, started)
        _say(f"the local NetSync server did not start ({e}; {fix}): the NetSync sink runs offline", json_mode)
        return None, ""
    a = server.address
    split = a.transform_port != a.dealer_port
    _say(
        f"NetSync server ready in {time.monotonic() - t:.1f} s: {what}; control {a.dealer_port}, pub {a.pub_port}"
        + (f", transform {a.transform_port}" if split else "")
        + f" (pid {entry[1]()})",
        json_mode,
    )
    return server, f"{a.host}:{a.dealer_port}:{a.pub_port}" + (f":{a.transform_port}" if split else "")


def start_q3(json_mode: bool, started: list | None = None):
    from headcast.netcode.q3.localserver import IOQ3DED, OPENARENA_BASEPATH, LocalQ3Server
    from headcast.netcode.serverprocess import LocalServerError

    if not (os.access(IOQ3DED, os.X_OK) and os.path.isdir(OPENARENA_BASEPATH)):
        _say("no Quake 3 server installed (apt install openarena-server): the Q3 sink runs offline", json_mode)
        return None, ""
    _say("starting a local Quake 3 server (ioq3ded + OpenArena data, sv_pure 0) on 127.0.0.1 ...", json_mode)
    server, host = _start_owned(
        LocalQ3Server(kind="ioq3", pure=False), LocalServerError, "Quake 3", "Q3", json_mode, started
    )
    if server is not None:
        _say(NO_VR_SERVER, json_mode)
    return server, host


def start_sauer(json_mode: bool, started: list | None = None):
    """A local Sauerbraten 2020 Edition server (Debian's cube2-server): ffa on "complex", the
    speed check on."""
    from headcast.netcode.sauer.localserver import LocalSauerServer, installed
    from headcast.netcode.serverprocess import LocalServerError

    if not installed():
        _say("no Sauerbraten server installed (apt install cube2-server): the Sauerbraten sink runs offline", json_mode)
        return None, ""
    _say("starting a local Sauerbraten server (cube2-server, 2020 Edition, ffa) on 127.0.0.1 ...", json_mode)
    return _start_owned(
        LocalSauerServer(description="headcast demo"),
        LocalServerError,
        "Sauerbraten",
        "Sauerbraten",
        json_mode,
        started,
    )


def _start_owned(server, error: type[Exception], game: str, sink: str, json_mode: bool, started: list | None):
    """Start a UDP game server the demo owns (registered before it starts, so a signal during its
    start-up stops it too); (server, "HOST:PORT"), or (None, "") with the sink offline."""
    t = time.monotonic()
    entry = (server, Owned(server))
    if started is not None:
        started.append(entry)
    try:
        server.start()
    except error as e:
        _forget(entry, started)
        _say(f"the {game} server did not start ({e}): the {sink} sink runs offline", json_mode)
        return None, ""
    host, port = server.address
    _say(f"{game} server ready in {time.monotonic() - t:.1f} s on port {port} (pid {entry[1]()})", json_mode)
    return server, f"{host}:{port}"


def pick_source(args: argparse.Namespace, cfg, json_mode: bool):
    """The mock OpenXR runtime playing the motion, or the embedded script when it cannot run."""
    if not args.synthetic:
        try:
            from headcast.app.run.mock import activate_mock

            activate_mock(args.motion)
            _say(f"mock OpenXR runtime playing motion {args.motion!r}", json_mode)
            return lambda mirror: commands.xr_session(mirror, cfg[("xr", "session")])
        except AppError as e:
            _say(f"{e}; using the embedded Python motion instead", json_mode)
    _say("frames computed in Python from the embedded look-around script", json_mode)
    return lambda mirror: SyntheticSource(LOOK_AROUND, cfg[("xr", "rate")])


def verify(loop, ns_server=None) -> list[Check]:
    sinks = {s.name: s for s in loop.sinks}
    checks: list[Check] = []
    q3 = sinks["q3"]
    if q3.link is not None:
        c = q3.link.check
        checks.append(
            Check(
                "q3 server view",
                c.matched > 0 and c.view_err_max <= Q3_VIEW_TOL,
                f"{c.matched} snapshots matched to the usercmd the server ran; playerState "
                f"viewangles vs sent weapon angles: max error {c.view_err_max:.4f}° "
                f"(allowed {Q3_VIEW_TOL:.4f}°, one ANGLE2SHORT step); {c.rebased} skipped across a "
                f"spawn/teleport" + (f", {c.frozen} while dead or in intermission" if c.frozen else ""),
                plain=f"the server turned our aim exactly as sent: {c.matched} of its snapshots checked "
                f"against the moves we sent, max error {c.view_err_max:.4f}° (allowed "
                f"{Q3_VIEW_TOL:.4f}°, the game's own angle step)"
                + (f"; {c.rebased} skipped across a respawn" if c.rebased else "")
                + (f", {c.frozen} while dead or between rounds" if c.frozen else ""),
            )
        )
        if q3.link.head_bits:
            checks.append(
                Check(
                    "q3 head bits",
                    c.vr_flag_frames > 0,
                    f"sent (32-bit buttons): {q3.link.head_reason}; the server set EF_VR_PLAYER "
                    f"in {c.vr_flag_frames} of our snapshots",
                )
            )
        else:
            checks.append(
                Check(
                    "q3 head bits",
                    None,
                    f"{q3.link.head_reason} — computed and checked through "
                    "the receiver's decode below, never on the wire (why: the note at the start)",
                    status="NOT SENT",
                )
            )
    on_wire = q3.link is not None and q3.link.head_bits
    where = (
        "the bits sent"
        if on_wire
        else "MODEL: the bits headcast would send, through Trinity's decode here — not sent to any server"
    )
    checks.append(
        Check(
            "q3 head quantisation",
            q3.head_quant_max <= Q3_HEAD_TOL,
            f"7-bit pitch / yaw offset as a VR receiver decodes them ({where}): max error "
            f"{q3.head_quant_max:.3f}° (one step = {180 / 127:.3f}°)",
            plain=(
                "the head angles as a VR server reads them back"
                + ("" if on_wire else " (modelled here: not sent)")
                + f": max error {q3.head_quant_max:.3f}°, within one step of "
                f"{180 / 127:.3f}°"
            ),
        )
    )
    if q3.lost_frames:
        checks.append(
            Check(
                "q3 tracking loss",
                q3.lost_cleared == q3.lost_frames,
                f"{q3.lost_frames} usercmds built without a head: head bits cleared in {q3.lost_cleared}",
            )
        )
    ns = sinks["netsync"]
    if ns.link is not None:
        c = ns.check
        link = ns.link
        if ns_server is not None:
            want = ns_server.protocol
            checks.append(
                Check(
                    "netsync protocol",
                    link.protocol == want and link.joined,
                    f"spoke protocol {link.protocol} (auto-detected), the local styly-netsync-server "
                    f"{ns_server.server_version} speaks {want}; server version from its mapping: "
                    f"{version_str(link.server_version)}",
                )
            )
        drops = link.drops_text()
        checks.append(
            Check(
                "netsync relay",
                c.matched > 0 and c.mismatched == 0 and not drops,
                f"{c.matched} of our bodies came back in the room broadcast and matched by poseSeq; "
                f"{c.mismatched} differ from our bytes decoded in protocol {ns.protocol}"
                + (f"; {drops}" if drops else "; no room pose dropped"),
                plain=f"the room sent {c.matched} of our poses back, each matched to the one we sent; "
                f"{c.mismatched} differ" + (f"; {drops}" if drops else "; nothing dropped"),
            )
        )
        checks.append(
            Check(
                "netsync head",
                c.head_rot_max <= NS_ROT_TOL and c.head_pos_max <= NS_POS_TOL,
                f"relayed head vs sent: rotation max {c.head_rot_max:.3f}° (allowed {NS_ROT_TOL:.3f}°), "
                f"position max {c.head_pos_max * 1000:.1f} mm (allowed {NS_POS_TOL * 1000:.1f} mm)",
            )
        )
        checks.append(
            Check(
                "netsync physical",
                c.physical_max <= NS_PHYS_TOL
                and c.physical_model_pos_max <= NS_MODEL_TOL
                and c.physical_model_yaw_max <= NS_MODEL_TOL,
                f"physical pose rebuilt from the XROrigin Δ vs the tracked (stage) head: max "
                f"{c.physical_max * 1000:.1f} mm (allowed {NS_PHYS_TOL * 1000:.1f} mm); vs the official "
                f"receivers' reconstruction of the bytes we sent: {c.physical_model_pos_max:.1e} m, "
                f"yaw {c.physical_model_yaw_max:.1e}° (allowed {NS_MODEL_TOL:g} m / °: the same bytes "
                f"decode identically); their yaw formula is "
                f"{c.physical_true_yaw_max:.1f}° off the true stage yaw at most (head pitch/roll); "
                f"Δyaw values seen: {', '.join(f'{d:g}°' for d in sorted(c.dyaws)) or 'none'}",
                plain=f"where others see you standing (your play area's offset plus your head) vs where "
                f"you are: max {c.physical_max * 1000:.1f} mm (allowed {NS_PHYS_TOL * 1000:.1f} mm); "
                f"STYLY's own client rebuilds it from our bytes identically; turns seen: "
                f"{', '.join(f'{d:g}°' for d in sorted(c.dyaws)) or 'none'}",
            )
        )
        if c.lost_reported or c.lost_stale:
            checks.append(
                Check(
                    "netsync tracking loss",
                    c.lost_stale == 0,
                    f"{c.lost_reported} relayed bodies without a head while tracking was lost, "
                    f"{c.lost_stale} with a stale head",
                )
            )
    checks += verify_sauer(sinks["sauer"])
    return checks


def verify_sauer(sauer) -> list[Check]:
    link = sauer.link
    if link is None:
        s = sauer.seen
        return (
            []
            if s is None
            else [
                Check(
                    "sauer N_POS",
                    True,
                    f"last record {sauer.size} B: yaw {s.yaw} pitch {s.pitch} roll {s.roll_deg} (computed, not sent)",
                )
            ]
        )
    c, core = sauer.check, link.core
    drops = core.counters.drops
    cn, mode, mapname = link.last_spawn or (-1, "-", "")
    out = [
        Check(
            "sauer join",
            link.joined and c.records > 0,
            f"spawned {c.spawns}× as client {cn} ({mode} on {mapname or 'no map'}); {c.records} "
            f"N_POS records sent at 30 Hz with the lifesequence of each spawn; "
            + (f"{sum(drops.values())} server messages not understood" if drops else "every server message read"),
            plain=f"spawned {c.spawns}× as player {cn} ({mode} on {mapname or 'no map'}); {c.records} positions "
            f"sent at 30 a second; "
            + (f"{sum(drops.values())} server messages not understood" if drops else "every server message read"),
        )
    ]
    last = core.last_disconnect
    out.append(
        Check(
            "sauer speed",
            last is None,
            f"fastest locomotion {c.speed_max:.0f} units/s ({c.capped} records capped to 179; the server "
            f"kicks at 180); " + ("never disconnected" if last is None else f"disconnected: {last.text}"),
        )
    )
    out.append(
        Check(
            "sauer angles",
            c.angle_err_max < 1.0,
            f"yaw/pitch/roll sent vs the record's whole degrees: max {c.angle_err_max:.3f}° (the game "
            "truncates to whole degrees: < 1°)",
        )
    )
    if sauer.watcher is not None:
        out.append(
            Check(
                "sauer relay",
                c.relayed > 0 and c.relayed_other == 0,
                f"a second client on the server accepted {c.relayed} of our records (the game's rules: "
                f"client number, lifesequence parity, alive), each one we sent, byte for byte; "
                f"{c.relayed_other} it saw that we did not send",
                plain=f"a second player on the server received {c.relayed} of our positions, each exactly "
                f"as sent; {c.relayed_other} it saw that we did not send",
            )
        )
    return out


def cmd_demo(args: argparse.Namespace) -> int:
    json_mode = args.json
    if not args.synthetic and not Path(args.motion).is_file() and find_motion(args.motion) is None:
        # A typo is refused before any server starts, not replaced by the embedded motion.
        raise UsageError(
            f"--motion {args.motion}: no such motion file or shipped motion (shipped: {', '.join(shipped_motions())})"
        )
    _check_config(args)
    servers: list = []  # (server, Owned): every server started, stopped by PID whatever ends the demo
    ns_server = None
    try:
        ns_host = q3_host = sauer_host = ""
        if not args.no_netsync:
            ns_server, ns_host = start_netsync(json_mode, args.netsync_server, servers)
        if not args.no_q3:
            _, q3_host = start_q3(json_mode, servers)
        if not args.no_sauer:
            _, sauer_host = start_sauer(json_mode, servers)
        flags = {
            ("q3", "host"): q3_host,
            ("netsync", "host"): ns_host,
            ("netsync", "room"): "headcast-demo",
            ("sauer", "host"): sauer_host,
            ("run", "duration"): args.duration,
            ("mirror", "enabled"): args.mirror,
        }
        cfg = commands.load_config(args, flags)
        source = pick_source(args, cfg, json_mode)
        loop, summary = commands.run_pipeline(cfg, source, json_mode, verify=True)
    finally:
        stop.stopping()  # a signal from here on is noted: every server gets stopped
        for entry in reversed(servers):
            try:
                _forget(entry)
            except Exception as e:  # noqa: BLE001 - the next server must still be stopped
                _say(f"stopping a local server failed: {e}", json_mode)
    checks = verify(loop, ns_server)
    ok = all(c.ok is not False for c in checks)
    undone = [c for c in checks if c.ok is None]
    sources = [{"view": key, "source": src.value, "why": why} for key, src, why in farside.sources(loop.sinks)]
    if json_mode:
        print(
            json.dumps(
                {
                    "type": "verification",
                    "ok": ok,
                    "far_sides": sources,
                    "checks": [
                        {"name": c.name, "ok": c.ok, "status": c.word, "text": c.text, "plain": c.shown} for c in checks
                    ],
                }
            ),
            flush=True,
        )
    else:
        print("\nverification (what the servers saw vs what was sent):")
        for c in checks:
            print(f"  [{c.word}] {c.name}: {c.shown}")
        print("where each far side's numbers came from:")
        for s in sources:
            print(f"  {s['view']:8} {s['source'].upper():8} {s['why']}")
        verdict = "all checks passed" if ok else "SOME CHECKS FAILED"
        if undone:
            verdict += "; not done here: " + ", ".join(f"{c.name} ({c.word})" for c in undone)
        print(verdict, file=sys.stdout if ok else sys.stderr)  # NO_VR_SERVER was said once, at the start
    return 0 if ok else 1


def _check_config(args: argparse.Namespace) -> None:
    """The configuration as the demo will load it, checked before any server starts (a bad value
    costs no server start-up); its warnings are left to the real load."""
    from headcast.app.run import config as config_mod

    try:
        cfg = config_mod.load(
            Path(args.config) if args.config else None,
            flags={("run", "duration"): args.duration, ("mirror", "enabled"): args.mirror},
            warn=None,
        )
    except config_mod.ConfigError as e:
        raise UsageError(str(e)) from None
    if commands.mirror_setting(cfg) == "true":  # asked for: no usable display is the error, before any server
        problem = _display_problem()
        if problem is not None:
            where = cfg.sources[("mirror", "enabled")]
            where = "--mirror" if where.startswith("--mirror") else where
            raise AppError(f"no mirror window: {problem} ({where} asks for one; --no-mirror runs without)")


def _display_problem() -> str | None:
    """Why the mirror window could not open here (the words MirrorWindow uses), or None: glfw
    is started and stopped once, as the window will."""
    from headcast.app.mirror.window import MirrorError, display_available, glfw_started

    if not display_available():
        return "no display (DISPLAY is not set): use --no-mirror, or run under xvfb-run"
    os.environ.setdefault("PYGLFW_LIBRARY_VARIANT", "x11")
    try:
        import glfw
    except Exception as e:  # noqa: BLE001 - a missing library: the window could not open either
        return f"glfw does not load ({e})"
    try:
        with glfw_started(glfw):
            glfw.terminate()
    except MirrorError as e:
        return str(e)
    return None


def _forget(entry, started: list | None = None) -> None:
    """Stop a server the demo started (its own stop: SIGINT/SIGTERM, then SIGKILL, by PID, bounded)
    and remove its files; then it is no longer ours to kill."""
    server, owned = entry
    try:
        _stop(server)
    finally:
        owned.forget()
        if started is not None and entry in started:
            started.remove(entry)


def _stop(server) -> None:
    halt = getattr(server, "stop", None)
    if halt is not None:
        halt()
    for extra in ("close", "cleanup"):
        fn = getattr(server, extra, None)
        if fn is not None:
            fn()
