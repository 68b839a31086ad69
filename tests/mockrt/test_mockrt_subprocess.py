"""Whole sessions in a subprocess: OpenGL under Xvfb, the Khronos core-validation layer, the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

SCENARIO = Path(__file__).with_name("scenario.py")
LAYER = "XR_APILAYER_LUNARG_core_validation"


def run_scenario(mode: str, manifest: Path, display: str | None = None, **extra: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_MOCK_", "XR_"))}
    env.update(XR_RUNTIME_JSON=str(manifest), HEADCAST_MOCK_THROTTLE="0", PYGLFW_LIBRARY_VARIANT="x11", **extra)
    if display:
        env["DISPLAY"] = display
    proc = subprocess.run(
        [sys.executable, str(SCENARIO), mode], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    # The report is the scenario's last JSON line: Debian 13's validation layer (1.1.47) prints its
    # own "Core Validation Layer will be destroyed" on stdout after it, at xrDestroyInstance.
    reports = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert reports, output
    report = json.loads(reports[-1])
    return report, output


STATES = [
    "IDLE",
    "READY",
    "EVENT_DATA_INTERACTION_PROFILE_CHANGED",
    "SYNCHRONIZED",
    "VISIBLE",
    "FOCUSED",
    "VISIBLE",
    "SYNCHRONIZED",
    "STOPPING",
    "IDLE",
    "EXITING",
]


@pytest.mark.display
def test_gl_session_renders_into_real_swapchain_textures(runtime_manifest, xvfb_display):
    report, _ = run_scenario("gl", runtime_manifest, xvfb_display)
    assert report["requirements_enforced"]  # create_session before xrGetOpenGLGraphicsRequirementsKHR fails
    assert report["requirements_rc"] == 0
    assert report["textures"] == [True, True, True]  # glIsTexture in the app's own context
    assert report["texture_size"] == [256, 96]
    assert report["fbo_complete"]
    assert report["pixels"] == [[0, 0, 255, 255]] * 3  # frame 0 is not rendered: not yet VISIBLE
    # the runtime's own readback of the submitted eye rectangles (frame 2): left red, right blue
    assert report["captures"] == [[2, 128, 96, [[255, 0, 0, 255]]], [2, 128, 96, [[0, 0, 255, 255]]]]
    assert report["focused_after_first_frame"]
    assert report["states"] == STATES
    assert report["controls"] == [0.5, [0.0, 1.0], True]
    assert report["aim_flags"] == 15 and report["haptic_count"] == 1 and report["frames_ended"] == 4


PERIOD = 11_111_111


@pytest.mark.display
def test_gl_frame_loop_rules_and_pacing(runtime_manifest, xvfb_display):
    r, _ = run_scenario("frames", runtime_manifest, xvfb_display)
    assert r["begin_before_wait"] == "CallOrderInvalidError"
    assert r["end_before_begin"] == "CallOrderInvalidError"
    assert r["begin_again"] == "FrameDiscarded"  # begin again without end: the first frame is dropped
    assert r["additive"] == "EnvironmentBlendModeUnsupportedError"
    assert r["ended"] == [0, 1] and r["frame_index"] == 1
    display, (before, after) = r["display"], r["clock"]
    assert all(b > a for a, b in zip(display, display[1:]))  # CLOCK_MONOTONIC ns, increasing
    assert before < display[0] <= after + PERIOD  # one 90 Hz period ahead at most
    assert r["strict_other_time"] == "TimeInvalidError" and r["strict_predicted_time"] is None
    # paced at 90 Hz: bounds no load can break (a late app is given the current slot at once,
    # never an earlier one); the rate itself is measured by tests/benchmarks/bench_mockrt_pacing.py
    begin = r["begin_time"]
    for woke, shown, period in r["paced"][1:]:  # the first follows the unpaced frames' display times
        assert period == PERIOD
        k = round((shown - begin) * 90 / 1e9)
        assert shown == begin + round(k * 1e9 / 90)  # on the display's 90 Hz grid from begin
        assert woke >= shown - PERIOD - 1  # never woken before its frame's slot
    shown = [s for _, s, _ in r["paced"][1:]]
    assert all(b - a >= PERIOD for a, b in zip(shown, shown[1:]))  # one frame per slot at most
    assert r["states"] == [
        "IDLE",
        "READY",
        "SYNCHRONIZED",
        "VISIBLE",
        "FOCUSED",
        "VISIBLE",
        "SYNCHRONIZED",
        "STOPPING",
        "IDLE",
        "EXITING",
    ]


@pytest.mark.display
def test_core_validation_layer_runs_clean(runtime_manifest, xvfb_display, tmp_path):
    log = tmp_path / "mock.jsonl"
    for mode in ("headless", "gl"):
        report, output = run_scenario(
            mode, runtime_manifest, xvfb_display, XR_ENABLE_API_LAYERS=LAYER, HEADCAST_MOCK_LOG=str(log)
        )
        assert "Core Validation Layer is initialized" in output, output
        assert "VALID_ERROR" not in output and "VALID_WARNING" not in output, output
        assert report["states"] == STATES
    # the same check sees a real report: an invalid enum from the app
    report, output = run_scenario("probe", runtime_manifest, XR_ENABLE_API_LAYERS=LAYER)
    assert report["refused"] and "VALID_WARNING" in output
    events = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("instance") == 2 and kinds.count("end_frame") == 4  # the headless session ends none
    assert {"event": "haptic", "hand": "/user/hand/right"}.items() <= next(
        e for e in events if e["event"] == "haptic"
    ).items()
    assert [e["state"] for e in events if e["event"] == "state"][:6] == [
        "IDLE",
        "READY",
        "SYNCHRONIZED",
        "VISIBLE",
        "FOCUSED",
        "VISIBLE",
    ]
