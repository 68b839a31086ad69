"""The C extension under AddressSanitizer + UBSan, fuzzed against its Python reference: the
bounded run of tests/fuzz/native_asan.py (it builds _q3native.c with the sanitizers into
build/fuzz/asan/ and runs with the ASan runtime preloaded). The long run: scripts/fuzz.sh."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support import LONG, REPO

pytestmark = pytest.mark.fuzz


def test_native_codecs_under_asan_and_ubsan_agree_with_python():
    n = int(os.environ.get("HEADCAST_FUZZ_INPUTS", 1_000_000 if LONG else 600))
    r = subprocess.run(
        [sys.executable, str(REPO / "tests" / "fuzz" / "native_asan.py"), "--inputs", str(n)],
        capture_output=True,
        text=True,
        timeout=None if LONG else 600,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert f"{n:,} inputs x 6 checks under ASan+UBSan" in r.stdout and "0 disagreements" in r.stdout, r.stdout
    assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error:" not in r.stderr


def test_the_pump_and_the_snapshot_decoder_under_asan_and_ubsan():
    """The C paths the fuzz above does not reach (the pump's ticks, reads and hand-overs, the
    send_input/send_pose tick, the snapshot decoder's log and ring): the tests that compare them
    with the Python core, run on the sanitized build. Left out: the tests against a live ioq3
    (the scripted sessions drive the same C) and the two whose 1-s bound is real time (the
    sanitizer slows the run; tests/tiers.py runs them serially in the plain suite)."""
    tests = [
        "tests/q3/test_pump.py",
        "tests/q3/test_send_input.py",
        "tests/q3/test_round_trip.py",
        "tests/q3/test_snapdecode.py",
        "tests/q3/test_snap_guards.py",
    ]
    r = subprocess.run(
        [
            sys.executable,
            str(REPO / "tests" / "fuzz" / "native_asan.py"),
            "--pytest",
            "-q",
            "-x",
            *tests,
            "-k",
            "not ioq3 and not interrupt",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=None if LONG else 900,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "native_asan: pytest" in r.stdout and " passed" in r.stdout and " skipped" not in r.stdout, r.stdout[-2000:]
    assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out
