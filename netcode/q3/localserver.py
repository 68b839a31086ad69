"""Start and stop real Quake 3 dedicated servers on 127.0.0.1 (tests and `headcast demo`).

Two kinds, both from Debian packages (docs/protocols/quake3.md#local-servers):
- ``openarena``: ``/usr/games/openarena-server`` — ioq3 1.36 with protocol "71" on the legacy
  netchan, ``sv_pure 1``.
- ``ioq3``: plain ``/usr/lib/ioquake3/ioq3ded`` with the OpenArena data, protocol 71 on the
  checksummed netchan plus legacy 68, ``sv_pure 0``.

Each server gets its own free UDP port, blank master servers, a private ``fs_homepath`` in a
temporary directory and an rcon password. Readiness is a `getinfo` answer, polled with a bound
(the start, stop and readiness loop are netcode/serverprocess.py's). Processes are stopped by PID
only.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headcast.netcode.serverprocess import LocalServerError, ServerProcess

from . import oob

OPENARENA_SERVER = "/usr/games/openarena-server"
IOQ3DED = "/usr/lib/ioquake3/ioq3ded"
OPENARENA_BASEPATH = "/usr/lib/openarena-server"
KINDS = ("openarena", "ioq3")
# ioq3 answers 10 getinfo/getstatus/getchallenge/rcon per source address, then one a second
# (SVC_RateLimitAddress): an unanswered query is asked again after this long, not given up on.
QUERY_RESEND = 1.0


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pk3_files(basegame_dir: str | Path = Path(OPENARENA_BASEPATH) / "baseoa") -> list[Path]:
    """The server's pk3s (what a client points `pure` at to answer an OpenArena server)."""
    return sorted(Path(basegame_dir).glob("*.pk3"))


@dataclass
class LocalQ3Server(ServerProcess):
    """One dedicated server process. Use as a context manager or call start()/stop()."""

    kind: str = "openarena"
    map_name: str = "oa_dm1"
    devmap: bool = False  # `devmap` enables cheats (setviewpos for teleport tests)
    pure: bool | None = None  # None: the kind's default (openarena 1, ioq3 0)
    port: int = 0  # 0: pick a free one
    extra_cvars: dict[str, str] = field(default_factory=dict)
    rcon_password: str = field(default_factory=lambda: secrets.token_hex(8))
    ready_timeout: float = 20.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"server kind {self.kind!r} is not one of {KINDS}")
        if not self.port:
            self.port = free_udp_port()
        self._setup(f"headcast-{self.kind}-")

    def command(self) -> list[str]:
        pure = self.pure if self.pure is not None else self.kind == "openarena"
        common = {
            "dedicated": "1",
            "net_enabled": "1",
            "net_ip": "127.0.0.1",
            "net_port": str(self.port),
            "sv_master1": "",
            "sv_master2": "",
            "sv_master3": "",
            "sv_master4": "",
            "sv_master5": "",
            "fs_homepath": str(self._home),
            "sv_pure": "1" if pure else "0",
            "rconpassword": self.rcon_password,
            "sv_allowDownload": "0",
            "ttycon": "0",
            "com_hunkmegs": "64",
        }
        if self.kind == "openarena":
            if not os.path.exists(OPENARENA_SERVER):
                raise LocalServerError(f"{OPENARENA_SERVER} is missing: apt-get install openarena-server")
            argv = [OPENARENA_SERVER]
        else:
            if not os.path.exists(IOQ3DED):
                raise LocalServerError(f"{IOQ3DED} is missing: apt-get install ioquake3-server")
            argv = [IOQ3DED]
            common = {"com_basegame": "baseoa", "fs_basepath": OPENARENA_BASEPATH, **common}
        for k, v in {**common, **self.extra_cvars}.items():
            argv += ["+set", k, v]
        argv += ["+devmap" if self.devmap else "+map", self.map_name]
        return argv

    def probe(self) -> dict[str, str] | None:
        try:
            return self.getinfo(timeout=0.25)
        except (TimeoutError, oob.OobError):
            return None

    @property
    def server_name(self) -> str:
        return f"{self.kind} server"

    # ------------------------------------------------------------------ OOB queries (blocking, bounded)

    def _query(self, packet: bytes, timeout: float, want: type, collect: float = 0.0, resend: bool = False) -> Any:
        """Send one OOB request and return the first reply of type `want` (or all within `collect` s).
        `resend` (only for requests that may run twice): ask again every QUERY_RESEND s without an
        answer, as the server drops requests over its per-address limit."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            s.sendto(packet, self.address)
            deadline = time.monotonic() + timeout
            again = time.monotonic() + QUERY_RESEND
            got: list[object] = []
            while True:
                now = time.monotonic()
                if now >= deadline:
                    if got:
                        return got
                    raise TimeoutError(f"no {want.__name__} from {self.address} within {timeout} s")
                if resend and not got and now >= again:
                    s.sendto(packet, self.address)
                    again = now + QUERY_RESEND
                s.settimeout(max(1e-3, (min(deadline, again) if resend and not got else deadline) - now))
                try:
                    data, _ = s.recvfrom(65536)
                except socket.timeout:
                    continue
                reply = oob.parse_oob(data)
                if isinstance(reply, want):
                    if not collect:
                        return reply
                    got.append(reply)
                    deadline = min(deadline, time.monotonic() + collect)

    def getinfo(self, timeout: float = 2.0) -> dict[str, str]:
        nonce = secrets.token_hex(4)
        reply: oob.InfoResponse = self._query(oob.getinfo(nonce), timeout, oob.InfoResponse, resend=True)
        if reply.info.get("challenge") != nonce:
            raise oob.OobError("infoResponse does not echo our nonce")
        return reply.info

    def getstatus(self, timeout: float = 2.0) -> oob.StatusResponse:
        reply: oob.StatusResponse = self._query(
            oob.getstatus(secrets.token_hex(4)), timeout, oob.StatusResponse, resend=True
        )
        return reply

    def rcon(self, command: str, timeout: float = 2.0) -> str:
        """Run a console command; returns the printed text (collected for 0.2 s after the first reply)."""
        replies: list[oob.Print] = self._query(oob.rcon(self.rcon_password, command), timeout, oob.Print, collect=0.2)
        return "".join(r.text for r in replies)
