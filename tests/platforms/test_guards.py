"""One test per portability guard (issue 22): each POSIX-only call removed in this process (as
Windows' or macOS' CPython lacks it) and the portable path taken. The CLI under the whole
simulation is tests/platforms/test_simulated_platforms.py."""

from __future__ import annotations

import errno
import os
import select
import socket
import subprocess
import sys
import time

import pytest

from support import free_port

pytestmark = pytest.mark.platform_sim


# --- netcode/icmp.py: ICMP errors on a connected UDP socket ---------------------------------------


def test_port_unreachable_is_refused_on_posix_and_reset_on_windows():
    from headcast.netcode.icmp import icmp_error, port_unreachable

    assert port_unreachable(ConnectionRefusedError(errno.ECONNREFUSED, "refused"))
    assert port_unreachable(ConnectionResetError(errno.ECONNRESET, "reset"))  # Windows' WSAECONNRESET
    assert icmp_error(OSError(errno.EHOSTUNREACH, "no route")) and icmp_error(OSError(errno.ENETUNREACH, "net"))
    windows_host_unreachable = OSError(errno.EIO, "x")
    windows_host_unreachable.winerror = 10065  # what OSError carries on Windows
    assert icmp_error(windows_host_unreachable)
    assert not icmp_error(OSError(errno.EBADF, "bad")) and not port_unreachable(TimeoutError())


# --- netcode/q3/transport.py: select.select where there is no select.poll --------------------------


@pytest.mark.parametrize("recv_error", ["refused", "reset"])
def test_q3_client_without_poll_counts_the_closed_port_and_keeps_going(monkeypatch, recv_error):
    """A real closed port on 127.0.0.1 (the kernel's ICMP port unreachable): with select.poll
    gone the client waits with select.select, and the error (Linux: ECONNREFUSED; Windows:
    ConnectionResetError, simulated by re-raising it so) is counted, not raised."""
    from headcast.netcode.q3 import transport

    monkeypatch.delattr(select, "poll")
    if recv_error == "reset":
        real = socket.socket.recv

        def recv(self, *args):
            try:
                return real(self, *args)
            except ConnectionRefusedError:
                raise ConnectionResetError(errno.ECONNRESET, "simulated WSAECONNRESET") from None

        monkeypatch.setattr(socket.socket, "recv", recv)
    client = transport.Q3Client(("127.0.0.1", free_port(socket.SOCK_DGRAM)))
    try:
        assert isinstance(client._ready, transport._SelectReady)
        now = time.perf_counter()
        client.start(now)
        deadline = now + 5
        while client.socket_errors == 0 and time.perf_counter() < deadline:
            client.wait(time.perf_counter(), time.perf_counter() + 0.2)
            client.poll(time.perf_counter())
        assert client.socket_errors >= 1
    finally:
        client.close(time.perf_counter())


def test_select_ready_reports_a_datagram_and_times_out():
    from headcast.netcode.q3.transport import _SelectReady

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b:
        a.bind(("127.0.0.1", 0))
        ready = _SelectReady()
        ready.register(a)
        t = time.perf_counter()
        assert not ready.poll(50) and time.perf_counter() - t >= 0.04
        b.sendto(b"x", a.getsockname())
        assert ready.poll(1000) and ready.poll(0)  # still unread
        a.recv(16)
        assert not ready.poll(0)


# --- xr/trace.py: the writer without fdatasync, O_CLOEXEC, O_DIRECTORY ------------------------------


def test_trace_writer_without_fdatasync_cloexec_or_directory(monkeypatch, tmp_path):
    from headcast.xr.frame import Pose, TrackingFrame
    from headcast.xr.trace import TraceWriter, read_trace

    for name in ("fdatasync", "O_CLOEXEC", "O_DIRECTORY"):
        monkeypatch.delattr(os, name)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    frames = [
        TrackingFrame(i, 1000 + i, head=Pose((0.0, 1.7, -0.1 * i), position_valid=True, orientation_valid=True))
        for i in range(5)
    ]
    with TraceWriter(tmp_path / "t.trace", {"source": "guards"}) as w:
        for f in frames:
            w.write(f)
    assert len(synced) == 2  # the header and the end record: fsync stands in for fdatasync; no folder sync
    trace = read_trace(tmp_path / "t.trace")
    assert trace.frames == tuple(frames) and trace.ends_early is None


# --- app/run/stop.py: signals looked up, a socket pair for the wakeup ------------------------------------

STOP_WITHOUT_SIGHUP = """
import os, signal, socket
del signal.SIGHUP, signal.SIGKILL
del os.pipe2
real = signal.set_wakeup_fd
kinds = []
def wakeup(fd, **kw):
    if fd != -1:
        kinds.append(socket.socket(fileno=os.dup(fd)).type.name)
    return real(fd, **kw)
signal.set_wakeup_fd = wakeup
from headcast.app.run import stop
print(sorted(signal.Signals(s).name for s in stop.SIGNALS), stop.KILL == signal.SIGTERM, flush=True)
try:
    with stop.handled():
        os.kill(os.getpid(), signal.SIGTERM)
        import time; time.sleep(5)  # the handler raises at once
except stop.Interrupted as e:
    print(stop.reason(e.signum), kinds, flush=True)
"""


def test_stop_without_sighup_sigkill_or_pipe2():
    r = subprocess.run([sys.executable, "-c", STOP_WITHOUT_SIGHUP], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["['SIGINT', 'SIGTERM'] True", "stopped by SIGTERM ['SOCK_STREAM']"], r.stdout


def test_console_events_other_than_close_pass_on_to_the_c_runtime():
    from headcast.app.run import stop

    assert stop.on_console_event(0) is False and stop.on_console_event(1) is False  # Ctrl-C, Ctrl-Break
    t = time.monotonic()
    assert stop.on_console_event(2, hold=5) is True  # no command running: nothing to wait for
    assert time.monotonic() - t < 1
    assert stop._console_handler() is None  # no Windows console API here


# --- app/swarm: resource, fchmod, fork, 127.0.0.2+, process groups ---------------------------------


def test_fd_limit_without_the_resource_module(monkeypatch):
    from headcast.app.swarm.cli import raise_fd_limit

    monkeypatch.setitem(sys.modules, "resource", None)
    raise_fd_limit({"netsync": 5000})  # Windows: no limit of this kind, nothing to raise, no error


def test_report_written_without_fchmod(monkeypatch, tmp_path):
    from headcast.app.swarm.report import atomic_write

    monkeypatch.delattr(os, "fchmod")
    path = atomic_write(tmp_path / "swarm.json", "{}")
    assert path.read_text() == "{}" and [p.name for p in tmp_path.iterdir()] == ["swarm.json"]


def test_source_addresses_fall_back_to_127_0_0_1_where_unbindable(monkeypatch):
    from headcast.app.swarm import players

    players.bindable.cache_clear()
    assert players.source_address(0, "127.0.0.1") == "127.0.0.2" and players.loopback_note("127.0.0.1", 3) is None
    assert players.source_address(0, "192.0.2.1") is None  # not loopback: the kernel's choice anyway
    real_bind = socket.socket.bind

    def macos_bind(self, address):
        if address[0].startswith("127.") and address[0] != "127.0.0.1":
            raise OSError(errno.EADDRNOTAVAIL, "Can't assign requested address")
        return real_bind(self, address)

    monkeypatch.setattr(socket.socket, "bind", macos_bind)
    players.bindable.cache_clear()
    try:
        assert [players.source_address(i, "127.0.0.1") for i in range(3)] == [None, None, None]
        note = players.loopback_note("127.0.0.1", 3)
        assert note.startswith("3 of 3 players send from 127.0.0.1") and "sudo ifconfig lo0 alias" in note
    finally:
        players.bindable.cache_clear()


def test_select_limit_only_where_select_is_the_only_selector(monkeypatch):
    import selectors

    from headcast.app.errors import UsageError
    from headcast.app.swarm.cli import check_select_limit

    check_select_limit({"netsync": 5000, "q3": 5000})  # epoll here: no limit of that kind
    monkeypatch.setattr(selectors, "DefaultSelector", selectors.SelectSelector)
    check_select_limit({"netsync": 170})  # 510 sockets
    with pytest.raises(UsageError, match="at most 170 players per protocol here"):
        check_select_limit({"netsync": 171})


def test_locust_group_per_platform(monkeypatch):
    import signal

    from headcast.app.swarm import locust_run

    assert locust_run._own_group() == ({"process_group": 0}, signal.SIGTERM)
    monkeypatch.delattr(os, "setpgid")
    assert locust_run._own_group() == ({}, signal.SIGTERM)  # neither kind of group: signal the process
    monkeypatch.setattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200, raising=False)
    monkeypatch.setattr(signal, "CTRL_BREAK_EVENT", 1, raising=False)
    assert locust_run._own_group() == ({"creationflags": 0x200}, 1)


def test_locust_processes_refused_without_fork(monkeypatch):
    from headcast.app.commands import cli
    from headcast.app.errors import UsageError
    from headcast.app.swarm.cli import cmd_swarm

    args = cli.build_parser().parse_args(["swarm", "2", "--q3", "127.0.0.1:1", "--locust", "2"])
    monkeypatch.delattr(os, "fork")
    with pytest.raises(UsageError, match=r"--locust 2: Locust's worker processes need fork\(\)"):
        cmd_swarm(args)


# --- app/mirror/window.py: a display on Windows and macOS ---------------------------------------------------


@pytest.mark.parametrize(
    "platform, env, expected",
    [
        ("win32", {}, True),
        ("darwin", {}, True),
        ("linux", {}, False),
        ("linux", {"WAYLAND_DISPLAY": "wayland-0"}, True),
    ],
)
def test_display_available(monkeypatch, platform, env, expected):
    from headcast.app.mirror import window as mirror

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(sys, "platform", platform)
    assert mirror.display_available() is expected


# --- app/run/console.py: a Windows console takes escape sequences once VT processing is on -------------


class _FakeKernel32:
    def __init__(self, mode: int, settable: bool) -> None:
        self.mode, self.settable, self.set_to = mode, settable, None

    def GetConsoleMode(self, handle, ref):  # noqa: N802 - the Win32 name
        ref._obj.value = self.mode
        return 1

    def SetConsoleMode(self, handle, mode):  # noqa: N802
        self.set_to = mode
        return 1 if self.settable else 0


@pytest.mark.parametrize("mode, settable, expected", [(0x3, True, "tty"), (0x3, False, "plain"), (0x7, False, "tty")])
def test_windows_console_gets_vt_processing_or_a_plain_status(monkeypatch, mode, settable, expected):
    import ctypes
    import types

    from headcast.app.run.console import mode_for

    class Tty:
        def isatty(self):
            return True

        def fileno(self):
            return 1

    kernel32 = _FakeKernel32(mode, settable)
    monkeypatch.setattr(ctypes, "WinDLL", lambda name, **kw: kernel32, raising=False)
    monkeypatch.setitem(sys.modules, "msvcrt", types.SimpleNamespace(get_osfhandle=lambda fd: 1000 + fd))
    assert mode_for(False, Tty(), "") == expected
    assert kernel32.set_to == (None if mode & 4 else mode | 4)
