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
    return subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("manifest", ["missing", "bad-library"])
def test_missing_runtime_gives_the_clear_error(tmp_path, manifest):
    path = tmp_path / "runtime.json"
    if manifest == "bad-library":
        path.write_text(json.dumps({"file_format_version": "1.0.0",
                                    "runtime": {"name": "Gone", "library_path": "./libgone.so"}}))
    proc = run_probe({"XR_RUNTIME_JSON": str(path)})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"NoRuntimeError: {NO_RUNTIME}"
    assert "Traceback" not in proc.stderr
