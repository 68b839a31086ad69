"""`headcast doctor`: check what headcast needs on this machine; each problem comes with its fix."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Finding:
    """One check's result. `note`: not ok, but nothing is broken either (no headset or runtime on
    this machine: the mock, replay, probe and swarm work) — shown as [--], exit 0."""

    area: str
    ok: bool
    what: str
    fix: str = ""
    note: bool = False


# `doctor` runs this many frames of the session `run` would open; the runtime gets up to
# _START_FRAMES idle frames (~3 s) to start it first.
DOCTOR_FRAMES = 30
_START_FRAMES = 300
_RUNTIME_FIX = (
    "start your headset's runtime (SteamVR, Monado, WMR) and make it the active OpenXR "
    "runtime — or use the mock: `headcast run --mock look_around`"
)


def check_openxr(mode: str = "auto", rate_hz: float = 0.0) -> list[Finding]:
    """Open the session `headcast run` would (xr.session, xr.headless_rate) and run DOCTOR_FRAMES
    frames of it: what kind it is, the reference spaces, the rate achieved, whether head poses
    arrive and which clock frames are located at. A failure here is the one `run` would meet."""
    out = []
    try:
        import xr
    except Exception as e:  # a broken wheel raises anything at import
        return [
            Finding("openxr", False, f"pyopenxr does not import: {e}", "pip install 'pyopenxr>=1.1.6501' into the venv")
        ]
    out.append(Finding("openxr", True, f"pyopenxr {getattr(xr, '__version__', '?')} with its bundled OpenXR loader"))
    manifest = os.environ.get("XR_RUNTIME_JSON")
    if manifest and not Path(manifest).is_file():
        out.append(
            Finding(
                "openxr",
                False,
                f"XR_RUNTIME_JSON points at {manifest}, which does not exist",
                "unset XR_RUNTIME_JSON, or point it at your runtime's manifest (.json)",
            )
        )
        return out
    from headcast.xr.errors import GraphicsError, NoHeadsetError, NoRuntimeError, XRError
    from headcast.xr.session import XRSession

    os.environ.setdefault("PYGLFW_LIBRARY_VARIANT", "x11")  # as the mirror selects it, for an OpenGL session
    try:
        xs = XRSession(mode, rate_hz=rate_hz)
    except NoRuntimeError:
        return out + [
            Finding(
                "openxr", False, "no OpenXR runtime found: no headset runtime is active here", _RUNTIME_FIX, note=True
            )
        ]
    except NoHeadsetError as e:
        return out + [
            Finding(
                "openxr",
                False,
                str(e),
                "connect and power on the headset (and wake it), then retry "
                "— or use the mock: `headcast run --mock look_around`",
                note=True,
            )
        ]
    except GraphicsError as e:
        return out + [
            Finding(
                "openxr",
                False,
                f"`headcast run` cannot open a session: {e}",
                "run on a desktop session or under xvfb-run -a, or use a runtime with XR_MND_headless",
            )
        ]
    except XRError as e:
        return out + [
            Finding("openxr", False, f"`headcast run` cannot open a session: {e}", "restart the runtime, then retry")
        ]
    with xs:
        info = xs.info
        out.append(
            Finding(
                "openxr",
                True,
                f"runtime: {info.runtime}, {info.system}" + (f" (XR_RUNTIME_JSON={manifest})" if manifest else ""),
            )
        )
        if info.fallback:
            out.append(Finding("openxr", True, f"fallback: {info.fallback}"))
        kind = (
            f"headless (XR_MND_headless), paced by headcast at {info.rate_hz:g} Hz"
            if info.headless
            else "OpenGL (XR_KHR_opengl_enable), paced by the runtime's xrWaitFrame"
        )
        out.append(Finding("openxr", True, f"session: {kind}; frames located at {info.time_text}"))
        out.append(
            Finding(
                "openxr",
                True,
                f"reference spaces: {', '.join(info.reference_spaces) or 'none'}; tracking in {info.base_space}",
            )
        )
        try:
            frames, seconds = _frames(xs)
        except XRError as e:
            return out + [
                Finding("openxr", False, f"`headcast run` would fail here: {e}", "restart the runtime, then retry")
            ]
    if not frames:
        return out + [
            Finding(
                "openxr",
                False,
                f"the runtime did not start the session in {_START_FRAMES} frames (no READY)",
                "wake the headset (put it on) and check the runtime's window",
            )
        ]
    rate = (len(frames) - 1) / seconds if seconds > 0 else 0.0
    head = sum(f.head.valid for f in frames)
    focused = sum(f.focused for f in frames)
    unfocused = (
        ""
        if focused == len(frames)
        else " (controllers give input only in focus; the runtime keeps this session unfocused: "
        "HEADCAST_XR_SESSION=gl for an OpenGL session, which it focuses)"
        if info.headless
        else " (controllers give input only in focus: put the headset on, bring headcast to the front)"
    )
    out.append(
        Finding(
            "openxr", True, f"{len(frames)} frames at {rate:.1f} Hz; focused in {focused} of {len(frames)}{unfocused}"
        )
    )
    out.append(
        Finding(
            "openxr",
            head > 0,
            f"head pose valid in {head} of {len(frames)} frames",
            "" if head else "check the headset's tracking (base stations, cameras) and wear it",
        )
    )
    return out


def _frames(xs) -> tuple[list, float]:
    """DOCTOR_FRAMES running frames (after up to _START_FRAMES idle ones) and the seconds they spanned."""
    import time

    frames: list = []
    start = end = 0.0
    for _ in range(_START_FRAMES + DOCTOR_FRAMES):
        frame = xs.next_frame()
        if not xs.running:
            if frames:
                break  # stopped by the runtime: what ran is the answer
            continue
        end = time.perf_counter()
        if not frames:
            start = end
        frames.append(frame)
        if len(frames) == DOCTOR_FRAMES:
            break
    return frames, end - start


def check_mock() -> list[Finding]:
    from headcast.app.run.mock import shipped_motions
    from headcast.xr import mockrt

    try:
        manifest = mockrt.ensure_runtime()
    except mockrt.RuntimeBuildError as e:
        from headcast.xr.mockrt.build import mock_unsupported, rebuild_hint

        return [
            Finding(
                "mock",
                False,
                f"the mock OpenXR runtime cannot be built: {e}",
                "a real OpenXR runtime" if mock_unsupported() else rebuild_hint("compiler", "openxr"),
            )
        ]
    motions = shipped_motions()
    return [
        Finding("mock", True, f"mock runtime built: {manifest}"),
        Finding(
            "mock",
            bool(motions),
            f"shipped motions: {', '.join(motions) or 'none'}",
            "" if motions else "reinstall headcast (assets/motions/*.motion are missing)",
        ),
    ]


def check_native() -> list[Finding]:
    """The two C helpers: optional (the pure-Python paths give the same frames and bytes), but the
    per-frame CPU figures in docs/performance.md#benchmarks are measured with them."""
    from headcast.netcode.q3.native import NATIVE, NATIVE_STATUS, PURE_ENV
    from headcast.xr import fastframe
    from headcast.xr.mockrt.build import rebuild_hint

    fix = rebuild_hint("compiler", "python", "openxr")  # scripts/setup.sh in a checkout
    out = []
    if fastframe.load() is not None:
        out.append(Finding("native", True, "XR frame helper (xr/_fastframe.c): in use"))
    else:
        state = "older than its source" if fastframe.library_path().exists() else "not built"
        out.append(
            Finding(
                "native",
                False,
                f"XR frame helper (xr/_fastframe.c): {state}; frames go through "
                "ctypes (same frames, ~2x the CPU per frame)",
                fix,
            )
        )
    disabled = NATIVE is None and NATIVE_STATUS.startswith("disabled")
    out.append(
        Finding(
            "native",
            NATIVE is not None or disabled,
            f"Quake 3 codec extension (netcode/q3/_q3native.c): {NATIVE_STATUS}"
            + (f" (unset {PURE_ENV} to use it)" if disabled else ""),
            "" if NATIVE is not None or disabled else fix,
        )
    )
    return out


def check_display() -> list[Finding]:
    from headcast.app.mirror.window import display_available

    if not display_available():
        # Not a problem in itself: a headless session needs none (the openxr check fails where the
        # runtime needs an OpenGL session); only the mirror window is off.
        return [
            Finding(
                "display",
                True,
                "no display (DISPLAY is not set): no mirror window (a desktop session "
                "or `xvfb-run -a headcast ...` shows it)",
            )
        ]
    os.environ.setdefault("PYGLFW_LIBRARY_VARIANT", "x11")
    try:
        import glfw
    except Exception as e:
        return [
            Finding("display", False, f"glfw does not load: {e}", "pip install glfw (and apt-get install libx11-6)")
        ]
    said: list[str] = []
    # glfw's errors as words of the finding, not as a raw `GLFWError` warning line on stderr
    glfw.set_error_callback(
        lambda code, text: said.append(text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text))
    )
    if not glfw.init():
        why = f" ({said[-1]})" if said else ""
        return [
            Finding(
                "display",
                False,
                f"cannot open the display {os.environ.get('DISPLAY')}{why}",
                "DISPLAY names no running X server: start it, fix DISPLAY/XAUTHORITY, or unset DISPLAY "
                "(headcast runs without the mirror window)",
            )
        ]
    try:
        glfw.window_hint(glfw.VISIBLE, glfw.FALSE)
        glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
        glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
        glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
        glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
        win = glfw.create_window(64, 64, "headcast doctor", None, None)
        if not win:
            return [
                Finding(
                    "display",
                    False,
                    "no OpenGL 3.3 core context on this display",
                    "apt-get install libgl1-mesa-dri libglx-mesa0 (Mesa), or update the GPU driver",
                )
            ]
        glfw.make_context_current(win)
        from OpenGL import GL

        renderer = GL.glGetString(GL.GL_RENDERER).decode()
        version = GL.glGetString(GL.GL_VERSION).decode()
        glfw.destroy_window(win)
        return [Finding("display", True, f"OpenGL {version} on {renderer} (display {os.environ.get('DISPLAY')})")]
    finally:
        glfw.terminate()


def _listening(port: int, kind: int) -> bool:
    with socket.socket(socket.AF_INET, kind) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def check_ports() -> list[Finding]:
    out = []
    for port, kind, what in (
        (27960, socket.SOCK_DGRAM, "Quake 3 default (UDP)"),
        (5555, socket.SOCK_STREAM, "NetSync control (TCP)"),
        (5556, socket.SOCK_STREAM, "NetSync pub (TCP)"),
        (5557, socket.SOCK_STREAM, "NetSync transform, protocol 7+ (TCP)"),
        (28785, socket.SOCK_DGRAM, "Sauerbraten default (UDP)"),
    ):
        busy = _listening(port, kind)
        out.append(
            Finding(
                "ports",
                True,
                f"127.0.0.1:{port} {what}: " + ("in use (a local server is running there)" if busy else "free"),
            )
        )
    return out


def check_servers() -> list[Finding]:
    from headcast.netcode.q3.localserver import IOQ3DED, OPENARENA_BASEPATH, OPENARENA_SERVER

    out = []
    have_q3 = os.access(IOQ3DED, os.X_OK) and Path(OPENARENA_BASEPATH).is_dir()
    out.append(
        Finding(
            "servers",
            have_q3,
            f"Quake 3 server: {IOQ3DED} + OpenArena data" if have_q3 else "no local Quake 3 server",
            "" if have_q3 else "apt-get install openarena-server (the demo then starts one)",
        )
    )
    if shutil.which(OPENARENA_SERVER) or Path(OPENARENA_SERVER).exists():
        out.append(Finding("servers", True, f"OpenArena server: {OPENARENA_SERVER}"))
    from headcast.netcode.sauer import localserver as sauer

    out.append(
        Finding(
            "servers",
            sauer.installed(),
            f"Sauerbraten server: {sauer.CUBE2_SERVER} (2020 Edition)"
            if sauer.installed()
            else "no local Sauerbraten server",
            "" if sauer.installed() else f"apt-get install {sauer.PACKAGE} (the demo then starts one)",
        )
    )
    # The ENet binding is whichever distribution provides the `enet` module (pyproject.toml names
    # pyenet-vladfi; the older `pyenet` provides the same module), found without importing it.
    enet_dists = importlib.metadata.packages_distributions().get("enet", [])
    if enet_dists:
        name = "pyenet-vladfi" if "pyenet-vladfi" in enet_dists else enet_dists[0]
        v = importlib.metadata.version(name)
        out.append(Finding("servers", True, f"ENet for the Sauerbraten sink: {name} {v} (module enet)"))
    else:
        out.append(
            Finding(
                "servers",
                False,
                "no ENet binding (module enet) is installed: no Sauerbraten sink",
                "pip install pyenet-vladfi==1.3.20 into the venv (scripts/setup.sh does)",
            )
        )
    from headcast.netcode.netsync.releases import CURRENT, protocol_of_version

    try:
        v = importlib.metadata.version("styly-netsync-server")
        out.append(
            Finding(
                "servers",
                True,
                f"NetSync server: styly-netsync-server {v} "
                f"(protocol {protocol_of_version(v) or 'unknown to headcast'})",
            )
        )
    except importlib.metadata.PackageNotFoundError:
        out.append(
            Finding(
                "servers",
                False,
                "no NetSync server (styly-netsync-server) installed",
                f"pip install 'styly-netsync-server=={CURRENT}' into the venv (the demo then starts one)",
            )
        )
    return out


def _xr_settings(args: argparse.Namespace) -> tuple[str, float, list[Finding]]:
    """The session settings `run` would use (config file, environment); a bad one is a finding."""
    from headcast.app.run import config as config_mod

    try:
        cfg = config_mod.load(Path(args.config) if getattr(args, "config", None) else None, flags={})
    except config_mod.ConfigError as e:
        return (
            "auto",
            0.0,
            [Finding("config", False, str(e), "fix the setting (`headcast run --print-config` shows them)")],
        )
    return cfg[("xr", "session")], cfg[("xr", "headless_rate")], []


def cmd_doctor(args: argparse.Namespace) -> int:
    mode, rate, findings = _xr_settings(args)
    checks = (
        ("openxr", lambda: check_openxr(mode, rate)),
        ("mock", check_mock),
        ("native", check_native),
        ("display", check_display),
        ("ports", check_ports),
        ("servers", check_servers),
    )
    for area, check in checks:
        try:
            findings += check()
        except Exception as e:  # a check that breaks is itself a finding, not a traceback
            findings.append(Finding(area, False, f"check failed: {e}"))
    problems = [f for f in findings if not f.ok and not f.note]
    notes = [f for f in findings if f.note]
    headset = not any(f.area == "openxr" for f in notes)
    if args.json:
        print(json.dumps({"ok": not problems, "headset": headset, "findings": [f.__dict__ for f in findings]}))
    else:
        for f in findings:
            print(f"[{'ok' if f.ok else '--' if f.note else '!!'}] {f.area:8} {f.what}")
            if not f.ok and f.fix:
                print(f"           {'instead' if f.note else 'fix'}: {f.fix}")
        tail = (
            ""
            if headset
            else (
                " (no headset here: a note, not a problem; `headcast run --mock look_around` "
                "and `headcast demo` run without one)"
            )
        )
        print(f"\n{len(problems)} problem(s){tail}" if problems else f"\nall good{tail}")
    # 0: nothing is broken (a missing headset or runtime is a note); 1: something headcast needs is
    return 1 if problems else 0
