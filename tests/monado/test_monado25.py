"""headcast on Monado 25 (Debian 13's monado-service, its simulated HMD and two simple controllers) as
a Linux VR user runs it: `headcast doctor` and `headcast run` against real local servers (ioquake3,
styly-netsync-server, the Sauerbraten server), headless (the default) and OpenGL
(HEADCAST_XR_SESSION=gl, Monado's main compositor under Xvfb on lavapipe), the service killed
mid-run, Khronos' validation layer over it, and Khronos' hello_xr as a control that Monado itself
works here.

Measured on Monado 25.0.0 (tests below pin them): it offers XR_MND_headless,
XR_KHR_convert_timespec_time, XR_FB_display_refresh_rate and XR_KHR_opengl_enable (not
XR_KHR_win32_convert_performance_counter_time); it FOCUSES a headless session (Monado 21 left it
READY); in a headless session xrGetDisplayRefreshRateFB says 0.0 (pyopenxr returns it as a
ctypes.c_float: the crash of issue 23) and the null compositor lists 20 Hz; its simulated HMD's pose
is a function of the XrTime it is located at (a wobble of sines), so the frames' poses fitted
against the frames' times show they were located at those times.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from headcast.xr.trace import read_trace

from support import REPO, cli_env, wait_for

pytestmark = [pytest.mark.monado, pytest.mark.live]

GL, HEADLESS, TIMESPEC, REFRESH = (
    "XR_KHR_opengl_enable",
    "XR_MND_headless",
    "XR_KHR_convert_timespec_time",
    "XR_FB_display_refresh_rate",
)
HEADCAST_CHECKS = {GL, HEADLESS, TIMESPEC, REFRESH, "XR_KHR_win32_convert_performance_counter_time"}
SIMPLE = "/interaction_profiles/khr/simple_controller"
LAYER = "XR_APILAYER_LUNARG_core_validation"


def headcast_env(service, **extra: str) -> dict[str, str]:
    return cli_env(**service.client_env(), PYGLFW_LIBRARY_VARIANT="x11", **extra)


def run_python(
    code: str, env: dict[str, str], timeout: float = 60, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def validation_complaints(output: str) -> list[str]:
    return [line for line in output.splitlines() if "VALID_ERROR" in line or "VALID_WARNING" in line]


# -- the runtime as it is --------------------------------------------------------------------------

PROBE = r"""
import json, sys, xr
from headcast.xr.session import XRSession
states = []
on_state = XRSession._on_state
def record(self, state):  # every session state the runtime's events bring, in order
    states.append(state.name)
    on_state(self, state)
XRSession._on_state = record
if sys.argv[1:] == ["gl"]:
    with XRSession("gl") as xs:
        frames = [xs.next_frame() for _ in range(60)]
    print(json.dumps({"states": states, "focused": sum(f.focused for f in frames)}))
    raise SystemExit(0)
offered = sorted(e.extension_name.decode() for e in xr.enumerate_instance_extension_properties())
with XRSession() as xs:
    frames = [xs.next_frame() for _ in range(30)]
    s = xs._session
    rate = xr.get_display_refresh_rate_fb(s)
    print(json.dumps({"offered": offered, "runtime": xs.info.runtime, "system": xs.info.system,
                      "state": xs.state.name, "rate_type": type(rate).__name__, "rate": rate.value,
                      "rates": list(xr.enumerate_display_refresh_rates_fb(s)), "info_rate": xs.info.rate_hz,
                      "extensions": list(xs.info.extensions), "time_source": xs.info.time_source,
                      "states": states}))
print(json.dumps({"states": states}))
"""

BEGUN = ["IDLE", "READY", "SYNCHRONIZED", "VISIBLE", "FOCUSED"]
ENDED = ["STOPPING", "IDLE", "EXITING"]


def test_monado_25_offers_what_the_mock_monado_profile_offers(monado):
    """The mock runtime's `monado` profile is Monado 25's list (of the extensions headcast uses or
    checks): measured here against the real service, so the mock cannot drift from it."""
    from headcast.xr import mockrt

    proc = run_python(PROBE, headcast_env(monado))
    assert proc.returncode == 0, proc.stderr[-3000:] + monado.log_tail()
    got = json.loads(proc.stdout.splitlines()[-2])
    assert got["states"] == BEGUN  # all at once at xrBeginSession
    # the close: request_exit, then (measured) VISIBLE, SYNCHRONIZED (twice), STOPPING, IDLE, EXITING
    ended = json.loads(proc.stdout.splitlines()[-1])["states"]
    assert ended[: len(BEGUN)] == BEGUN and ended[-3:] == ENDED and set(ended[5:-3]) == {"VISIBLE", "SYNCHRONIZED"}
    assert got["runtime"].startswith("Monado") and "25.0.0" in got["runtime"], got["runtime"]
    assert got["system"] == "Monado: Simulated HMD"
    assert set(got["offered"]) & HEADCAST_CHECKS == {GL, HEADLESS, TIMESPEC, REFRESH}
    assert set(mockrt.MockControl(mockrt.ensure_runtime()).profile_extensions("monado")) == {
        GL,
        HEADLESS,
        TIMESPEC,
        REFRESH,
    }
    assert got["extensions"] == [HEADLESS, TIMESPEC, REFRESH] and got["time_source"] == "timespec"
    assert got["state"] == "FOCUSED"  # Monado 25 focuses a headless session (21 left it READY)
    assert (got["rate_type"], got["rate"]) == ("c_float", 0.0)  # no display: 0.0, as a ctypes.c_float
    assert got["info_rate"] == 90.0  # so headcast paces at its default


# -- headcast run, headless (the default) ------------------------------------------------------------


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One real server of each kind on 127.0.0.1: ioquake3 (OpenArena data), styly-netsync-server
    0.17.5, the Sauerbraten 2020 server."""
    from headcast.netcode.netsync.localserver import LocalNetSyncServer
    from headcast.netcode.q3.localserver import LocalQ3Server
    from headcast.netcode.sauer import localserver as sauer

    if not sauer.installed():
        pytest.fail(f"{sauer.CUBE2_SERVER} is missing: run scripts/setup.sh (apt package cube2-server)")
    with LocalQ3Server(kind="ioq3", pure=False) as q3, sauer.LocalSauerServer() as cube:
        netsync = LocalNetSyncServer(None, log_dir=tmp_path_factory.mktemp("netsync"))
        try:
            netsync.start(timeout=60)
            yield q3, netsync, cube
        finally:
            netsync.close()


def server_args(servers) -> list[str]:
    q3, netsync, cube = servers
    a = netsync.address
    return [
        "--q3",
        "%s:%d" % q3.address,
        "--name",
        "monado",
        "--netsync",
        f"{a.host}:{a.dealer_port}:{a.pub_port}",
        "--sauer",
        f"127.0.0.1:{cube.port}",
    ]


def start_run(service, servers, tmp_path, duration: float, **env: str) -> tuple[subprocess.Popen, Path, Path, Path]:
    trace, out, err = tmp_path / "run.trace", tmp_path / "run.out", tmp_path / "run.err"
    with open(out, "w") as o, open(err, "w") as e:  # files, not pipes: nobody reads them meanwhile
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headcast.app",
                "run",
                "--no-mirror",
                "--json",
                "--duration",
                str(duration),
                "--record",
                str(trace),
                *server_args(servers),
            ],
            cwd=REPO,
            env=headcast_env(service, **env),
            stdout=o,
            stderr=e,
            text=True,
        )
    return proc, trace, out, err


def finish(proc: subprocess.Popen, timeout: float) -> None:
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def fit_sine(t: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares y ≈ a + b·sin(ωt) + c·cos(ωt) over a grid of ω, refined: (ω, rms residual, amplitude)."""

    def residual(w: float) -> tuple[float, float]:
        m = np.column_stack([np.ones_like(t), np.sin(w * t), np.cos(w * t)])
        coef, *_ = np.linalg.lstsq(m, y, rcond=None)
        r = y - m @ coef
        return float(np.sqrt(np.mean(r * r))), float(math.hypot(coef[1], coef[2]))

    grid = np.linspace(0.2, 8.0, 400)
    best = min(grid, key=lambda w: residual(w)[0])
    lo, hi = best - 0.02, best + 0.02
    for _ in range(40):  # golden-section refine
        a, b = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        if residual(a)[0] < residual(b)[0]:
            hi = b
        else:
            lo = a
    w = (lo + hi) / 2
    rms, amp = residual(w)
    return w, rms, amp


def check_frames(frames, rate: float, duration: float, fit_window: float = 3.0, *, by_runtime: bool = False) -> None:
    """Frames at `rate`, the head tracked and moving, both controllers located, the head's motion a
    smooth function of the frames' times. by_runtime: paced by the runtime's xrWaitFrame, whose
    predicted display times lie on its 90 Hz grid (measured: 713 of 719 gaps one period, the rest
    whole periods or a re-phase); frames the loaded machine's compositor missed are gaps of whole
    periods, so the rate is the runtime's, not a count; headcast's own pacing holds the count."""
    times = np.array([f.time_ns for f in frames], dtype=np.float64) / 1e9
    gaps = np.diff(times)
    assert gaps.min() > 0
    assert statistics.median(gaps.tolist()) == pytest.approx(1 / rate, rel=0.05)
    if by_runtime:
        periods = gaps * rate
        on_grid = np.abs(periods - np.round(periods)) < 0.05
        assert on_grid.mean() > 0.9, sorted(set(np.round(periods, 2).tolist()))
        assert len(frames) >= rate * duration * 0.5, len(frames)
    else:
        assert len(frames) >= rate * duration * 0.85, len(frames)
        assert (len(frames) - 1) / (times[-1] - times[0]) == pytest.approx(rate, rel=0.05)
    # Monado 25's simulated HMD: orientation tracked, position valid but not tracked (inferred)
    assert all(f.head.valid and f.head.orientation_tracked for f in frames)
    assert all(f.focused for f in frames[5:])
    for hand in ("left_grip", "right_grip", "left_aim", "right_aim"):
        assert all(getattr(f, hand).valid for f in frames[5:]), hand
    assert {f.profile_left for f in frames[5:]} == {f.profile_right for f in frames[5:]} == {SIMPLE}
    # The simulated HMD wobbles (sines of its clock): fit the head's height against the frames' times
    # over a window. A frame located at another time than it says leaves a residual of the head's
    # speed times the error (~0.08 m/s: 1 ms -> 80 µm); float32 poses are good to ~0.1 µm.
    window = times <= times[0] + fit_window
    y = np.array([f.head.position[1] for f in frames])
    w, rms, amp = fit_sine(times[window] - times[0], y[window])
    assert amp > 0.01, amp  # it moves by centimetres
    assert rms < 20e-6, (w, rms, amp)  # and is where its own clock puts it at each frame's time
    assert len({f.head.orientation for f in frames}) > len(frames) * 0.9


def test_run_streams_to_real_servers_in_a_headless_session(monado, servers, tmp_path):
    """The default mode on Monado 25: headless, paced by headcast at 90 Hz (the runtime's display
    rate is 0.0 there), located at the runtime's now; Q3, NetSync and Sauerbraten joined, 30 s."""
    duration = 30.0
    proc, trace, out, err = start_run(monado, servers, tmp_path, duration)
    finish(proc, duration + 60)
    stderr = err.read_text()
    assert proc.returncode == 0, stderr[-3000:] + monado.log_tail()
    summary = json_lines(out.read_text())[-1]
    assert summary["frames"] >= 90 * duration * 0.85, summary
    for sink in summary["sinks"]:
        assert sink["sent"] > 0, sink
    q3, netsync, cube = servers
    assert "monado" in [p.name for p in q3.getstatus().players] or q3.log_offset() > 0
    recorded = read_trace(trace)
    check_frames(recorded.frames, 90.0, duration)


def test_doctor_passes_where_run_works_and_fails_where_it_does_not(monado, tmp_path):
    """`headcast doctor` on Monado 25 headless: passes (what `run` above does); with the service gone,
    both fail the same way."""
    r = subprocess.run(
        [sys.executable, "-m", "headcast.app", "doctor"],
        cwd=REPO,
        env=headcast_env(monado),
        capture_output=True,
        text=True,
        timeout=90,
    )
    openxr = [line for line in r.stdout.splitlines() if "openxr" in line]
    text = "\n".join(openxr)
    assert "session: headless (XR_MND_headless), paced by headcast at 90 Hz" in text, r.stdout + r.stderr
    assert "XR_KHR_convert_timespec_time" in text and "focused in" in text
    assert re.search(r"head pose valid in (\d+) of \1 frames", text), text
    assert not any("FAIL" in line or "✗" in line for line in openxr), text
    monado.stop()
    r2 = subprocess.run(
        [sys.executable, "-m", "headcast.app", "doctor"],
        cwd=REPO,
        env=headcast_env(monado),
        capture_output=True,
        text=True,
        timeout=90,
    )
    # Monado's loader library is there, its service is not: xrCreateInstance fails (RUNTIME_FAILURE)
    gone = "starting OpenXR: xrCreateInstance returned XR_ERROR_RUNTIME_FAILURE"
    assert r2.returncode != 0 and gone in r2.stdout, r2.stdout + r2.stderr
    assert "refused a headless session" not in r2.stdout  # no OpenGL attempt after a failed xrCreateInstance
    r3 = subprocess.run(
        [sys.executable, "-m", "headcast.app", "run", "--no-mirror", "--duration", "2"],
        cwd=REPO,
        env=headcast_env(monado),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert r3.returncode == 1 and gone in r3.stderr and "Traceback" not in r3.stderr, r3.stderr


def test_the_service_killed_mid_run_is_a_clean_stop_with_a_summary(monado, servers, tmp_path):
    proc, trace, out, err = start_run(monado, servers, tmp_path, 60.0)
    try:
        wait_for(
            lambda: trace.exists() and trace.stat().st_size > 20_000 or proc.poll() is not None,
            45,
            "frames in the trace",
        )
        assert proc.poll() is None, err.read_text()[-3000:]
        killed = time.monotonic()
        monado.kill()
        finish(proc, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - killed
    stderr = err.read_text()
    assert proc.returncode == 1, stderr[-3000:]
    assert took < 15, took
    assert "Traceback" not in stderr, stderr[-3000:]
    summary = json_lines(out.read_text())[-1]
    assert summary.get("frames", 0) > 0 and "stopped" in summary, summary
    assert read_trace(trace, partial=True).frames  # what ran was recorded


def test_run_headless_under_the_validation_layer_is_clean(monado, servers, tmp_path):
    if not Path("/usr/share/openxr/1/api_layers/explicit.d").is_dir():
        pytest.fail("Khronos' validation layer is missing: run scripts/setup.sh (openxr-layer-corevalidation)")
    proc, trace, out, err = start_run(monado, servers, tmp_path, 4.0, XR_ENABLE_API_LAYERS=LAYER)
    finish(proc, 60)
    output = out.read_text() + err.read_text()
    assert proc.returncode == 0, output[-3000:]
    assert validation_complaints(output) == []
    assert len(read_trace(trace).frames) > 200


# -- OpenGL sessions: Monado's main compositor under Xvfb ------------------------------------------


def test_run_in_an_opengl_session_streams_at_the_runtimes_rate(monado_main, servers, tmp_path, xvfb_display):
    """HEADCAST_XR_SESSION=gl: frames paced by Monado's xrWaitFrame (90 Hz on lavapipe), located at
    its predicted display times, under the validation layer."""
    duration = 8.0
    proc, trace, out, err = start_run(
        monado_main,
        servers,
        tmp_path,
        duration,
        HEADCAST_XR_SESSION="gl",
        DISPLAY=xvfb_display,
        XR_ENABLE_API_LAYERS=LAYER,
    )
    finish(proc, duration + 60)
    output = out.read_text() + err.read_text()
    assert proc.returncode == 0, output[-3000:] + monado_main.log_tail()
    assert validation_complaints(output) == []
    frames = read_trace(trace).frames
    running = [f for f in frames if f.head.valid]
    check_frames(running, 90.0, duration * 0.9, by_runtime=True)


def test_session_states_of_an_opengl_session(monado_main, xvfb_display):
    proc = run_python(PROBE, headcast_env(monado_main, DISPLAY=xvfb_display), args=("gl",))
    assert proc.returncode == 0, proc.stderr[-3000:] + monado_main.log_tail()
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["states"][:5] == BEGUN and got["states"][-3:] == ENDED, got["states"]
    assert got["focused"] >= 55  # focused from the first frames shown on


def test_doctor_passes_for_an_opengl_session(monado_main, xvfb_display):
    r = subprocess.run(
        [sys.executable, "-m", "headcast.app", "doctor"],
        cwd=REPO,
        env=headcast_env(monado_main, HEADCAST_XR_SESSION="gl", DISPLAY=xvfb_display),
        capture_output=True,
        text=True,
        timeout=90,
    )
    text = "\n".join(line for line in r.stdout.splitlines() if "openxr" in line)
    assert "session: OpenGL (XR_KHR_opengl_enable), paced by the runtime's xrWaitFrame" in text, r.stdout + r.stderr
    assert re.search(r"head pose valid in (\d+) of \1 frames", text), text


def test_hello_xr_runs_on_this_monado(monado_main, xvfb_display, tmp_path):
    """The control: Khronos' hello_xr (Vulkan, no window) reaches FOCUSED on the same service and
    exits cleanly on its "press any key" (a line on its stdin)."""
    hello = shutil.which("hello_xr")
    if hello is None:
        pytest.fail("hello_xr is missing: run scripts/setup.sh (libopenxr-utils)")
    env = {**cli_env(**monado_main.client_env()), "DISPLAY": xvfb_display}
    log = tmp_path / "hello_xr.out"
    with open(log, "w") as out:  # line-buffered (stdbuf): its lines are read while it runs
        proc = subprocess.Popen(
            ["stdbuf", "-oL", hello, "-g", "Vulkan2", "-s", "Stage"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        wait_for(
            lambda: "->XR_SESSION_STATE_FOCUSED" in log.read_text() or proc.poll() is not None, 60, "hello_xr's FOCUSED"
        )
        frames_from = time.monotonic()
        wait_for(lambda: time.monotonic() - frames_from > 1.0 or proc.poll() is not None, 5, "a second in focus")
        assert proc.poll() is None, log.read_text()[-3000:]
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    output = log.read_text()
    assert "->XR_SESSION_STATE_FOCUSED" in output, output[-3000:] + monado_main.log_tail()
    assert proc.returncode == 0, output[-3000:]
