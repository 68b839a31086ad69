"""Start and stop a real styly-netsync-server on 127.0.0.1 (tests, benchmarks, `headcast demo`).

The server runs in its own process under any interpreter that has it installed (default: this
one, i.e. 0.10.4 from the project venv; the bandwidth benchmark passes a venv with 0.8.0),
through loopback_launcher.py so that nothing listens beyond loopback. Ports are free ports
unless given; they are written to a config file (the only way 0.8.0 takes them), the REST port
also to NETSYNC_REST_PORT (0.8.0) — discovery is always off. Readiness is polled with a bound:
both ZeroMQ ports accept connections and the REST bridge answers `GET /`.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).with_name("loopback_launcher.py")
HOST = "127.0.0.1"


class ServerStartError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


def _rest_ok(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=0.5) as r:
            return json.loads(r.read() or b"{}").get("status") == "ok"
    except (OSError, ValueError, urllib.error.URLError):
        return False


@dataclass(frozen=True)
class ServerAddress:
    host: str
    dealer_port: int
    pub_port: int
    rest_port: int


class LocalNetSyncServer:
    """A styly-netsync-server process. `start()` / `stop()` may alternate (restart on the same ports)."""

    def __init__(
        self,
        python: str | os.PathLike = sys.executable,
        *,
        dealer_port: int | None = None,
        pub_port: int | None = None,
        rest_port: int | None = None,
        settings: dict[str, float | int] | None = None,
        log_dir: str | os.PathLike | None = None,
    ) -> None:
        self.python = str(python)
        self.address = ServerAddress(HOST, dealer_port or free_port(), pub_port or free_port(), rest_port or free_port())
        self._tmp = tempfile.TemporaryDirectory(prefix="headcast-netsync-")
        work = Path(log_dir) if log_dir else Path(self._tmp.name)
        work.mkdir(parents=True, exist_ok=True)
        self.log_path = work / f"netsync-server-{self.address.dealer_port}.log"
        self.config_path = Path(self._tmp.name) / "server.toml"
        keys = {
            "dealer_port": self.address.dealer_port,
            "pub_port": self.address.pub_port,
            "rest_api_port": self.address.rest_port,  # 0.9+; 0.8.0 warns and reads the env var
            "server_discovery_port": free_port(),
            "enable_server_discovery": "false",
            **(settings or {}),
        }
        self.config_path.write_text("".join(f"{k} = {v}\n" for k, v in keys.items()))
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def version(self) -> str:
        out = subprocess.run(
            [self.python, "-c", "import importlib.metadata as m; print(m.version('styly-netsync-server'))"],
            capture_output=True, text=True, timeout=30,
        )
        if out.returncode != 0:
            raise ServerStartError(f"{self.python} has no styly-netsync-server: {out.stderr.strip()[-300:]}")
        return out.stdout.strip()

    def start(self, timeout: float = 30.0) -> LocalNetSyncServer:
        if self.proc is not None and self.proc.poll() is None:
            return self
        env = dict(os.environ, NETSYNC_REST_PORT=str(self.address.rest_port), PYTHONUNBUFFERED="1")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.python, str(LAUNCHER), "--config", str(self.config_path), "--no-server-discovery"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        a = self.address
        deadline = time.monotonic() + timeout
        while not (_accepts(a.dealer_port) and _accepts(a.pub_port) and _rest_ok(a.rest_port)):
            if self.proc.poll() is not None:
                raise ServerStartError(f"styly-netsync-server exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(f"styly-netsync-server not ready within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGINT (the server's own clean shutdown), then terminate, then kill — our PID only."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for action in (lambda: proc.send_signal(signal.SIGINT), proc.terminate, proc.kill):
            action()
            try:
                proc.wait(timeout=timeout / 2)
                return
            except subprocess.TimeoutExpired:
                continue
        proc.wait(timeout=timeout)

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def close(self) -> None:
        self.stop()
        self._tmp.cleanup()

    def __enter__(self) -> LocalNetSyncServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
