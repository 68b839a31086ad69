"""OpenGL sessions under Xvfb, and a run with the Khronos core-validation layer.

Each runs in a fresh interpreter: glfw, GL and the loader's layer selection are process state.
"""

from __future__ import annotations

import json

import pytest

from headcast.xr.trace import frame_row, read_trace, replay

GL_SESSION = r"""
import ctypes, json, sys, glfw
from headcast.xr.mockrt import MockControl
from headcast.xr.session import XRSession
from headcast.xr.trace import write_trace

ctl = MockControl()
out = {}
addr = lambda p: ctypes.cast(p, ctypes.c_void_p).value
with XRSession("auto") as xs:                 # the mock offers headless: auto picks it
    out["auto_headless"] = xs.info.headless
with XRSession("gl") as xs:                   # a hidden window of the session's own
    fs = [xs.next_frame() for _ in range(4)]
    write_trace(sys.argv[1], fs)
    out["hidden"] = dict(headless=xs.info.headless, ext=list(xs.info.extensions),
                         focused=[f.focused for f in fs], head=[f.head.valid for f in fs],
                         right=[f.right_aim.valid for f in fs], ended=ctl.frames_ended)
assert glfw.init()
glfw.window_hint(glfw.VISIBLE, glfw.FALSE)
mirror = glfw.create_window(320, 240, "mirror", None, None)
before = ctl.frames_ended
with XRSession("gl", window=mirror) as xs:    # the app's mirror window's context
    fs = [xs.next_frame() for _ in range(3)]
    out["mirror"] = dict(focused=fs[-1].focused, head=fs[-1].head.valid, ended=ctl.frames_ended - before,
                         current=addr(glfw.get_current_context()) == addr(mirror))
out["mirror_alive"] = not glfw.window_should_close(mirror) and glfw.get_window_size(mirror) == (320, 240)
glfw.destroy_window(mirror)
print(json.dumps(out))
"""


@pytest.mark.display
def test_opengl_session_under_xvfb(run_script, xvfb_display, tmp_path, ctl):
    trace = tmp_path / "gl.trace"
    proc = run_script(GL_SESSION, {"DISPLAY": xvfb_display, "PYGLFW_LIBRARY_VARIANT": "x11"}, args=[str(trace)])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["auto_headless"] is True
    hidden = out["hidden"]
    assert hidden["headless"] is False and hidden["ext"] == ["XR_KHR_opengl_enable"]
    # A GL session is focused only after its first xrEndFrame; hands need focus, the head does not.
    assert hidden["focused"] == [False, True, True, True]
    assert hidden["head"] == [True] * 4 and hidden["right"] == [False, True, True, True]
    assert hidden["ended"] == 4
    assert out["mirror"] == {"focused": True, "head": True, "ended": 3, "current": True}
    assert out["mirror_alive"] is True  # the caller's window survives the session

    # The GL recording (unfocused first frame, then focused) replays through a headless session.
    recorded = read_trace(trace).frames
    replayed = list(replay(trace))
    assert [frame_row(f)[2:] for f in replayed] == [frame_row(f)[2:] for f in recorded]
    assert [f.focused for f in replayed] == [False, True, True, True]


NO_DISPLAY = r"""
from headcast.xr.errors import GraphicsError
from headcast.xr.session import XRSession
try:
    XRSession("gl")
except GraphicsError as exc:
    print("GraphicsError:", exc)
"""


@pytest.mark.parametrize("reporting", ["warn", "raise"])
def test_opengl_session_without_display_is_a_clear_error(run_script, reporting):
    # glfw signals failure by return value ("warn") or by exception ("raise"): both end typed.
    code = f"import glfw; glfw.ERROR_REPORTING = {reporting!r}\n" + NO_DISPLAY
    proc = run_script(code, {"DISPLAY": "", "WAYLAND_DISPLAY": "", "PYGLFW_LIBRARY_VARIANT": "x11"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("GraphicsError: ") and "DISPLAY" in proc.stdout
    assert "Traceback" not in proc.stderr


# Debian's Khronos core validation layer (package openxr-layer-corevalidation). `import xr` appends
# pyopenxr's own layer folder (a core validation layer of the same name) to XR_API_LAYER_PATH, and
# the loader would stack both: each process sets the variable back to Debian's folder alone after
# that import, and the dynamic linker's log (LD_DEBUG=files) proves whose library was loaded.
DEBIAN_LAYERS = "/usr/share/openxr/1/api_layers/explicit.d"
DEBIAN_LAYER_LIBRARY = "/usr/lib/x86_64-linux-gnu/openxr/1/api_layers/libXrApiLayer_core_validation.so"
ONLY_DEBIAN_LAYER = f"import os, xr; os.environ['XR_API_LAYER_PATH'] = {DEBIAN_LAYERS!r}\n"

VALIDATED = (
    ONLY_DEBIAN_LAYER
    + r"""
import sys
from headcast.xr.mockrt import MockControl
from headcast.xr.errors import SessionEnded
from headcast.xr.session import XRSession

ctl = MockControl()
mode = sys.argv[1]
for native in (True, False):
    with XRSession(mode, native=native) as xs:
        assert xs.native is native and xs.info.headless is (mode == "headless")
        for _ in range(5):
            xs.next_frame()
        ctl.focus(); xs.next_frame(); ctl.unfocus(); xs.next_frame(); ctl.focus(); xs.next_frame()
        ctl.set_profile("/interaction_profiles/valve/index_controller"); xs.next_frame()
        xs.poll(xs.next_frame().time_ns)
        xs.request_exit()
        try:
            for _ in range(100):
                xs.next_frame()
        except SessionEnded:
            print("ended cleanly")
    with XRSession(mode, native=native) as xs:   # a session lost
        xs.next_frame()
        ctl.lose_session()
        try:
            for _ in range(100):
                xs.next_frame()
        except SessionEnded as e:
            print("lost:", e.lost)
    with XRSession(mode, native=native) as xs:   # and one closed while running
        xs.next_frame()
"""
)


def validation_complaints(output: str) -> list[str]:
    assert "Core Validation output type: text" in output, "the validation layer did not run"
    return [line for line in output.splitlines() if "VALID_ERROR" in line or "VALID_WARNING" in line]


def assert_debian_layer_loaded(ld_log_dir) -> None:
    logs = "".join(p.read_text(errors="replace") for p in ld_log_dir.iterdir())
    loaded = {
        line.split("file=", 1)[1].split()[0]
        for line in logs.splitlines()
        if "file=" in line and "XrApiLayer_core_validation" in line
    }
    assert loaded == {DEBIAN_LAYER_LIBRARY}, loaded  # Debian's, and not pyopenxr's copy


def layer_env(tmp_path, **extra: str) -> dict[str, str]:
    ld = tmp_path / "ld"
    ld.mkdir()
    return {
        "XR_ENABLE_API_LAYERS": "XR_APILAYER_LUNARG_core_validation",
        "LD_DEBUG": "files",
        "LD_DEBUG_OUTPUT": str(ld / "log"),
        **extra,
    }


@pytest.mark.parametrize("mode", ["headless", pytest.param("gl", marks=pytest.mark.display)])
def test_debian_core_validation_layer_is_clean(request, run_script, tmp_path, mode):
    """Every call of both frame paths, headless and OpenGL: focus changes, a profile change, an exit,
    a loss, a close while running — 0 errors, 0 warnings from the Khronos layer."""
    extra = {}
    if mode == "gl":
        extra = {"DISPLAY": request.getfixturevalue("xvfb_display"), "PYGLFW_LIBRARY_VARIANT": "x11"}
    proc = run_script(VALIDATED, layer_env(tmp_path, **extra), args=[mode])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert proc.stdout.count("ended cleanly") == 2 and proc.stdout.count("lost: True") == 2, output[-3000:]
    assert validation_complaints(output) == []
    assert_debian_layer_loaded(tmp_path / "ld")


RUN_CLI = ONLY_DEBIAN_LAYER + "import sys\nfrom headcast.app.commands.cli import main\nsys.exit(main(sys.argv[1:]))\n"


@pytest.mark.parametrize("session", ["headless", pytest.param("gl", marks=pytest.mark.display)])
def test_headcast_run_under_the_debian_validation_layer(request, run_script, tmp_path, session):
    """`headcast run --mock` (its mock runtime, its native frame helper), headless and OpenGL."""
    extra = {"HEADCAST_XR_SESSION": session}
    if session == "gl":
        extra.update(DISPLAY=request.getfixturevalue("xvfb_display"), PYGLFW_LIBRARY_VARIANT="x11")
    proc = run_script(
        RUN_CLI, layer_env(tmp_path, **extra), args=["run", "--mock", "tour", "--no-mirror", "--duration", "3"]
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert f"{'headless' if session == 'headless' else 'OpenGL'} session" in proc.stdout
    assert "stopped: ran for 3 s" in proc.stdout
    assert validation_complaints(output) == []
    assert_debian_layer_loaded(tmp_path / "ld")


BAD_CALL = (
    ONLY_DEBIAN_LAYER
    + r"""
import xr
from headcast.xr.errors import XRError
from headcast.xr.session import XRSession
with XRSession() as xs:
    xs.next_frame()
    xs._sync_info._type = int(xr.StructureType.FRAME_WAIT_INFO)  # a wrong structure type
    try:
        xs.next_frame()
    except XRError as e:
        print("failed:", e)
"""
)


def test_the_debian_layer_reports_a_bad_call(run_script, tmp_path):
    """The check above can fail: a call with a wrong structure type is a VALID_ERROR line."""
    proc = run_script(BAD_CALL, layer_env(tmp_path))
    output = proc.stdout + proc.stderr
    assert "failed: reading the controllers: xrSyncActions returned XR_ERROR_VALIDATION_FAILURE" in proc.stdout
    assert any("VUID-XrActionsSyncInfo-type-type" in line for line in validation_complaints(output)), output
    assert_debian_layer_loaded(tmp_path / "ld")
