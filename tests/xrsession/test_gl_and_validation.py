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


VALIDATED = r"""
from headcast.xr.mockrt import MockControl
from headcast.xr.errors import SessionEnded
from headcast.xr.session import XRSession

ctl = MockControl()
with XRSession() as xs:
    for _ in range(5):
        xs.next_frame()
    ctl.unfocus(); xs.next_frame(); ctl.focus(); xs.next_frame()
    ctl.set_profile("/interaction_profiles/valve/index_controller"); xs.next_frame()
    xs.request_exit()
    try:
        for _ in range(100):
            xs.next_frame()
    except SessionEnded:
        print("ended cleanly")
with XRSession() as xs:        # and a session closed while running
    xs.next_frame()
"""


def test_core_validation_layer_is_clean(run_script):
    proc = run_script(VALIDATED, {"XR_ENABLE_API_LAYERS": "XR_APILAYER_LUNARG_core_validation"})
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Core Validation Layer is initialized" in output, "the validation layer did not run"
    assert "ended cleanly" in proc.stdout
    complaints = [line for line in output.splitlines() if "VALID_ERROR" in line or "VALID_WARNING" in line]
    assert complaints == []
