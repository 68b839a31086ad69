"""Helpers any test may import (`from support import free_port, wait_for`)."""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Callable, TypeVar

import pytest

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
ARTIFACTS = REPO / "artifacts"

# Long soak/fuzz runs: the default (and CI) run executes a bounded version of each.
LONG = os.environ.get("HEADCAST_LONG") == "1"


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port on 127.0.0.1 that is free right now (TCP by default, socket.SOCK_DGRAM for UDP)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.02) -> T:
    """Poll `predicate` until it returns a truthy value, at most `timeout` seconds; fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:.1f} s waiting for {what}")
        time.sleep(interval)
