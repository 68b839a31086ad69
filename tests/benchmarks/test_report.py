"""bench.sh's closing tables (tests/benchmarks/_report.py): each issue-26 goal is held to the issue's
own target — a benchmark that measures it against a looser one, or prints no line for it, is not met."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _report  # noqa: E402


def line(bench: str, goal: str, op: str, target: float, value: float, met: bool) -> dict:
    return {"bench": bench, "goal": goal, "op": op, "target": target, "value": value, "unit": "", "met": met}


def test_a_looser_target_is_not_met_even_when_the_benchmark_says_met():
    results = [line("startup", "process start → first Q3 datagram (median)", "<", 1.0, 0.7, True)]
    text, ok = _report.issue_table(results, ["startup"])
    assert not ok and "NO (bench's target < 1)" in text and "< 0.4" in text


def test_the_issues_target_met_is_met_and_benchmarks_not_run_are_left_out():
    results = [line("rss", "RSS slope over 2 min, Q3 + NetSync (after 30 s)", "<", 0.1, 0.01, True)]
    text, ok = _report.issue_table(results, ["rss"])
    assert ok and "yes" in text and "startup" not in text and "frame p99" not in text
    assert _report.issue_table([], []) == ("", True)


def test_a_benchmark_that_ran_without_its_goals_line_is_not_met(tmp_path):
    log = tmp_path / "xr_poll.log"
    log.write_text("no result lines here\n")
    other = tmp_path / "rss.log"
    other.write_text(
        _report.PREFIX + '{"bench": "rss", "goal": "RSS slope over 2 min", "op": "<", "target": 0.1, '
        '"value": 0.0, "unit": " kB/s", "met": true}\n'
    )
    proc = subprocess.run(
        [sys.executable, str(HERE / "_report.py"), str(log), str(other)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stdout
    assert "xr_poll" in proc.stdout and "(no result line" in proc.stdout
    assert "RSS over a run, Q3 + NetSync: flat" in proc.stdout
