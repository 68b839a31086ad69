"""Run styly-netsync-server with every listening socket on 127.0.0.1 (and its true version).

The server has no host option: ZeroMQ binds `tcp://*`, the REST bridge `0.0.0.0`, discovery
`""` (reference §7). This script rewrites those binds before the server module is imported,
then hands over to the server's own `main()` with the remaining arguments.

It runs under the *server's* interpreter (any styly-netsync-server version, any venv), so it
imports nothing from headcast: `python loopback_launcher.py --config FILE --no-server-discovery`.
"""
import socket
import sys

LOOPBACK = "127.0.0.1"
_ANY_HOSTS = ("", "0.0.0.0", "*")


def confine_to_loopback() -> None:
    import zmq

    zmq_bind = zmq.Socket.bind

    def bind_loopback(self, addr):
        for prefix in ("tcp://*:", "tcp://0.0.0.0:"):
            if addr.startswith(prefix):
                addr = f"tcp://{LOOPBACK}:" + addr[len(prefix):]
        return zmq_bind(self, addr)

    zmq.Socket.bind = bind_loopback

    sock_bind = socket.socket.bind

    def sock_bind_loopback(self, address):
        if self.family == socket.AF_INET and isinstance(address, tuple) and address[0] in _ANY_HOSTS:
            address = (LOOPBACK,) + tuple(address[1:])
        return sock_bind(self, address)

    socket.socket.bind = sock_bind_loopback


def report_installed_version() -> None:
    """The server takes its version (sent in every device-ID mapping) from the first
    pyproject.toml above its own file when its dist lists files outside site-packages, as a
    console script does — so a venv inside a project reports that project's version. Use the
    installed distribution's version instead."""
    import importlib.metadata

    from styly_netsync import server

    version = importlib.metadata.version("styly-netsync-server")
    server.get_version = lambda: version


def main() -> None:
    confine_to_loopback()
    report_installed_version()
    from styly_netsync.server import main as server_main

    sys.argv = ["styly-netsync-server"] + sys.argv[1:]
    server_main()


if __name__ == "__main__":
    main()
