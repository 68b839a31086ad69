"""Run styly-netsync-server with every socket confined to 127.0.0.1 (and its true version).

The server has no host option: ZeroMQ binds `tcp://*`, the REST bridge `0.0.0.0`, discovery
`""` (docs/protocols/netsync.md#transport), and with discovery on it also sends a LAN broadcast probe at start-up
(`_probe_existing_discovery_server`, every release from 0.10.4 to 0.17.5). This script rewrites
the binds to loopback before the server module is imported, refuses any datagram or connection
from the server process to a non-loopback address (so even a server started with discovery on
cannot probe the LAN), then hands over to the server's own `main()` with the remaining arguments.
LocalNetSyncServer also always passes `--no-server-discovery`, which skips the probe and the UDP
and TCP discovery listeners (port 9999, 49999 from 0.17) altogether.

It runs under the *server's* interpreter (any styly-netsync-server version, any venv, or the
project venv with PYTHONPATH=build/netsync/<version>), so it imports nothing from headcast:
`python loopback_launcher.py --config FILE --no-server-discovery`.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

LOOPBACK = "127.0.0.1"
LOOPBACK6 = "::1"
_ANY_HOSTS = ("", "0.0.0.0", "*", "<any>")
_ANY_HOSTS6 = ("", "::", "*")


def _is_loopback(host: object) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False  # "<broadcast>", host names: never resolved, refused


def confine_to_loopback() -> None:
    import zmq

    zmq_bind = zmq.Socket.bind

    def bind_loopback(self: zmq.Socket[bytes], addr: str) -> Any:
        for prefix in ("tcp://*:", "tcp://0.0.0.0:"):
            if addr.startswith(prefix):
                addr = f"tcp://{LOOPBACK}:" + addr[len(prefix) :]
        if addr.startswith("tcp://[::]:"):
            addr = f"tcp://[{LOOPBACK6}]:" + addr[len("tcp://[::]:") :]
        return zmq_bind(self, addr)

    # Patched on the classes (setattr: a type checker rightly refuses assigning to a method).
    setattr(zmq.Socket, "bind", bind_loopback)

    inet = (socket.AF_INET, socket.AF_INET6)
    sock_bind = socket.socket.bind
    sock_connect = socket.socket.connect
    sock_connect_ex = socket.socket.connect_ex
    sock_sendto = socket.socket.sendto

    def sock_bind_loopback(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple):
            if self.family == socket.AF_INET and address[0] in _ANY_HOSTS:
                address = (LOOPBACK,) + tuple(address[1:])
            elif self.family == socket.AF_INET6 and address[0] in _ANY_HOSTS6:
                address = (LOOPBACK6,) + tuple(address[1:])
        return sock_bind(self, address)

    def refuse_beyond_loopback(self: socket.socket, address: Any) -> None:
        if self.family in inet and isinstance(address, tuple) and not _is_loopback(address[0]):
            raise PermissionError(f"loopback_launcher: {address[0]}:{address[1]} is beyond loopback")

    def connect_loopback(self: socket.socket, address: Any) -> None:
        refuse_beyond_loopback(self, address)
        return sock_connect(self, address)

    def connect_ex_loopback(self: socket.socket, address: Any) -> int:
        refuse_beyond_loopback(self, address)
        return sock_connect_ex(self, address)

    def sendto_loopback(self: socket.socket, data: Any, *args: Any) -> int:
        refuse_beyond_loopback(self, args[-1])  # sendto(data, address) / sendto(data, flags, address)
        return sock_sendto(self, data, *args)

    setattr(socket.socket, "bind", sock_bind_loopback)
    setattr(socket.socket, "connect", connect_loopback)
    setattr(socket.socket, "connect_ex", connect_ex_loopback)
    setattr(socket.socket, "sendto", sendto_loopback)


def installed_version() -> str:
    """The version in the dist-info next to the `styly_netsync` package actually imported (with
    PYTHONPATH=build/netsync/<v> that is <v>, whatever else site-packages holds)."""
    import importlib.metadata
    import re
    from pathlib import Path

    import styly_netsync

    home = str(Path(styly_netsync.__file__).resolve().parent.parent)
    for dist in importlib.metadata.distributions(path=[home]):
        if re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower() == "styly-netsync-server":
            return dist.version
    return importlib.metadata.version("styly-netsync-server")


def report_installed_version() -> None:
    """The server takes its version (sent in every device-ID mapping) from the first
    pyproject.toml above its own file when its dist's first listed files do not contain
    "site-packages" in their path — true of a `pip --target` folder such as build/netsync/<v>,
    whose parent checkout's pyproject.toml is headcast's (it would report 0.1.0). Use the
    installed distribution's version instead."""
    from styly_netsync import server

    version = installed_version()
    server.get_version = lambda: version


def main() -> None:
    confine_to_loopback()
    report_installed_version()
    from styly_netsync.server import main as server_main

    sys.argv = ["styly-netsync-server"] + sys.argv[1:]
    server_main()


if __name__ == "__main__":
    main()
