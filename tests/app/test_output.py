"""What `headcast` writes where, as a user's pipe and terminal get it: --json is JSON lines only
on stdout (numbers as numbers), build and set-up lines go to stderr, a pipe gets a few plain
lines, a display that cannot be opened is one line and no window, --print-config names each
value's flag."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from support import REPO, cli_env, free_port, headcast


def json_lines(stdout: str) -> list[dict]:
    """Every line of stdout as JSON: a line that is not fails the test, naming it."""
    out = []
    for n, line in enumerate(stdout.splitlines(), 1):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"stdout line {n} is not JSON: {line!r}")
    return out


def test_run_json_is_json_lines_with_numbers_as_numbers():
    # a TCP port that accepts and never speaks: no answer for the whole run (a refused port would
    # end it at once: test_fail_fast.py)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        tcp = silent.getsockname()[1]
        r = headcast(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--duration",
            "1.5",
            "--netsync",
            f"127.0.0.1:{tcp}",
            HEADCAST_RUN_CONNECT_TIMEOUT="5",
        )
    lines = json_lines(r.stdout)
    assert r.returncode == 3, r.stderr  # nothing let us in, though the run was shorter than the timeout
    assert [ln["type"] for ln in lines][0] == "progress" and lines[-1]["type"] == "summary"
    status = [ln for ln in lines if ln["type"] == "status"]
    assert len(status) >= 3
    for st in status:
        assert isinstance(st["t"], (int, float)) and isinstance(st["frames"], int)
        q3, ns, sauer = st["sinks"]
        assert isinstance(q3["values"]["buttons"], int) and isinstance(q3["values"]["roll_short"], int)
        assert isinstance(q3["values"]["head_bits"], bool) and isinstance(q3["values"]["roll_deg"], float)
        assert isinstance(ns["values"]["body_bytes"], int) and isinstance(ns["values"]["flags"], int)
        assert ns["ping_ms"] is None and ns["joined_at"] is None
        assert isinstance(sauer["values"]["npos_bytes"], int) and isinstance(sauer["values"]["yaw"], int)
    assert status[-1]["sinks"][1]["state"] == "no answer"
    summary = lines[-1]
    assert summary["exit_code"] == 3 and summary["error"].startswith("netsync: no answer from")
    ns = summary["sinks"][1]
    assert ns["joined_at"] is None and ns["sent"] == 0 and ns["outcome"].startswith("never joined: no answer from")
    assert r.stderr.startswith("headcast: error: netsync: no answer from") and r.stderr.count("\n") == 1


def test_demo_json_through_the_script_is_json_lines_only():
    """`bash scripts/demo.sh --json | jq` works: setup.sh's build lines go to stderr."""
    r = subprocess.run(
        ["bash", "scripts/demo.sh", "--json", "--synthetic", "--no-q3", "--no-netsync", "--duration", "0.5"],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    types = [ln["type"] for ln in json_lines(r.stdout)]
    assert types[-2:] == ["summary", "verification"] and "status" in types
    assert "[mockrt]" in r.stderr and "[q3native]" in r.stderr  # where the build lines went


def test_a_pipe_gets_plain_lines_not_a_redrawn_block():
    r = headcast("run", "--mock", "look_around", "--no-mirror", "--duration", "1.5")
    assert r.returncode == 0 and "\x1b" not in r.stdout
    periodic = [ln for ln in r.stdout.splitlines() if "| q3 " in ln]
    # Sauerbraten is shown only when a server is asked for (--sauer), as in the mirror (issue 25)
    assert periodic == ["[   0.0 s] tracking ok | q3 offline | netsync offline"]
    assert "  q3       computed and shown only (no server); last buttons 0x" in r.stdout
    assert "sauer" not in r.stdout


def test_json_still_carries_every_sink_with_whether_it_is_shown():
    r = headcast("run", "--mock", "look_around", "--no-mirror", "--duration", "1.5", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    summary = next(ln for ln in json_lines(r.stdout) if ln["type"] == "summary")
    assert [(s["name"], s["shown"]) for s in summary["sinks"]] == [("q3", True), ("netsync", True), ("sauer", False)]


def test_print_config_names_the_q3_flag():
    r = headcast("run", "--q3", "example.org:27961", "--require-all", "--print-config")
    assert r.returncode == 0, r.stderr
    assert 'host = "example.org:27961"  # --q3' in r.stdout
    assert "require_all = true  # --require-all" in r.stdout


def _free_display() -> str:
    """A display number no X server has: no socket and no lock file."""
    for n in range(93, 200):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return f":{n}"
    pytest.skip("no free display number")


def test_a_stale_display_is_one_line_and_the_run_goes_on_without_the_window():
    display = _free_display()
    line = f"headcast: no mirror window: cannot open the display {display} (X11: Failed to open display {display})"
    r = headcast("run", "--mock", "look_around", "--duration", "0.5", DISPLAY=display)
    assert r.returncode == 0, r.stderr
    assert r.stderr == f"{line}; running without it\n"
    assert "stopped: ran for 0.5 s" in r.stdout
    r = headcast("demo", "--synthetic", "--no-q3", "--no-netsync", "--duration", "0.5", "--json", DISPLAY=display)
    assert r.returncode == 0 and r.stderr == f"{line}; running without it\n"
    json_lines(r.stdout)
    # asked for: that line is the error
    r = headcast("run", "--mock", "look_around", "--duration", "0.5", "--mirror", DISPLAY=display)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (
        f"headcast: error: no mirror window: cannot open the display {display} (X11: Failed to "
        f"open display {display}) (--mirror asks for one; --no-mirror runs without)\n"
    )


def test_a_run_nobody_joined_fails_even_when_shorter_than_the_connect_timeout():
    """A silent Quake 3 port and a NetSync port nothing listens on, 1.5 s against the default
    10 s connect timeout: not a success (it used to exit 0)."""
    # bound and never answering: silent, not refused (a closed port ends the run at once: test_fail_fast.py)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        udp, tcp = silent.getsockname()[1], free_port()
        r = headcast(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--duration",
            "1.5",
            "--q3",
            f"127.0.0.1:{udp}",
            "--netsync",
            f"127.0.0.1:{tcp}",
        )
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    (err,) = r.stderr.splitlines()
    assert err.startswith(f"headcast: error: q3: no answer from 127.0.0.1:{udp} within 1.5 s")
    assert f"; netsync: no answer from 127.0.0.1:{tcp}/{tcp + 1} within 1.5 s (cannot connect to TCP" in err
    assert f"  q3       never joined: no answer from 127.0.0.1:{udp} within 1.5 s" in r.stdout
    assert "  netsync  never joined: no answer from" in r.stdout
