"""Start and stop a real styly-netsync-server on 127.0.0.1 (tests, benchmarks, `headcast demo`).

`LocalNetSyncServer()` runs the project venv's own release (0.17.5, protocol 8);
`LocalNetSyncServer(version="0.12.0")` runs that release from build/netsync/0.12.0 (installed on
first use, see releases.py) on the venv's interpreter with PYTHONPATH pointing at it;
`python=` runs whatever another interpreter has installed (the bandwidth benchmark passes a venv
with 0.8.0). Either way the server goes through loopback_launcher.py, so nothing binds or sends
beyond loopback, and discovery is off.

Ports are free ports unless given. From 0.15.0 on the server has a control ROUTER
(`control_port`, with `dealer_port` a deprecated alias that must be equal), a transform ROUTER
(`transform_port`) and the PUB; clients derive the transform port as control + 2 by default, so
the control port is chosen with control + 2 free as well and that is the transform port. Earlier
releases have one ROUTER (`dealer_port`) for everything; there `address.transform_port` equals
`address.dealer_port` (poses go to the dealer port). The ports are written to a config file with
the keys that release knows (every release only warns about unknown keys, but each gets its own
set), the REST port also to NETSYNC_REST_PORT (0.8.0 has no key for it). Readiness is polled
with a bound: every ZeroMQ port accepts connections and the REST bridge answers `GET /`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from ..serverprocess import LocalServerError, ServerProcess
from . import releases
from .errors import ServerStartError as ServerStartError

LAUNCHER = Path(__file__).with_name("loopback_launcher.py")
HOST = "127.0.0.1"
TRANSFORM_PORT_OFFSET = 2  # the servers' and official clients' default: transform = control + 2


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _bindable(port: int) -> bool:
    if not 0 < port < 65536:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
            return True
        except OSError:
            return False


def free_control_port(tries: int = 100) -> int:
    """A free port whose control + 2 (the default transform port) is free as well."""
    for _ in range(tries):
        port = free_port()
        if _bindable(port + TRANSFORM_PORT_OFFSET):
            return port
    raise ServerStartError(f"no free port pair (p, p + {TRANSFORM_PORT_OFFSET}) on {HOST} after {tries} tries")


def _free_port_except(taken: set[int]) -> int:
    while True:
        port = free_port()
        if port not in taken:
            return port


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


def _rest_ok(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=0.5) as r:
            return bool(json.loads(r.read() or b"{}").get("status") == "ok")
    except (OSError, ValueError, urllib.error.URLError):
        return False


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str) and v in ("true", "false"):
        return v
    return json.dumps(str(v))  # a TOML basic string


@dataclass(frozen=True)
class ServerAddress:
    """Where a local server listens. `dealer_port` is the control ROUTER from 0.15.0 on
    (also `control_port`); `transform_port` is where poses go (== dealer_port before protocol 7)."""

    host: str
    dealer_port: int
    pub_port: int
    rest_port: int
    transform_port: int | None = None
    protocol: int | None = None  # binary_serializer.PROTOCOL_VERSION of the release; None if unknown
    version: str | None = None  # the styly-netsync-server release, e.g. "0.17.5"

    def __post_init__(self) -> None:
        if self.transform_port is None:
            object.__setattr__(self, "transform_port", self.dealer_port)

    @property
    def control_port(self) -> int:
        return self.dealer_port


class LocalNetSyncServer(ServerProcess):
    """A styly-netsync-server process. `start()` / `stop()` may alternate (restart on the same
    ports). Start, readiness loop and stop are netcode/serverprocess.py's: SIGINT (the server's
    own clean shutdown), then SIGTERM, then SIGKILL — our PID only."""

    server_name = "styly-netsync-server"
    stop_signals = (signal.SIGINT, signal.SIGTERM)

    def __init__(
        self,
        version: str | None = None,
        *,
        python: str | os.PathLike[str] | None = None,
        dealer_port: int | None = None,
        transform_port: int | None = None,
        pub_port: int | None = None,
        rest_port: int | None = None,
        settings: dict[str, float | int | str | bool] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.python = str(python) if python is not None else sys.executable
        self.release_dir: Path | None = None
        if version is not None:
            if releases.parse_version(version) is None:
                raise ValueError(f"not a styly-netsync-server version: {version!r}")
            try:
                self.release_dir = releases.ensure_release(version, python=self.python)
            except releases.ReleaseInstallError as e:
                raise ServerStartError(str(e)) from e
            self.server_version: str | None = version
        else:
            self.server_version = self._installed_version()  # None: no server there (start() will say so)
        v = self.server_version
        self.protocol = None if v is None else releases.protocol_of_version(v)
        split = v is not None and releases.has_split_sockets(v)

        if split:
            control = dealer_port or free_control_port()
            transform = transform_port or control + TRANSFORM_PORT_OFFSET
        else:
            if transform_port is not None and v is not None:
                raise ValueError(f"styly-netsync-server {v} has no transform port (0.15.0 and later)")
            control = dealer_port or free_port()
            transform = control
        taken = {control, transform}
        pub = pub_port or _free_port_except(taken)
        taken.add(pub)
        rest = rest_port or _free_port_except(taken)
        taken.add(rest)
        self._address = ServerAddress(HOST, control, pub, rest, transform, self.protocol, v)
        self.port = control

        self._setup("headcast-netsync-")
        work = Path(log_dir) if log_dir else self._home
        work.mkdir(parents=True, exist_ok=True)
        self._log_path = work / f"netsync-server-{v or 'unknown'}-{control}.log"
        self.config_path = self._home / "server.toml"
        if split:  # 0.15.0+: control_port, its alias dealer_port (must be equal), transform_port
            ports = {"control_port": control, "dealer_port": control, "transform_port": transform}
        else:  # before 0.15.0: one ROUTER
            ports = {"dealer_port": control}
        ports["pub_port"] = pub
        parsed = releases.parse_version(v) if v is not None else None
        if parsed is None or parsed >= (0, 9, 0):  # 0.8.0 has no rest_api_port: NETSYNC_REST_PORT only
            ports["rest_api_port"] = rest
        keys = {
            **ports,
            "server_discovery_port": _free_port_except(taken),
            "enable_server_discovery": False,
            **(settings or {}),
        }
        self.config_path.write_text("".join(f"{k} = {_toml_value(val)}\n" for k, val in keys.items()))

    @property
    def address(self) -> ServerAddress:  # type: ignore[override]  # more than (host, port)
        return self._address

    @property
    def log_path(self) -> Path:
        return self._log_path

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self._proc

    def _env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, **extra)
        if self.release_dir is not None:
            env["PYTHONPATH"] = str(self.release_dir)  # before site-packages: this release wins
        return env

    def _ask_version(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.python, "-c", "import importlib.metadata as m; print(m.version('styly-netsync-server'))"],
            capture_output=True,
            text=True,
            timeout=30,
            env=self._env(),
        )

    def _installed_version(self) -> str | None:
        try:
            out = self._ask_version()
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    def version(self) -> str:
        """The styly-netsync-server version the server's interpreter imports (asked, not assumed)."""
        out = self._ask_version()
        if out.returncode != 0:
            raise ServerStartError(f"{self.python} has no styly-netsync-server: {out.stderr.strip()[-300:]}")
        return out.stdout.strip()

    def ports(self) -> list[int]:
        """The ZeroMQ ports the server listens on (control/dealer, transform when separate, PUB)."""
        a = self.address
        return sorted({p for p in (a.dealer_port, a.transform_port, a.pub_port) if p is not None})

    def command(self) -> list[str]:
        return [self.python, str(LAUNCHER), "--config", str(self.config_path), "--no-server-discovery"]

    def env(self) -> dict[str, str]:
        return self._env(NETSYNC_REST_PORT=str(self.address.rest_port), PYTHONUNBUFFERED="1")

    def probe(self) -> bool | None:
        """Every ZeroMQ port accepts connections and the REST bridge answers."""
        ready = all(_accepts(p) for p in self.ports()) and _rest_ok(self.address.rest_port)
        return True if ready else None

    def start(self, timeout: float = 30.0) -> Self:
        if self.running():
            return self
        self.ready_timeout = timeout
        try:
            return super().start()
        except LocalServerError as e:
            raise ServerStartError(str(e)) from None

    def stop(self, timeout: float = 10.0) -> None:
        super().stop(timeout)
        self._proc = None  # pid None: nothing runs

    def close(self) -> None:
        self.cleanup()
