"""Every input validated at the edge (issue 14): each bad value the issue lists is one line on
stderr naming the value and the limit, exit 2, before any server, socket or XR session opens.

The CLI runs in-process (`cli.main(argv)`) on paths that stop before any I/O: `run
--print-config` loads and validates the whole configuration; argparse refuses bad probe flags.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from unittest import mock

import pytest

from headcast.app.commands import cli
from headcast.app.run import config
from headcast.app.run.config import ConfigError

from support import REPO

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("HEADCAST_", "XR_"))}
CLEAN_ENV["HOME"] = str(REPO / "build" / "no-home")  # no user config file


def headcast(*argv: str, **env: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, {**CLEAN_ENV, **env}, clear=True),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def refused(*argv: str, **env: str) -> str:
    """The one stderr line of a run refused with exit 2."""
    code, out, err = headcast(*argv, **env)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "name, words",
    [
        ('a"b', '--name: q3.name = \'a"b\': a Quake 3 player name holds " (an info string cannot hold any of \\ " ;)'),
        ("a\\b", "--name: q3.name = 'a\\\\b': a Quake 3 player name holds \\"),
        ("a;b", "--name: q3.name = 'a;b': a Quake 3 player name holds ;"),
        ("x" * 2000, "a Quake 3 player name is 2000 characters; the game keeps 35 (MAX_NETNAME 36"),
        ("", "--name: q3.name = '': a Quake 3 player name is empty"),
    ],
)
def test_q3_names_the_userinfo_cannot_carry(name, words):
    assert words in refused("run", "--print-config", "--name", name)


def test_a_long_name_is_shown_cut_not_whole():
    err = refused("run", "--print-config", "--name", "x" * 2000)
    assert len(err) < 300


def test_the_name_from_a_file_or_the_environment_names_its_source(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[q3]\nname = "semi;colon"\n')
    assert f"{f}: q3.name = 'semi;colon': a Quake 3 player name holds ;" in refused(
        "run", "--print-config", "--config", str(f)
    )
    assert "$HEADCAST_Q3_NAME: q3.name = 'a\"b'" in refused("run", "--print-config", HEADCAST_Q3_NAME='a"b')


def test_a_password_is_checked_but_never_shown():
    err = refused("run", "--print-config", "--password", "sec;ret")
    assert "--password: q3.password: the Quake 3 password holds ;" in err and "sec" not in err


def test_a_300_byte_device_id():
    err = refused("run", "--print-config", "--device-id", "d" * 300)
    assert (
        "--device-id: netsync.device_id = 'dddd" in err
        and "the device id is 300 bytes of UTF-8; the wire allows 255" in err
    )


def test_a_room_over_255_bytes():
    err = refused("run", "--print-config", "--room", "é" * 130)
    assert (
        "--room: netsync.room = 'éééé" in err
        and "the NetSync room id is 260 bytes of UTF-8; the wire allows 255" in err
    )
    err = refused("probe", "netsync", "127.0.0.1", "--room", "r" * 256)
    assert "argument --room: the NetSync room id is 256 bytes of UTF-8; the wire allows 255" in err


def test_a_missing_pk3_is_refused_up_front(tmp_path):
    missing = tmp_path / "pak9.pk3"
    err = refused("run", "--print-config", "--pk3", str(missing))
    assert f"--pk3: q3.pk3 = {missing}: No such file or directory (a pure server, sv_pure 1, checks" in err
    notzip = tmp_path / "pak0.pk3"
    notzip.write_text("text")
    assert f"--pk3: q3.pk3 = {notzip}: not a readable pk3" in refused("run", "--print-config", "--pk3", str(notzip))


def test_a_config_file_that_is_not_utf8(tmp_path):
    f = tmp_path / "latin1.toml"
    f.write_bytes(b'[q3]\nname = "J\xf6rg"\n')
    assert f"config file {f} is not UTF-8 text (byte 0xf6 at offset 14)" in refused(
        "run", "--print-config", "--config", str(f)
    )


@pytest.mark.parametrize("body", ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 5000 + "1" + "}" * 5000])
def test_a_config_file_nested_deeply(tmp_path, body):
    f = tmp_path / "deep.toml"
    f.write_text(body + "\n")
    assert f"config file {f} nests arrays or tables too deeply" in refused("run", "--print-config", "--config", str(f))


def test_a_nested_value_where_a_setting_belongs_is_shown_cut(tmp_path):
    f = tmp_path / "nested.toml"
    f.write_text("[q3]\nname = " + "[" * 50 + "]" * 50 + "\n")
    err = refused("run", "--print-config", "--config", str(f))
    assert "q3.name: expected a string, got [[[[" in err and len(err) < 200


def test_config_files_that_are_not_config_files(tmp_path):
    assert f"cannot read config file {tmp_path}: Is a directory" in refused(
        "run", "--print-config", "--config", str(tmp_path)
    )
    assert "config file /dev/zero is over 1 MiB" in refused("run", "--print-config", "--config", "/dev/zero")
    assert headcast("run", "--print-config", "--config", "/dev/null")[0] == 0  # "no user settings"
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (1 << 20) + "\n")
    assert "is over 1 MiB" in refused("run", "--print-config", "--config", str(big))


@pytest.mark.parametrize("value", ["0", "nan", "-1", "inf", "1e9"])
def test_demo_synthetic_rate(tmp_path, value):
    f = tmp_path / "rate.toml"
    f.write_text(f"[xr]\nrate = {value}\n")
    err = refused("run", "--print-config", "--config", str(f))
    assert f"{f}: xr.rate = {float(value):g}: must be 1..1000 Hz" in err
    # demo loads the configuration before it starts any server (--no-q3/--no-netsync: none to start anyway)
    err = refused("demo", "--synthetic", "--no-q3", "--no-netsync", "--no-mirror", "--config", str(f))
    assert "xr.rate" in err


@pytest.mark.parametrize("value", ["nan", "-5", "inf"])
def test_duration(value):
    assert (
        f"--duration: run.duration = {float(value):g}: must be finite and at least 0 s (0 = until Ctrl-C)"
        in refused("run", "--print-config", "--duration", value)
    )
    assert f"run.duration = {float(value):g}" in refused("demo", "--duration", value, "--no-q3", "--no-netsync")


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf"])
def test_connect_timeout(tmp_path, value):
    f = tmp_path / "t.toml"
    f.write_text(f"[run]\nconnect_timeout = {value}\n")
    want = f"run.connect_timeout = {float(value):g}: must be finite and more than 0 s"
    assert f"{f}: {want}" in refused("run", "--print-config", "--config", str(f))
    assert f"$HEADCAST_RUN_CONNECT_TIMEOUT: {want}" in refused(
        "run", "--print-config", HEADCAST_RUN_CONNECT_TIMEOUT=value
    )


@pytest.mark.parametrize("kind, host", [("q3", "127.0.0.1"), ("netsync", "127.0.0.1")])
@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf"])
def test_probe_timeout(kind, host, value):
    assert f"argument --timeout: {value}: must be a finite number of seconds more than 0" in refused(
        "probe", kind, host, "--timeout", value
    )


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ("run", "--bogus"),
            "headcast: error: unrecognized arguments: --bogus (`headcast run --help` lists the options)",
        ),
        (("run", "--turn", "spin"), "headcast run: error: argument --turn: invalid choice: 'spin'"),
        (("demo", "--duration", "soon"), "invalid float value: 'soon'"),
        (("probe",), "the following arguments are required: KIND"),
        ((), "the following arguments are required: COMMAND"),
    ],
)
def test_bad_flags_are_one_line(argv, words):
    assert words in refused(*argv)


@pytest.mark.parametrize(
    "env, words",
    [
        ({"HEADCAST_RIG_SNAP_ANGLE": "0"}, "$HEADCAST_RIG_SNAP_ANGLE: rig.snap_angle = 0: must be 1..180°"),
        ({"HEADCAST_NETSYNC_SEND_RATE": "nan"}, "netsync.send_rate = nan: must be 0.5..60 Hz (Unity's clamp)"),
        ({"HEADCAST_MIRROR_WIDTH": "1e3"}, "$HEADCAST_MIRROR_WIDTH: mirror.width: expected a whole number, got '1e3'"),
        ({"HEADCAST_MIRROR_WIDTH": "9" * 5000}, "mirror.width: expected a whole number, got '9999"),
        ({"HEADCAST_MIRROR_ENABLED": "maybe"}, "mirror.enabled = 'maybe': expected one of auto, true, false"),
        ({"HEADCAST_XR_SESSION": "vulkan"}, "xr.session = 'vulkan': expected one of auto, gl, headless"),
        ({"HEADCAST_Q3_PROTOCOL": "70"}, "q3.protocol = '70': '70' is not a Quake 3 protocol"),
    ],
)
def test_environment_values(env, words):
    assert words in refused("run", "--print-config", **env)


def test_a_nul_character_in_a_string(tmp_path):
    f = tmp_path / "nul.toml"
    f.write_text('[run]\nrecord = "a\\u0000b"\n')
    assert f"{f}: run.record = 'a\\x00b': holds a NUL character" in refused("run", "--print-config", "--config", str(f))


def test_huge_integers_in_a_file(tmp_path):
    f = tmp_path / "big.toml"
    f.write_text(f"[run]\nduration = {'9' * 400}\n[mirror]\nwidth = 1.5\n")
    assert "run.duration: " + "9" * 38 in refused("run", "--print-config", "--config", str(f))
    f.write_text("[mirror]\nwidth = 1.5\n")
    assert "mirror.width: expected a whole number, got 1.5" in refused("run", "--print-config", "--config", str(f))


def test_print_config_shows_undecodable_paths_without_failing():
    code, out, err = headcast("run", "--print-config", "--record", "rec-\udcff.trace")
    assert code == 0 and 'record = "rec-\ufffd.trace"  # --record' in out, err


# ---------------------------------------------------------------------------- unknown names


def test_unknown_variables_are_warned_about_with_the_closest_name():
    code, out, err = headcast(
        "run", "--print-config", HEADCAST_RUN_DURATON="5", HEADCAST_MOCK_PROFLE="x", HEADCAST_ZZZ="1"
    )
    lines = err.splitlines()
    assert (
        "headcast: warning: unknown variable HEADCAST_RUN_DURATON ignored (did you mean HEADCAST_RUN_DURATION?)"
        in lines
    )
    assert (
        "headcast: warning: unknown variable HEADCAST_MOCK_PROFLE ignored (did you mean HEADCAST_MOCK_PROFILE?)"
        in lines
    )
    assert any(
        line.startswith(
            "headcast: warning: unknown variable HEADCAST_ZZZ ignored (settings are HEADCAST_<SECTION>_<KEY>"
        )
        for line in lines
    )


def test_known_variables_are_not_warned_about():
    env = {"HEADCAST_RUN_DURATION": "5", "HEADCAST_MOCK_THROTTLE": "0", "HEADCAST_PURE_PYTHON": "0"}
    code, out, err = headcast("run", "--print-config", **env)
    assert code == 0 and err == ""
    assert config.env_warnings({**env, "PATH": "/bin"}) == []


def test_every_command_warns_about_unknown_variables():
    code, out, err = headcast("probe", "q3", "host:port", HEADCAST_Q3_NAEM="x")  # refused before any socket
    assert code == 2 and "the port must be a number" in err
    assert "unknown variable HEADCAST_Q3_NAEM ignored (did you mean HEADCAST_Q3_NAME?)" in err


def test_unknown_keys_in_a_file_are_warnings_naming_the_closest_setting(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('duration = 3\n[rig]\nsnap_angel = 30\n[run]\nname = "x"\n[netsyc]\nroom = "r"\n[q3]\nname = "ok"\n')
    warned: list[str] = []
    cfg = config.load(user_file=f, env={}, warn=warned.append)
    assert cfg[("q3", "name")] == "ok" and cfg.warnings == warned
    assert warned == [
        f"{f}: unknown setting duration ignored (did you mean run.duration?)",
        f"{f}: unknown setting rig.snap_angel ignored (did you mean rig.snap_angle?)",
        f"{f}: unknown setting run.name ignored (did you mean q3.name?)",
        f"{f}: unknown setting netsyc.room ignored (did you mean netsync.room?)",
    ]
    code, out, err = headcast("run", "--print-config", "--config", str(f))
    assert code == 0 and err.count("headcast: warning: ") == 4


def test_a_known_section_that_is_not_a_table_is_an_error(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("rig = 3\n")
    with pytest.raises(ConfigError, match=r"'rig' must be a \[section\] of settings, got 3"):
        config.load(user_file=f, env={})


def test_validate_accepts_the_defaults_and_the_shipped_examples():
    cfg = config.load(user_file=None, env={"HOME": "/nonexistent"})
    assert cfg.warnings == []
    config.validate(cfg)
    assert Path(REPO / "assets" / "config" / "default.toml").is_file()


def test_demo_refuses_a_bad_value_before_starting_any_server(tmp_path):
    f = tmp_path / "rate.toml"
    f.write_text("[xr]\nrate = 0\n")
    boom = AssertionError("a server was started")
    with (
        mock.patch("headcast.app.commands.demo.start_netsync", side_effect=boom),
        mock.patch("headcast.app.commands.demo.start_q3", side_effect=boom),
    ):
        assert "run.duration = nan" in refused("demo", "--duration", "nan")
        assert "xr.rate = 0" in refused("demo", "--synthetic", "--config", str(f))


# ---------------------------------------------------------------------------- trace values


def _frames(n=30):
    from headcast.app.run.synthetic import LOOK_AROUND, frame_at

    return [frame_at(LOOK_AROUND, i, i / 90, int(i / 90 * 1e9)) for i in range(n)]


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(head=(1e300, 1.6, 0.0)), "head position x = 1e+300 m is outside ±10000 m"),
        (dict(right_aim=(0.0, -2e4, 0.0)), "right_aim position y = -20000 m is outside ±10000 m"),
        (dict(orientation=(0.0, 0.0, 0.0, 0.0)), "head orientation (0, 0, 0, 0) is flagged valid but is not a unit"),
        (dict(orientation=(1e300, 0.0, 0.0, 1.0)), "head orientation (1e+300, 0, 0, 1) is not a rotation"),
        (dict(move=(5.0, 0.0)), "controls move x = 5 is outside -1..1"),
        (dict(time_ns=2**64), "time_ns 18446744073709551616 or seq 3 is outside 0..2^63-1"),
    ],
)
def test_frame_problem_names_the_value_and_the_limit(change, words):
    import dataclasses

    from headcast.xr.frame import Controls, frame_problem

    frame = _frames(4)[3]
    assert frame_problem(frame) is None
    if "head" in change:
        frame = dataclasses.replace(frame, head=dataclasses.replace(frame.head, position=change["head"]))
    elif "right_aim" in change:
        frame = dataclasses.replace(frame, right_aim=dataclasses.replace(frame.right_aim, position=change["right_aim"]))
    elif "orientation" in change:
        frame = dataclasses.replace(frame, head=dataclasses.replace(frame.head, orientation=change["orientation"]))
    elif "move" in change:
        frame = dataclasses.replace(frame, controls=Controls(move=change["move"]))
    else:
        frame = dataclasses.replace(frame, **change)
    assert frame_problem(frame) == words or words in frame_problem(frame)


def test_a_replayed_trace_with_a_huge_value_drops_and_counts_that_frame(tmp_path):
    """1e300 is finite, so the trace reader takes it; the Sauerbraten sink's encoder crashed on it
    (ValueError: 8e+300 does not fit a float). Replay drops such frames, names the first, counts them."""
    import dataclasses

    from headcast.xr.trace import write_trace

    frames = _frames()
    for i in (5, 6, 7):
        frames[i] = dataclasses.replace(frames[i], head=dataclasses.replace(frames[i].head, position=(1e300, 1.6, 0)))
    path = tmp_path / "huge.trace"
    write_trace(path, frames)
    code, out, err = headcast("replay", str(path), "--no-mirror")
    assert code == 0, err
    assert err.splitlines() == [
        f"headcast: {path}: frame 5: head position x = 1e+300 m is outside ±10000 m — "
        "frame dropped, no tracking frame holds that (later ones are counted)"
    ]
    assert (
        f"stopped: replay finished (27 frames from {path}; 3 frames dropped for values out of range, "
        "the first at frame 5: head position x = 1e+300 m"
    ) in out
    assert "frames 27 " in out


# ---------------------------------------------------------------------------- paths and one line


LONG_NAME = "é" * 200  # 400 bytes: pathlib's is_file() raises ENAMETOOLONG instead of answering


@pytest.mark.parametrize(
    "argv, words",
    [
        (("run", "--print-config", "--pk3", f"/tmp/{LONG_NAME}"), "--pk3: q3.pk3 = '/tmp/éé"),
        (("run", "--print-config", "--mock", LONG_NAME), "--mock: xr.mock = 'éé"),
        (("run", "--print-config", "--record", LONG_NAME), "--record: run.record = 'éé"),
        (("replay", LONG_NAME), "headcast replay: error: argument FILE: 'éé"),
        (("demo", "--motion", LONG_NAME), "headcast demo: error: argument --motion: 'éé"),
        (("run", "--config", LONG_NAME), "headcast run: error: argument --config: 'éé"),
    ],
)
def test_names_longer_than_the_file_system_takes(argv, words):
    err = refused(*argv)
    assert words in err and "has a name of 400 bytes; a file name is at most 255" in err


def test_a_line_break_in_a_value_does_not_break_the_line(tmp_path):
    err = refused("run", "--print-config", "--pk3", "a\nb\x85c")
    assert "a\\nb\\x85c" in err
    f = tmp_path / "c.toml"
    f.write_text('[run]\n"dura\\ntion" = 1\n')
    code, out, err = headcast("run", "--print-config", "--config", str(f))
    assert code == 0 and err.splitlines() == [
        f"headcast: warning: {f}: unknown setting 'run.dura\\ntion' ignored (did you mean run.duration?)"
    ]


def test_a_nul_in_a_secret_is_named_without_the_secret(tmp_path):
    f = tmp_path / "nul.toml"
    f.write_text('[q3]\npassword = "hunter\\u0000two"\n')
    err = refused("run", "--print-config", "--config", str(f))
    assert f"{f}: q3.password = (secret): holds a NUL character" in err and "hunter" not in err


def test_an_integer_too_large_for_a_float_is_out_of_range():
    # math.isfinite(10**400) raises OverflowError (found by test_cli_fuzz)
    assert "netsync.transform_port = " in refused("run", "--print-config", "--netsync-transform-port", "9" * 400)
