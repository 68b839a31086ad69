"""Helpers for live Sauerbraten tests (tests/sauer, tests/app): a driver for clients
(SauerClientCore over ENet) polled every few milliseconds, and the admin moves a test makes with
the game's own messages (claim admin, force a map, a rifle hit)."""

from __future__ import annotations

import time
from typing import Callable

import pytest

from headcast.netcode.sauer import localserver
from headcast.netcode.sauer.client import SauerClientCore, State
from headcast.netcode.sauer.messages import build
from headcast.netcode.sauer.protocol import Msg
from headcast.netcode.sauer.tiger import hash_password
from headcast.netcode.sauer.transport import SauerClient


def need_server() -> None:
    if not localserver.installed():
        pytest.fail(f"{localserver.CUBE2_SERVER} is missing: run scripts/setup.sh (apt package cube2-server)")


class Clients:
    """Clients of one test, polled together in real time; closed at the end of the test."""

    def __init__(self) -> None:
        self.all: list[SauerClient] = []
        self.events: dict[int, list] = {}

    def add(self, server, name: str, **core) -> SauerClient:
        c = SauerClient(server.address, SauerClientCore(name, **core))
        self.all.append(c)
        self.events[id(c)] = []
        return c

    def of(self, c: SauerClient, kind: type) -> list:
        return [e for e in self.events[id(c)] if isinstance(e, kind)]

    def pump(self, seconds: float, each: Callable[[float], None] | None = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._step(each)

    def until(
        self,
        pred: Callable[[], bool],
        timeout: float,
        what: str,
        each: Callable[[float], None] | None = None,
        server=None,
    ) -> None:
        end = time.monotonic() + timeout
        while not pred():
            if time.monotonic() >= end:
                states = ", ".join(f"{c.core.name}: {c.core.state.value}" for c in self.all)
                log = f"\nserver log:\n{server.log_tail(15)}" if server is not None else ""
                pytest.fail(f"timed out after {timeout:.1f} s waiting for {what} ({states}){log}")
            self._step(each)

    def _step(self, each) -> None:
        now = time.monotonic()
        if each:
            each(now)
        for c in self.all:
            c.poll(now)
            while (ev := c.next_event()) is not None:
                self.events[id(c)].append(ev)
        time.sleep(0.003)

    def join(self, server, *clients: SauerClient, timeout: float = 10.0) -> None:
        self.until(lambda: all(c.core.state is State.ALIVE for c in clients), timeout, "spawning", server=server)

    def close(self) -> None:
        for c in self.all:
            c.close()


def claim_admin(c: SauerClient, server) -> None:
    """N_SETMASTER with the admin password hashed as the game does, then mastermode veto (an
    admin's map vote is forced from veto on)."""
    core = c.core
    core.send_message(
        build(Msg.N_SETMASTER, core.cn, 1, hash_password(core.cn, core.sessionid, server.admin_password.encode()))
    )
    core.send_message(build(Msg.N_MASTERMODE, 1))


def force_map(c: SauerClient, name: str, mode: int) -> None:
    c.core.send_message(build(Msg.N_MAPVOTE, name, mode))


def shoot(c: SauerClient, target_cn: int, target_lifesequence: int, shot_id: int = 1) -> None:
    """A rifle shot (GUN_RIFLE 4) from a point 2 units away that hits `target` once (N_SHOOT as the
    game sends it): in instagib (health 1) it kills."""
    c.core.send_message(
        build(
            Msg.N_SHOOT,
            shot_id,
            4,
            512 * 16,
            480 * 16,
            526 * 16,
            512 * 16,
            512 * 16,
            526 * 16,
            1,
            target_cn,
            target_lifesequence,
            32 * 16,
            1,
            0,
            100,
            0,
        )
    )
