"""`headcast run` when the OpenXR runtime fails or loses the session mid-run: one `headcast: error:`
line naming the OpenXR call and its result, the summary (--json too), every server disconnected,
exit 1 — and a runtime refusing a headless session gets an OpenGL one with a one-line note.

Failures are the mock runtime's own (HEADCAST_MOCK_FAIL, a `!loss` cue); the server is a real
ioquake3 dedicated server (Debian's openarena-server) started here on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support import REPO, cli_env, headcast

RUNTIME_FAILURE = -2  # XR_ERROR_RUNTIME_FAILURE: an allowed result of every OpenXR function


def errors(r: subprocess.CompletedProcess) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("headcast: error:")]


@pytest.mark.parametrize(
    "function, during",
    [
        ("xrSyncActions", "reading the controllers"),
        ("xrLocateSpace", "locating the tracked devices"),
        ("xrPollEvent", "reading runtime events"),
    ],
)
def test_a_runtime_failure_mid_run_is_one_error_line_and_the_summary(function, during):
    r = headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--json",
        "--duration",
        "20",
        HEADCAST_MOCK_FAIL=f"{function}:{RUNTIME_FAILURE}:20",
    )
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    expected = (
        f"headcast: error: OpenXR: {during}: {function} returned XR_ERROR_RUNTIME_FAILURE: "
        "the OpenXR runtime reported an internal failure: restart it and retry"
    )
    assert errors(r) == [expected]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["exit_code"] == 1
    assert summary["error"] == expected.removeprefix("headcast: error: ")
    # 20 calls went through first: 20 frames of xrSyncActions, 4 of xrLocateSpace (5 a frame), fewer of
    # xrPollEvent (one or more a frame); then the run stopped at once
    assert summary["stopped"].startswith("XR runtime failure: ") and 2 <= summary["frames"] <= 21
    assert [s["state"] for s in summary["sinks"]] == ["offline"] * 3  # no servers: nothing to disconnect


def test_a_lost_session_is_an_error_naming_the_loss(tmp_path):
    script = tmp_path / "loss.motion"
    script.write_text("rate 90\n0.3 !loss\n")
    r = headcast("run", "--mock", "look_around", "--no-mirror", "--duration", "20", HEADCAST_MOCK_SCRIPT=str(script))
    assert r.returncode == 1, r.stderr
    assert errors(r) == [
        "headcast: error: OpenXR: the XR session was lost: xrPollEvent reported "
        "XR_SESSION_STATE_LOSS_PENDING (headset disconnected or runtime reset)"
    ]
    assert "stopped: XR session ended: the XR session was lost" in r.stdout  # the summary, text form
    assert "Traceback" not in r.stderr


def test_a_refused_headless_session_without_a_display_says_both():
    """xrBeginSession fails for the headless session; the OpenGL one it falls back to has no display."""
    r = headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--duration",
        "1",
        HEADCAST_MOCK_FAIL=f"xrBeginSession:{RUNTIME_FAILURE}:0:1",
    )
    assert r.returncode == 1
    [line] = r.stderr.splitlines()  # one line: no traceback, no raw glfw warning
    assert line.startswith("headcast: error: ") and "no display is available for a GL context" in line
    assert (
        "after the OpenXR runtime refused a headless session (starting the XR session: xrBeginSession "
        "returned XR_ERROR_RUNTIME_FAILURE"
    ) in line


@pytest.mark.display
@pytest.mark.parametrize(
    "case, extra, why",
    [
        (
            "steamvr",
            {"HEADCAST_MOCK_PROFILE_RUNTIME": "steamvr"},
            "the OpenXR runtime offers no headless session (XR_MND_headless): using an OpenGL session",
        ),
        (
            "create fails",
            {"HEADCAST_MOCK_FAIL": f"xrCreateSession:{RUNTIME_FAILURE}:0:1"},
            "the OpenXR runtime refused a headless session (creating the XR session: xrCreateSession returned "
            "XR_ERROR_RUNTIME_FAILURE: the OpenXR runtime reported an internal failure: restart it and retry): "
            "using an OpenGL session",
        ),
        (
            "begin fails",
            {"HEADCAST_MOCK_FAIL": f"xrBeginSession:{RUNTIME_FAILURE}:0:1"},
            "the OpenXR runtime refused a headless session (starting the XR session: xrBeginSession returned "
            "XR_ERROR_RUNTIME_FAILURE: the OpenXR runtime reported an internal failure: restart it and retry): "
            "using an OpenGL session",
        ),
    ],
)
def test_no_headless_session_falls_back_to_opengl_with_a_note(xvfb_display, case, extra, why):
    r = headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--json",
        "--duration",
        "1",
        DISPLAY=xvfb_display,
        PYGLFW_LIBRARY_VARIANT="x11",
        **extra,
    )
    assert r.returncode == 0, r.stderr
    assert [line for line in r.stderr.splitlines() if line.startswith("headcast:")] == [f"headcast: {why}"]
    progress = [json.loads(line)["message"] for line in r.stdout.splitlines() if '"progress"' in line]
    assert any(", OpenGL session, STAGE space" in m for m in progress), progress
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["frames"] >= 45 and summary["tracking_lost_frames"] == 0  # 90 Hz from xrWaitFrame


@pytest.mark.live
def test_a_runtime_failure_disconnects_from_the_server(q3_server):
    """In game on a real Quake 3 server when the runtime fails: the server sees our disconnect at once
    (not a timeout: sv_timeout is 200 s), the summary says we had joined, exit 1."""
    host, port = q3_server.address
    mark = q3_server.log_offset()
    # xrSyncActions fails at the 900th call (10 s at 90 Hz): the join takes a second or two, more on a busy machine.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--q3",
            f"{host}:{port}",
            "--name",
            "xrfail",
        ],
        cwd=REPO,
        env=cli_env(HEADCAST_MOCK_FAIL=f"xrSyncActions:{RUNTIME_FAILURE}:900"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        num = q3_server.wait_for_log(r"^ClientUserinfoChanged: (\d+) n\\xrfail\\", 20, mark).group(1)
        q3_server.wait_for_log(rf"^ClientBegin: {num}$", 20, mark)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    assert [line for line in err.splitlines() if line.startswith("headcast: error:")] == [
        "headcast: error: OpenXR: reading the controllers: xrSyncActions returned XR_ERROR_RUNTIME_FAILURE: "
        "the OpenXR runtime reported an internal failure: restart it and retry"
    ]
    summary = json.loads(out.splitlines()[-1])
    q3 = next(s for s in summary["sinks"] if s["name"] == "q3")
    assert q3["state"] == "disconnected" and q3["joined_at"] is not None and q3["sent"] > 100
    assert summary["exit_code"] == 1 and summary["error"].startswith("OpenXR: reading the controllers")
    q3_server.wait_for_log(rf"^ClientDisconnect: {num}$", 3, mark)


# A headless session the runtime keeps READY (Monado 21 does; the mock's default profile) tracks the
# head but gives no controller input: run says so once, with the way out; a focused headless session
# (the mock with HEADCAST_MOCK_HEADLESS_FOCUS=1, --mock's default) does not.
NOTE = (
    "headcast: the runtime keeps this headless session unfocused (READY): the head is tracked, "
    "the controllers give no input"
)


@pytest.mark.parametrize("focus, noted", [("0", True), ("1", False)])
def test_an_unfocused_headless_session_is_said_once(focus, noted):
    r = headcast(
        "run", "--mock", "look_around", "--no-mirror", "--json", "--duration", "4.5", HEADCAST_MOCK_HEADLESS_FOCUS=focus
    )
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith(NOTE)]
    assert len(notes) == (1 if noted else 0), r.stderr
    if noted:
        assert "HEADCAST_XR_SESSION=gl" in notes[0]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["frames"] > 300  # the head was tracked all along


def test_an_unknown_mock_runtime_profile_is_one_usage_line():
    r = headcast(
        "run", "--mock", "look_around", "--no-mirror", "--duration", "1", HEADCAST_MOCK_PROFILE_RUNTIME="bogus"
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "headcast: error: HEADCAST_MOCK_PROFILE_RUNTIME='bogus': the mock runtime imitates monado, steamvr, "
        "strict, monado25, steamvr-windows, meta-pc (default monado)"
    ]
