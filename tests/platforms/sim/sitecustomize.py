"""A simulated Windows or macOS *standard library* for one Python process (tests/platforms).

Put this folder on PYTHONPATH and set HEADCAST_SIM_PLATFORM to `windows` or `macos`: before any
headcast code is imported, the interpreter's site step runs this, which removes from the
standard library what that system's CPython (3.11, the oldest headcast supports) does not have,
and makes a few calls behave as they do there. sys.platform stays "linux": headcast must find
these differences by looking for the feature, not the platform name. The variable is removed
from the environment again, so processes this one starts (servers, Locust) run unsimulated.

What each simulation does (the tier's tests name and check these lists):

Windows
- signal: only SIGINT, SIGTERM, SIGBREAK (21, as on Windows), SIGABRT, SIGFPE, SIGILL, SIGSEGV
  remain (signal.Signals rebuilt with them); no alarm/setitimer/pthread_sigmask/sigwait...;
  set_wakeup_fd takes only a socket.
- os: no pipe2, fdatasync, fchmod (3.13 added it), killpg, getpgid, setpgid, setsid, fork,
  getuid & co., get_blocking/set_blocking (3.12 added them for pipes), O_CLOEXEC, O_DIRECTORY,
  O_NONBLOCK, O_NOFOLLOW, sync, statvfs, getloadavg, sched_*, nice, mkfifo... (not uname: numpy
  reads it on Linux, as it would not on Windows); os.read,
  os.write and os.close refuse a socket (a socket is not a C runtime descriptor there).
- select: no poll, epoll (selectors.DefaultSelector is SelectSelector); select() takes only
  sockets.
- modules absent: resource, fcntl, termios, pwd, grp, tty, pty, syslog, crypt, spwd, nis.
- socket: socketpair() is a connected pair of TCP sockets on 127.0.0.1, as Windows' is; recv,
  recvfrom and their _into forms raise ICMP port unreachable as ConnectionResetError
  (WSAECONNRESET), not ConnectionRefusedError. (send keeps Linux's ECONNREFUSED: Windows would
  report the error on the next recv only.)
- subprocess.Popen.kill still sends SIGKILL (the stand-in for Windows' TerminateProcess), since
  this is Linux's subprocess underneath.

macOS
- os: no pipe2, fdatasync (CPython leaves it out on macOS), memfd_create, eventfd, splice,
  copy_file_range, posix_fadvise, posix_fallocate, sched_getaffinity/setaffinity, O_DIRECT,
  O_PATH, O_TMPFILE, O_NOATIME.
- select: no epoll (selectors.DefaultSelector is PollSelector here: kqueue cannot be had).
- signal: no SIGRTMIN/SIGRTMAX, SIGPOLL, SIGPWR, SIGSTKFLT, SIGCLD, sigtimedwait, sigwaitinfo.
- socket: 127.0.0.2 and up cannot be bound (lo0 has only 127.0.0.1): EADDRNOTAVAIL.
- pyopenxr: `import xr` raises NotImplementedError, as pyopenxr's loader lookup does on macOS
  (it ships loaders for Windows, Linux and Android only): the network side (probe, replay to
  servers, swarm) must work without it, and `run` must say why it cannot.
"""

from __future__ import annotations

import os

PLATFORM = os.environ.pop("HEADCAST_SIM_PLATFORM", "")

WINDOWS_SIGNALS = {"SIGINT": 2, "SIGILL": 4, "SIGABRT": 6, "SIGFPE": 8, "SIGSEGV": 11, "SIGTERM": 15, "SIGBREAK": 21}
WINDOWS_SIGNAL_FUNCTIONS_ABSENT = (
    "alarm",
    "pause",
    "setitimer",
    "getitimer",
    "siginterrupt",
    "pthread_kill",
    "pthread_sigmask",
    "sigpending",
    "sigwait",
    "sigwaitinfo",
    "sigtimedwait",
    "pidfd_send_signal",
    "ITIMER_REAL",
    "ITIMER_VIRTUAL",
    "ITIMER_PROF",
    "SIG_BLOCK",
    "SIG_UNBLOCK",
    "SIG_SETMASK",
    "ItimerError",
    "Sigmasks",
)
WINDOWS_OS_ABSENT = (
    "pipe2",
    "fdatasync",
    "fchmod",
    "killpg",
    "getpgid",
    "setpgid",
    "setsid",
    "getsid",
    "getpgrp",
    "setpgrp",
    "fork",
    "forkpty",
    "openpty",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "setuid",
    "setgid",
    "getresuid",
    "getresgid",
    "initgroups",
    "get_blocking",
    "set_blocking",
    "O_CLOEXEC",
    "O_DIRECTORY",
    "O_NONBLOCK",
    "O_NOFOLLOW",
    "O_NOCTTY",
    "O_DSYNC",
    "O_SYNC",
    "O_ASYNC",
    "O_DIRECT",
    "O_PATH",
    "O_TMPFILE",
    "O_NOATIME",
    "sync",
    "statvfs",
    "fstatvfs",
    "getloadavg",
    "sched_getaffinity",
    "sched_setaffinity",
    "sched_yield",
    "nice",
    "getpriority",
    "setpriority",
    "mkfifo",
    "mknod",
    "pread",
    "pwrite",
    "sendfile",
    "memfd_create",
    "eventfd",
    "splice",
    "copy_file_range",
    "posix_fadvise",
    "posix_fallocate",
    "posix_spawn",
    "posix_spawnp",
    "chown",
    "fchown",
    "lchown",
    "ttyname",
    "ctermid",
    "wait3",
    "wait4",
    "WNOHANG",
    "pidfd_open",
)
WINDOWS_SELECT_ABSENT = (
    "poll",
    "epoll",
    "devpoll",
    "kqueue",
    "POLLIN",
    "POLLOUT",
    "POLLERR",
    "POLLHUP",
    "POLLNVAL",
    "POLLPRI",
    "EPOLLIN",
    "EPOLLOUT",
    "EPOLLERR",
    "EPOLLHUP",
    "EPOLLET",
)
WINDOWS_MODULES_ABSENT = ("resource", "fcntl", "termios", "pwd", "grp", "tty", "pty", "syslog", "crypt", "spwd", "nis")

MACOS_OS_ABSENT = (
    "pipe2",
    "fdatasync",
    "memfd_create",
    "eventfd",
    "splice",
    "copy_file_range",
    "posix_fadvise",
    "posix_fallocate",
    "sched_getaffinity",
    "sched_setaffinity",
    "O_DIRECT",
    "O_PATH",
    "O_TMPFILE",
    "O_NOATIME",
    "pidfd_open",
)
MACOS_SELECT_ABSENT = ("epoll", "EPOLLIN", "EPOLLOUT", "EPOLLERR", "EPOLLHUP", "EPOLLET")
MACOS_SIGNAL_ABSENT = (
    "SIGRTMIN",
    "SIGRTMAX",
    "SIGPOLL",
    "SIGPWR",
    "SIGSTKFLT",
    "SIGCLD",
    "sigtimedwait",
    "sigwaitinfo",
)


def _remove(module, names) -> None:
    for name in names:
        if hasattr(module, name):
            delattr(module, name)


def _is_socket(fd) -> bool:
    import stat

    try:
        fd = fd if isinstance(fd, int) else fd.fileno()
        return stat.S_ISSOCK(_real_fstat(fd).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


_real_fstat = os.fstat


def _windows() -> None:
    # What the standard library binds at import time must see the real module first.
    import enum
    import errno
    import select
    import selectors
    import signal
    import socket
    import subprocess
    import sys

    # --- signal ---
    signals = enum.IntEnum("Signals", WINDOWS_SIGNALS, module="signal")
    for name in [n for n in dir(signal) if n.startswith("SIG") and not n.startswith("SIG_")]:
        delattr(signal, name)
    signal.Signals = signals
    for member in signals:
        setattr(signal, member.name, member)
    _remove(signal, WINDOWS_SIGNAL_FUNCTIONS_ABSENT)
    signal.valid_signals = lambda: set(signals)
    real_wakeup = signal.set_wakeup_fd

    def set_wakeup_fd(fd, *, warn_on_full_buffer=True):
        if fd != -1 and not _is_socket(fd):
            raise ValueError(f"the fd {fd} must be a socket (simulated Windows)")
        return real_wakeup(fd, warn_on_full_buffer=warn_on_full_buffer)

    signal.set_wakeup_fd = set_wakeup_fd
    subprocess.Popen.kill = lambda self: self.send_signal(9)  # Windows: TerminateProcess

    # --- os ---
    _remove(os, WINDOWS_OS_ABSENT)
    # subprocess decided at its import to use os.posix_spawn where it can (Python 3.13 on Linux
    # does for plain calls): with posix_spawn gone it must take its fork/exec path, as it would
    # have decided had os lacked it from the start (Windows' subprocess has neither).
    if hasattr(subprocess, "_USE_POSIX_SPAWN"):
        subprocess._USE_POSIX_SPAWN = False
    for name in ("read", "write", "close"):
        real = getattr(os, name)

        def refuse_sockets(fd, *args, _real=real, _name=name):
            if _is_socket(fd):
                raise OSError(errno.EBADF, f"os.{_name} on a socket (simulated Windows: not a C runtime descriptor)")
            return _real(fd, *args)

        setattr(os, name, refuse_sockets)

    # --- select / selectors ---
    _remove(select, WINDOWS_SELECT_ABSENT)
    real_select = select.select

    def select_sockets(rlist, wlist, xlist, *timeout):
        for obj in (*rlist, *wlist, *xlist):
            if not _is_socket(obj):
                raise OSError(errno.ENOTSOCK, "select() on something that is not a socket (simulated Windows)")
        return real_select(rlist, wlist, xlist, *timeout)

    select.select = select_sockets
    _remove(selectors, ("PollSelector", "EpollSelector", "DevpollSelector", "KqueueSelector"))
    selectors.DefaultSelector = selectors.SelectSelector

    # --- modules ---
    for name in WINDOWS_MODULES_ABSENT:
        sys.modules[name] = None  # import raises ModuleNotFoundError

    # --- socket ---
    def socketpair(family=socket.AF_INET, type=socket.SOCK_STREAM, proto=0):
        with socket.socket(family, type, proto) as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            a = socket.socket(family, type, proto)
            try:
                a.connect(listener.getsockname())
                b, _ = listener.accept()
            except BaseException:
                a.close()
                raise
        return a, b

    socket.socketpair = socketpair

    def reset_instead_of_refused(real):
        def call(self, *args):
            try:
                return real(self, *args)
            except ConnectionRefusedError:
                raise ConnectionResetError(
                    errno.ECONNRESET,
                    "An existing connection was forcibly closed by the remote host (simulated WSAECONNRESET)",
                ) from None

        return call

    for name in ("recv", "recvfrom", "recv_into", "recvfrom_into"):
        setattr(socket.socket, name, reset_instead_of_refused(getattr(socket.socket, name)))


def _macos() -> None:
    import errno
    import ipaddress
    import select
    import selectors
    import signal
    import socket

    _remove(os, MACOS_OS_ABSENT)
    _remove(select, MACOS_SELECT_ABSENT)
    _remove(selectors, ("EpollSelector", "DevpollSelector"))
    selectors.DefaultSelector = selectors.PollSelector
    _remove(signal, MACOS_SIGNAL_ABSENT)
    real_bind = socket.socket.bind

    def bind(self, address):
        if self.family == socket.AF_INET and isinstance(address, tuple) and address[0] not in ("", "127.0.0.1"):
            try:
                loopback = ipaddress.ip_address(address[0]).is_loopback
            except ValueError:
                loopback = False
            if loopback:
                raise OSError(errno.EADDRNOTAVAIL, "Can't assign requested address (simulated macOS lo0)")
        return real_bind(self, address)

    socket.socket.bind = bind

    class NoOpenXRLoader:
        """pyopenxr on macOS: its import fails finding a loader for the platform."""

        def find_spec(self, name, path=None, target=None):
            if name == "xr" or name.startswith("xr."):
                raise NotImplementedError(
                    "platform.system() = 'Darwin': pyopenxr has no OpenXR loader for it (simulated macOS)"
                )
            return None

    import sys

    sys.meta_path.insert(0, NoOpenXRLoader())


if PLATFORM == "windows":
    _windows()
elif PLATFORM == "macos":
    _macos()
elif PLATFORM:
    raise SystemExit(f"HEADCAST_SIM_PLATFORM={PLATFORM!r}: not windows or macos")
