"""Fixtures for the XR session tests: the mock runtime (built for real, loaded by the real
loader through pyopenxr) and its control API."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from headcast.xr import mockrt

from support import MOCK_ENV_VARS, REPO, mock_control


@pytest.fixture(scope="session")
def manifest():
    return mockrt.ensure_runtime()


@pytest.fixture
def ctl(manifest, monkeypatch):
    """MockControl on the live runtime, reset around the test; the loader points at the mock, unpaced
    (its xrWaitFrame does not sleep, and a headless session paces itself at 1000 Hz, not 90)."""
    from headcast.xr import session

    monkeypatch.setattr(session, "DEFAULT_RATE_HZ", 1000.0)
    yield from mock_control(manifest, monkeypatch, paced=False)


@pytest.fixture
def run_script(manifest):
    """Run code in a fresh interpreter (its own loader, glfw and GL state) against the mock."""

    def run(
        code: str, env_extra: dict[str, str] | None = None, timeout: float = 90, args: list[str] = ()
    ) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k not in MOCK_ENV_VARS}
        env.update(
            {
                "XR_RUNTIME_JSON": str(manifest),
                "HEADCAST_MOCK_THROTTLE": "0",
                "XR_LOADER_DEBUG": "error",
                **(env_extra or {}),
            }
        )
        return subprocess.run(
            [sys.executable, "-c", code, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
        )

    return run


@pytest.fixture(params=["native", "ctypes"])
def frame_path(request, monkeypatch):
    """Run the test once with the native frame helper (built here, as setup builds it) and once
    with the pure-ctypes path that stands in when it is not built."""
    from headcast.xr import fastframe

    if request.param == "native":
        fastframe.build()
    else:
        monkeypatch.setattr(fastframe, "load", lambda build_dir=None: None)
    return request.param
