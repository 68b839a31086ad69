"""Start and stop a real Sauerbraten 2020 Edition dedicated server on 127.0.0.1 (tests and
`headcast demo`).

Debian 12's `cube2-server` package (main; `sauerbraten-server` in non-free is a 54-byte wrapper
around the same binary) installs `/usr/lib/cube2/cube2_server`, protocol 260. Each server gets:
its own home directory (`-q`, its `server-init.cfg` and log there), the three UDP sockets on
127.0.0.1 (`-i`: game port, info port = game port + 1, LAN port 28784 shared with SO_REUSEADDR),
a free game port whose info port is free too (`-j`), no master server (`-m` with no name:
`updatemaster 0`), an admin password, and by default the map rotation ffa on "complex" (the
speed check is on there; a fresh server without one starts in coop edit, where it is off).
Readiness is an answer to the info query on the info port, polled with a bound (the start, stop
and readiness loop are netcode/serverprocess.py's). The process is stopped by PID only.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from dataclasses import dataclass, field

from headcast.netcode.serverprocess import LocalServerError, ServerProcess

from .info import InfoError, InfoReply, info_request, parse_info_reply

CUBE2_SERVER = "/usr/lib/cube2/cube2_server"
PACKAGE = "cube2-server"


def free_port_pair() -> int:
    """A UDP port P on 127.0.0.1 with P + 1 free too (the server's info port)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a:
            a.bind(("127.0.0.1", 0))
            port: int = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise LocalServerError("no free pair of UDP ports on 127.0.0.1")


def installed() -> bool:
    return os.access(CUBE2_SERVER, os.X_OK)


def _quote(text: str) -> str:
    # cubescript string: no quotes or line breaks inside (the values here are ours)
    if any(c in text for c in '"\n\r^'):
        raise ValueError(f"cannot put {text!r} into server-init.cfg")
    return f'"{text}"'


@dataclass
class LocalSauerServer(ServerProcess):
    """One dedicated server process. Use as a context manager or call start()/stop()."""

    server_name = "sauerbraten server"

    mode: str = "ffa"  # the map rotation's mode and map (empty map: a fresh server's coop edit)
    map_name: str = "complex"
    port: int = 0  # 0: pick a free pair
    password: str = ""  # serverpass: clients must send its hash
    description: str = "headcast test"
    max_clients: int = 8
    admin_password: str = field(default_factory=lambda: secrets.token_hex(8))
    extra_config: tuple[str, ...] = ()
    ready_timeout: float = 10.0

    def __post_init__(self) -> None:
        if not self.port:
            self.port = free_port_pair()
        self._setup("headcast-sauer-")

    @property
    def info_port(self) -> int:
        return self.port + 1

    def config(self) -> str:
        lines = [
            f"serverdesc {_quote(self.description)}",
            "updatemaster 0",
            f"maxclients {self.max_clients}",
            f"adminpass {_quote(self.admin_password)}",
            "publicserver 0",
        ]
        if self.password:
            lines.append(f"serverpass {_quote(self.password)}")
        if self.map_name:
            lines += ["maprotationreset", f"maprotation {_quote(self.mode)} {_quote(self.map_name)}"]
        lines += list(self.extra_config)
        return "\n".join(lines) + "\n"

    def command(self) -> list[str]:
        if not installed():
            raise LocalServerError(f"{CUBE2_SERVER} is missing: apt-get install {PACKAGE}")
        return [CUBE2_SERVER, "-i127.0.0.1", f"-j{self.port}", "-m", f"-q{self._home}"]

    def prepare(self) -> None:
        (self._home / "server-init.cfg").write_text(self.config())

    def probe(self) -> InfoReply | None:
        try:
            return self.info(timeout=0.25)
        except (TimeoutError, InfoError):
            return None

    def info(self, timeout: float = 1.0) -> InfoReply:
        """One info query on the info port (blocking, bounded)."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            tag = secrets.randbelow(1 << 20) + 1
            s.sendto(info_request(tag), ("127.0.0.1", self.info_port))
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no info reply from 127.0.0.1:{self.info_port} within {timeout:g} s")
                s.settimeout(left)
                try:
                    data = s.recv(4096)
                except (socket.timeout, ConnectionRefusedError, ConnectionResetError):  # Windows: reset
                    continue
                reply = parse_info_reply(data)
                if reply.tag == tag:
                    return reply
