"""Live Quake 3 fixtures: real dedicated servers on 127.0.0.1 and a client session driver."""

from __future__ import annotations

import time
from typing import Callable

import pytest

from headcast.netcode.q3.client import ClientConfig, State
from headcast.netcode.q3.events import EnteredWorld, Event
from headcast.netcode.q3.localserver import LocalQ3Server
from headcast.netcode.q3.transport import Q3Client


@pytest.fixture(scope="module")
def oa_server():
    """Stock OpenArena: protocol "71" on the legacy netchan, sv_pure 1."""
    with LocalQ3Server(kind="openarena") as server:
        yield server


@pytest.fixture(scope="module")
def ioq3_server():
    """Plain ioq3ded with OpenArena data: 71 checksummed + 68 legacy, sv_pure 0, cheats (devmap)."""
    with LocalQ3Server(kind="ioq3", devmap=True) as server:
        yield server


class Session:
    """Drives one Q3Client in real time, polling every few ms (the app polls once per frame)."""

    def __init__(self, server: LocalQ3Server, config: ClientConfig) -> None:
        self.server = server
        self.client = Q3Client(server.address, config, bind=("127.0.0.1", 0))
        self.events: list[Event] = []
        self.client.start(time.monotonic())

    def pump(self, seconds: float, each: Callable[[float], None] | None = None) -> None:
        end = time.monotonic() + seconds
        while (now := time.monotonic()) < end:
            if each:
                each(now)
            self.events += self.client.poll(now)
            time.sleep(0.002)

    def until(
        self, pred: Callable[[], bool], timeout: float, what: str, each: Callable[[float], None] | None = None
    ) -> None:
        end = time.monotonic() + timeout
        while not pred():
            now = time.monotonic()
            if now >= end:
                st = self.client.status
                pytest.fail(
                    f"timed out after {timeout:.1f} s waiting for {what}; state {st.state}, "
                    f"last drop {st.last_drop!r}, last disconnect {st.last_disconnect!r}, "
                    f"pure {st.pure_error!r}\nserver log:\n{self.server.log_tail(15)}"
                )
            if each:
                each(now)
            self.events += self.client.poll(now)
            time.sleep(0.002)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def enter(self, timeout: float = 15.0) -> None:
        self.until(lambda: self.client.state is State.ACTIVE and self.of(EnteredWorld), timeout, "entering the world")

    def close(self) -> None:
        self.events += self.client.close(time.monotonic())


@pytest.fixture
def session_factory():
    sessions: list[Session] = []

    def make(server: LocalQ3Server, **config) -> Session:
        s = Session(server, ClientConfig(**config))
        sessions.append(s)
        return s

    yield make
    for s in sessions:
        if s.client.state is not State.CLOSED:
            s.close()
