"""`replay` (and `swarm --trace`) of a file that is not a trace (issue 25 item 6).

Before: "README.md:1: not JSON" and an empty summary after it (exit 1), a swarm report was "not
JSON" too, a motion file got no hint to use `run --mock FILE`, and `swarm --trace` exited 2 for the
same mistake. Now one line saying what the file is and what to do, before anything opens (no
summary), and exit 2 (README: a bad input file) from both commands.
"""

from __future__ import annotations

import json

import pytest

from support import REPO, headcast

WHAT_A_TRACE_IS = "a trace is what `headcast run --record FILE` writes"


def _swarm_report(tmp_path):
    from headcast.app.swarm.report import write

    path = tmp_path / "swarm.json"
    write({"kind": "headcast swarm report", "players": 2, "protocols": {}}, path)
    return path


CASES = [
    ("readme", lambda tmp: REPO / "README.md", ["is Markdown, not a headcast trace", WHAT_A_TRACE_IS]),
    (
        "motion",
        lambda tmp: REPO / "assets" / "motions" / "look_around.motion",
        ["is a motion script, not a headcast trace: play it with `headcast run --mock ", "look_around.motion`"],
    ),
    (
        "swarm-report",
        _swarm_report,
        ["swarm.json is a swarm report, not a headcast trace", "`headcast swarm --report DIR` writes it"],
    ),
    (
        "other-json",
        lambda tmp: (tmp / "x.json").write_text(json.dumps({"format": "other"})) and tmp / "x.json",
        ["x.json is JSON but not a headcast trace", WHAT_A_TRACE_IS],
    ),
    (
        "binary",
        lambda tmp: (tmp / "g.trace").write_bytes(bytes(range(256)) * 4) and tmp / "g.trace",
        ["g.trace is binary data, not a headcast trace"],
    ),
]


@pytest.mark.parametrize("make, needles", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_replay_and_swarm_say_what_the_file_is_and_exit_2(tmp_path, make, needles):
    path = make(tmp_path)
    replay = headcast("replay", str(path), "--no-mirror")
    swarm = headcast("swarm", "2", "--q3", "127.0.0.1:1", "--trace", str(path))
    for r, prefix in ((replay, "headcast: error: replay: "), (swarm, "headcast: error: swarm: ")):
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
        assert r.stdout == ""  # no summary: nothing was started
        (line,) = r.stderr.splitlines()
        assert line.startswith(prefix + str(path)) and "Traceback" not in line, line
        for n in needles:
            assert n in line, (n, line)
