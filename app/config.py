"""Configuration: packaged defaults, a user TOML file, environment, flags — later wins.

Every key must exist in assets/config/default.toml; a value from a file, the environment or a
flag is checked against the default's type, so a typo is an error that names the key and its
source rather than a silently ignored setting.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from headcast.app.assets import asset_path

ENV_PREFIX = "HEADCAST_"
Key = tuple[str, str]
# The flags whose name is not --<key> (the source named in --print-config and in errors).
FLAG_NAMES: dict[Key, str] = {
    ("xr", "mock"): "--mock", ("q3", "host"): "--q3", ("q3", "vr"): "--vr/--no-vr", ("q3", "protocol"): "--q3-protocol",
    ("netsync", "host"): "--netsync", ("netsync", "protocol"): "--netsync-protocol",
    ("netsync", "transform_port"): "--netsync-transform-port", ("mirror", "enabled"): "--mirror/--no-mirror",
}


# Values --print-config shows only as set or not.
SECRETS: frozenset[Key] = frozenset({("q3", "password")})


class ConfigError(Exception):
    """A configuration file, variable or value is unusable; the message says which and why."""


@dataclass
class Config:
    values: dict[Key, Any]
    sources: dict[Key, str] = field(default_factory=dict)

    def __getitem__(self, key: Key) -> Any:
        return self.values[key]

    def redacted(self) -> "Config":
        """This configuration with the secrets (SECRETS) replaced by "(set)" where they are set."""
        values = {k: ("(set)" if k in SECRETS and v else v) for k, v in self.values.items()}
        return Config(values, dict(self.sources))

    def section(self, name: str) -> dict[str, Any]:
        return {k: v for (s, k), v in self.values.items() if s == name}

    def as_dict(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for (s, k), v in self.values.items():
            out.setdefault(s, {})[k] = v
        return out

    def to_toml(self) -> str:
        lines: list[str] = []
        for s, kv in self.as_dict().items():
            lines.append(f"[{s}]")
            for k, v in kv.items():
                lines.append(f"{k} = {_toml_value(v)}  # {self.sources[(s, k)]}")
            lines.append("")
        return "\n".join(lines)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None


def _coerce(default: Any, value: Any, where: str) -> Any:
    """`value` as the type of `default`; strings (from the environment) are parsed."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
        # "auto"-style tri-states are strings in the defaults, so a bool default wants a bool.
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if isinstance(default, (int, float)):
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            num = float(value) if isinstance(default, float) else int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
        return num
    if isinstance(default, list):
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p]
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            return list(value)
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    if isinstance(value, bool):
        return "true" if value else "false"  # tri-state strings such as mirror.enabled
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"{where}: expected a string, got {value!r}")


def default_user_file(env: Mapping[str, str]) -> Path | None:
    if env.get("HEADCAST_CONFIG"):
        return Path(env["HEADCAST_CONFIG"])
    base = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME", "~")).expanduser() / ".config")
    candidate = base / "headcast" / "config.toml"
    return candidate if candidate.is_file() else None


def load(user_file: Path | None = None, env: Mapping[str, str] | None = None,
         flags: Mapping[Key, Any] | None = None) -> Config:
    """Merge defaults ← user file ← environment ← flags. `user_file` None = the default location."""
    env = os.environ if env is None else env
    defaults = _read_toml(asset_path("config", "default.toml"))
    cfg = Config({}, {})
    for s, kv in defaults.items():
        for k, v in kv.items():
            cfg.values[(s, k)] = v
            cfg.sources[(s, k)] = "default"

    path = user_file if user_file is not None else default_user_file(env)
    if path is not None:
        for s, kv in _read_toml(path).items():
            if not isinstance(kv, dict):
                raise ConfigError(f"{path}: top-level key {s!r} must be a [section]")
            for k, v in kv.items():
                _set(cfg, (s, k), v, str(path))

    known_env = {f"{ENV_PREFIX}{s.upper()}_{k.upper()}": (s, k) for (s, k) in cfg.values}
    for name, value in env.items():
        if name in known_env:
            _set(cfg, known_env[name], value, f"${name}")

    for key, value in (flags or {}).items():
        if value is not None:
            _set(cfg, key, value, FLAG_NAMES.get(key) or f"--{key[1].replace('_', '-')}")
    return cfg


def _set(cfg: Config, key: Key, value: Any, source: str) -> None:
    if key not in cfg.values:
        raise ConfigError(f"{source}: unknown setting {key[0]}.{key[1]} "
                          f"(known in [{key[0]}]: {', '.join(sorted(cfg.section(key[0]))) or 'none'})")
    cfg.values[key] = _coerce(cfg.values[key], value, f"{source}: {key[0]}.{key[1]}")
    cfg.sources[key] = source
