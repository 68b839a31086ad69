"""What every local server process headcast starts has in common (Quake 3 and Sauerbraten):
stop by PID (SIGTERM, then SIGKILL), a crash on demand, its private home removed on cleanup, and
its own log read without sending it anything (no cost against a per-address request limit).

A subclass sets `_proc` (the Popen or None), `_log` (the open log file or None), `_home` (its
private folder), `log_path`, `server_name` (for messages) and defines `start()`.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Self


class LocalServerError(RuntimeError):
    """The server binary is missing, exited, or did not answer within the bound."""


class ServerProcess:
    @property
    def server_name(self) -> str:
        """For messages: "ioq3 server", "sauerbraten server"."""
        return "server"

    # Set by the subclass (see the module's docstring).
    _proc: subprocess.Popen[bytes] | None
    _log: IO[bytes] | None
    _home: Path

    @property
    def log_path(self) -> Path:
        raise NotImplementedError

    def start(self) -> Self:
        raise NotImplementedError

    def kill(self) -> None:
        """Hard-kill (SIGKILL) by PID — simulates a crash; the port and home stay for restart()."""
        if self._proc and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(timeout=10)

    def restart(self) -> Self:
        self.kill()
        return self.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=timeout)
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
