"""Suite-wide fixtures; plain helpers live in tests/support.py."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support import ARTIFACTS

# A suite started under nohup, or in the background by a non-interactive shell (`cmd &` ignores
# SIGINT there), passes the ignored signal on to every headcast it runs, which then keeps it
# ignored by design (docs/guide/run.md#run: "under nohup, SIGHUP stays ignored"), and the tests of Ctrl-C and of a
# closed terminal would test that instead. The suite runs as from a terminal; the nohup behaviour
# has its own test, which ignores SIGHUP itself.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS



@pytest.fixture(scope="module")
def q3_server():
    """A real ioquake3 dedicated server (Debian's openarena-server) on 127.0.0.1, not pure."""
    from headcast.netcode.q3.localserver import LocalQ3Server
    with LocalQ3Server(kind="ioq3", pure=False) as server:
        yield server


@pytest.fixture(scope="session")
def xvfb_display():
    """Start a private Xvfb on a free display number; yields the DISPLAY string (":N").

    The suite never uses an existing display, so it behaves the same on a desktop and in CI.
    """
    import os
    import shutil
    import subprocess

    from support import wait_for

    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/setup.sh (apt package xvfb)")
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        line = proc.stdout.readline().decode().strip()  # Xvfb writes the display number when ready
        if not line.isdigit():
            pytest.fail(f"Xvfb did not start (said {line!r})")
        display = f":{line}"
        wait_for(lambda: os.path.exists(f"/tmp/.X11-unix/X{line}"), 10, "the Xvfb socket")
        yield display
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
