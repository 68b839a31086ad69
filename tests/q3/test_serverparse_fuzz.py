"""Property/fuzz tests of the server-message parser: random bytes and mutated real server messages.

The real messages are captured from a short live session with a plain ioq3 server (gamestate,
full and delta snapshots, server commands); each mutation is parsed against the state the
client had just before the original. The parser must return a result or raise
ServerParseError — nothing else — and stay within a small memory bound.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.q3 import serverparse
from headcast.netcode.q3.client import ClientConfig, State
from headcast.netcode.q3.localserver import LocalQ3Server
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.transport import Q3Client

from support import LONG

EXAMPLES = 3000 if LONG else 300


class Replay:
    """The parser context (snapshot ring, baselines) rebuilt by replaying captured messages."""

    def __init__(self) -> None:
        self.ring: dict[int, serverparse.Snapshot] = {}
        self.baselines: dict = {}

    def at(self, num: int):
        return self.ring.get(num)

    def apply(self, msg: serverparse.ServerMessage) -> None:
        for op in msg.ops:
            if isinstance(op, serverparse.Gamestate):
                self.baselines = dict(op.baselines)
                self.ring.clear()
            elif isinstance(op, serverparse.Snapshot) and op.valid:
                self.ring[op.message_num] = op
                for old in [n for n in self.ring if n <= op.message_num - serverparse.PACKET_BACKUP]:
                    del self.ring[old]


@pytest.fixture(scope="module")
def captured():
    """[(payload, message_num, ring-before, baselines-before)] from a live ioq3 session."""
    records: list[tuple[bytes, int]] = []
    real = serverparse.parse_server_message

    def recorder(data, num, at, baselines):
        records.append((bytes(data), num))
        return real(data, num, at, baselines)

    with pytest.MonkeyPatch.context() as mp, LocalQ3Server(kind="ioq3") as server:
        mp.setattr(serverparse, "parse_server_message", recorder)
        client = Q3Client(server.address, ClientConfig(family=Family.NEW71, name="fuzzsrc"), bind=("127.0.0.1", 0))
        client.start(time.monotonic())
        end = time.monotonic() + 15.0
        active_at = None
        while time.monotonic() < end:
            now = time.monotonic()
            client.set_input((0.0, (now * 90.0) % 360.0, 0.0), forward=127)  # moving: real entity/ps deltas
            client.poll(now)
            if client.state is State.ACTIVE and active_at is None:
                active_at = now
            if active_at is not None and now - active_at > 2.0:
                break
            time.sleep(0.003)
        client.close(time.monotonic())
    assert active_at is not None, "the capture session never entered the world"
    replay = Replay()
    out = []
    for data, num in records:
        out.append((data, num, dict(replay.ring), dict(replay.baselines)))
        replay.apply(real(data, num, replay.at, replay.baselines))
    return out


@pytest.mark.live
def test_capture_holds_gamestate_full_and_delta_snapshots(captured):
    replay = Replay()
    seen = set()
    for data, num, _, _ in captured:
        msg = serverparse.parse_server_message(data, num, replay.at, replay.baselines)
        replay.apply(msg)
        for op in msg.ops:
            if isinstance(op, serverparse.Snapshot):
                seen.add("delta" if op.delta_num >= 0 else "full")
                assert op.valid
            else:
                seen.add(type(op).__name__)
    assert {"Gamestate", "ServerCommandOp", "full", "delta"} <= seen


def _parse(data: bytes, num: int, ring: dict, baselines: dict) -> None:
    try:
        serverparse.parse_server_message(data, num, ring.get, baselines)
    except serverparse.ServerParseError:
        pass


def mutate(data: st.DataObject, payload: bytes, captured: list) -> bytes:
    """One real server message mutated: bits flipped, cut short, bytes inserted or overwritten, or
    spliced with another captured message (`captured`: tuples whose first item is a message).
    Shared with tests/q3/test_snapdecode.py, which feeds the same mutations to both decoders."""
    buf = bytearray(payload)
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "overwrite", "splice"]))
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            bit = data.draw(st.integers(0, len(buf) * 8 - 1))
            buf[bit >> 3] ^= 1 << (bit & 7)
    elif kind == "truncate":
        del buf[data.draw(st.integers(0, len(buf) - 1)) :]
    elif kind == "insert":
        at = data.draw(st.integers(0, len(buf)))
        buf[at:at] = data.draw(st.binary(min_size=1, max_size=64))
    elif kind == "overwrite":
        at = data.draw(st.integers(0, len(buf) - 1))
        chunk = data.draw(st.binary(min_size=1, max_size=32))
        buf[at : at + len(chunk)] = chunk
    else:
        other = captured[data.draw(st.integers(0, len(captured) - 1))][0]
        cut = data.draw(st.integers(0, len(buf)))
        buf = buf[:cut] + bytearray(other[data.draw(st.integers(0, len(other))) :])
    return bytes(buf)


@pytest.mark.live
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_real_messages_parse_or_raise_typed_error(captured, data):
    payload, num, ring, baselines = captured[data.draw(st.integers(0, len(captured) - 1))]
    _parse(mutate(data, payload, captured), num, ring, baselines)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=2048), st.integers(0, 1 << 20))
def test_random_bytes_parse_or_raise_typed_error(blob, num):
    _parse(blob, num, {}, {})


@pytest.mark.live
def test_parsing_garbage_is_memory_bounded(captured):
    import random

    rng = random.Random(1234)
    tracemalloc.start()
    try:
        for i in range(2000 if LONG else 400):
            payload, num, ring, baselines = captured[i % len(captured)]
            buf = bytearray(payload)
            for _ in range(4):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            _parse(bytes(buf), num, ring, baselines)
            _parse(rng.randbytes(rng.randrange(1, 16384)), num, ring, baselines)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB while parsing garbage"
