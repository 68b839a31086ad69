"""The run's console: the live block on a terminal (a real pseudo-terminal at 80, 120 and 160
columns, read back as a screen), plain lines in a pipe, and the verdict each status tick keeps:
sinks fail alone, a run nobody joined is a failure whatever its length."""

from __future__ import annotations

import io
import os
import re
import socket
import sys

import pytest

from headcast.app.errors import AppError, ProtocolMismatchError, RefusedError, UnreachableError
from headcast.app.run.console import PLAIN_PERIOD, Console, LiveBlock, fit, mode_for, plain_line, printable, sink_line
from headcast.app.run.outcome import Outcomes, combine
from headcast.app.run.telemetry import RateMeter, SinkStatus

from support import REPO, free_port
from terminal import PtyRun, Screen, run_in_ptys


def env(**extra: str) -> dict[str, str]:
    e = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HEADCAST_", "XR_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY", "COLUMNS", "LINES")
    }
    e["HOME"] = str(REPO / "build" / "no-home")
    e.update(extra)
    return e


# -- the verdict ---------------------------------------------------------------------------


class FakeLink:
    def __init__(self, name: str, joined_at: float | None = None) -> None:
        self.name, self.joined_at, self.failure, self.closed = name, joined_at, None, False
        self.state = "connecting"

    @property
    def joined(self) -> bool:
        return self.joined_at is not None

    def join_timeout_error(self, waited: float) -> AppError:
        return UnreachableError(f"{self.name}: no answer within {waited:g} s")

    def close(self) -> None:
        self.closed = True


class FakeSink:
    def __init__(self, name: str, link=None) -> None:
        self.name, self.link, self.meter = name, link, RateMeter()

    def status(self, now: float) -> SinkStatus:
        if self.link is None:
            return SinkStatus(self.name, "offline", detail="no server")
        return SinkStatus(self.name, "in game" if self.link.joined else "no answer", detail=f"{self.name} detail")


def sinks(*names_joined) -> list[FakeSink]:
    return [FakeSink(n, None if j == "offline" else FakeLink(n, j)) for n, j in names_joined]


def test_one_sink_in_is_enough_and_the_silent_one_keeps_trying():
    q3, ns, sauer = sinks(("q3", None), ("netsync", None), ("sauer", "offline"))
    out = Outcomes([q3, ns, sauer], connect_timeout=10)
    out.update(100.0)
    q3.link.joined_at = 100.4
    out.update(100.5)
    assert out.of("q3").joined_at == pytest.approx(0.4) and out.of("netsync").joined_at is None
    assert out.check(100.5) is None and out.check(130.0) is None  # past the timeout: q3 streams, netsync retries
    assert not ns.link.closed
    assert out.final(200.0) is None  # exit 0


def test_require_all_ends_the_run_at_the_timeout_naming_the_missing_one():
    q3, ns = sinks(("q3", 0.0), ("netsync", None))
    out = Outcomes([q3, ns], connect_timeout=10, require_all=True)
    out.update(0.0)
    assert out.check(9.9) is None
    err = out.check(10.1)
    assert str(err) == "--require-all: netsync: no answer within 10 s" and err.exit_code == 3
    assert str(out.final(5.0)) == "--require-all: netsync: no answer within 5 s"


def test_a_join_between_the_last_tick_and_the_end_counts():
    """A run stopped (a signal) right after joining, before the next status tick."""
    (q3,) = sinks(("q3", None))
    out = Outcomes([q3], connect_timeout=10)
    out.update(10.0)
    q3.link.joined_at = 10.2
    q3.link.close()
    assert out.final(10.3) is None and out.of("q3").joined_at == pytest.approx(0.2)
    never = Outcomes(sinks(("q3", None)), connect_timeout=10)
    assert str(never.final(5.0)) == "q3: no answer within 0 s"  # stopped before the first tick


def test_a_run_nobody_joined_fails_whatever_its_length():
    q3, ns = sinks(("q3", None), ("netsync", None))
    out = Outcomes([q3, ns], connect_timeout=10)
    out.update(50.0)
    assert out.check(51.5) is None  # within the timeout: still trying
    err = out.final(51.5)  # ... but the run ended (--duration 1.5)
    assert str(err) == "q3: no answer within 1.5 s; netsync: no answer within 1.5 s" and err.exit_code == 3
    assert out.check(60.5).exit_code == 3  # a longer run ends at the timeout
    assert Outcomes(sinks(("sauer", "offline")), 10).final(1.0) is None  # nothing to join: fine


def test_a_sink_failing_for_good_is_closed_and_the_others_go_on():
    q3, ns = sinks(("q3", 0.2), ("netsync", None))
    out = Outcomes([q3, ns], connect_timeout=10)
    out.update(0.0)
    ns.link.failure = ProtocolMismatchError("netsync: server speaks protocol 8")
    assert [o.name for o in out.update(1.0)] == ["netsync"] and ns.link.closed
    assert out.update(1.5) == []  # reported once
    assert out.check(1.5) is None and out.final(20.0) is None
    assert str(Outcomes([q3, ns], 10, require_all=True).check(0.0) or "") == ""  # nothing noted yet
    strict = Outcomes([q3, ns], 10, require_all=True)
    strict.update(2.0)
    assert str(strict.check(2.0)) == "--require-all: netsync: server speaks protocol 8"
    assert strict.check(2.0).exit_code == 4


def test_when_every_linked_sink_failed_the_run_ends_with_their_reasons():
    q3, ns = sinks(("q3", None), ("netsync", None))
    out = Outcomes([q3, ns], connect_timeout=10)
    q3.link.failure = RefusedError("q3: refused: Invalid password")
    out.update(0.0)
    assert out.check(0.5) is None  # netsync may still get in
    ns.link.failure = ProtocolMismatchError("netsync: protocol 8")
    out.update(1.0)
    err = out.check(1.0)
    assert str(err) == "q3: refused: Invalid password; netsync: protocol 8" and err.exit_code == 1  # mixed: 1


def test_combined_errors_keep_a_shared_exit_code():
    assert combine([UnreachableError("a"), UnreachableError("b")]).exit_code == 3
    one = RefusedError("x")
    assert combine([one]) is one


# -- what the terminal shows ---------------------------------------------------------------

LONG = SinkStatus(
    "netsync",
    "no answer",
    detail="cannot connect to TCP 127.0.0.1:5990 for 12 s (9 tries, "
    "retrying every 1 s): nothing listens there, or a firewall drops it",
    packed="body 46 B flags 0x1e",
)
STREAMING = SinkStatus(
    "q3",
    "in game",
    60.0,
    1612.0,
    "buttons 0x03bbf000 roll 0 (+0.0°)",
    0.0031,
    "map oa_dm1, vr_support",
    ping_ms=16.2,
    live=True,
)


@pytest.mark.parametrize("width", [40, 79, 119, 159])
def test_a_sink_line_fits_the_width_and_keeps_the_numbers_first(width):
    for st in (LONG, STREAMING):
        line = sink_line(st, width)
        assert len(line) <= width
        assert line.startswith(f"{st.name:<9}{st.state}")
    line = sink_line(STREAMING, 79)
    assert re.match(r"q3       in game +60/s   1\.6 kB/s  ping   16 ms  err 0\.00°  map oa_dm1", line), line
    for width in (79, 119):
        assert sink_line(LONG, width).endswith("…")  # cut, and says so
    assert "nothing listens there" in sink_line(LONG, 159)


def test_the_mode_follows_the_output():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert mode_for(False, Tty(), "xterm-256color") == "tty"
    assert mode_for(False, Tty(), "dumb") == "plain"  # a terminal that cannot move its cursor
    assert mode_for(False, io.StringIO(), "xterm") == "plain"
    assert mode_for(True, Tty(), "xterm") == "json"


def test_text_from_servers_cannot_move_the_cursor():
    evil = SinkStatus("q3", "refused", detail="server refused: \x1b[2J\x1b[31mfull\x07\r")
    line = sink_line(evil, 120)
    assert "\x1b" not in line and "\r" not in line and "\x07" not in line
    assert printable("a\tb\x1bc") == "a b?c"
    assert fit("漢字漢字", 5) == "漢字…"  # wide characters count two columns


def test_the_block_is_redrawn_in_place_and_follows_a_narrower_terminal():
    out, columns = io.StringIO(), [80]
    block = LiveBlock(out, lambda: columns[0])
    screen = Screen(80)
    block.draw(["header", "x" * 79], above=["[  0.0 s] q3: connecting — joining"])
    block.draw(["header 2", "y" * 79])
    screen.feed(out.getvalue())
    assert screen.text.splitlines() == ["[  0.0 s] q3: connecting — joining", "header 2", "y" * 79]
    # narrower: the terminal rewraps the 79-column line on two rows; the redraw still lands on the block
    columns[0] = 40
    narrow = Screen(40)
    narrow.rows = ["[  0.0 s] q3: connecting — joining", "header 2", "y" * 40, "y" * 39, ""]
    narrow.row, narrow.col = 4, 0
    out.seek(0), out.truncate()
    block.draw(["header 3", "z" * 60])
    narrow.feed(out.getvalue())
    assert narrow.text.splitlines() == ["[  0.0 s] q3: connecting — joining", "header 3", "z" * 38 + "…"]


class FakeLoop:
    def __init__(self, sinks) -> None:
        self.sinks, self.frame = sinks, None

        class T:
            frames = 0

        self.telemetry = T()


def test_plain_lines_are_few_and_moments_are_lines_of_their_own():
    q3, ns = sinks(("q3", None), ("netsync", None))
    out = io.StringIO()
    console = Console("plain", Outcomes([q3, ns], 10), out)
    loop = FakeLoop([q3, ns])
    t = 0.0
    while t < 12.0:
        if t >= 3.0:
            q3.link.joined_at = 3.0
        console(loop, t)
        t += 0.5
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        "[   0.0 s] q3: no answer — q3 detail",
        "[   0.0 s] netsync: no answer — netsync detail",
        "[   0.0 s] tracking lost | q3 no answer | netsync no answer",
    ]
    assert "[   3.0 s] q3: in game — q3 detail" in lines
    periodic = [ln for ln in lines if "| q3 " in ln]
    assert len(periodic) == 1 + int(11.5 // PLAIN_PERIOD)  # 0, 5, 10 s: not every tick
    assert plain_line(1.0, "ok", [STREAMING]).endswith("q3 in game 60/s 1.6 kB/s ping 16 ms")


def test_the_console_raises_what_ends_the_run_after_showing_it():
    q3, ns = sinks(("q3", None), ("netsync", None))
    out = io.StringIO()
    console = Console("plain", Outcomes([q3, ns], 10, require_all=True), out)
    loop = FakeLoop([q3, ns])
    q3.link.joined_at = 0.2
    console(loop, 0.0)
    with pytest.raises(AppError, match=r"^--require-all: netsync: no answer within 10 s$"):
        console(loop, 10.5)


# -- a real pseudo-terminal ----------------------------------------------------------------


def _block_rows(text: str, sinks: int = 2) -> list[str]:
    """The status block: its header and one row per sink shown (q3 and netsync: no --sauer)."""
    rows = text.splitlines()
    i = next(i for i, r in enumerate(rows) if r.startswith("headcast  "))
    return rows[i : i + 1 + sinks]


def test_on_a_terminal_one_block_is_redrawn_in_place_at_80_120_and_160_columns():
    """Three runs side by side, each on a pty of its width: a silent Quake 3 port and a NetSync
    port nothing listens on, so both lines say why. Mid-run the screen holds the progress lines
    and exactly one status block (a header and three sink lines, none wider than the terminal);
    at the end the last block stays, once, and the summary and the error follow it."""
    # A bound UDP socket that never answers: silent, not refused (a closed port's ICMP unreachable
    # would end the run at once, tests/app/test_fail_fast.py), so the block has 3 s to show.
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    udp, tcp = silent.getsockname()[1], free_port()
    argv = [
        sys.executable,
        "-m",
        "headcast.app",
        "run",
        "--mock",
        "look_around",
        "--duration",
        "3",
        "--q3",
        f"127.0.0.1:{udp}",
        "--netsync",
        f"127.0.0.1:{tcp}",
    ]
    runs = [PtyRun(argv, c) for c in (80, 120, 160)]

    def full_block(run: PtyRun) -> bool:
        text = run.screen.text
        return "headcast  " in text and "netsync  no answer" in text and "q3       no answer" in text

    try:
        run_in_ptys(runs, env(), REPO, timeout=40, watch=full_block)
    finally:
        silent.close()
    for run in runs:
        assert run.returncode == 3, run.screen.text
        assert run.seen, run.screen.text
        mid = run.seen[-1]
        assert sum(r.startswith("headcast  ") for r in mid.splitlines()) == 1, mid  # in place, not scrolled
        assert run.raw.count("· Ctrl-C stops") >= 3  # ... though redrawn
        block = _block_rows(mid)
        # no --sauer: no Sauerbraten row (shown only when its server is asked for, as in the mirror)
        assert [r.split()[0] for r in block] == ["headcast", "q3", "netsync"], block
        assert all(len(r) < run.columns for r in block), block
        assert re.match(r"headcast +\d+\.\d s of 3 s  tracking ok", block[0]), block[0]
        ns = block[2]
        assert "cannot connect to TCP" in ns, ns
        if run.columns >= 160:
            assert "nothing listens there" in ns, ns
        end = run.screen.text
        assert end.count("· Ctrl-C stops") == 1  # the last picture
        assert end.index("· Ctrl-C stops") < end.index("stopped: ran for 3 s") < end.index("headcast: error: q3")
        assert "Traceback" not in run.raw
    # the wider the terminal, the more of the why
    widths = [len(_block_rows(r.seen[-1])[2]) for r in runs]
    assert widths == sorted(widths) and widths[0] < widths[-1]
