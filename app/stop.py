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
"""
from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_WHY = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "stopped by SIGTERM",
        signal.SIGHUP: "stopped by SIGHUP (terminal closed)"}


def name(signum: int) -> str:
    return signal.Signals(signum).name


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
    signum: int | None = None        # the first stop signal; None until one comes
    phase: str = "starting"          # starting | running | stopping
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
                os.kill(pid, signal.SIGKILL)
                killed.append(str(pid))
        except Exception:  # noqa: BLE001 - a process already gone; keep going, we are leaving
            pass
    _say(f"{name(signum)} again: exiting at once without cleanup — servers were not told we left, "
         "a recording reads as cut short"
         + (f"; killed the local servers headcast started (pid {', '.join(killed)})" if killed else ""))
    os._exit(128 + signum)


def _handler(signum: int, frame: object) -> None:
    if state.signum is not None:
        if signum != signal.SIGHUP:
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


def _watch(fd: int) -> None:
    seen = 0
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return  # uninstall closed the pipe
        for signum in data:
            if signum not in SIGNALS:
                continue
            seen += 1
            if seen > 1 and signum != signal.SIGHUP:
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
    r, w = os.pipe2(os.O_CLOEXEC)
    os.set_blocking(w, False)
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(r,), name="headcast-stop-signals", daemon=True)
    watcher.start()
    state.signum, state.phase, state.installed = None, "starting", True  # a loop run before may have left "stopping"
    try:
        yield state
    except OSError as e:
        # A closed terminal (SIGHUP) takes stdout with it: the summary has nowhere to go, which
        # is no failure of a run that stopped cleanly (disconnects and the recording are done).
        if e.errno != errno.EIO or state.signum != signal.SIGHUP:
            raise
        sys.stdout = None  # type: ignore[assignment]  # the interpreter's final flush would fail too
        raise SystemExit(0) from None
    finally:
        signal.set_wakeup_fd(old_fd)
        for sig, old in previous.items():
            signal.signal(sig, old)
        os.close(w)  # the watcher reads EOF and ends
        watcher.join(timeout=1)
        os.close(r)
        state.signum, state.phase, state.installed = None, "starting", False
        state.own.clear()
