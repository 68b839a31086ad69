"""Per-frame cost of XR input against the mock runtime: the native frame helper vs the ctypes path.

Polling = sync actions, locate the head (VIEW) and the four hand spaces in the base space, read
the eight action states, build the TrackingFrame. A headless frame = the runtime's now
(xrConvertTimespecTimeToTimeKHR), one xrPollEvent and the polling — no frame calls (the session
paces itself: bench_xr_headless.py measures that beside the OpenGL loop). The session is given
focus, so every action is live. Measured three ways, pacing off (warm caches):
  * native helper — XRSession's path when xr/_fastframe.c is built (scripts/setup.sh builds it):
    the whole frame's runtime calls and its TrackingFrame in one C call;
  * ctypes path — XRSession(native=False), the fallback: raw runtime entry points, structs
    built once, one ctypes call per runtime call, the frame built in Python;
  * pyopenxr's convenience wrappers (a fresh struct per call, an exception object per qualified
    success) — the baseline that justifies both.
Then paced at 90 Hz (what the app does): the main thread's CPU per next_frame(), the pacer's
sleep, spin and wake included — after that sleep every Python step runs cache-cold.

Cold, as the app calls it: each poll after an 11 ms sleep, the native helper's XRSession.poll()
and pyopenxr's wrappers (the anchor) interleaved frame by frame; the ratio of their medians (issue
26's goal: <= 0.05). Whose the cold cost is: the same fourteen runtime calls (sync, five locates,
eight state reads) through ctypes after the sleep, beside fourteen ctypes calls of a C no-op
(libc labs): the difference is the runtime's own cold cost (here the mock's, through the loader),
which no client of it can avoid; the rest of the native poll is ours.
Targets: poll p99 under 0.5 ms (4.5 % of a 90 Hz frame) on the path in use; cold poll <= 0.05x
pyopenxr's.

    .venv/bin/python tests/benchmarks/bench_xr_poll.py [frames] [paced_seconds] [cold_frames]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

FRAME_90HZ_MS = 1000 / 90
TARGET_P99_MS = 0.5
TARGET_COLD_RATIO = 0.05
COLD_SLEEP_S = 0.011


def figures(name: str, samples_ns: list[int]) -> float:
    ms = sorted(s / 1e6 for s in samples_ns)
    med = statistics.median(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"  {name:<36} median {med * 1000:7.1f} us ({med / FRAME_90HZ_MS:6.2%} of a 90 Hz frame)   "
        f"p99 {p99 * 1000:7.1f} us ({p99 / FRAME_90HZ_MS:6.2%})"
    )
    return p99


def naive_poll(xr, xs, t: int) -> None:
    """The per-frame work written the obvious way with pyopenxr's wrappers."""
    s = xs._session
    acts = xs._actions.actions
    left, right = xs._actions.hand_paths
    try:
        xr.sync_actions(
            s, xr.ActionsSyncInfo(active_action_sets=[xr.ActiveActionSet(xs._actions.handle, xr.NULL_PATH)])
        )
    except xr.SessionNotFocused:
        pass
    for space in (xs._view, *xs._hand_spaces):
        xr.locate_space(space, xs._base, t)
    for name, sub in (("trigger", left), ("trigger", right), ("squeeze", left), ("squeeze", right)):
        xr.get_action_state_float(s, xr.ActionStateGetInfo(acts[name], sub))
    for name in ("move", "turn"):
        xr.get_action_state_vector2f(s, xr.ActionStateGetInfo(acts[name], xr.NULL_PATH))
    for name in ("jump", "menu"):
        xr.get_action_state_boolean(s, xr.ActionStateGetInfo(acts[name], xr.NULL_PATH))


def measure(xr, ctl, native: bool, frames: int, paced_s: float) -> float:
    from headcast.xr.pacing import Pacer
    from headcast.xr.session import XRSession

    label = "native helper" if native else "ctypes path"
    ctl.set_throttle(False)
    with XRSession("headless", native=native) as xs:
        if xs.native != native:
            raise SystemExit(
                "the native frame helper is not built: run scripts/setup.sh "
                "(or .venv/bin/python -m headcast.xr.fastframe)"
            )
        paced = xs._pacer
        xs._pacer = Pacer(1e9)  # pacing off: every deadline is already past
        ctl.focus()  # the mock leaves a headless session READY, as Monado does: focus makes the actions live
        frame = xs.next_frame()
        while not xs.focused:
            frame = xs.next_frame()
        assert frame.head.valid and frame.right_aim.valid, "the mock should track everything"
        t = frame.time_ns
        clock = time.perf_counter_ns
        for _ in range(200):  # warm-up
            xs.poll(t)
            xs.next_frame()
        poll, naive, whole = [], [], []
        for _ in range(frames):
            a = clock()
            xs.poll(t)
            b = clock()
            if not native:
                naive_poll(xr, xs, t)
            c = clock()
            xs.next_frame()
            d = clock()
            poll.append(b - a)
            naive.append(c - b)
            whole.append(d - c)
        print(f"{label}, pacing off, {frames} frames:")
        p99 = figures("XRSession.poll()", poll)
        if not native:
            figures("pyopenxr wrappers, same calls", naive)
        figures("XRSession.next_frame()", whole)

        xs._pacer = paced  # 90 Hz
        cpu = time.thread_time_ns
        n = round(paced_s * 90)
        spent = []
        for _ in range(n):
            a = cpu()
            xs.next_frame()
            spent.append(cpu() - a)
        spent.sort()
        print(
            f"  paced at 90 Hz, {n} frames: main-thread CPU per next_frame() median {spent[n // 2] / 1000:.0f} us, "
            f"mean {sum(spent) / n / 1000:.0f} us (the pacer's sleep, spin and wake included)"
        )
    return p99


def cold(xr, ctl, frames: int) -> float:
    """The poll after an 11 ms sleep (module doc): native helper vs pyopenxr, interleaved; then the
    runtime's own share. Returns the ratio of the medians."""
    import ctypes

    from headcast.xr.pacing import Pacer
    from headcast.xr.session import XRSession

    clock = time.perf_counter_ns
    ctl.set_throttle(False)
    med = {}
    for native in (True, False):
        with XRSession("headless", native=native) as xs:
            xs._pacer = Pacer(1e9)
            ctl.focus()
            frame = xs.next_frame()
            while not xs.focused:
                frame = xs.next_frame()
            t = frame.time_ns
            if native:
                calls = {
                    "XRSession.poll() (native helper)": lambda: xs.poll(t),
                    "pyopenxr wrappers, same calls": lambda: naive_poll(xr, xs, t),
                }
            else:
                libc = ctypes.CDLL(None)
                labs = libc.labs
                session, sync, sync_p, locate = xs._session_h, xs._xrSyncActions, xs._sync_p, xs._xrLocateSpace
                locs, reads = xs._locate_args, xs._state_reads

                def runtime() -> None:
                    sync(session, sync_p)
                    for space, base, out in locs:
                        locate(space, base, t, out)
                    for get, info, out in reads:
                        get(session, info, out)

                def noops() -> None:
                    for _ in range(1 + len(locs) + len(reads)):
                        labs(0)

                calls = {"14 runtime calls via ctypes": runtime, "14 ctypes no-op calls": noops}
            spent: dict[str, list[int]] = {k: [] for k in calls}
            for _ in range(frames):
                for name, fn in calls.items():
                    time.sleep(COLD_SLEEP_S)
                    a = clock()
                    fn()
                    spent[name].append(clock() - a)
            for name, v in spent.items():
                med[name] = statistics.median(v) / 1000
                figures(name, v)
    ours, anchor = med["XRSession.poll() (native helper)"], med["pyopenxr wrappers, same calls"]
    rt = med["14 runtime calls via ctypes"] - med["14 ctypes no-op calls"]
    ratio = ours / anchor
    print(
        f"  cold: native poll {ours:.1f} us vs pyopenxr {anchor:.1f} us: {ratio:.3f}x; the runtime's own cold cost "
        f"~{rt:.1f} us (runtime calls minus no-op calls), so ours ~{max(0.0, ours - rt):.1f} us; "
        f"at {TARGET_COLD_RATIO}x the whole poll may take {TARGET_COLD_RATIO * anchor:.1f} us"
    )
    return ratio


def main() -> int:
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    paced_s = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    cold_frames = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    from headcast.xr.mockrt import MockControl, ensure_runtime, motion_path

    os.environ["XR_RUNTIME_JSON"] = str(ensure_runtime())
    os.environ["HEADCAST_MOCK_MOTION"] = str(motion_path("look_around"))  # the app bench's motion
    import xr

    ctl = MockControl()
    print(f"load average {open('/proc/loadavg').read().split()[:3]}")
    load0 = float(open("/proc/loadavg").read().split()[0])
    p99 = measure(xr, ctl, True, frames, paced_s)
    measure(xr, ctl, False, frames, paced_s)
    print(
        f"cold (after a {COLD_SLEEP_S * 1000:g} ms sleep, as the app calls it), {cold_frames} frames each, interleaved:"
    )
    ratio = cold(xr, ctl, cold_frames)
    print(f"load average {open('/proc/loadavg').read().split()[:3]}")
    verdict = "meets" if p99 < TARGET_P99_MS else "MISSES"
    print(
        f"target: poll p99 < {TARGET_P99_MS} ms ({TARGET_P99_MS / FRAME_90HZ_MS:.1%} of a 90 Hz frame) "
        f"on the native path: {verdict} it ({p99 * 1000:.1f} us)"
    )
    from _report import report  # tests/benchmarks/ is sys.path[0] when run as a script

    loads = (load0, float(open("/proc/loadavg").read().split()[0]))
    report("xr_poll", "XR poll p99, native helper, warm", "<", TARGET_P99_MS, round(p99, 4), " ms", load=loads)
    report(
        "xr_poll",
        "XR poll cold (after 11 ms) vs raw pyopenxr",
        "<=",
        TARGET_COLD_RATIO,
        round(ratio, 3),
        "x",
        load=loads,
        note="ratio of medians, interleaved; the runtime's own cold share is printed above",
    )
    print(
        f"target: cold poll <= {TARGET_COLD_RATIO}x pyopenxr's: {'meets' if ratio <= TARGET_COLD_RATIO else 'MISSES'} "
        f"it ({ratio:.3f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
