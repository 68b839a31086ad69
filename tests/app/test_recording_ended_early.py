"""A recording that ended early is in the summary and the exit status (issue 25 item 5).

`headcast run --mock … --record FILE` in a child process whose file size limit (RLIMIT_FSIZE,
set in the child only) stops the recording a fraction of the way in: the write fails with EFBIG
as on a full disk with ENOSPC. Before, one stderr line said so mid-run and the summary and exit
status said nothing (exit 0). Now the summary says "recording ended early: N of M frames kept,
File too large", --json has it as numbers, the run exits 1, and the file is a trace of exactly
the N whole frames kept (no torn line; it reads as a trace that ends early at frame N).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

from headcast.xr.trace import read_trace

from support import REPO, cli_env

LIMIT = 48_000  # bytes: ~100 frames of a 4 s run's ~360


def _limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "text"])
def test_a_recording_stopped_by_the_disk_is_in_the_summary_and_exit_1(mock_manifest, tmp_path, json_mode):
    trace = tmp_path / "run.trace"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--duration",
            "4",
            "--record",
            str(trace),
            *(["--json"] if json_mode else []),
        ],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,
    )
    assert r.returncode == 1, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    back = read_trace(trace, partial=True)
    kept = len(back.frames)
    assert 10 < kept and back.ends_early is not None and trace.read_bytes().endswith(b"\n")
    assert trace.stat().st_size <= LIMIT
    (err,) = [ln for ln in r.stderr.splitlines() if ln.startswith("headcast: error:")]
    assert err.startswith(f"headcast: error: recording ended early: {kept} of "), err
    assert "frames kept, File too large" in err and f"the trace ends early at frame {kept}" in err, err
    if json_mode:
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        rec = summary["recording"]
        assert summary["exit_code"] == 1 and rec["frames_kept"] == kept and rec["ended_early"] == "File too large"
        assert kept < rec["frames_run"] == summary["frames"], rec
    else:
        (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("recording ended early: ")]
        assert line.startswith(f"recording ended early: {kept} of "), line
