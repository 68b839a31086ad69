"""Without a runtime the session fails with the one clear, typed message (no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from headcast.xr.errors import NO_RUNTIME

from support import REPO

PROBE = """
import sys
from headcast.xr.session import XRSession
from headcast.xr.errors import NoRuntimeError
try:
    XRSession()
except NoRuntimeError as exc:
    print("NoRuntimeError:", exc)
    sys.exit(3)
print("opened a session")
"""


def run_probe(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    # A subprocess: the loader resolves the runtime once per process.
    env = {**os.environ, "XR_LOADER_DEBUG": "none", **env_extra}
    return subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("manifest", ["missing", "bad-library"])
def test_missing_runtime_gives_the_clear_error(tmp_path, manifest):
    path = tmp_path / "runtime.json"
    if manifest == "bad-library":
        path.write_text(
            json.dumps({"file_format_version": "1.0.0", "runtime": {"name": "Gone", "library_path": "./libgone.so"}})
        )
    proc = run_probe({"XR_RUNTIME_JSON": str(path)})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"NoRuntimeError: {NO_RUNTIME}"
    assert "Traceback" not in proc.stderr


def test_headcast_run_without_a_runtime_points_at_mock(tmp_path):
    """Issue 25 item 9: the user without a headset is told about --mock (and the demo)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_", "XR_")) and k != "DISPLAY"}
    env.update(XR_RUNTIME_JSON=str(tmp_path / "missing.json"), HOME=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-m", "headcast.app", "run", "--no-mirror", "--duration", "1"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("headcast: error: no OpenXR runtime found") and "`headcast run --mock look_around`" in line
