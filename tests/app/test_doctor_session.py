"""`headcast doctor` opens the session `headcast run` would and runs frames of it: it passes on the
mock runtime in each behaviour profile where `run` works, and fails (naming the same call) where
`run` fails."""

from __future__ import annotations

import json
import subprocess

import pytest

import support

RUNTIME_FAILURE = -2


def headcast(*args: str, **extra: str) -> subprocess.CompletedProcess:
    return support.headcast(*args, timeout=90, PYGLFW_LIBRARY_VARIANT="x11", **extra)


CASES = {  # name: (environment, display, run works, what doctor says)
    "monado": (
        {},
        False,
        True,
        "session: headless (XR_MND_headless), paced by headcast at 90 Hz; frames "
        "located at the runtime's now: XR_KHR_convert_timespec_time on CLOCK_MONOTONIC",
    ),
    "strict": ({"HEADCAST_MOCK_PROFILE_RUNTIME": "strict"}, False, True, "session: headless"),
    "steamvr": (
        {"HEADCAST_MOCK_PROFILE_RUNTIME": "steamvr"},
        True,
        True,
        "session: OpenGL (XR_KHR_opengl_enable), paced by the runtime's xrWaitFrame; frames located at "
        "xrWaitFrame's predicted display time",
    ),
    "steamvr without a display": (
        {"HEADCAST_MOCK_PROFILE_RUNTIME": "steamvr"},
        False,
        False,
        "`headcast run` cannot open a session: the OpenXR runtime needs an OpenGL session and no display is available",
    ),
    "steamvr-windows": (
        {"HEADCAST_MOCK_PROFILE_RUNTIME": "steamvr-windows"},
        False,
        True,
        "session: headless (XR_MND_headless), paced by headcast at 90 Hz; frames located at the "
        "runtime's now: XR_KHR_win32_convert_performance_counter_time",
    ),
    "meta-pc": ({"HEADCAST_MOCK_PROFILE_RUNTIME": "meta-pc"}, True, True, "session: OpenGL (XR_KHR_opengl_enable)"),
    "failing locate": (
        {"HEADCAST_MOCK_FAIL": f"xrLocateSpace:{RUNTIME_FAILURE}:50"},
        False,
        False,
        "`headcast run` would fail here: locating the tracked devices: xrLocateSpace returned XR_ERROR_RUNTIME_FAILURE",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_doctor_passes_exactly_where_run_works(request, mock_manifest, case):
    extra, display, works, says = CASES[case]
    if display:
        extra = {**extra, "DISPLAY": request.getfixturevalue("xvfb_display")}
    doctor = headcast("doctor", "--json", XR_RUNTIME_JSON=str(mock_manifest), **extra)
    every = json.loads(doctor.stdout)["findings"]
    findings = [f for f in every if f["area"] == "openxr"]
    # no display is no problem where run works without one (headless); only the mirror is off
    assert all(f["ok"] for f in every if f["area"] == "display"), every
    run = headcast("run", "--mock", "look_around", "--no-mirror", "--duration", "1", **extra)
    assert (run.returncode == 0) is works, run.stderr
    assert all(f["ok"] for f in findings) is works, findings
    assert any(f["what"].startswith(says) for f in findings), findings
    if works:
        frames = next(f["what"] for f in findings if " frames at " in f["what"])
        assert (
            frames.startswith("30 frames at ") and float(frames.split()[3]) > 30
        )  # 90 Hz paced (the bench measures it)
        assert "head pose valid in 30 of 30 frames" in [f["what"] for f in findings]
        assert "reference spaces: VIEW, LOCAL, STAGE; tracking in STAGE" in [f["what"] for f in findings]
    else:
        [error] = [line for line in run.stderr.splitlines() if line.startswith("headcast: error:")]
        failed = next(f for f in findings if not f["ok"])
        assert failed["fix"]
        # the same failure: run's error line carries the words doctor reports
        assert says.split(": ", 1)[1][:60] in error
    if case == "steamvr":
        assert {
            "area": "openxr",
            "ok": True,
            "what": "fallback: the OpenXR runtime offers no headless session "
            "(XR_MND_headless): using an OpenGL session",
            "fix": "",
            "note": False,
        } in findings
