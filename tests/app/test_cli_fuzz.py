"""Property test: random argument vectors, config files and HEADCAST_* variables never get a
traceback out of the CLI (issue 14 item 5). The exit code is 0 or 2; on 2, stderr is warnings
plus exactly one error line; on 0, `--print-config` prints TOML (or JSON) that reads back.

The CLI runs in-process on paths that stop before any I/O beyond reading the config file:
`run … --print-config` loads and validates the whole configuration (flags, file, environment);
any other argument vector ends in `--help`, so it stops in argparse (help or a usage error).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tomllib
from unittest import mock

from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.app.commands import cli
from headcast.app.run import config

from support import LONG, REPO

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_", "XR_"))}
CLEAN_ENV["HOME"] = str(REPO / "build" / "no-home")

EXAMPLES = 4000 if LONG else 600


def _run_flags() -> tuple[list[str], list[str]]:
    """`run`'s flags from the parser itself: those taking one value, and the switches."""
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    values, switches = [], []
    for action in sub.choices["run"]._actions:
        flags = [f for f in action.option_strings if f.startswith("--") and f not in ("--help", "--print-config")]
        if flags and action.nargs is None:
            values.append(flags[0])
        elif flags and action.nargs == 0:
            switches.append(flags[0])
    return sorted(values), sorted(switches)


VALUE_FLAGS, SWITCHES = _run_flags()  # --pk3 (one or more values) is drawn on its own
SETTINGS = sorted(config.load(env={"HOME": "/nonexistent"}, warn=None).values)

# Text a user, a script or a broken terminal may pass: numbers at and past every limit, the
# characters protocols forbid, undecodable bytes (argv and the environment carry them as lone
# surrogates), very long strings.
NASTY = st.sampled_from(
    [
        "",
        " ",
        "-",
        "0",
        "-0",
        "1",
        "-1",
        "0.5",
        "60",
        "61",
        "255",
        "256",
        "65535",
        "65536",
        "1e300",
        "-1e300",
        "1e999",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "Infinity",
        "0x10",
        "1_000",
        "9" * 400,
        "true",
        "false",
        "auto",
        "snap",
        "smooth",
        "68",
        "71",
        "71-legacy",
        "3",
        "8",
        "9",
        'a"b',
        "a\\b",
        "a;b",
        "a\nb",
        "a\tb",
        "\x7f",
        "é" * 200,
        "x" * 2000,
        "李",
        "\udcff",
        "rec-\udc80.trace",
        "/nonexistent",
        "/dev/null",
        "/dev/zero",
        ".",
        "127.0.0.1",
        "127.0.0.1:0",
        "[::1]:27960",
        "h:1:2:3:4",
        "look_around",
    ]
)
TEXT = st.one_of(NASTY, st.text(max_size=40), st.floats().map(repr), st.integers().map(str))


def _env_text(s: str) -> str:
    # The environment holds bytes: no NUL; a surrogate only as the escape of an undecodable byte.
    return "".join(c for c in s if c != "\x00" and not ("\ud800" <= c < "\udc80" or "\udd00" <= c <= "\udfff"))


@st.composite
def run_argv(draw) -> list[str]:
    argv = ["run"]
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(SWITCHES)))
        else:
            argv += [draw(st.sampled_from(VALUE_FLAGS)), draw(TEXT)]
    if draw(st.booleans()):
        argv += ["--pk3", *draw(st.lists(TEXT, min_size=1, max_size=3))]
    return argv + ["--print-config"]


@st.composite
def other_argv(draw) -> list[str]:
    """Any command with random tokens, ending in --help: argparse answers (help or an error)."""
    command = draw(
        st.sampled_from(
            [[], ["run"], ["demo"], ["replay"], ["probe"], ["probe", "q3"], ["probe", "netsync"], ["doctor"], ["bogus"]]
        )
    )
    tokens = draw(
        st.lists(
            st.one_of(
                TEXT, st.sampled_from(VALUE_FLAGS + SWITCHES + ["--timeout", "--motion", "--synthetic", "--room"])
            ),
            max_size=5,
        )
    )
    # "--" would make --help a positional (a host or a file): that would do real I/O.
    return command + [t for t in tokens if t != "--"] + ["--help"]


TOML_SCALAR = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
    st.sampled_from(
        ["nan", "inf", "-inf", "1e300", "0.0", "-5", "0", "1.5", "true", "false", "1979-05-27T07:32:00Z", "9" * 30]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=30).filter(lambda s: not any("\ud800" <= c <= "\udfff" for c in s)).map(json.dumps),
)
TOML_VALUE = st.recursive(
    TOML_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.dictionaries(st.sampled_from(["a", "b", "room"]), inner, max_size=2).map(
            lambda d: "{" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=6,
)
KEY = st.one_of(
    st.sampled_from(SETTINGS),
    st.tuples(st.sampled_from(["run", "q3", "rig", "nope"]), st.sampled_from(["durration", "name", "x", "snap_angel"])),
)


@st.composite
def config_file(draw) -> bytes:
    kind = draw(st.sampled_from(["settings", "settings", "settings", "bytes", "nested"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "nested":
        depth = draw(st.integers(1, 3000))
        return ("[run]\nduration = " + "[" * depth + "]" * depth + "\n").encode()
    lines, sections = [], {}
    for (section, key), value in draw(
        st.lists(st.tuples(KEY, st.one_of(TOML_VALUE, TEXT.map(json.dumps))), max_size=6)
    ):
        sections.setdefault(section, {})[key] = value
    if draw(st.booleans()):
        lines.append(f"{draw(st.sampled_from(['duration', 'rig', 'x']))} = {draw(TOML_SCALAR)}")
    for section, kv in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {v}" for k, v in kv.items()]
    return "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"


ENV = st.dictionaries(
    st.one_of(
        st.sampled_from([config.env_name(k) for k in SETTINGS]),
        st.sampled_from(["HEADCAST_RUN_DURATON", "HEADCAST_", "HEADCAST_X", "HEADCAST_MOCK_PROFLE"]),
        st.text(min_size=1, max_size=20).map(lambda t: "HEADCAST_" + _env_text(t).replace("=", "")),
    ),
    TEXT.map(_env_text),
    max_size=4,
)


def call(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, {**CLEAN_ENV, **env}, clear=True),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = cli.main(argv)
        except BaseException as e:  # noqa: BLE001 - the property: nothing escapes
            raise AssertionError(f"{type(e).__name__} escaped for argv={argv!r} env={env!r}: {e}") from e
    return code, out.getvalue(), err.getvalue()


def check(code: int, out: str, err: str, argv: list[str], env: dict) -> None:
    what = f"argv={argv!r} env={env!r} code={code} stderr={err!r}"
    assert code in (0, 2), what
    assert "Traceback" not in err + out, what
    lines = err.splitlines()
    errors = [line for line in lines if not line.startswith("headcast: warning: ")]
    if code == 2:
        assert len(errors) == 1 and ": error: " in errors[0], what
    else:
        assert errors == [], what
        if "--print-config" in argv and "--help" not in argv:
            if "--json" in argv:
                json.loads(out)
            else:
                tomllib.loads(out)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=run_argv(), env=ENV, body=st.one_of(st.none(), config_file()))
def test_run_print_config_never_lets_a_traceback_out(tmp_path_factory, argv, env, body):
    if body is not None:
        path = tmp_path_factory.getbasetemp() / "fuzz.toml"
        path.write_bytes(body)
        argv = argv[:1] + ["--config", str(path)] + argv[1:]
    code, out, err = call(argv, env)
    check(code, out, err, argv, env)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=other_argv(), env=ENV)
def test_any_command_with_random_tokens_answers_in_argparse(argv, env):
    code, out, err = call(argv, env)
    check(code, out, err, argv, env)
    if code == 0:
        assert out.startswith("usage: headcast"), (argv, out[:200])
