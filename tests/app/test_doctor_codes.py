"""`headcast doctor` on a machine without a headset, and with a stale DISPLAY (issue 25 item 9).

Before: exit 1 ("1 problem(s)") on every machine without a headset, as if something were broken,
and with DISPLAY naming no X server a raw `GLFWError: (65550) b'X11: Failed to open display :N'`
warning line on stderr. Now no runtime (or no headset) is a note: exit 0, said with what to use
instead (--mock, the demo), `"headset": false` in --json; a real fault (a stale DISPLAY, a runtime
manifest that does not exist) is a problem with its fix and exit 1, and no raw library line.
The "no runtime" case is made real on any machine: XDG_CONFIG_HOME and XDG_CONFIG_DIRS point at
empty folders, so the real OpenXR loader finds no active_runtime.json (a Debian 13 machine with
Monado's package has one in /etc/xdg/openxr/1, and with monado-service not running its session
fails with XR_ERROR_RUNTIME_FAILURE: a problem, exit 1, which these tests are not about).
"""

from __future__ import annotations

import json
import os

from support import headcast


def _free_display() -> str:
    n = 90
    while os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock"):
        n += 1
    return f":{n}"


def _no_runtime(tmp_path) -> dict[str, str]:
    """Where the loader looks for the active runtime: empty folders only."""
    (tmp_path / "xdg").mkdir(exist_ok=True)
    return {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CONFIG_DIRS": str(tmp_path / "xdg"),
    }


def test_no_headset_is_a_note_and_exit_0(tmp_path):
    r = headcast("doctor", **_no_runtime(tmp_path))
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stderr == ""
    (line,) = [ln for ln in r.stdout.splitlines() if "no OpenXR runtime" in ln]
    assert line.startswith("[--] openxr   no OpenXR runtime found"), line
    assert "headcast run --mock look_around" in r.stdout and r.stdout.splitlines()[-1].startswith("all good")
    j = headcast("doctor", "--json", **_no_runtime(tmp_path))
    report = json.loads(j.stdout)
    assert j.returncode == 0 and report["ok"] is True and report["headset"] is False, report


def test_a_stale_display_is_a_problem_without_a_raw_glfw_line(tmp_path):
    display = _free_display()
    r = headcast("doctor", DISPLAY=display, **_no_runtime(tmp_path))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "GLFWError" not in r.stdout + r.stderr and r.stderr == "", r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("[!!] display")]
    assert f"cannot open the display {display}" in line and "X11: Failed to open display" in line, line


def test_a_real_fault_is_exit_1(tmp_path):
    r = headcast("doctor", HOME=str(tmp_path), XR_RUNTIME_JSON=str(tmp_path / "missing.json"))
    assert r.returncode == 1 and "[!!] openxr   XR_RUNTIME_JSON points at" in r.stdout, r.stdout
