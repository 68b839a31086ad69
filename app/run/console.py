"""The run's console output: a live status block on a terminal, plain lines otherwise, JSON lines
with --json.

- On a terminal (stdout a TTY): a block of one header line and one line per sink, redrawn in
  place twice a second, each line cut to the terminal's width (read at every redraw, so a resize
  is followed). Moments worth keeping (a sink joins, is refused, fails, reconnects) and the run's
  notices are printed above the block and scroll away as normal lines. Two VT100 sequences do it
  (cursor up, erase): no thread, no dependency. When the run ends the last block stays, the
  run's last picture, and the summary follows it; once a stop signal has come it is not redrawn
  (the signal's own line went below it, where a redraw would land wrong).
- Otherwise (a pipe, a file, a CI log): the same moments as lines when they happen, and one
  short status line every PLAIN_PERIOD seconds.
- --json: one status object every 0.5 s, as before, with numbers as numbers.

Text from servers (refusals, names) is shown with control characters replaced: a server's words
must not move our cursor or recolour the terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import unicodedata
from dataclasses import replace
from typing import Any, Callable, Sequence

from headcast.app.run import stop
from headcast.app.run.outcome import Outcomes
from headcast.app.run.telemetry import SinkStatus
from headcast.app.sinks.base import shown as sink_shown

PLAIN_PERIOD = 5.0  # seconds between status lines when stdout is not a terminal
LOST = "server lost"  # the state shown while a joined server says nothing (app/run/outcome.py)
NAME_WIDTH, STATE_WIDTH = 9, 13


def mode_for(json_mode: bool, out: Any, term: str | None = None) -> str:
    """json, tty (a terminal that moves its cursor) or plain (a pipe, a file, TERM=dumb, a
    Windows console that does not take escape sequences)."""
    if json_mode:
        return "json"
    isatty = getattr(out, "isatty", None)
    term = os.environ.get("TERM", "") if term is None else term
    return "tty" if isatty is not None and isatty() and term != "dumb" and _escapes_work(out) else "plain"


ENABLE_VIRTUAL_TERMINAL_PROCESSING = 0x0004  # wincon.h


def _escapes_work(out: Any) -> bool:
    """True where a terminal takes escape sequences (every POSIX terminal). A Windows console
    takes them once ENABLE_VIRTUAL_TERMINAL_PROCESSING is on (Windows 10 1511 and later; Windows
    Terminal has it on already): turned on here, and False where that fails (older consoles)."""
    try:
        import ctypes
        import msvcrt

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]  # (Windows-only stub)
    except (ImportError, AttributeError, OSError):
        return True  # not Windows
    try:
        handle = msvcrt.get_osfhandle(out.fileno())  # type: ignore[attr-defined]  # (the stub is Windows-only)
    except (OSError, ValueError, AttributeError):
        return False
    mode = ctypes.c_uint32()
    if not kernel32.GetConsoleMode(handle, ctypes.byref(mode)):
        return False
    if mode.value & ENABLE_VIRTUAL_TERMINAL_PROCESSING:
        return True
    return bool(kernel32.SetConsoleMode(handle, mode.value | ENABLE_VIRTUAL_TERMINAL_PROCESSING))


def printable(text: str) -> str:
    """`text` without control characters (ESC, CR, BEL … become '?'; a tab a space)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else (" " if c == "\t" else "?") for c in text)


def _char_width(c: str) -> int:
    if unicodedata.combining(c):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def display_width(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


def fit(text: str, width: int) -> str:
    """`text` cut to `width` terminal columns, ending in '…' when cut."""
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for c in text:
        w = _char_width(c)
        if used + w > width - 1:
            break
        out.append(c)
        used += w
    return "".join(out) + "…"


def _rate(st: SinkStatus) -> str:
    return f"{st.send_hz:4.0f}/s {st.bytes_per_s / 1000:5.1f} kB/s"


def sink_line(st: SinkStatus, width: int) -> str:
    """One sink on the terminal: name, state, then rate, round trip, angle error and drops while
    it streams, then why / what it does, then its packed values; cut to `width`."""
    parts = [f"{st.name:<{NAME_WIDTH}}{st.state:<{STATE_WIDTH - 1}}"]
    if st.live:
        parts.append(_rate(st))
        parts.append(f"{st.label} {st.ping_ms:4.0f} ms" if st.ping_ms is not None else " " * (len(st.label) + 8))
    if st.error_deg is not None:
        parts.append(f"err {st.error_deg:.2f}°")
    if st.drops:
        parts.append(f"drops {sum(st.drops.values())}")
    # offline the packed values are the news (the detail never changes); linked, the why is
    pair = (st.packed, printable(st.detail)) if st.state == "offline" else (printable(st.detail), st.packed)
    tail = " · ".join(t for t in pair if t)
    line = "  ".join(parts) + ("  " + tail if tail else "")
    return fit(line, width)


def plain_line(elapsed: float, tracking: str, statuses: Sequence[SinkStatus]) -> str:
    """The periodic line for logs: states and rates, no detail (the event lines carry that)."""
    parts = []
    for st in statuses:
        p = f"{st.name} {st.state}"
        if st.send_hz:
            p += f" {st.send_hz:.0f}/s {st.bytes_per_s / 1000:.1f} kB/s"
        if st.ping_ms is not None:
            p += f" {st.label} {st.ping_ms:.0f} ms"
        if st.drops:
            p += f" drops {sum(st.drops.values())}"
        parts.append(p)
    return f"[{elapsed:6.1f} s] tracking {tracking} | " + " | ".join(parts)


class LiveBlock:
    """Lines redrawn in place at the bottom of a terminal, with lines printed above them."""

    def __init__(self, out: Any, columns: Callable[[], int] | None = None) -> None:
        self.out = out
        self.columns = columns or (lambda: shutil.get_terminal_size((80, 24)).columns)
        self._drawn: list[int] = []  # display width of each line on screen now

    def _up(self, columns: int) -> str:
        """Back to the block's first row. A terminal that rewraps lines on a resize (tmux, VTE)
        holds a line wider than it is now on several rows."""
        rows = sum(max(1, -(-w // columns)) for w in self._drawn)
        return f"\r\x1b[{rows}A" if rows else "\r"

    def draw(self, lines: Sequence[str], above: Sequence[str] = ()) -> None:
        """Replace the block with `lines` (each already fitted), first printing `above` as normal
        lines that stay."""
        columns = max(1, self.columns())
        buf = [self._up(columns), "\x1b[J"]
        buf += [printable(a) + "\n" for a in above]
        buf += [fit(line, columns - 1) + "\n" for line in lines]
        self.out.write("".join(buf))
        self.out.flush()
        self._drawn = [display_width(fit(line, columns - 1)) for line in lines]


class Console:
    """The loop's status callback (`FrameLoop.on_status`): shows the sinks and keeps the run's
    verdict (`outcomes`), raising the error that ends the run when one does."""

    def __init__(
        self,
        mode: str,
        outcomes: Outcomes,
        out: Any = None,
        duration: float = 0.0,
        columns: Callable[[], int] | None = None,
    ) -> None:
        self.mode = mode
        self.outcomes = outcomes
        self.out = out if out is not None else sys.stdout
        self.duration = duration
        self.block = LiveBlock(self.out, columns) if mode == "tty" else None
        self.t0: float | None = None
        self._shown: dict[str, tuple[str, str]] = {}  # name → (state, detail) last printed as an event
        self._next_plain = 0.0
        self._frames = (0, 0.0)  # (frames, at) of the last tick, for the frame rate
        self._notices: list[str] = []  # run-time notices for above the block
        self._now = 0.0  # the clock at the current tick

    def __call__(self, loop, now: float) -> None:
        if self.t0 is None:
            self.t0 = now
        elapsed = now - self.t0
        failed = self.outcomes.update(now)
        self._now = now
        json_mode = self.mode == "json"  # --json carries every sink; the text only those shown
        statuses = [self.shown(s.status(now)) for s in loop.sinks if json_mode or sink_shown(s)]
        tracking = "ok" if loop.frame is not None and loop.frame.head.valid else "lost"
        if self.mode == "json":
            self._json(elapsed, tracking, statuses, loop.telemetry.frames)
        else:
            events = self._events(elapsed, statuses, {o.name for o in failed})
            if self.block is not None:
                if stop.state.signum is None:
                    above, self._notices = self._notices + events, []
                    self.block.draw(self._block_lines(elapsed, tracking, statuses, loop.telemetry.frames, now), above)
            else:
                for e in events:
                    print(e, file=self.out)
                if now >= self._next_plain:
                    self._next_plain = now + PLAIN_PERIOD
                    print(plain_line(elapsed, tracking, statuses), file=self.out)
                self.out.flush()
        error = self.outcomes.check(now)
        if error is not None:
            raise error

    def shown(self, st: SinkStatus) -> SinkStatus:
        """A sink that failed for good (its link closed) keeps showing the state it failed in,
        with its error as the why."""
        o = next((o for o in self.outcomes.items if o.name == st.name), None)
        if o is not None and o.failure is not None:
            why = str(o.failure).removeprefix(f"{st.name}: ")
            return replace(st, state=o.failed_state, detail=why, send_hz=0.0, bytes_per_s=0.0, ping_ms=None, live=False)
        if o is not None and o.lost_now is not None and self.outcomes.start is not None:
            # A joined server gone silent: no round trip to show (the last one is stale), and how long.
            silent = self._now - self.outcomes.start - o.lost_now
            return replace(
                st,
                state=LOST,
                ping_ms=None,
                detail=f"nothing from the server for {silent:.0f} s (since {o.lost_now:.1f} s); "
                "still sending, so it gets us back if it returns",
            )
        return st

    def _events(self, elapsed: float, statuses: Sequence[SinkStatus], failed: set[str]) -> list[str]:
        """Lines for the moments worth keeping: a state change of a linked sink (with why), and
        a sink that failed for good."""
        out = []
        for st in statuses:
            if st.state == "offline":
                continue
            last = self._shown.get(st.name)
            if last is None or last[0] != st.state or st.name in failed:
                out.append(f"[{elapsed:6.1f} s] {st.name}: {st.state} — {printable(st.detail)}")
            self._shown[st.name] = (st.state, st.detail)
        return out

    def _block_lines(
        self, elapsed: float, tracking: str, statuses: Sequence[SinkStatus], frames: int, now: float
    ) -> list[str]:
        last_frames, last_at = self._frames
        fps = (frames - last_frames) / (now - last_at) if now > last_at and last_frames else None
        self._frames = (frames, now)
        block = self.block
        assert block is not None  # the block is drawn only where there is one
        width = max(1, block.columns()) - 1
        of = f" of {self.duration:g} s" if self.duration else ""
        head = (
            f"headcast  {elapsed:6.1f} s{of}  tracking {tracking}"
            + (f"  {fps:3.0f} fps" if fps is not None else "")
            + "  · Ctrl-C stops"
        )
        return [fit(head, width)] + [sink_line(st, width) for st in statuses]

    def _json(self, elapsed: float, tracking: str, statuses: Sequence[SinkStatus], frames: int) -> None:
        sinks = []
        for st in statuses:
            d = st.as_dict()
            o = next((o for o in self.outcomes.items if o.name == st.name), None)
            if o is not None and o.linked:
                d["joined_at"] = None if o.joined_at is None else round(o.joined_at, 2)
            sinks.append(d)
        print(
            json.dumps(
                {"type": "status", "t": round(elapsed, 2), "tracking": tracking, "frames": frames, "sinks": sinks}
            ),
            file=self.out,
            flush=True,
        )

    def notice(self, text: str) -> None:
        """A line the user should see while the run goes on (FrameLoop.notice): on a terminal it
        goes above the block at the next redraw, else to stderr at once."""
        if self.block is not None and stop.state.signum is None:
            self._notices.append(f"headcast: {text}")
        else:
            print(f"headcast: {text}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """The run is over: notices not shown yet are printed (the last block stays above them)."""
        for text in self._notices:
            print(text, file=sys.stderr, flush=True)
        self._notices = []
