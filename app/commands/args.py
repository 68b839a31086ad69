"""Argument types and the flags-to-config mapping shared by the commands' parsers (`headcast`
and `headcast swarm`): no command imports another's parser for them."""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable


def positive(unit: str) -> Callable[[str], float]:
    """An argparse type: a finite number of `unit` more than 0 (NaN and -1 would never or at once end)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number of {unit}: {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"{text}: must be a finite number of {unit} more than 0")
        return value

    return parse


seconds = positive("seconds")  # a --timeout


def room_id(text: str) -> str:
    """A NetSync room id the room broadcast can carry (at most 255 bytes of UTF-8)."""
    from headcast.netcode.netsync.codec import PoseEncodeError, id_bytes

    try:
        id_bytes(text, "the NetSync room id")
    except PoseEncodeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def path(text: str) -> str:
    """A file name the system can take (NAME_MAX, PATH_MAX, no NUL): checked before any stat."""
    from headcast.app.run.config import path_problem

    problem = path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}{'…' if len(text) > 40 else ''} {problem}")
    return text


def flag_overrides(args: argparse.Namespace) -> dict[tuple[str, str], Any]:
    """The config keys the flags of `run`/`replay` set (None = not given)."""
    g = lambda name: getattr(args, name, None)  # noqa: E731 - tiny accessor
    return {
        ("xr", "mock"): g("mock"),
        ("xr", "headless_rate"): g("headless_rate"),
        ("q3", "host"): g("q3"),
        ("q3", "vr"): g("vr"),
        ("q3", "name"): g("name"),
        ("q3", "pk3"): g("pk3"),
        ("q3", "password"): g("password"),
        ("q3", "protocol"): g("q3_protocol"),
        ("netsync", "host"): g("netsync"),
        ("netsync", "room"): g("room"),
        ("netsync", "device_id"): g("device_id"),
        ("netsync", "send_rate"): g("send_rate"),
        ("netsync", "stealth"): g("stealth"),
        ("netsync", "protocol"): g("netsync_protocol"),
        ("netsync", "transform_port"): g("netsync_transform_port"),
        ("sauer", "host"): g("sauer"),
        ("sauer", "password"): g("sauer_password"),
        ("rig", "move_speed"): g("move_speed"),
        ("rig", "turn"): g("turn"),
        ("rig", "snap_angle"): g("snap_angle"),
        ("mirror", "enabled"): g("mirror"),
        ("run", "duration"): g("duration"),
        ("run", "record"): g("record"),
        ("run", "require_all"): g("require_all"),
    }
