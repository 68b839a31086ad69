"""The C snapshot decoder (netcode/q3/_q3snap.c, the Pump's) against the Python decoder.

Every message of a live ioq3 session (real server captures: gamestate, full and delta snapshots,
server commands, a moving player so the playerState and entities change) is decoded both ways,
in order, each decoder with its own ring: where the C consumes a message, its snapshot must equal
the Python decoder's field by field (floats by their bits); where it does not, the Python decoder
must have had a reason (an error, a server command or gamestate, an invalid base), so the message
goes the Python path and meets its errors and drops. Hypothesis then mutates the captures and
feeds random bytes: the C never crashes, consumes exactly what the Python decoder would take as
one valid snapshot (and decodes it identically), and leaves every error to the Python path; the
outcomes are counted. A live run (Q3Client.run against ioq3ded) checks the pump consumes the
in-game snapshots and the core's counters, sequence and last snapshot come out as the Python
path's would.
"""

from __future__ import annotations

import struct
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.q3 import serverparse
from headcast.netcode.q3.client import ClientConfig, Q3ClientCore, State
from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files
from headcast.netcode.q3.native import NATIVE
from headcast.netcode.q3.netfields import PLAYER_FIELDS
from headcast.netcode.q3.oob import Family
from headcast.netcode.q3.transport import Q3Client

from q3.test_serverparse_fuzz import mutate as _mutate
from support import LONG

pytestmark = pytest.mark.skipif(
    NATIVE is None, reason="the C extension is not built (HEADCAST_PURE_PYTHON or no compiler)"
)

EXAMPLES = 3000 if LONG else 400
_IX = {f.name: i for i, f in enumerate(PLAYER_FIELDS)}
DELTA_IX = (_IX["delta_angles[0]"], _IX["delta_angles[1]"], _IX["delta_angles[2]"])
CT_IX = _IX["commandTime"]


def _bits(v: Any) -> Any:
    """A field value compared exactly: a float by its float32 bits (NaN included)."""
    return ("f", struct.pack("<f", v)) if isinstance(v, float) else ("i", v)


def _fields(snap: serverparse.Snapshot) -> tuple[Any, ...]:
    ps = snap.ps
    return (
        snap.message_num,
        snap.server_time,
        snap.delta_num,
        snap.snap_flags,
        bytes(snap.areamask),
        snap.valid,
        tuple(_bits(v) for v in ps.values),
        ps.stats,
        ps.persistant,
        ps.ammo,
        ps.powerups,
        tuple((n, e.number, tuple(_bits(v) for v in e.values)) for n, e in sorted(snap.entities.items())),
    )


class Twin:
    """Both decoders, each with its own ring, fed the same messages in order."""

    def __init__(self, cmds: bool = False) -> None:
        self.cmds = cmds  # snap_parse_cmds (use_native_snapshots): server commands before the snapshot too
        self.pump = NATIVE.Pump(-1)
        self.ring: dict[int, serverparse.Snapshot] = {}
        self.baselines: dict = {}
        self.pump.snap_reset({}, DELTA_IX, CT_IX)
        self.pump.snap_enable(True, 0, 0, 0.0)  # ack 0 of 0 reliable commands: no ack changes anything

    def load(self, ring: dict, baselines: dict) -> None:
        """Both decoders at a captured state."""
        self.ring, self.baselines = dict(ring), dict(baselines)
        self.pump.snap_reset({n: e.values for n, e in baselines.items()}, DELTA_IX, CT_IX)
        self.pump.snap_enable(True, 0, 0, 0.0)
        for snap in ring.values():
            self._put(snap)

    def _put(self, snap: serverparse.Snapshot) -> None:
        ps = snap.ps
        self.pump.snap_put(
            snap.message_num,
            snap.server_time,
            snap.delta_num,
            snap.snap_flags,
            snap.areamask,
            ps.values,
            ps.stats,
            ps.persistant,
            ps.ammo,
            ps.powerups,
            {n: e.values for n, e in snap.entities.items()},
        )

    def feed(self, data: bytes, num: int, apply: bool = True) -> str:
        """One message both ways; asserts they agree; the outcome's name."""
        if self.cmds:
            commands = self.pump.snap_parse_cmds(data, num)
            consumed = commands is not None
        else:
            consumed = self.pump.snap_parse(data, num)
        self.pump.snap_take()  # the log stays short
        try:
            msg = serverparse.parse_server_message(data, num, self.ring.get, self.baselines)
        except serverparse.ServerParseError:
            assert not consumed, "the C took a message the Python decoder rejects"
            return "python error"
        snaps = [op for op in msg.ops if isinstance(op, serverparse.Snapshot)]
        before = msg.ops[:-1]
        takeable = (
            len(snaps) == 1
            and snaps[0].valid
            and msg.ops[-1] is snaps[0]
            and (not before or self.cmds and all(isinstance(op, serverparse.ServerCommandOp) for op in before))
        )
        assert consumed == takeable, f"C consumed {consumed}, Python ops {[type(o).__name__ for o in msg.ops]}"
        if consumed and self.cmds:
            assert list(commands) == [(op.seq, op.text) for op in before]
        if consumed:
            mine = Q3ClientCore._native_snapshot(self.pump.snap_get(num))
            assert mine is not None
            assert _fields(mine) == _fields(snaps[0])
        if apply:
            for op in msg.ops:
                if isinstance(op, serverparse.Gamestate):
                    self.baselines = dict(op.baselines)
                    self.ring.clear()
                    self.pump.snap_reset({n: e.values for n, e in self.baselines.items()}, DELTA_IX, CT_IX)
                    self.pump.snap_enable(True, 0, 0, 0.0)
                elif isinstance(op, serverparse.Snapshot) and op.valid:
                    self.ring[op.message_num] = op
                    for old in [n for n in self.ring if n <= op.message_num - serverparse.PACKET_BACKUP]:
                        del self.ring[old]
                    if not consumed:
                        self._put(op)  # what attach_snapshots does with a snapshot the core decoded
        if consumed:
            return "consumed"
        return "invalid base" if snaps and not all(s.valid for s in snaps) else "python ops"


@pytest.fixture(scope="module")
def captured():
    """[(payload, message_num, ring-before, baselines-before)] from a live ioq3 session on the
    protocol-71 netchan, the player moving and turning (real playerState and entity deltas)."""
    records: list[tuple[bytes, int]] = []
    real = serverparse.parse_server_message

    def recorder(data, num, at, baselines):
        records.append((bytes(data), num))
        return real(data, num, at, baselines)

    with pytest.MonkeyPatch.context() as mp, LocalQ3Server(kind="ioq3", extra_cvars={"bot_minplayers": "3"}) as server:
        mp.setattr(serverparse, "parse_server_message", recorder)
        client = Q3Client(server.address, ClientConfig(family=Family.NEW71, name="snapsrc"), bind=("127.0.0.1", 0))
        client.start(time.monotonic())
        end = time.monotonic() + 20.0
        active_at = None
        while time.monotonic() < end:
            now = time.monotonic()
            client.set_input((0.0, (now * 90.0) % 360.0, 0.0), forward=127, buttons=1 if int(now * 4) % 2 else 0)
            client.poll(now)
            if client.state is State.ACTIVE and active_at is None:
                active_at = now
            if active_at is not None and now - active_at > 3.0:
                break
            time.sleep(0.003)
        client.close(time.monotonic())
    assert active_at is not None, "the capture session never entered the world"
    out = []
    twin = Twin()
    for data, num in records:
        out.append((data, num, dict(twin.ring), dict(twin.baselines)))
        twin.feed(data, num)
    return out


@pytest.mark.live
@pytest.mark.parametrize("cmds", [False, True], ids=["pump", "with-commands"])
def test_c_decodes_every_captured_snapshot_as_python_does(captured, cmds):
    twin = Twin(cmds)
    outcomes = Counter(twin.feed(data, num) for data, num, _, _ in captured)
    # The session's snapshots after the gamestate are C's; the gamestate (and, for the pump, the
    # command) messages Python's.
    assert outcomes["consumed"] >= 40, outcomes
    assert outcomes["python ops"] >= 1, outcomes
    assert outcomes["python error"] == 0, outcomes


MUTATED: Counter[str] = Counter()


@pytest.mark.live
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_captures_decode_alike_or_go_to_python(captured, data):
    payload, num, ring, baselines = captured[data.draw(st.integers(0, len(captured) - 1))]
    twin = Twin(data.draw(st.booleans()))
    twin.load(ring, baselines)
    MUTATED[twin.feed(_mutate(data, payload, captured), num, apply=False)] += 1


@pytest.mark.live
def test_mutation_outcomes_are_counted_and_mixed(captured):
    """After the hypothesis run above (same module): both paths were exercised, counted."""
    if not MUTATED:  # run alone: a fixed pass of its own
        import random

        rng = random.Random(26)
        for i in range(300):
            payload, num, ring, baselines = captured[i % len(captured)]
            buf = bytearray(payload)
            for _ in range(rng.randint(1, 3)):
                bit = rng.randrange(len(buf) * 8)
                buf[bit >> 3] ^= 1 << (bit & 7)
            twin = Twin()
            twin.load(ring, baselines)
            MUTATED[twin.feed(bytes(buf), num, apply=False)] += 1
    assert MUTATED["consumed"] > 0 and MUTATED["python error"] > 0, MUTATED


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=2048), st.integers(1, 1 << 20), st.booleans())
def test_random_bytes_decode_alike_or_go_to_python(blob, num, cmds):
    Twin(cmds).feed(blob, num, apply=False)


def _run_session(server: LocalQ3Server, config: ClientConfig, absorb: float | None) -> None:
    """Q3Client.run for 2.5 s in game: with `absorb` the pump decodes the snapshots in C, and the
    core's counters, events, netchan sequence and last snapshot are what the Python path leaves."""
    client = Q3Client(server.address, config, bind=("127.0.0.1", 0))
    try:
        client.start(time.monotonic())
        end = time.monotonic() + 15.0
        while client.state is not State.ACTIVE and time.monotonic() < end:
            client.poll(time.monotonic())
            time.sleep(0.003)
        assert client.state is State.ACTIVE, client.status
        core = client.core
        before = dict(core.counters)
        events = client.run(time.monotonic() + 2.5, absorb=absorb)
        after = core.counters
        got = after["snapshots"] - before.get("snapshots", 0)
        assert got >= 35, got  # 20/s for 2.5 s
        if absorb is None:
            assert client.native_snapshots == 0
        else:
            assert client.native_snapshots >= got - 5, (client.native_snapshots, got)
        assert after["messages_in"] - before["messages_in"] >= got
        assert after["packets_in"] - before["packets_in"] >= got
        assert not core.drop_counts(), core.drop_counts()
        snaps = [e for e in events if type(e).__name__ == "SnapshotReceived"]
        assert len(snaps) == got  # one event per snapshot, as the Python path emits
        nums = [e.message_num for e in snaps]
        assert nums == sorted(set(nums))
        assert [e.ps.command_time for e in snaps] == sorted(e.ps.command_time for e in snaps)
        last = core.snapshot_at(nums[-1])
        assert last is not None and last.ps.values == snaps[-1].ps.values
        assert last.ps.client_num == core.status.client_num
        assert (
            core.snapshot_at(nums[-2]) is not None and core.snapshot_at(nums[-2]).server_time == snaps[-2].server_time
        )
        netchan = core._netchan
        assert netchan is not None and netchan.incoming_sequence >= nums[-1]
        assert core.latency_ms is not None and core.latency_ms < 250
        # the link goes on in Python after the C: the next snapshots delta from the C's bases
        n0 = after["snapshots"]
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            client.poll(time.monotonic())
            time.sleep(0.003)
        assert core.counters["snapshots"] > n0 + 10 and not core.drop_counts(), core.drop_counts()
    finally:
        client.close(time.monotonic())


@pytest.mark.live
@pytest.mark.parametrize("absorb", [0.5, 0.0, None], ids=["absorb0.5", "absorb0", "python"])
def test_run_decodes_in_game_snapshots_in_c(ioq3_server, absorb):
    """Protocol 71 on the checksummed netchan (ioq3ded)."""
    _run_session(ioq3_server, ClientConfig(family=Family.NEW71, name="csnap"), absorb)


@pytest.mark.live
def test_run_decodes_legacy_snapshots_in_c(oa_server):
    """Stock OpenArena: the legacy netchan, each message unscrambled in C with our command ring."""
    config = ClientConfig(family=Family.LEGACY71, name="csnap", pure_paks=tuple(pk3_files()))
    _run_session(oa_server, config, 0.5)


def _record(server: LocalQ3Server, config: ClientConfig, seconds: float) -> list[tuple[float, bytes]]:
    """Every datagram a live Python-path session received (from the handshake on), with its time."""
    received: list[tuple[float, bytes]] = []
    client = Q3Client(server.address, config, bind=("127.0.0.1", 0))
    start = time.monotonic()
    feed = client.core.receive_datagram

    def recording(data: bytes, now: float) -> None:
        received.append((now - start, data))
        feed(data, now)

    client.core.receive_datagram = recording  # type: ignore[method-assign]
    try:
        client.start(start)
        end = start + 15.0
        active_at = None
        while (now := time.monotonic()) < end:
            client.set_input((0.0, (now * 90.0) % 360.0, 0.0), forward=127)
            client.poll(now)
            if client.state is State.ACTIVE and active_at is None:
                active_at = now
            if active_at is not None and now - active_at > seconds:
                break
            time.sleep(0.003)
        assert active_at is not None, client.status
    finally:
        client.close(time.monotonic())
    return received


def _replay(config: ClientConfig, received: list[tuple[float, bytes]], native: bool) -> tuple[Q3ClientCore, list, int]:
    """A fresh core fed the recorded session at its times (our challenge echoed, timers run)."""
    core = Q3ClientCore(config)
    if native:
        assert core.use_native_snapshots()
    core.connect(0.0)
    (getchallenge,) = core.datagrams_to_send(0.0)
    ours = getchallenge.split()[1]
    seen = []
    in_c = 0  # snapshots the C decoded (their entities built on first use)
    for t, data in received:
        if data.startswith(b"\xff\xff\xff\xffchallengeResponse"):
            toks = data.split()
            data = b" ".join([toks[0], toks[1], ours, *toks[3:]])
        while (timer := core.get_timer()) is not None and timer <= t:
            core.handle_timer(timer)
        core.datagrams_to_send(t)
        core.receive_datagram(data, t)
        for ev in core.take_events():
            if type(ev).__name__ == "SnapshotReceived":
                snap = core.snapshot_at(ev.message_num)
                assert snap is not None
                in_c += not isinstance(snap.entities, dict)
                seen.append((ev.message_num, ev.server_time, ev.snap_flags, ev.num_entities, ev.delta, _fields(snap)))
            else:
                seen.append(repr(ev))
    return core, seen, in_c


@pytest.mark.live
@pytest.mark.parametrize("kind", ["ioq3", "openarena"])
def test_use_native_snapshots_replays_a_session_exactly(kind):
    """use_native_snapshots (the swarm's path): a recorded live session (ioq3ded on the checksummed
    netchan with bots; stock OpenArena on the legacy one, pure) replayed through a Python-only core
    and a C-decoding core: the same events, every snapshot equal field by field (entities too),
    the same counters and no drops."""
    if kind == "ioq3":
        config = ClientConfig(family=Family.NEW71, name="replay")
        server = LocalQ3Server(kind="ioq3", extra_cvars={"bot_minplayers": "3"})
    else:
        config = ClientConfig(family=Family.LEGACY71, name="replay", pure_paks=tuple(pk3_files()))
        server = LocalQ3Server(kind="openarena")
    with server:
        received = _record(server, config, 3.0)
    py_core, py_seen, py_in_c = _replay(config, received, native=False)
    c_core, c_seen, in_c = _replay(config, received, native=True)
    assert c_core.state is State.ACTIVE and py_core.state is State.ACTIVE
    snaps = [s for s in c_seen if isinstance(s, tuple)]
    assert len(snaps) >= 40, len(snaps)
    assert c_seen == py_seen
    # the byte counts aside: each core's own random challenge is in its getchallenge, connect and
    # the echoed challengeResponse (their lengths may differ by a digit)
    skip = ("bytes_in", "bytes_out")
    assert {k: v for k, v in c_core.counters.items() if k not in skip} == {
        k: v for k, v in py_core.counters.items() if k not in skip
    }
    assert not c_core.drop_counts() and not py_core.drop_counts()
    assert py_in_c == 0 and in_c >= len(snaps) - 10, (in_c, len(snaps))  # the in-game ones were C's
