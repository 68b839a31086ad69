"""Sinks fail alone, against a real Quake 3 server (ioq3ded, 127.0.0.1) and a NetSync address
nothing answers: the Q3 sink joins and streams past the connect timeout while the NetSync sink
keeps retrying and says why; exit 0, or 3 with --require-all. And the same run on a real
terminal (tmux at 80 columns): one status block redrawn in place, Ctrl-C leaves the summary.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time

import pytest

from support import REPO, free_port, wait_for

pytestmark = pytest.mark.live


def env(**extra: str) -> dict[str, str]:
    e = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HEADCAST_", "XR_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY", "COLUMNS", "LINES")
    }
    e["HOME"] = str(REPO / "build" / "no-home")
    e.update(extra)
    return e


def run_args(q3_server, *extra: str) -> list[str]:
    host, port = q3_server.address
    return [
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--q3",
        f"{host}:{port}",
        "--netsync",
        f"127.0.0.1:{free_port()}",
        *extra,
    ]


def test_q3_streams_while_netsync_never_answers(q3_server):
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "headcast.app", *run_args(q3_server, "--duration", "4.5", "--json")],
        cwd=REPO,
        env=env(HEADCAST_RUN_CONNECT_TIMEOUT="2"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert time.monotonic() - t0 > 4.5  # not ended at the connect timeout (2 s)
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    late = [ln for ln in lines if ln["type"] == "status" and ln["t"] > 2.5]
    assert late
    for st in late:
        q3, ns = st["sinks"][0], st["sinks"][1]
        assert q3["state"] == "in game" and q3["send_hz"] > 30 and isinstance(q3["ping_ms"], float), q3
        assert isinstance(q3["joined_at"], float)
        assert ns["state"] == "no answer" and "cannot connect to TCP 127.0.0.1:" in ns["detail"], ns
        assert "nothing listens there" in ns["detail"]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["exit_code"] == 0 and summary["error"] is None
    q3, ns = summary["sinks"][0], summary["sinks"][1]
    assert q3["state"] == "disconnected" and q3["sent"] > 150 and q3["outcome"].startswith("joined at ")
    assert ns["joined_at"] is None and ns["outcome"].startswith("never joined: no answer from 127.0.0.1:")


def test_require_all_ends_the_run_at_the_connect_timeout(q3_server):
    # NetSync at a port that accepts and never speaks: silent, not refused (a refused port ends a
    # --require-all run at once, tests/app/test_fail_fast.py)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        host, port = q3_server.address
        args = [
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--q3",
            f"{host}:{port}",
            "--netsync",
            f"127.0.0.1:{silent.getsockname()[1]}",
            "--duration",
            "20",
            "--require-all",
        ]
        t0 = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-m", "headcast.app", *args],
            cwd=REPO,
            env=env(HEADCAST_RUN_CONNECT_TIMEOUT="2"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        took = time.monotonic() - t0
    assert r.returncode == 3 and 2 < took < 10, (took, r.stderr)
    (err,) = r.stderr.splitlines()
    assert err.startswith("headcast: error: --require-all: netsync: no answer from 127.0.0.1:"), err
    assert "  q3       joined at " in r.stdout and "  netsync  never joined: no answer from" in r.stdout


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True, timeout=10).stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_on_a_real_terminal_the_block_is_redrawn_in_place_and_ctrl_c_leaves_the_summary(q3_server, tmp_path):
    """tmux at 80 columns: while running, the screen holds one header and one line per sink
    (Q3 in game with its rate and ping, NetSync saying why it is not in), none wider than the
    terminal; after Ctrl-C the last block stays, once, the stop line and the summary follow it,
    exit 0 (Q3 joined)."""
    script = tmp_path / "run.sh"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env(HEADCAST_RUN_CONNECT_TIMEOUT="2").items())
    argv = shlex.join([sys.executable, "-m", "headcast.app", *run_args(q3_server)])
    script.write_text(f"{exports}cd {shlex.quote(str(REPO))}\n{argv}\necho EXIT=$?\nsleep 60\n")
    server = f"headcast-test-{os.getpid()}"
    _tmux("-L", server, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "30", "-s", "run", f"bash {script}")
    try:

        def screen() -> str:
            return _tmux("-L", server, "capture-pane", "-p", "-t", "run")

        def streaming() -> str | None:
            s = screen()
            return s if "q3       in game" in s and "netsync  no answer" in s and "· Ctrl-C stops" in s else None

        def past_the_timeout() -> str | None:  # the block's own clock past the connect timeout (2 s)
            s = streaming()
            m = None if s is None else re.search(r"^headcast +(\d+\.\d) s", s, re.M)
            return s if m and float(m.group(1)) > 2.5 else None

        live = wait_for(past_the_timeout, 20, "the status block with Q3 in game past the connect timeout")
        rows = live.splitlines()
        assert sum(r.startswith("headcast  ") for r in rows) == 1, live
        block = rows[next(i for i, r in enumerate(rows) if r.startswith("headcast  ")) :][:4]
        # no --sauer: no Sauerbraten row (shown only when its server is asked for); the line after
        # the block is blank or the next output
        assert [r.split()[0] for r in block[:3]] == ["headcast", "q3", "netsync"], live
        assert len(block) < 4 or not block[3].startswith("sauer"), live
        block = block[:3]
        assert all(len(r) < 80 for r in block), live
        assert " ping " in block[1] and "/s" in block[1], block[1]
        _tmux("-L", server, "send-keys", "-t", "run", "C-c")
        end = wait_for(lambda: next((s for s in [screen()] if "EXIT=" in s), None), 20, "headcast to exit after Ctrl-C")
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, timeout=10)
    assert "EXIT=0" in end, end
    assert end.count("· Ctrl-C stops") == 1, end
    assert (
        end.index("· Ctrl-C stops")
        < end.index("headcast: SIGINT: stopping cleanly")
        < end.index("stopped: interrupted (Ctrl-C)")
    ), end
    assert "  q3       joined at " in end and "  netsync  never joined:" in end, end
