"""Frame pacing of the mock OpenXR runtime, and its own cost per call.

Paced (the default, as an app sees it): a GL session (glfw under a private Xvfb) waits N frames;
frames per second and the spread of the intervals between xrWaitFrame returns, the first
frame's start-up gap reported on its own. Target: 90 Hz within 1 %, p99 jitter < 1 ms (a
headset's cadence, so an app's send rates in mock mode match a headset's). The test
(tests/mockrt/test_mockrt_subprocess.py) keeps only bounds load cannot break; this measures.
Unpaced (HEADCAST_MOCK_THROTTLE=0): wait/begin/end through pyopenxr, i.e. what the mock adds to a
frame loop; and a spec-following headless iteration (timespec -> XrTime, xrLocateSpace).

RUNS rounds of the three, each round's figures printed with the load at its start and end, then
their min–max; the verdict is on the worst round.

    .venv/bin/python tests/benchmarks/bench_mockrt_pacing.py [frames]
"""

from __future__ import annotations

import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import time

TARGET_HZ = 90.0
PERIOD_MS = 1000 / TARGET_HZ
RUNS = 3


def start_xvfb() -> tuple[subprocess.Popen, str]:
    if shutil.which("Xvfb") is None:
        raise SystemExit("Xvfb is not installed: run scripts/setup.sh")
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "640x480x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    line = proc.stdout.readline().decode().strip()  # the display number, once it is ready
    if not line.isdigit():
        proc.kill()
        raise SystemExit(f"Xvfb did not start (said {line!r})")
    return proc, f":{line}"


def gl_binding():
    import glfw
    import xr
    from OpenGL import GLX

    if not glfw.init():
        raise SystemExit("glfw.init failed")
    glfw.window_hint(glfw.VISIBLE, glfw.FALSE)
    window = glfw.create_window(64, 64, "bench-mockrt", None, None)
    glfw.make_context_current(window)
    return window, xr.GraphicsBindingOpenGLXlibKHR(
        x_display=GLX.glXGetCurrentDisplay(),
        glx_drawable=GLX.glXGetCurrentDrawable(),
        glx_context=GLX.glXGetCurrentContext(),
    )


def gl_frames(frames: int, throttle: bool, binding) -> list[tuple[int, int, int]]:
    """Per frame: perf_counter_ns before xrWaitFrame, after it, and after xrEndFrame."""
    import xr

    from headcast.xr import mockrt

    ctl = mockrt.MockControl()
    ctl.reset()
    ctl.set_throttle(throttle)
    inst = xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="bench-mockrt"),
            enabled_extension_names=[xr.KHR_OPENGL_ENABLE_EXTENSION_NAME],
        )
    )
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        req = ctypes.cast(
            xr.get_instance_proc_addr(inst, "xrGetOpenGLGraphicsRequirementsKHR"),
            xr.PFN_xrGetOpenGLGraphicsRequirementsKHR,
        )
        req(inst, sid, ctypes.byref(xr.GraphicsRequirementsOpenGLKHR()))
        session = xr.create_session(
            inst, xr.SessionCreateInfo(system_id=sid, next=ctypes.cast(ctypes.pointer(binding), ctypes.c_void_p))
        )
        xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
        end = xr.FrameEndInfo(environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE, layers=[])
        stamps = []
        for _ in range(frames):
            t0 = time.perf_counter_ns()
            fs = xr.wait_frame(session)
            t1 = time.perf_counter_ns()
            xr.begin_frame(session)
            end.display_time = fs.predicted_display_time
            xr.end_frame(session, end)
            stamps.append((t0, t1, time.perf_counter_ns()))
        return stamps
    finally:
        xr.destroy_instance(inst)
        ctl.reset()


def headless_iterations(n: int) -> list[float]:
    """µs per spec-following headless iteration: the runtime's now, then the head located at it."""
    import xr

    from headcast.xr import mockrt

    ctl = mockrt.MockControl()
    ctl.reset()
    inst = xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="bench-mockrt"),
            enabled_extension_names=[xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME],
        )
    )
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        session = xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
        space = lambda kind: xr.create_reference_space(session, xr.ReferenceSpaceCreateInfo(reference_space_type=kind))  # noqa: E731
        stage, view = space(xr.ReferenceSpaceType.STAGE), space(xr.ReferenceSpaceType.VIEW)
        xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
        convert = ctypes.cast(
            xr.get_instance_proc_addr(inst, "xrConvertTimespecTimeToTimeKHR"), xr.PFN_xrConvertTimespecTimeToTimeKHR
        )
        ts, out, loc = xr.timespec(), xr.Time(), xr.SpaceLocation()
        costs = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            ts.tv_sec, ts.tv_nsec = divmod(ns, 1_000_000_000)
            convert(inst, ctypes.byref(ts), ctypes.byref(out))
            xr.raw_functions.xrLocateSpace(view, stage, out.value, ctypes.byref(loc))
            costs.append((time.perf_counter_ns() - t0) / 1e3)
        return sorted(costs)
    finally:
        xr.destroy_instance(inst)
        ctl.reset()


def pct(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p / 100))]


def main() -> int:
    from _report import cli, load_now, report, span  # tests/benchmarks/ is sys.path[0] when run as a script

    parser = cli(__doc__)
    parser.add_argument("frames", nargs="?", type=int, default=450, help="frames per paced run (default 450)")
    frames = parser.parse_args().frames
    if frames < 10:
        parser.error("frames must be at least 10")

    from headcast.xr import mockrt

    os.environ["XR_RUNTIME_JSON"] = str(mockrt.ensure_runtime())
    os.environ["PYGLFW_LIBRARY_VARIANT"] = "x11"
    load0 = load_now()
    print(f"load average {load0:.2f} on {os.cpu_count()} CPUs; {RUNS} rounds")
    off_pct, jitter99, loop50, headless50 = [], [], [], []
    xvfb, display = start_xvfb()
    try:
        os.environ["DISPLAY"] = display
        _window, binding = gl_binding()  # the window holds the GL context the session renders in
        for run in range(1, RUNS + 1):
            start_load = load_now()
            paced = gl_frames(frames, True, binding)
            unpaced = gl_frames(frames * 4, False, binding)
            headless = headless_iterations(frames * 4)
            woke = [w for _, w, _ in paced]
            startup = (woke[1] - woke[0]) / 1e6
            gaps = [(b - a) / 1e6 for a, b in zip(woke[1:], woke[2:])]  # steady state, after the first frame
            hz = 1000 / statistics.mean(gaps)
            jitter = sorted(abs(g - PERIOD_MS) for g in gaps)
            gaps.sort()
            loop = sorted((done - start) / 1e3 for start, _, done in unpaced)
            off_pct.append(round(abs(hz - TARGET_HZ) / TARGET_HZ * 100, 2))
            jitter99.append(round(pct(jitter, 99), 3))
            loop50.append(statistics.median(loop))
            headless50.append(statistics.median(headless))
            print(f"round {run} (load {start_load:.2f} → {load_now():.2f}):")
            print(
                f"  paced GL:   {hz:6.2f} Hz over {len(gaps)} intervals (target {TARGET_HZ:.0f} Hz ±1 %), interval "
                f"median {statistics.median(gaps):.3f} ms, p1 {pct(gaps, 1):.3f} ms, p99 {pct(gaps, 99):.3f} ms; "
                f"|jitter| p99 {pct(jitter, 99):.3f} ms (target < 1 ms); first interval {startup:.3f} ms"
            )
            print(
                f"  unpaced GL: wait+begin+end through pyopenxr median {statistics.median(loop):.1f} us, "
                f"p99 {pct(loop, 99):.1f} us per frame"
            )
            print(
                f"  headless:   timespec->XrTime + xrLocateSpace (ctypes) median {statistics.median(headless):.1f} "
                f"us, p99 {pct(headless, 99):.1f} us per iteration"
            )
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=10)
    load1 = load_now()
    print(f"over {RUNS} rounds (min–max), verdict on the worst; load average {load0:.2f} → {load1:.2f}:")
    print(
        f"  paced GL rate off 90 Hz {span(off_pct, 2)} % (target <= 1 %); |jitter| p99 {span(jitter99, 3)} ms "
        f"(target < 1 ms); unpaced frame median {span(loop50)} us; headless iteration median {span(headless50)} us"
    )
    loads = (load0, load1)
    ok = report("mockrt_pacing", "paced GL rate off 90 Hz", "<=", 1.0, None, " %", off_pct, loads)["met"]
    ok &= report("mockrt_pacing", "paced GL |jitter| p99", "<", 1.0, None, " ms", jitter99, loads)["met"]
    print("target met" if ok else "target MISSED (a loaded machine stretches sleeps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
