"""What every local server process headcast starts has in common (Quake 3, Sauerbraten, NetSync):
start it with its log in a file, wait until it answers (polled with a bound, never a sleep in its
place), stop it by PID (its own shutdown signal, then SIGTERM, then SIGKILL), a crash on demand,
its private home removed on cleanup, and its own log read without sending it anything (no cost
against a per-address request limit).

A subclass defines `command()` (the argv), `probe()` (one bounded readiness query: a value once
the server answers, None while it does not yet) and sets, in its own __init__/__post_init__,
`self.port` and what `_setup(prefix)` sets; it may override `prepare()` (write config files before
each start), `env()`, `log_path`, `server_name` and `stop_signals`.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Self

READY_POLL = 0.05  # s: readiness is asked at most this often


class LocalServerError(RuntimeError):
    """The server binary is missing, exited, or did not answer within the bound."""


class ServerProcess:
    """One server process on 127.0.0.1. Use as a context manager or call start()/stop()."""

    port: int
    ready_timeout: float = 10.0
    #: Signals that ask the server to stop, in order, each given half the stop timeout; SIGKILL last.
    stop_signals: tuple[signal.Signals, ...] = (signal.SIGTERM,)
    _proc: subprocess.Popen[bytes] | None
    _log: IO[bytes] | None
    _home: Path

    def _setup(self, prefix: str) -> None:
        """A private home (a new temporary folder) and no process yet: call from __init__."""
        self._home = Path(tempfile.mkdtemp(prefix=prefix))
        self._proc = None
        self._log = None
        self.starts = 0

    # --- what a subclass says ------------------------------------------------------------------

    @property
    def server_name(self) -> str:
        """For messages: "ioq3 server", "sauerbraten server"."""
        return "server"

    def command(self) -> list[str]:
        raise NotImplementedError

    def probe(self) -> object | None:
        """One readiness query, bounded by a fraction of a second: a value once the server
        answers (wait_ready returns it), None while it does not yet."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Before each start (config files into the home)."""

    def env(self) -> dict[str, str] | None:
        """The server's environment (None: ours)."""
        return None

    # --- where it is ---------------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def home(self) -> Path:
        return self._home

    @property
    def log_path(self) -> Path:
        return self._home / "server.log"

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # --- start, stop ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Start and wait until it answers (`ready_timeout`); a server that does not is stopped
        again, never left half-started."""
        if self.running():
            raise LocalServerError(f"{self.server_name} already running")
        argv = self.command()
        self.prepare()
        self._log = open(self.log_path, "ab")
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, cwd=self._home, env=self.env()
        )
        self.starts += 1
        try:
            self.wait_ready(self.ready_timeout)
        except LocalServerError:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float) -> object:
        """Poll `probe()` until it answers (its value), the process exits or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                rc = self._proc and self._proc.returncode
                raise LocalServerError(f"{self.server_name} exited (rc {rc}); log tail:\n{self.log_tail()}")
            asked = time.monotonic()
            answer = self.probe()
            if answer is not None:
                return answer
            if time.monotonic() >= deadline:
                raise LocalServerError(
                    f"{self.server_name} did not answer within {timeout:g} s; log tail:\n{self.log_tail()}"
                )
            time.sleep(max(0.0, READY_POLL - (time.monotonic() - asked)))

    def kill(self) -> None:
        """Hard-kill (SIGKILL) by PID — simulates a crash; the port and home stay for restart()."""
        if self._proc and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(timeout=10)

    def restart(self) -> Self:
        self.kill()
        return self.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Our PID only: each of `stop_signals` in turn, then SIGKILL. Stopping twice is harmless."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            for sig in self.stop_signals:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=timeout / len(self.stop_signals))
                    break
                except subprocess.TimeoutExpired:
                    continue
            else:
                proc.kill()
                proc.wait(timeout=timeout)
        if self._log:
            self._log.close()
            self._log = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self._home, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # --- its log -------------------------------------------------------------------------------

    def log_offset(self) -> int:
        """The log's length now: `wait_for_log(..., since=offset)` looks only at what comes after."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def wait_for_log(self, pattern: str, timeout: float, since: int = 0) -> re.Match[str]:
        """Poll the server's own log until a line matches `pattern` (a regex), bounded by `timeout`.
        Sends the server nothing, so it costs nothing against its per-address request limit."""
        rx = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(self.log_path, "rb") as f:
                    f.seek(since)
                    found = rx.search(f.read().decode("latin-1"))
            except OSError:
                found = None
            if found:
                return found
            if self._proc is None or self._proc.poll() is not None:
                raise LocalServerError(f"{self.server_name} exited before its log said {pattern!r}")
            if time.monotonic() >= deadline:
                raise LocalServerError(
                    f"{self.server_name} log did not say {pattern!r} within {timeout:g} s; log tail:\n{self.log_tail()}"
                )
            time.sleep(0.02)

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"
