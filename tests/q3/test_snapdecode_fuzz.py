"""The pump's own datagram path into the C snapshot decoder (_q3snap.c's pump_snap), fuzzed
against the Python path: a datagram read by Pump.step is either consumed in C or queued for the
core, never lost, and C consumes exactly what Netchan.process + serverparse.parse_server_message
would take as one valid snapshot, decoded identically (floats by their bits).

test_snapdecode.py fuzzes the decoder's body hook (Pump.snap_parse); this file fuzzes what lies
in front of it on the pump's read path: the netchan header (sequence, fragment bit, the protocol-71
checksum, the order check), the legacy netchan's unscrambling with our reliable command ring, and
the acknowledge window that leaves a message to the core. The messages are a live ioq3ded
session's (test_snapdecode's capture), mutated by hypothesis (bit flips, truncation, insertion,
a splice of another message), and re-scrambled for the legacy netchan with the Python netchan's
own XOR (its own inverse). The pump reads them from a real UDP socket pair on 127.0.0.1: the
server side is this test writing the captured server bytes, as no real server sends mutated
messages on demand. Bodies stay within the netchan's MAX_MSGLEN.
"""

from __future__ import annotations

import select
import struct
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.q3 import serverparse
from headcast.netcode.q3.client import Q3ClientCore
from headcast.netcode.q3.msg import MAX_MSGLEN
from headcast.netcode.q3.native import NATIVE
from headcast.netcode.q3.netchan import Netchan, NetchanMode, netchan_checksum

from q3.test_pump import CHALLENGE, in_game_core, udp_pair
from q3.test_snapdecode import Twin, _fields, _mutate, captured  # noqa: F401 (captured: a fixture)
from support import LONG

pytestmark = [
    pytest.mark.skipif(NATIVE is None, reason="the C extension is not built (HEADCAST_PURE_PYTHON or no compiler)"),
    pytest.mark.live,
    pytest.mark.fuzz,
]

EXAMPLES = 5000 if LONG else 300
PUMP_PYTHON = 2  # Pump.step: the tick (and its reads) are the core's
TEXTS = st.sampled_from(["", "%", "say 100% sure", "\x7f\x80\xff%%", "a\x00b", "x" * 200, "\u65e5\u672c"])
OUTCOMES: Counter[str] = Counter()


@pytest.fixture(scope="module")
def sockets():
    with udp_pair() as (a, b):
        yield a, b


def _datagram(
    data: st.DataObject, body: bytes, seq: int, legacy: bool, challenge: int, nc: Netchan, ring: list
) -> bytes:
    if legacy:  # what a legacy server sends: the body XORed with our ring's text (its own inverse)
        return struct.pack("<I", seq & 0xFFFFFFFF) + nc._unscramble(body, seq & 0x7FFFFFFF, ring)
    check = netchan_checksum(challenge, seq & 0x7FFFFFFF)
    if data.draw(st.integers(0, 30)) == 0:
        check ^= 1 << data.draw(st.integers(0, 31))
    return struct.pack("<II", seq & 0xFFFFFFFF, check & 0xFFFFFFFF) + body


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_pump_reads_consume_exactly_what_the_python_path_takes(captured, sockets, data):  # noqa: F811
    a, b = sockets
    with_ring = [c for c in captured if c[2]]
    payload, num, ring, baselines = data.draw(st.sampled_from(with_ring))
    legacy = data.draw(st.booleans())
    challenge = data.draw(st.sampled_from([CHALLENGE, 1, -(2**31), 2**31 - 1]) | st.integers(-(2**31), 2**31 - 1))
    reliable = tuple(data.draw(st.lists(TEXTS, max_size=4)))
    ack = data.draw(st.sampled_from([0, 1]) | st.integers(0, 2**31 - 10))
    core = in_game_core(
        legacy=legacy,
        challenge=challenge,
        msg_seq=num - data.draw(st.sampled_from([1, 1, 2, 9])),
        reliable=reliable,
        reliable_ack=ack,
        timer=0.0,
        next_probe=1e9,
        last_packet=0.99,
    )
    pump = NATIVE.Pump(a.fileno())
    pump.configure(core.pump_context())
    twin = Twin()
    twin.pump = pump  # its load() gives this pump the capture's baselines and ring
    twin.load(ring, baselines)
    our_ring = list(core._reliable)
    pump.snap_enable(True, core._reliable_ack, core._reliable_seq, 10.0, our_ring)

    body = payload if data.draw(st.integers(0, 3)) == 0 else _mutate(data, payload, captured)
    body = body[:MAX_MSGLEN]
    seq = data.draw(st.sampled_from([num, num, num, num - 5, num | 0x80000000, 0xFFFFFFFF]))
    nc = Netchan(NetchanMode.LEGACY if legacy else NetchanMode.NEW71, challenge, 31337)
    nc.incoming_sequence = core._netchan.incoming_sequence
    dgram = _datagram(data, body, seq, legacy, challenge, nc, our_ring)
    if data.draw(st.integers(0, 40)) == 0:
        dgram = dgram[: data.draw(st.integers(0, 9))]

    b.send(dgram)
    assert select.select([a], [], [], 2.0)[0], "the datagram did not arrive on 127.0.0.1"
    why = pump.step(1.0)
    queued = pump.take()[9]
    consumed: Any = pump.snap_take()
    while select.select([b], [], [], 0)[0]:
        b.recv(65536)  # the tick's own client datagram
    if why == PUMP_PYTHON and not queued and not consumed:
        OUTCOMES["core's tick"] += 1  # the pump read nothing: the core reads it, as without C
        return
    assert len(consumed) + len(queued) == 1, (len(consumed), len(queued), why)

    got = nc.process(dgram, our_ring)
    snap = None
    if got is not None:
        try:
            msg = serverparse.parse_server_message(got.data, got.sequence, ring.get, baselines)
        except serverparse.ServerParseError:
            msg = None
        if msg is not None and len(msg.ops) == 1 and isinstance(msg.ops[0], serverparse.Snapshot):
            snap = msg.ops[0] if msg.ops[0].valid else None
    if consumed:
        assert got is not None, f"C consumed a datagram the netchan drops: {dict(nc.drops)}"
        assert snap is not None, "C consumed a message the Python path would not take as one snapshot"
        held = pump.snap_get(consumed[0][0])
        assert consumed[0][0] == got.sequence and consumed[0][2] == len(dgram)
        assert _fields(Q3ClientCore._native_snapshot(held)) == _fields(snap)
        OUTCOMES["consumed"] += 1
    else:
        OUTCOMES["netchan drop" if got is None else "python takes one snapshot" if snap else "python path"] += 1


def test_pump_fuzz_outcomes_are_mixed(captured, sockets):  # noqa: F811
    """After the hypothesis run above (same module): C consumed some, the Python path kept others."""
    if not OUTCOMES:  # run alone: a fixed pass of its own
        test_pump_reads_consume_exactly_what_the_python_path_takes(captured, sockets)
    assert OUTCOMES["consumed"] > 0 and OUTCOMES["netchan drop"] + OUTCOMES["python path"] > 0, OUTCOMES
