"""The Quake 3 core's state machine is one table (client.TRANSITIONS): every move a real server
session makes is in it, and any move not in it raises IllegalTransition and leaves the state alone.

The live test runs a real ioq3ded (OpenArena data) on 127.0.0.1: join, a map change, the server
killed and started again (the client notices, waits, reconnects), then a clean leave.
"""

from __future__ import annotations

import itertools

import pytest

from headcast.netcode.q3.client import TRANSITIONS, ClientConfig, Q3ClientCore, State
from headcast.netcode.q3.errors import ClientError, IllegalTransition, Q3Error
from headcast.netcode.q3.events import Disconnected, EnteredWorld
from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files


def test_the_table_names_every_state_and_only_states():
    assert set(TRANSITIONS) == set(State)
    for targets in TRANSITIONS.values():
        assert targets <= set(State)
    # every state but IDLE can be reached, and every state can reach CLOSED or is CLOSED
    assert set().union(*TRANSITIONS.values()) == set(State) - {State.IDLE}
    assert all(State.CLOSED in targets for s, targets in TRANSITIONS.items() if s is not State.CLOSED)


def test_every_move_outside_the_table_raises_and_keeps_the_state():
    illegal = [(a, b) for a, b in itertools.product(State, State) if b not in TRANSITIONS[a]]
    assert (State.IDLE, State.ACTIVE) in illegal and (State.CLOSED, State.CLOSED) in illegal
    for src, dst in illegal:
        core = Q3ClientCore(ClientConfig())
        core._state = src  # (white box: put the core in `src` without a server)
        with pytest.raises(IllegalTransition, match=f"{src} -> {dst}"):
            core._enter(dst)
        assert core.state is src
    for src, dst in ((a, b) for a in State for b in TRANSITIONS[a]):
        core = Q3ClientCore(ClientConfig())
        core._state = src
        core._enter(dst)
        assert core.state is dst


def test_illegal_transition_is_a_client_error_under_the_one_root():
    assert issubclass(IllegalTransition, ClientError) and issubclass(IllegalTransition, Q3Error)


@pytest.mark.live
def test_a_real_session_moves_only_along_the_table(session_factory):
    moves: list[tuple[State, State]] = []
    original = Q3ClientCore._enter

    def recording(self: Q3ClientCore, state: State) -> None:
        moves.append((self.state, state))
        original(self, state)

    with LocalQ3Server(kind="ioq3") as server, pytest.MonkeyPatch.context() as mp:
        mp.setattr(Q3ClientCore, "_enter", recording)
        s = session_factory(server, name="tabled", pure_paks=tuple(pk3_files()))
        try:
            s.enter()
            server.rcon("map oa_dm2")
            s.until(lambda: len(s.of(EnteredWorld)) >= 2, 20.0, "in game on the new map")
            server.kill()
            server.start()
            s.until(lambda: s.of(Disconnected), 8.0, "noticing the restarted server")
            s.until(lambda: len(s.of(EnteredWorld)) >= 3, 20.0, "in game on the restarted server")
        finally:
            s.close()
    expected = {
        (State.IDLE, State.CHALLENGING),
        (State.CHALLENGING, State.CONNECTING),
        (State.CONNECTING, State.CONNECTED),
        (State.CONNECTED, State.PRIMED),
        (State.PRIMED, State.ACTIVE),
        (State.ACTIVE, State.PRIMED),
        (State.ACTIVE, State.WAITING),
        (State.WAITING, State.CHALLENGING),
        (State.ACTIVE, State.CLOSED),
    }
    assert expected <= set(moves), f"moves seen: {moves}"
    assert all(b in TRANSITIONS[a] for a, b in moves)
    assert moves[-1] == (State.ACTIVE, State.CLOSED)
