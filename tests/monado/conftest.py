"""Monado 25 (the open-source runtime Linux VR users run; Debian 13's monado-service + libopenxr1-monado,
simulated HMD and controllers) as a real runtime for headcast, started and stopped by PID per test.

Monado 25 needs Debian 13 (libc6 2.38+): on Debian 12 the tests are deselected with one line saying
where they run (the Debian 13 root: scripts/debian-root.sh); on Debian 13 without Monado they FAIL
with the install command, never pass or skip silently.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from support import wait_for

SERVICE = "/usr/bin/monado-service"
MANIFEST = "/usr/share/openxr/1/openxr_monado.json"
PACKAGES = "monado-service libopenxr1-monado mesa-vulkan-drivers"
INSTALL = f"apt-get install {PACKAGES} (as root; bash scripts/setup.sh installs them on Debian 13)"
ROOT_TIER = (
    "bash scripts/debian-root.sh run -- bash scripts/test.sh tests/monado "
    "(or .ci/run, which runs them in its Debian 13 root)"
)


def _debian_major() -> int | None:
    try:
        fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    except OSError:
        return None
    if fields.get("ID") != "debian":
        return None
    version = fields.get("VERSION_ID", "").strip('"')
    return int(version) if version.isdigit() else None


def monado_installed() -> bool:
    return os.access(SERVICE, os.X_OK) and os.path.isfile(MANIFEST)


def pytest_collection_modifyitems(config, items):
    ours = [item for item in items if item.get_closest_marker("monado")]
    if not ours or monado_installed():
        return
    major = _debian_major()
    if major is not None and major >= 13:
        return  # Debian 13 without Monado: the tests run and fail with the install line (the fixture)
    items[:] = [item for item in items if not item.get_closest_marker("monado")]
    config.hook.pytest_deselected(items=ours)
    config._headcast_monado_note = (
        f"tests/monado: {len(ours)} Monado 25 tests deselected: Monado 25 needs Debian 13 (libc6 2.38+), "
        f"this machine has no {SERVICE}; they run in the Debian 13 root: {ROOT_TIER}"
    )


def pytest_terminal_summary(terminalreporter, config):
    note = getattr(config, "_headcast_monado_note", None)
    if note:
        terminalreporter.write_line(note, yellow=True, bold=True)


class MonadoService:
    """monado-service with its own XDG_RUNTIME_DIR (its IPC socket), the simulated HMD and two simple
    controllers; `compositor` "null" (no display, fixed 20 Hz) or "main" (under Xvfb through XCB, on
    Mesa's lavapipe Vulkan, 90 Hz). Stopped by PID."""

    def __init__(self, tmp_path: Path, compositor: str = "null", display: str | None = None) -> None:
        self.runtime_dir = tmp_path / "xdg-runtime"
        self.runtime_dir.mkdir(mode=0o700)
        self.log = tmp_path / "monado-service.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XR_", "XRT_", "HEADCAST_", "SIMULATED_"))}
        env.update(
            XDG_RUNTIME_DIR=str(self.runtime_dir),
            XRT_NO_STDIN="1",
            SIMULATED_ENABLE="1",
            SIMULATED_LEFT="simple",
            SIMULATED_RIGHT="simple",
        )
        if compositor == "null":
            env["XRT_COMPOSITOR_NULL"] = "1"
        else:
            env.update(DISPLAY=display or "", XRT_COMPOSITOR_FORCE_XCB="1", XRT_COMPOSITOR_DEFAULT_FRAMERATE="90")
        self.compositor = compositor
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [SERVICE],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.socket = self.runtime_dir / "monado_comp_ipc"
        try:  # the socket file exists from bind(); clients get in from listen()
            wait_for(lambda: self._listening() or self.proc.poll() is not None, 30, "monado-service's IPC socket")
        except BaseException:
            self.stop()
            raise
        if self.proc.poll() is not None:
            raise AssertionError(f"monado-service exited with {self.proc.returncode}:\n{self.log_tail()}")

    def _listening(self) -> bool:
        if not self.socket.exists():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(self.socket))
            except OSError:
                return False
        return True

    def client_env(self) -> dict[str, str]:
        """What an OpenXR app needs to reach this service (through the system's or pyopenxr's loader)."""
        return {"XR_RUNTIME_JSON": MANIFEST, "XDG_RUNTIME_DIR": str(self.runtime_dir)}

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def kill(self) -> None:
        """The runtime dies (SIGKILL): what a crash or an OOM kill does to a running app."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


@pytest.fixture
def monado_available():
    if not monado_installed():
        pytest.fail(f"Monado 25 is not installed on this Debian 13 machine: {INSTALL}")
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/setup.sh")


@pytest.fixture
def monado(monado_available, tmp_path):
    """Monado with its null compositor (what a headless session needs)."""
    service = MonadoService(tmp_path)
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture
def monado_main(monado_available, tmp_path, xvfb_display):
    """Monado with its main compositor on the suite's Xvfb (an OpenGL session's frames, ~90 Hz)."""
    service = MonadoService(tmp_path, "main", xvfb_display)
    try:
        yield service
    finally:
        service.stop()
