"""`headcast swarm` flags: every bad input is one line and exit 2, before any socket opens."""

from __future__ import annotations

import pytest

from headcast.app.commands.cli import main


@pytest.mark.parametrize(
    "argv, says",
    [
        (["swarm", "0", "--q3", "127.0.0.1"], "must be 1..5000"),
        (["swarm", "many", "--q3", "127.0.0.1"], "not a whole number of players"),
        (["swarm", "4"], "name at least one server"),
        (["swarm", "4", "--q3", "127.0.0.1:99999"], "1..65535"),
        (["swarm", "4", "--netsync", "127.0.0.1:x"], "ports must be numbers"),
        (["swarm", "4", "--sauer", ":28785"], "HOST"),
        (["swarm", "4", "--q3", "127.0.0.1", "--spawn-rate", "0"], "more than 0"),
        (["swarm", "4", "--q3", "127.0.0.1", "--duration", "nan"], "more than 0"),
        (["swarm", "4", "--q3", "127.0.0.1", "--motion", "nosuch"], "no such motion"),
        (["swarm", "4", "--q3", "127.0.0.1", "--motion", "walk", "--trace", "t.jsonl"], "not allowed with"),
        (["swarm", "4", "--q3", "127.0.0.1", "--observers", "65"], "0..64"),
        (["swarm", "4", "--netsync", "127.0.0.1", "--room", "x" * 300], "255"),
    ],
)
def test_bad_flags_exit_2_with_one_line(capsys, argv, says):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err


def test_a_bad_motion_file_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.motion"
    bad.write_text("0 /user/head pos 0 1.6\n")
    assert main(["swarm", "2", "--q3", "127.0.0.1", "--motion", str(bad)]) == 2
    assert "bad.motion:1:" in capsys.readouterr().err
    assert main(["swarm", "2", "--q3", "127.0.0.1", "--trace", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("missing.jsonl") == 1 and "cannot open trace" in err, err  # named once
