"""Configuration precedence: defaults < user file < environment < flags; typed errors."""

from __future__ import annotations

import pytest

from headcast.app.run import config
from headcast.app.run.config import ConfigError


def test_defaults_come_from_the_packaged_file():
    c = config.load(user_file=None, env={"HOME": "/nonexistent"})
    assert c[("rig", "snap_angle")] == 45.0 and c[("netsync", "send_rate")] == 10.0
    assert c.sources[("rig", "snap_angle")] == "default"


def test_later_layers_win(tmp_path):
    f = tmp_path / "u.toml"
    f.write_text('[netsync]\nroom = "from-file"\nsend_rate = 20\n[rig]\nturn = "smooth"\n')
    env = {"HEADCAST_NETSYNC_ROOM": "from-env", "HEADCAST_Q3_VR": "off"}
    c = config.load(user_file=f, env=env, flags={("netsync", "room"): "from-flag", ("q3", "host"): None})
    assert c[("netsync", "room")] == "from-flag" and c.sources[("netsync", "room")] == "--room"
    assert c[("netsync", "send_rate")] == 20.0 and isinstance(c[("netsync", "send_rate")], float)
    assert c[("rig", "turn")] == "smooth" and c.sources[("rig", "turn")] == str(f)
    assert c[("q3", "vr")] is False and c.sources[("q3", "vr")] == "$HEADCAST_Q3_VR"
    assert c[("q3", "host")] == ""  # a flag left out (None) does not override


def test_env_names_the_user_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[q3]\nname = "zed"\n')
    assert config.load(env={"HEADCAST_CONFIG": str(f)})[("q3", "name")] == "zed"


def test_print_config_text_is_valid_toml_with_sources():
    import tomllib

    c = config.load(env={"HEADCAST_NETSYNC_ROOM": "r1", "HOME": "/nonexistent"})
    text = c.to_toml()
    assert "# $HEADCAST_NETSYNC_ROOM" in text
    assert tomllib.loads(text)["netsync"]["room"] == "r1"


@pytest.mark.parametrize(
    "body, match",
    [
        ('[rig]\nsnap_angle = "big"\n', "expected a number"),
        ('[q3]\nvr = "maybe"\n', "expected true/false"),
        ("[q3\n", "not valid TOML"),
        ("rig = 3\n", "must be a \\[section\\]"),
    ],
)
def test_bad_files_name_the_problem(tmp_path, body, match):
    f = tmp_path / "bad.toml"
    f.write_text(body)
    with pytest.raises(ConfigError, match=match):
        config.load(user_file=f, env={})


def test_missing_user_file_and_bad_env_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        config.load(user_file=tmp_path / "nope.toml", env={})
    with pytest.raises(ConfigError, match=r"\$HEADCAST_RIG_MOVE_SPEED"):
        config.load(env={"HEADCAST_RIG_MOVE_SPEED": "fast"})
