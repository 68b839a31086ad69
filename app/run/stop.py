"""How `headcast run`, `replay` and `demo` stop: SIGINT, SIGTERM and SIGHUP all ask for the
same clean stop, and a second SIGINT or SIGTERM ends the process at once.

What a first signal does depends on the phase:

- starting (the demo's servers, the XR session, the sinks being opened): it raises
  `Interrupted` (a KeyboardInterrupt) at once; the `finally` blocks close what was opened;
- running (the frame loop): it only sets `state.signum`; the loop ends at the next frame
  boundary (within one frame) and closes everything in order — never mid-send or mid-write;
- stopping (disconnects, the summary, the recording's end, the demo's servers): it is noted.

A later SIGINT or SIGTERM exits at once, with 128 + its number, after SIGKILLing by PID the
processes registered with `own_process` (the demo's servers). A watcher thread reads the
interpreter's signal wakeup fd, so this works even while the main thread is blocked inside a C
call, where no Python-level handler runs. A later SIGHUP is ignored: a closing terminal can
deliver it twice (the shell forwards its own, then the kernel hangs up the foreground group),
and a hang-up is news, not impatience.

A signal ignored when headcast starts (`nohup` ignores SIGHUP) stays ignored. After a SIGHUP,
stdout failing with EIO (the terminal is gone) ends the command quietly with exit 0.

Portability: the signals are looked up, not assumed (Windows' CPython has no SIGHUP and no
SIGKILL). On Windows SIGBREAK (Ctrl-Break) is a stop signal like SIGTERM, and the console's close,
log-off and shut-down events (which the C runtime would turn into a SIGBREAK and then let Windows
end the process at once) become the same clean stop through a console control handler that holds
the process, bounded, until the command has stopped. The wakeup descriptor is one end of a
`socket.socketpair()` (Windows' `signal.set_wakeup_fd` takes only a socket); an exit at once kills
the registered processes with SIGKILL where there is one, else SIGTERM (TerminateProcess there).
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

# Each looked up: Windows has SIGINT, SIGTERM and SIGBREAK; POSIX systems SIGINT, SIGTERM and SIGHUP.
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK") if hasattr(signal, n))
SIGHUP: int | None = getattr(signal, "SIGHUP", None)
SIGBREAK: int | None = getattr(signal, "SIGBREAK", None)
# What an exit at once kills with: os.kill(pid, SIGTERM) is TerminateProcess on Windows.
KILL = getattr(signal, "SIGKILL", signal.SIGTERM)
_WHY: dict[int, str] = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "stopped by SIGTERM"}
if SIGHUP is not None:
    _WHY[SIGHUP] = "stopped by SIGHUP (terminal closed)"
if SIGBREAK is not None:
    _WHY[SIGBREAK] = "stopped by SIGBREAK (Ctrl-Break, or the console closed)"
# Windows' console control events that end the process once the handler returns (wincon.h).
CONSOLE_CLOSE_EVENTS = (2, 5, 6)  # CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT
CONSOLE_CLOSE_HOLD = 4.5  # s the close handler waits for the clean stop (Windows allows ~5)


def name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def reason(signum: int) -> str:
    """The run's stop reason for a signal (the summary's `stopped`)."""
    return _WHY.get(signum, f"stopped by {name(signum)}")


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived before the run started (the phase `starting`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        return f"{name(self.signum)}: stopped before the run started"


@dataclass
class State:
    signum: int | None = None  # the first stop signal; None until one comes
    phase: str = "starting"  # starting | running | stopping
    installed: bool = False
    own: list[Callable[[], int | None]] = field(default_factory=list)


state = State()
_exit_lock = threading.Lock()


def _say(text: str) -> None:
    # os.write, not print: a handler may run while the main thread is inside a print to the
    # same stream (a re-entrant call into its buffer raises), and the watcher is another thread.
    try:
        os.write(2, f"headcast: {text}\n".encode(errors="replace"))
    except OSError:
        pass  # a hung-up terminal: nobody to tell


def own_process(pid_of: Callable[[], int | None]) -> Callable[[], None]:
    """Register a process headcast started (`pid_of` gives its PID, None when not running): an
    exit at once SIGKILLs it. Returns the function that unregisters it."""
    state.own.append(pid_of)
    return lambda: state.own.remove(pid_of) if pid_of in state.own else None


def _exit_now(signum: int) -> None:
    if not _exit_lock.acquire(blocking=False):
        return  # the other thread is already on it
    killed = []
    for pid_of in list(state.own):
        try:
            pid = pid_of()
            if pid:
                os.kill(pid, KILL)
                killed.append(str(pid))
        except Exception:  # noqa: BLE001 - a process already gone; keep going, we are leaving
            pass
    _say(
        f"{name(signum)} again: exiting at once without cleanup — servers were not told we left, "
        "a recording reads as cut short"
        + (f"; killed the local servers headcast started (pid {', '.join(killed)})" if killed else "")
    )
    os._exit(128 + signum)


def _handler(signum: int, frame: object) -> None:
    if state.signum is not None:
        if signum != SIGHUP:
            _exit_now(signum)  # the watcher thread has usually done it already
        return
    state.signum = signum
    again = "Ctrl-C again exits at once" if signum == signal.SIGINT else "a second SIGTERM or Ctrl-C exits at once"
    if state.phase == "starting":
        _say(f"{name(signum)}: stopping before the run started, closing what was opened ({again})")
        raise Interrupted(signum)
    if state.phase == "running":
        _say(f"{name(signum)}: stopping cleanly — disconnecting, then the summary ({again})")
    else:
        _say(f"{name(signum)}: already stopping ({again})")


def _watch(sock: socket.socket) -> None:
    seen = 0
    while True:
        try:
            data = sock.recv(64)
        except OSError:
            return
        if not data:
            return  # uninstall closed the pipe
        for signum in data:
            if signum not in SIGNALS:
                continue
            seen += 1
            if seen > 1 and signum != SIGHUP:
                _exit_now(signum)


@contextmanager
def running() -> Iterator[None]:
    """The frame loop's span: signals request a stop at the next frame instead of raising."""
    state.phase = "running"
    try:
        yield
    finally:
        state.phase = "stopping"


def stopping() -> None:
    """From here on a first signal is noted, never raised: cleanup runs to its end."""
    state.phase = "stopping"


_stopped = threading.Event()  # set when handled() has ended (the console close handler waits for it)
_callbacks: list = []  # the console handlers made (ctypes callbacks must outlive every call)


def on_console_event(event: int, hold: float = CONSOLE_CLOSE_HOLD) -> bool:
    """Windows' console control handler (installed by handled() where the console API exists):
    a close, log-off or shut-down event asks for the clean stop as SIGBREAK would (SIGTERM where
    there is no SIGBREAK) and holds the process until the command has stopped, at most `hold` s
    (Windows ends the process as soon as the handler returns). Ctrl-C and Ctrl-Break pass on to
    the C runtime, which raises SIGINT and SIGBREAK. Returns whether the event was handled."""
    if event not in CONSOLE_CLOSE_EVENTS:
        return False
    if state.installed:
        import _thread

        _thread.interrupt_main(signal.Signals(SIGBREAK) if SIGBREAK is not None else signal.SIGTERM)
        _stopped.wait(hold)
    return True


def _console_handler() -> Callable[[], None] | None:
    """Install on_console_event with SetConsoleCtrlHandler (Windows only; None elsewhere or when
    the call fails); returns the function that removes it."""
    try:
        import ctypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]  # (Windows-only stub)
        prototype = ctypes.WINFUNCTYPE(ctypes.c_int, ctypes.c_uint)  # type: ignore[attr-defined]  # (Windows-only)
    except (ImportError, AttributeError, OSError):
        return None  # not Windows
    callback = prototype(lambda event: 1 if on_console_event(event) else 0)
    if not kernel32.SetConsoleCtrlHandler(callback, 1):
        return None  # no console (a service, pythonw): nothing to close
    _callbacks.append(callback)  # kept for good: a handler thread may still be in it after removal
    return lambda: kernel32.SetConsoleCtrlHandler(callback, 0) and None


@contextmanager
def handled() -> Iterator[State]:
    """Install the handlers for a command's lifetime (main thread only); restore them after."""
    if state.installed or threading.current_thread() is not threading.main_thread():
        yield state  # nested, or a thread (signal handlers belong to the main thread): as is
        return
    previous = {}
    for sig in SIGNALS:
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN:
            continue  # nohup's choice (SIGHUP) stands
        previous[sig] = old
        signal.signal(sig, _handler)
    # A socket pair, not a pipe: Windows' set_wakeup_fd takes only a socket (both ends are
    # non-inheritable, as every descriptor Python makes).
    r, w = socket.socketpair()
    w.setblocking(False)
    old_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(r,), name="headcast-stop-signals", daemon=True)
    watcher.start()
    _stopped.clear()
    state.signum, state.phase, state.installed = None, "starting", True  # a loop run before may have left "stopping"
    remove_console_handler = _console_handler()
    try:
        yield state
    except OSError as e:
        # A closed terminal (SIGHUP) takes stdout with it: the summary has nowhere to go, which
        # is no failure of a run that stopped cleanly (disconnects and the recording are done).
        if e.errno != errno.EIO or SIGHUP is None or state.signum != SIGHUP:
            raise
        sys.stdout = None  # the interpreter's final flush would fail too
        raise SystemExit(0) from None
    finally:
        if remove_console_handler is not None:
            remove_console_handler()
        signal.set_wakeup_fd(old_fd)
        for sig, old in previous.items():
            signal.signal(sig, old)
        w.close()  # the watcher reads EOF and ends
        watcher.join(timeout=1)
        r.close()
        state.signum, state.phase, state.installed = None, "starting", False
        state.own.clear()
        _stopped.set()  # a console close handler waiting for this stop lets Windows end the process
