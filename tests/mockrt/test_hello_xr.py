"""Khronos' hello_xr (Debian's libopenxr-utils, built against the system OpenXR loader) runs
against the mock runtime under Xvfb with OpenGL, under the Khronos core validation layer
(Debian's openxr-layer-corevalidation): it reaches FOCUSED, renders frames and validates clean.

hello_xr's OpenGL window code needs the XFree86-VidModeExtension, which Xvfb lacks: an LD_PRELOAD
shim of our own (xf86vidmode_shim.c) answers its three calls. hello_xr runs until told to quit:
the Stage run ends by the runtime (the mock's !exit command 2 s after begin: STOPPING, IDLE,
EXITING as on a headset), the View run by the app (stdin closes: hello_xr's "press any key")
once the mock has logged 90 rendered frames.

hello_xr reads that key in a detached thread blocked in getchar() on stdin. On Debian 13 (glibc
2.41) its exit() then waits for stdin's stdio lock, which that thread holds, for as long as stdin
stays open: after the runtime's EXITING it destroys its session and instance and returns from
main, but the process does not end (measured on hello_xr 1.1.47: the main thread in a futex
wait, the key thread in read(0); it exits with 0 the moment stdin closes). Debian 12 (glibc 2.36)
does not wait there. So the Stage run waits for the instance to be destroyed — the app's answer
to EXITING, which is what it checks — and only then closes stdin so the process can finish.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import wait_for

mockrt_build = importlib.import_module("headcast.xr.mockrt.build")  # the package re-exports build()

HERE = Path(__file__).resolve().parent
SHIM_SOURCE = HERE / "xf86vidmode_shim.c"
LAYER = "XR_APILAYER_LUNARG_core_validation"
TIMEOUT = 60  # s, for either run to finish on a loaded machine


@pytest.fixture(scope="module")
def hello_xr() -> str:
    path = shutil.which("hello_xr")
    if path is None:
        pytest.fail("hello_xr is not installed: run scripts/setup.sh (Debian package libopenxr-utils)")
    if not Path("/usr/share/openxr/1/api_layers/explicit.d").is_dir():
        pytest.fail("the core validation layer is not installed: run scripts/setup.sh (openxr-layer-corevalidation)")
    return path


@pytest.fixture(scope="module")
def vidmode_shim() -> Path:
    """The shim, built with gcc into build/hello_xr/ when missing or older than its source."""
    library = mockrt_build.default_build_dir("hello_xr") / "libxf86vidmode_shim.so"
    if mockrt_build.stale(library, (SHIM_SOURCE,)):
        mockrt_build.compile_library(library, lambda msg: None, source=SHIM_SOURCE, libs=("-ldl",))
    return library


def start(hello_xr: str, space: str, manifest: Path, display: str, shim: Path, tmp_path: Path, **extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_MOCK_", "XR_"))}
    env.update(
        DISPLAY=display,
        LD_PRELOAD=str(shim),
        XR_RUNTIME_JSON=str(manifest),
        XR_ENABLE_API_LAYERS=LAYER,
        XR_LOADER_DEBUG="error",
        HEADCAST_MOCK_LOG=str(tmp_path / "mock.jsonl"),
        **extra,
    )
    out = open(tmp_path / "hello_xr.log", "w")
    # stdin stays an open pipe: at EOF hello_xr takes it as the key press that quits
    proc = subprocess.Popen(
        [hello_xr, "-g", "OpenGL", "-s", space, "-v"],
        stdin=subprocess.PIPE,
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
    )
    return proc, out


def mock_log(tmp_path: Path) -> list[dict]:
    """The mock runtime's log so far: its complete lines (the runtime may be writing the last one
    while a poll reads the file; that line is read whole on the next poll)."""
    file = tmp_path / "mock.jsonl"
    if not file.exists():
        return []
    text = file.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def rendered(events: list[dict]) -> int:
    """Frames ended with a layer (hello_xr's projection layer of both eyes)."""
    return sum(1 for e in events if e["event"] == "end_frame" and e["layers"] >= 1)


def finish(proc: subprocess.Popen, out, tmp_path: Path) -> tuple[str, list[dict]]:
    try:
        rc = proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"hello_xr did not finish within {TIMEOUT} s:\n{(tmp_path / 'hello_xr.log').read_text()[-3000:]}")
    finally:
        proc.stdin.close()
        out.close()
    log = (tmp_path / "hello_xr.log").read_text()
    assert rc == 0, log[-3000:]
    assert "Core Validation output type" in log  # the layer is loaded...
    assert "VALID_ERROR" not in log and "VALID_WARNING" not in log, log  # ...and found nothing
    assert "XR_SESSION_STATE_VISIBLE->XR_SESSION_STATE_FOCUSED" in log
    return log, mock_log(tmp_path)


@pytest.mark.display
def test_hello_xr_stage_until_the_runtime_asks_it_to_exit(
    hello_xr, runtime_manifest, xvfb_display, vidmode_shim, tmp_path
):
    script = tmp_path / "exit.motion"
    script.write_text("2 !exit\n")  # 2 s after xrBeginSession
    proc, out = start(
        hello_xr, "Stage", runtime_manifest, xvfb_display, vidmode_shim, tmp_path, HEADCAST_MOCK_SCRIPT=str(script)
    )
    try:
        # The run ends by the runtime: hello_xr destroys its instance after EXITING with stdin still
        # open (no key pressed). Only then is stdin closed, for glibc 2.41's exit() (docstring).
        wait_for(
            lambda: proc.poll() is not None or any(e["event"] == "instance_destroyed" for e in mock_log(tmp_path)),
            TIMEOUT,
            "hello_xr to destroy its instance after the runtime's EXITING",
        )
        ended_by_runtime = any(e["event"] == "instance_destroyed" for e in mock_log(tmp_path))
    finally:
        proc.stdin.close()
    log, events = finish(proc, out, tmp_path)
    assert ended_by_runtime, "hello_xr exited without destroying its instance"
    assert "XR_SESSION_STATE_IDLE->XR_SESSION_STATE_EXITING" in log
    states = [e["state"] for e in events if e["event"] == "state"]
    assert states == [
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
    assert rendered(events) >= 10  # 2 s at up to 90 Hz; llvmpipe on a loaded machine renders fewer
    assert [e["event"] for e in events][-2:] == ["session_destroyed", "instance_destroyed"]


@pytest.mark.display
@pytest.mark.parametrize("profile", ["monado", "strict"])  # strict: each frame shown at its predicted time
def test_hello_xr_view_renders_until_it_quits(
    hello_xr, runtime_manifest, xvfb_display, vidmode_shim, tmp_path, profile
):
    proc, out = start(
        hello_xr, "View", runtime_manifest, xvfb_display, vidmode_shim, tmp_path, HEADCAST_MOCK_PROFILE_RUNTIME=profile
    )
    try:
        wait_for(
            lambda: rendered(mock_log(tmp_path)) >= 90 or proc.poll() is not None,
            TIMEOUT,
            "hello_xr to render 90 frames",
        )
    finally:
        proc.stdin.close()  # hello_xr's "press any key to shutdown"
    log, events = finish(proc, out, tmp_path)
    assert rendered(events) >= 90
    states = [e["state"] for e in events if e["event"] == "state"]
    assert states[:5] == ["IDLE", "READY", "SYNCHRONIZED", "VISIBLE", "FOCUSED"]
    assert [e["event"] for e in events][-2:] == ["session_destroyed", "instance_destroyed"]
