"""Just enough of a VT100 to read what `headcast run` leaves on a terminal, and a pseudo-terminal
of a chosen size to run it in (the python pty module: no terminal program needed)."""

from __future__ import annotations

import codecs
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

_CSI = re.compile(r"\x1b\[(\d*)([A-Za-z])")


class Screen:
    """Printable characters with autowrap, CR, LF (as a tty's ONLCR gives it: CR LF), cursor up
    (ESC[nA), erase to the end of the screen (ESC[J) and erase the line (ESC[2K). Rows are never
    scrolled off: the screen is the terminal's whole history. Anything else is an error."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows: list[str] = [""]
        self.row = self.col = 0

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\x1b":
                m = _CSI.match(text, i)
                assert m is not None, f"unexpected escape {text[i : i + 12]!r}"
                n, cmd = m.group(1), m.group(2)
                if cmd == "A":
                    self.row = max(0, self.row - int(n or 1))
                elif cmd == "J" and n in ("", "0"):
                    self._line()
                    self.rows[self.row] = self.rows[self.row][: self.col]
                    del self.rows[self.row + 1 :]
                elif cmd == "K" and n == "2":
                    self._line()
                    self.rows[self.row] = ""
                else:
                    raise AssertionError(f"unexpected sequence {m.group(0)!r}")
                i = m.end()
                continue
            if c == "\r":
                self.col = 0
            elif c == "\n":  # a tty's ONLCR: CR LF
                self.row, self.col = self.row + 1, 0
            elif c.isprintable():
                if self.col >= self.columns:  # autowrap: the next character goes to the next row
                    self.row, self.col = self.row + 1, 0
                self._line()
                line = self.rows[self.row].ljust(self.col)
                self.rows[self.row] = line[: self.col] + c + line[self.col + 1 :]
                self.col += 1
            else:
                raise AssertionError(f"unexpected control character {c!r}")
            i += 1

    def _line(self) -> None:
        while len(self.rows) <= self.row:
            self.rows.append("")

    @property
    def text(self) -> str:
        return "\n".join(r.rstrip() for r in self.rows).rstrip("\n")


@dataclass
class PtyRun:
    argv: Sequence[str]
    columns: int
    screen: Screen = field(init=False)
    raw: str = ""
    returncode: int | None = None
    seen: list[str] = field(default_factory=list)  # screen texts that `watch` kept

    def __post_init__(self) -> None:
        self.screen = Screen(self.columns)


def run_in_ptys(
    runs: Sequence[PtyRun],
    env: dict[str, str],
    cwd,
    timeout: float,
    watch: Callable[[PtyRun], bool] | None = None,
    rows: int = 50,
) -> None:
    """Run each command on its own pseudo-terminal of `run.columns` × `rows`, side by side, until
    all have exited (bounded by `timeout`); `watch(run)` is asked after each chunk of output and
    the screen is kept in `run.seen` when it says so."""
    live = {}
    for run in runs:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, run.columns, 0, 0))
        proc = subprocess.Popen(
            list(run.argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        live[master] = (run, proc, codecs.getincrementaldecoder("utf-8")())
    deadline = time.monotonic() + timeout
    try:
        while live:
            assert time.monotonic() < deadline, "the commands did not end in time"
            ready, _, _ = select.select(list(live), [], [], 0.2)
            for fd in ready:
                run, proc, decoder = live[fd]
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the child side is closed
                    chunk = b""
                if not chunk:
                    os.close(fd)
                    del live[fd]
                    run.returncode = proc.wait(timeout=10)
                    continue
                text = decoder.decode(chunk)
                run.raw += text
                run.screen.feed(text)
                if watch is not None and watch(run):
                    run.seen.append(run.screen.text)
    finally:
        for fd, (_, proc, _) in live.items():
            proc.kill()
            proc.wait()
            os.close(fd)
