"""Frame pacing of the mock OpenXR runtime, and its own cost per frame.

Paced (the default, as an app sees it): frames per second over N frames and the spread of the
intervals between xrWaitFrame returns. Target: 90 Hz within 1 % (a real headset's cadence, so the
app's send rates in mock mode match a headset's). Unpaced (HEADCAST_MOCK_THROTTLE=0): the cost of
wait/begin/end through pyopenxr, i.e. what the mock adds to a test's frame loop.

    .venv/bin/python tests/benchmarks/bench_mockrt_pacing.py [frames]
"""
from __future__ import annotations

import os
import statistics
import sys
import time

TARGET_HZ = 90.0


def run(frames: int, throttle: bool) -> list[tuple[int, int, int]]:
    """Per frame: perf_counter_ns before xrWaitFrame, after it, and after xrEndFrame."""
    import xr

    from headcast.xr import mockrt

    ctl = mockrt.MockControl()
    ctl.reset()
    ctl.set_throttle(throttle)
    inst = xr.create_instance(xr.InstanceCreateInfo(
        application_info=xr.ApplicationInfo(application_name="bench-mockrt"),
        enabled_extension_names=[xr.MND_HEADLESS_EXTENSION_NAME]))
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        session = xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
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


def main() -> int:
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 450
    from headcast.xr import mockrt

    os.environ["XR_RUNTIME_JSON"] = str(mockrt.ensure_runtime())
    paced = [woke for _, woke, _ in run(frames, throttle=True)]
    gaps = [(b - a) / 1e6 for a, b in zip(paced, paced[1:])]
    hz = 1000 / statistics.mean(gaps)
    gaps.sort()
    print(f"paced:   {hz:6.2f} Hz over {frames} frames (target {TARGET_HZ:.0f} Hz ±1 %), interval median "
          f"{statistics.median(gaps):.2f} ms, p1 {gaps[len(gaps) // 100]:.2f} ms, p99 {gaps[len(gaps) * 99 // 100]:.2f} ms")
    loop = sorted((done - start) / 1e3 for start, _, done in run(frames * 4, throttle=False))
    print(f"unpaced: wait+begin+end through pyopenxr median {statistics.median(loop):.1f} us, "
          f"p99 {loop[len(loop) * 99 // 100]:.1f} us per frame")
    print("target met" if abs(hz - TARGET_HZ) <= TARGET_HZ * 0.01 else "target MISSED (a loaded machine stretches sleeps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
