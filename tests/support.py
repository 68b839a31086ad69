"""Helpers any test may import (`from support import free_port, wait_for`)."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, TypeVar

import pytest

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
# Data the tests read (the ioq3 conformance vectors): kept in the repo, see tests/data/README.md.
DATA = REPO / "tests" / "data"
VECTORS_FILE = DATA / "q3_vectors.json"
ARTIFACTS = REPO / "artifacts"

# Long soak/fuzz runs: the default (and CI) run executes a bounded version of each.
LONG = os.environ.get("HEADCAST_LONG") == "1"

# scripts/wheel-check.sh runs some tests with the interpreter of a clean venv that has headcast
# installed from its wheel, naming that venv here: headcast (in the test and in every `headcast`
# subprocess, both sys.executable) must then come from it, never from this checkout.
INSTALLED = os.environ.get("HEADCAST_TEST_INSTALLED")
if INSTALLED:
    import headcast.app

    _venv = Path(INSTALLED).resolve()
    _where = [Path(p).resolve() for p in (*headcast.__path__, headcast.app.__file__)]
    if Path(sys.prefix).resolve() != _venv or not all(_venv in p.parents for p in _where):
        raise RuntimeError(
            f"HEADCAST_TEST_INSTALLED={INSTALLED}: these tests run {sys.executable} and import "
            f"headcast from {', '.join(map(str, _where))}, not the installed package of that venv"
        )


# The ports the suite chooses (its servers', and "a port where nothing listens"): below the
# kernel's ephemeral range (ip_local_port_range, 32768-60999 by default), so no socket's automatic
# port (a client's connect or bind to port 0, in this process or any other) can take one between
# the choice and the server's bind; below 27900 too (Quake 3's 27960, Sauerbraten's LAN port
# 28784). Under pytest-xdist each worker has a block of its own (PYTEST_XDIST_WORKER gwN of
# PYTEST_XDIST_WORKER_COUNT), so two workers never choose the same port; within its block a
# process walks the ports in a random order (two suites run at once rarely meet), hands each out
# once per pass and probes it by binding it (TCP and UDP) first.
PORT_LOW, PORT_HIGH = 10000, 27900


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_block() -> range:
    high = min(PORT_HIGH, _ephemeral_low())
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 0:
        size = (high - PORT_LOW) // int(count)
        start = PORT_LOW + int(worker[2:]) % int(count) * size
        return range(start, start + size)
    return range(PORT_LOW, high)


class _PortPicker:
    def __init__(self) -> None:
        self.block = _port_block()
        self.order: list[int] = []
        self.given: set[int] = set()

    def _bindable(self, port: int) -> bool:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    return False
        return True

    def pick(self, span: int) -> int:
        for _ in range(2):  # this pass's ports, then a fresh pass
            while self.order:
                port = self.order.pop()
                ports = range(port, port + span)
                if ports[-1] >= self.block.stop or self.given.intersection(ports):
                    continue
                if all(self._bindable(p) for p in ports):
                    self.given.update(ports)
                    return port
            self.order = list(self.block)
            random.shuffle(self.order)
            self.given.clear()
        raise RuntimeError(
            f"no {span} free consecutive port(s) in {self.block.start}..{self.block.stop - 1} on 127.0.0.1"
        )


_picker: _PortPicker | None = None


def free_port(kind: int = socket.SOCK_STREAM, span: int = 1) -> int:
    """A port P on 127.0.0.1 that is free right now, for TCP and UDP alike (`kind` is kept for the
    callers that say which they mean), with P + 1 … P + span - 1 free too; never the same port
    twice in a row of choices, never one another pytest-xdist worker may choose (see PORT_LOW)."""
    global _picker
    if _picker is None or _picker.block != _port_block():
        _picker = _PortPicker()
    return _picker.pick(span)


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.02) -> T:
    """Poll `predicate` until it returns a truthy value, at most `timeout` seconds; fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:.1f} s waiting for {what}")
        time.sleep(interval)


def cli_env(**extra: str) -> dict[str, str]:
    """The environment a `headcast` subprocess gets: no HEADCAST_/XR_ variables, no display, no
    user config file; then `extra`."""
    e = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HEADCAST_", "XR_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY")
    }
    e["HOME"] = str(REPO / "build" / "no-home")
    e.update(extra)
    return e


def headcast(*args: str, timeout: float = 60, **extra: str) -> subprocess.CompletedProcess:
    """`headcast ARGS` as a user runs it, in cli_env(**extra); output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "headcast.app", *args],
        cwd=REPO,
        env=cli_env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# Every variable the mock runtime (or the loader's layer list) reads: tests start from none of them.
MOCK_ENV_VARS = (
    "HEADCAST_MOCK_MOTION",
    "HEADCAST_MOCK_SCRIPT",
    "HEADCAST_MOCK_PROFILE",
    "HEADCAST_MOCK_LOG",
    "HEADCAST_MOCK_THROTTLE",
    "HEADCAST_MOCK_PROFILE_RUNTIME",
    "HEADCAST_MOCK_CLOCK",
    "HEADCAST_MOCK_HEADLESS_FOCUS",
    "HEADCAST_MOCK_FAIL",
    "XR_ENABLE_API_LAYERS",
)


def mock_control(manifest, monkeypatch, *, paced: bool):
    """Fixture body: the loader pointed at the mock runtime with a clean mock environment.

    Yields a reset MockControl on the live library (paced at 90 Hz or not) and, on the way out,
    fails the test if it left an XrInstance alive. Use as `yield from mock_control(...)`.
    """
    from headcast.xr import mockrt

    monkeypatch.setenv("XR_RUNTIME_JSON", str(manifest))
    monkeypatch.setenv("XR_LOADER_DEBUG", "error")
    for var in MOCK_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    if not paced:
        monkeypatch.setenv("HEADCAST_MOCK_THROTTLE", "0")
    ctl = mockrt.MockControl(manifest)
    ctl.reset()
    yield ctl
    alive = ctl.instance_alive
    ctl.reset()
    assert not alive, "the test left an XrInstance alive (close the XRSession)"
