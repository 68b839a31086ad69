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
