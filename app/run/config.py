"""Configuration: packaged defaults, a user TOML file, environment, flags — later wins.

Every key exists in assets/config/default.toml. A value from a file, the environment or a flag
is checked against the default's type and then against its limits (`validate`), so a bad value
is an error that names the key, the value, its source and the limit. A key or a HEADCAST_*
variable headcast does not know is a warning naming the closest known one: a typo is said, not
silently ignored, and an older or newer config file still loads.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from headcast.app.assets import asset_path

ENV_PREFIX = "HEADCAST_"
Key = tuple[str, str]
# The flags whose name is not --<key> (the source named in --print-config and in errors).
FLAG_NAMES: dict[Key, str] = {
    ("xr", "mock"): "--mock",
    ("q3", "host"): "--q3",
    ("q3", "vr"): "--vr/--no-vr",
    ("q3", "protocol"): "--q3-protocol",
    ("netsync", "host"): "--netsync",
    ("netsync", "protocol"): "--netsync-protocol",
    ("netsync", "transform_port"): "--netsync-transform-port",
    ("mirror", "enabled"): "--mirror/--no-mirror",
    ("sauer", "host"): "--sauer",
    ("sauer", "password"): "--sauer-password",
}


# HEADCAST_* variables that are not settings (read by the mock runtime, the Q3 codec, the
# scripts and the test suite): known, so never warned about.
OTHER_ENV: frozenset[str] = frozenset(
    {
        "HEADCAST_CONFIG",
        "HEADCAST_PURE_PYTHON",
        "HEADCAST_MOCK_MOTION",
        "HEADCAST_MOCK_SCRIPT",
        "HEADCAST_MOCK_PROFILE",
        "HEADCAST_MOCK_THROTTLE",
        "HEADCAST_MOCK_LOG",
        "HEADCAST_LONG",
        "HEADCAST_PYTHON",
        "HEADCAST_MOCK_PROFILE_RUNTIME",
        "HEADCAST_MOCK_CLOCK",
        "HEADCAST_MOCK_FAIL",
        "HEADCAST_MOCK_HEADLESS_FOCUS",
    }
)
# A config file is a few hundred bytes; reading more than this is reading the wrong file.
MAX_FILE_BYTES = 1 << 20

# Values --print-config shows only as set or not.
SECRETS: frozenset[Key] = frozenset({("q3", "password"), ("sauer", "password")})


class ConfigError(Exception):
    """A configuration file, variable or value is unusable; the message says which and why."""


@dataclass
class Config:
    values: dict[Key, Any]
    sources: dict[Key, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

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
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)  # "nan", "inf": TOML's own spelling (only shown before validate refuses them)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    # A path from argv or the environment may hold bytes that are not UTF-8 (lone surrogates):
    # shown as U+FFFD, since TOML text cannot carry them.
    text = str(v).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return (
        '"' + "".join(_TOML_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if c < " " or c == "\x7f" else c) for c in text) + '"'
    )


_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shown(value: Any, limit: int = 40) -> str:
    """A value as an error message shows it: repr (so control characters and undecodable bytes
    stay visible), cut to `limit` characters of text."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}…"
    text = repr(value)
    return text if len(text) <= limit + 2 else text[:limit] + "…"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)  # bounded: /dev/zero or a log named by mistake
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_FILE_BYTES >> 20} MiB: not a headcast config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
            f"{e.start}); TOML files are UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
    except ValueError as e:  # an integer over Python's 4,300-digit limit for int(str): tomllib's own ValueError
        raise ConfigError(f"config file {path} is not usable TOML: {e}") from None
    except RecursionError:
        raise ConfigError(
            f"config file {path} nests arrays or tables too deeply to read "
            f"(headcast's settings are flat: [section] key = value)"
        ) from None


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
        if isinstance(default, int) and isinstance(value, float):
            if not value.is_integer():
                raise ConfigError(f"{where}: expected a whole number, got {shown(value)}")
            value = int(value)
        try:
            num = float(value) if isinstance(default, float) else int(value)
        except OverflowError:
            raise ConfigError(f"{where}: {shown(value)} is too large a number") from None
        except (TypeError, ValueError):
            raise ConfigError(
                f"{where}: expected {'a number' if isinstance(default, float) else 'a whole number'}"
                f", got {shown(value)}"
            ) from None
        return num
    if isinstance(default, list):
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p]
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            return list(value)
        raise ConfigError(f"{where}: expected a list of strings, got {shown(value)}")
    if isinstance(value, bool):
        return "true" if value else "false"  # tri-state strings such as mirror.enabled
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"{where}: expected a string, got {shown(value)}")


def default_user_file(env: Mapping[str, str]) -> Path | None:
    if env.get("HEADCAST_CONFIG"):
        return Path(env["HEADCAST_CONFIG"])
    base = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME", "~")).expanduser() / ".config")
    candidate = base / "headcast" / "config.toml"
    try:
        return candidate if candidate.is_file() else None
    except OSError:  # a HOME too long to be a path: there is no user file there
        return None


@functools.lru_cache(maxsize=1)
def _default_table() -> dict[str, Any]:
    """The shipped defaults, parsed once per process (every load, env_warnings ... starts from them)."""
    return _read_toml(asset_path("config", "default.toml"))


def _defaults() -> Config:
    cfg = Config({}, {})
    for s, kv in copy.deepcopy(_default_table()).items():
        for k, v in kv.items():
            cfg.values[(s, k)] = v
            cfg.sources[(s, k)] = "default"
    return cfg


def env_name(key: Key) -> str:
    return f"{ENV_PREFIX}{key[0].upper()}_{key[1].upper()}"


def _bare(name: str) -> str:
    """A key or variable name as a warning shows it: as is when it is plain text, else `shown`."""
    return name if name.isprintable() and " " not in name and len(name) <= 60 else shown(name, 60)


def _closest(name: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def env_warnings(env: Mapping[str, str] | None = None) -> list[str]:
    """One warning per HEADCAST_* variable that is neither a setting nor one of OTHER_ENV,
    naming the closest known name."""
    env = os.environ if env is None else env
    known = sorted({env_name(k) for k in _defaults().values} | OTHER_ENV)
    out = []
    for name in sorted(env):
        if name.startswith(ENV_PREFIX) and name not in known:
            # Compared without the common prefix, which would make any two names look alike.
            near = _closest(name[len(ENV_PREFIX) :], [k[len(ENV_PREFIX) :] for k in known])
            near = near and ENV_PREFIX + near
            out.append(
                f"unknown variable {_bare(name)} ignored ("
                + (
                    f"did you mean {near}?"
                    if near
                    else "settings are HEADCAST_<SECTION>_<KEY>; `headcast run --print-config` lists them"
                )
                + ")"
            )
    return out


def _warn_stderr(message: str) -> None:
    from headcast.app.errors import one_line

    print(f"headcast: warning: {one_line(message)}", file=sys.stderr)


def load(
    user_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[Key, Any] | None = None,
    warn: Callable[[str], None] | None = _warn_stderr,
) -> Config:
    """Merge defaults ← user file ← environment ← flags, then `validate`. `user_file` None = the
    default location. Unknown keys in the file are warnings (cfg.warnings, each also passed to
    `warn`); unknown variables are `env_warnings`'."""
    env = os.environ if env is None else env
    cfg = _defaults()

    path = user_file if user_file is not None else default_user_file(env)
    if path is not None:
        for s, kv in _read_toml(path).items():
            if not isinstance(kv, dict):
                if s in {sec for sec, _ in cfg.values}:
                    raise ConfigError(f"{path}: {shown(s)} must be a [section] of settings, got {shown(kv)}")
                _unknown(cfg, path, s, None)
                continue
            for k, v in kv.items():
                if (s, k) in cfg.values:
                    _set(cfg, (s, k), v, str(path))
                else:
                    _unknown(cfg, path, s, k)

    known_env = {env_name(key): key for key in cfg.values}
    for name, value in env.items():
        if name in known_env:
            _set(cfg, known_env[name], value, f"${name}")

    for key, value in (flags or {}).items():
        if value is not None:
            _set(cfg, key, value, flag_name(key))
    if warn is not None:
        for w in cfg.warnings:
            warn(w)
    validate(cfg)
    return cfg


def flag_name(key: Key) -> str:
    return FLAG_NAMES.get(key) or f"--{key[1].replace('_', '-')}"


def _unknown(cfg: Config, path: Path, section: str, key: str | None) -> None:
    """A warning for an unknown key of the file (`key` None: a top-level one), naming the
    closest known setting: the same key in another section first, else the closest spelling."""
    dotted = section if key is None else f"{section}.{key}"
    name = section if key is None else key
    known = [f"{s}.{k}" for s, k in cfg.values]
    near = next((d for d in known if d.split(".", 1)[1] == name), None) or _closest(dotted, known)
    if near is None and key is not None:
        near = _closest(key, [d for d in known if d.startswith(f"{section}.")] or known)
    hint = f"did you mean {near}?" if near else "`headcast run --print-config` lists the settings"
    cfg.warnings.append(f"{path}: unknown setting {_bare(dotted)} ignored ({hint})")


def _set(cfg: Config, key: Key, value: Any, source: str) -> None:
    if key not in cfg.values:
        raise ConfigError(f"{source}: unknown setting {key[0]}.{key[1]}")
    cfg.values[key] = _coerce(cfg.values[key], value, f"{source}: {key[0]}.{key[1]}")
    cfg.sources[key] = source


# ---------------------------------------------------------------------------- limits


# Numeric settings: (lowest, highest, unit, why). A NaN or an infinity is refused for every one.
def _ranges() -> dict[Key, tuple[float, float, str, str]]:
    from headcast.app.run.rig import LIMITS as RIG

    out: dict[Key, tuple[float, float, str, str]] = {
        ("xr", "rate"): (1.0, 1000.0, " Hz", "frames per second of the Python motion"),
        ("xr", "headless_rate"): (0.0, 1000.0, " Hz", "0 = the display's rate, else 90"),
        ("rig", "move_speed"): (*RIG["move_speed"], " m/s", ""),
        ("rig", "snap_angle"): (*RIG["snap_angle"], "°", ""),
        ("rig", "smooth_speed"): (*RIG["smooth_speed"], "°/s", ""),
        ("rig", "deadzone"): (*RIG["deadzone"], "", "of the stick's travel"),
        ("netsync", "send_rate"): (0.5, 60.0, " Hz", "Unity's clamp"),
        ("netsync", "transform_port"): (0, 65535, "", "0 = the control port + 2"),
        ("mirror", "width"): (64, 16384, " px", ""),
        ("mirror", "height"): (64, 16384, " px", ""),
        ("mirror", "plot_seconds"): (0.5, 600.0, " s", ""),
        ("run", "duration"): (0.0, math.inf, " s", "0 = until Ctrl-C"),
        ("run", "connect_timeout"): (0.0, math.inf, " s", ""),
        ("sauer", "model"): (0, 4, "", "the game's five player models"),
        ("sauer", "spawn_yaw"): (-360.0, 360.0, "°", ""),
        ("sauer", "eye_height"): (0.0, 3.0, " m", "0 = the head's height at each spawn"),
    }
    return out


_EXCLUSIVE_LOW = {("run", "connect_timeout")}  # must be more than its lowest value
_CHOICES: dict[Key, tuple[str, ...]] = {
    ("rig", "turn"): ("snap", "smooth"),
    ("xr", "session"): ("auto", "gl", "headless"),
    ("mirror", "enabled"): ("auto", "true", "false", "", "1", "0", "yes", "no", "on", "off"),
}


def _where(cfg: Config, key: Key) -> str:
    """How a message names a setting: where its value came from (a flag, a variable, a file) and
    its dotted name, e.g. "--duration: run.duration =" or "$HEADCAST_RUN_DURATION: run.duration ="."""
    return f"{cfg.sources.get(key, 'default')}: {key[0]}.{key[1]} ="


def validate(cfg: Config) -> None:
    """Refuse a value outside its limits: ConfigError naming where it came from, the value and
    the limit. Only what needs no I/O beyond a stat (addresses are resolved when a run starts)."""
    for key, (lo, hi, unit, why) in _ranges().items():
        v = cfg.values.get(key)
        if v is None:
            continue
        low_ok = v > lo if key in _EXCLUSIVE_LOW else v >= lo
        finite = not isinstance(v, float) or math.isfinite(v)  # an int is; isfinite() overflows on a huge one
        if not (finite and low_ok and v <= hi):  # NaN fails every comparison
            if math.isinf(hi):
                rule = f"must be finite and {'more than' if key in _EXCLUSIVE_LOW else 'at least'} {lo:g}{unit}"
            else:
                rule = f"must be {lo:g}..{hi:g}{unit}"
            raise ConfigError(f"{_where(cfg, key)} {shown(v)}: {rule}" + (f" ({why})" if why else ""))
    for key, choices in _CHOICES.items():
        v = str(cfg.values.get(key, choices[0])).lower()
        if v not in choices:
            raise ConfigError(f"{_where(cfg, key)} {shown(cfg.values[key])}: expected one of {', '.join(choices[:3])}")
    for key, value in cfg.values.items():
        texts = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        for t in texts:
            if "\x00" in t:  # no C string, path or wire field can carry it
                raise ConfigError(
                    f"{_where(cfg, key)} {'(secret)' if key in SECRETS else shown(t)}: holds a NUL character"
                )
    _check_paths(cfg)
    _check_q3(cfg)
    _check_netsync(cfg)
    _check_sauer(cfg)


# Linux's NAME_MAX and PATH_MAX: a longer name is refused by every system call (and pathlib's
# is_file() raises instead of answering False).
NAME_MAX, PATH_MAX = 255, 4096


def path_problem(text: str) -> str | None:
    """Why `text` cannot name a file on this system (None: it can), without touching the disk."""
    raw = os.fsencode(text)
    if b"\x00" in raw:
        return "holds a NUL character"
    if len(raw) >= PATH_MAX:
        return f"is {len(raw)} bytes; a path is at most {PATH_MAX - 1}"
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        return f"has a name of {len(longest)} bytes; a file name is at most {NAME_MAX}"
    return None


PATHS: tuple[Key, ...] = (("xr", "mock"), ("run", "record"), ("q3", "pk3"))


def _check_paths(cfg: Config) -> None:
    for key in PATHS:
        value = cfg.values[key]
        for text in value if isinstance(value, list) else [value]:
            problem = path_problem(text) if text else None
            if problem is not None:
                raise ConfigError(f"{_where(cfg, key)} {shown(text)}: {problem}")


def _check_q3(cfg: Config) -> None:
    from headcast.netcode.q3 import oob, pure

    name = cfg.values[("q3", "name")]
    problem = oob.player_name_problem(name)
    if problem is not None:
        raise ConfigError(f"{_where(cfg, ('q3', 'name'))} {shown(name)}: a Quake 3 player name {problem}")
    password = cfg.values[("q3", "password")]
    problem = oob.info_text_problem(password) if password else None
    if problem is None and len(password) > 255:
        problem = f"is {len(password)} characters; at most 255"
    if problem is not None:  # the value is a secret: never shown
        raise ConfigError(f"{_where(cfg, ('q3', 'password')).removesuffix(' =')}: the Quake 3 password {problem}")
    try:
        oob.family_from_option(cfg.values[("q3", "protocol")])
    except oob.OobError as e:
        raise ConfigError(f"{_where(cfg, ('q3', 'protocol'))} {shown(cfg.values[('q3', 'protocol')])}: {e}") from None
    paks = cfg.values[("q3", "pk3")]
    if paks:
        try:
            pure.pak_files(paks)
        except pure.PureError as e:
            raise ConfigError(
                f"{_where(cfg, ('q3', 'pk3'))} {e} (a pure server, sv_pure 1, checks the pk3 "
                "files given against its own)"
            ) from None


def _check_netsync(cfg: Config) -> None:
    from headcast.netcode.netsync.codec import PoseEncodeError, id_bytes

    for key, what in ((("netsync", "room"), "the NetSync room id"), (("netsync", "device_id"), "the device id")):
        try:
            id_bytes(cfg.values[key], what)
        except PoseEncodeError as e:
            raise ConfigError(f"{_where(cfg, key)} {shown(cfg.values[key])}: {e}") from None


def sauer_spawn(text: str) -> tuple[float, float, float]:
    """sauer.spawn "X Y Z" (cube units) → floats; ValueError saying what is wrong."""
    parts = text.replace(",", " ").split()
    try:
        xyz = tuple(float(p) for p in parts)
    except ValueError:
        xyz = ()
    if len(xyz) != 3 or not all(math.isfinite(v) for v in xyz):
        raise ValueError('expected three numbers "X Y Z" in cube units')
    if not all(-(1 << 18) < v < 1 << 18 for v in xyz):  # the record's 24 bits hold ±2^19 units
        raise ValueError(f"must lie within ±{1 << 18} cube units (the N_POS record holds 24 bits of 1/16 unit)")
    return xyz


def _check_sauer(cfg: Config) -> None:
    from headcast.netcode.sauer.protocol import MAXNAMELEN  # not .client: start-up imports no sauer client
    from headcast.netcode.sauer.wire import encode_cube

    name = cfg.values[("sauer", "name")]
    try:
        encode_cube(name)
        problem = None if 0 < len(name) <= MAXNAMELEN else f"has {len(name)} characters; 1..{MAXNAMELEN}"
    except ValueError as e:
        problem = str(e)
    if problem is not None:
        raise ConfigError(f"{_where(cfg, ('sauer', 'name'))} {shown(name)}: a Sauerbraten player name {problem}")
    password = cfg.values[("sauer", "password")]
    try:
        encode_cube(password)
        problem = None if len(password) <= 250 else f"is {len(password)} characters; at most 250"
    except ValueError:
        problem = "holds a character outside the game's character set"
    if problem is not None:  # the value is a secret: never shown
        raise ConfigError(
            f"{_where(cfg, ('sauer', 'password')).removesuffix(' =')}: the Sauerbraten password {problem}"
        )
    try:
        sauer_spawn(cfg.values[("sauer", "spawn")])
    except ValueError as e:
        raise ConfigError(f"{_where(cfg, ('sauer', 'spawn'))} {shown(cfg.values[('sauer', 'spawn')])}: {e}") from None
