"""Every benchmark teaches on `--help` and refuses a bad argument, without measuring anything.

A benchmark run by hand with `--help` used to start measuring (several of them read only
positional arguments), or end in a traceback. Each one now parses its command line first
(tests/benchmarks/_report.py's `cli`): `--help` prints its docstring (what it measures, its
targets, how to run it) and exits 0; an unknown option is a one-line usage error, exit 2.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))

pytestmark = pytest.mark.heavy


def _run(bench: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(bench), *args], capture_output=True, text=True, timeout=60, cwd=bench.parent
    )


def test_there_are_benchmarks() -> None:
    assert len(BENCHMARKS) >= 10


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.stem)
def test_help_prints_the_docstring_and_measures_nothing(bench: Path) -> None:
    done = _run(bench, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: " + bench.name)
    first = (bench.read_text().split('"""')[1].strip().splitlines() or [""])[0]
    assert first and first[:40] in done.stdout.replace("\n", " ")
    assert "BENCH-RESULT {" not in done.stdout  # (a docstring may name the line; no result is printed)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.stem)
def test_an_unknown_option_is_a_usage_error(bench: Path) -> None:
    done = _run(bench, "--no-such-option")
    assert done.returncode == 2
    assert "error:" in done.stderr and "Traceback" not in done.stderr
    assert "BENCH-RESULT {" not in done.stdout
