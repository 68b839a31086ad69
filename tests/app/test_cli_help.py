"""--help that teaches and bad flags that say what was meant (issue 25 item 9).

Before: `headcast run --duraton 5` said "unrecognized arguments: --duraton (`headcast --help`
lists the options)", and `headcast --help` lists no flag of `run`. Now the closest flag is named
and the line points at the subcommand's own help; `headcast --help` says how to see each
command's flags.
"""

from __future__ import annotations

import pytest

from support import headcast


def one_error_line(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    (line,) = r.stderr.splitlines()
    return line


@pytest.mark.parametrize(
    "args, meant, help_of",
    [
        (("run", "--duraton", "5"), "--duration", "headcast run --help"),
        (("run", "--netsync-protocl=8"), "--netsync-protocol", "headcast run --help"),
        (("replay", "x.trace", "--no-mirorr"), "--no-mirror", "headcast replay --help"),
        (("probe", "netsync", "127.0.0.1", "--tiemout", "1"), "--timeout", "headcast probe netsync --help"),
        (("demo", "--no-sauerbraten"), "--no-sauer", "headcast demo --help"),
    ],
)
def test_a_mistyped_flag_names_the_closest_one_and_the_commands_help(args, meant, help_of):
    line = one_error_line(headcast(*args))
    assert f"did you mean {meant}?" in line and f"`{help_of}` lists the options" in line, line


def test_a_mistyped_command_names_the_closest_one():
    line = one_error_line(headcast("rnu", "--mock", "look_around"))
    assert "did you mean run?" in line, line


def test_a_commands_flag_before_the_command_says_where_it_goes():
    line = one_error_line(headcast("--json", "probe", "netsync", "127.0.0.1"))
    assert "--json is a flag of `headcast probe netsync`: put it after the command" in line, line


def test_the_main_help_says_how_to_see_each_commands_flags():
    r = headcast("--help")
    assert r.returncode == 0
    assert "headcast COMMAND --help" in r.stdout and "headcast run --help" in r.stdout, r.stdout
