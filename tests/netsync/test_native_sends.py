"""The NetSync pose send in C (netcode/netsync/_nscodec.c `zmq_send2`: the room topic and the
client-pose message sent through libzmq's own zmq_send, one call) and the ZeroMQ I/O thread
under SCHED_BATCH (transport.py `_batch_io_threads`).

`zmq_send2` is held to the transport's pyzmq path (two Socket.send calls, the same flags) on real
ZeroMQ sockets over loopback TCP (a test of the library, not of a server: the send path against a
real NetSync server runs in the client tests): the same frames arrive for random poses at every
protocol, and a refused send (no connection, IMMEDIATE) is EAGAIN where pyzmq raises zmq.Again.
"""

from __future__ import annotations

import os
import random
import time

import pytest
import zmq
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.netsync import codec, transport
from headcast.netcode.netsync.localserver import free_port

from .oracle import random_frame

PURE_WANTED = os.environ.get("HEADCAST_PURE_PYTHON", "") not in ("", "0")
pytestmark = pytest.mark.skipif(PURE_WANTED, reason="HEADCAST_PURE_PYTHON=1: the C accelerator is off by request")
TOPIC = "room-é".encode()


def test_the_extension_has_the_send_path():
    assert transport.NATIVE_SEND is not None, "the C send is not bound (no extension, or libzmq not found)"


@pytest.fixture(scope="module")
def pair():
    ctx = zmq.Context(io_threads=1)
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    for s in (router, dealer):
        s.setsockopt(zmq.LINGER, 0)
    port = free_port()
    router.bind(f"tcp://127.0.0.1:{port}")
    dealer.connect(f"tcp://127.0.0.1:{port}")
    router.setsockopt(zmq.RCVTIMEO, 5000)
    yield router, dealer
    router.close()
    dealer.close()
    ctx.term()


def _received(router: zmq.Socket, send) -> list[bytes]:
    deadline = time.monotonic() + 5.0
    while True:  # (the first sends may meet no connection yet: EAGAIN, with IMMEDIATE off never)
        if send() == 0:
            break
        assert time.monotonic() < deadline
        time.sleep(0.001)
    return router.recv_multipart()[1:]  # (after the routing identity)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), protocol=st.sampled_from(codec.PROTOCOLS), seq=st.integers(0, 2**31 - 1))
def test_zmq_send2_puts_the_same_frames_on_the_wire_as_pyzmq(pair, seed, protocol, seq):
    router, dealer = pair
    msg = codec.encode_client_pose("dev-" + str(seed), seq, random_frame(random.Random(seed)), protocol)

    def by_pyzmq() -> int:
        transport._send(dealer, TOPIC, transport._SEND_MORE)
        transport._send(dealer, msg, transport._NOBLOCK)
        return 0

    assert transport.NATIVE_SEND is not None
    ours = _received(router, lambda: transport.NATIVE_SEND(dealer.underlying, TOPIC, msg))
    theirs = _received(router, by_pyzmq)
    assert ours == theirs == [TOPIC, msg]


def test_zmq_send2_refused_as_pyzmq_refuses():
    """No connection and IMMEDIATE (the transport's pose sockets): pyzmq raises zmq.Again, the C
    send returns EAGAIN, and nothing is queued by either."""
    ctx = zmq.Context(io_threads=1)
    s = ctx.socket(zmq.DEALER)
    try:
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.IMMEDIATE, 1)
        s.connect(f"tcp://127.0.0.1:{free_port()}")  # nothing listens there
        with pytest.raises(zmq.Again):
            transport._send(s, TOPIC, transport._SEND_MORE)
        assert transport.NATIVE_SEND is not None
        assert transport.NATIVE_SEND(s.underlying, TOPIC, b"pose") == zmq.EAGAIN
        with pytest.raises(TypeError):
            transport.NATIVE_SEND(s.underlying, "text", b"pose")
    finally:
        s.close()
        ctx.term()


def _io_policies() -> dict[str, int]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().startswith("ZMQbg/IO"):
                    out[tid] = os.sched_getscheduler(int(tid))
        except OSError:
            pass
    return out


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies")
def test_own_io_thread_goes_batch_a_shared_one_does_not():
    n = len(_io_policies())
    shared = zmq.Context(io_threads=1)
    shared.socket(zmq.PAIR).close()  # (starts its I/O thread, which names itself: wait for it)
    deadline = time.monotonic() + 5.0
    while len(before := _io_policies()) == n:
        assert time.monotonic() < deadline, "the shared context's I/O thread never showed"
        time.sleep(0.001)
    port = free_port()
    own = transport.NetSyncClient("127.0.0.1", port, port + 1, "r", "d", protocol=8, now=0.0)
    other = transport.NetSyncClient("127.0.0.1", port, port + 1, "r", "e", protocol=8, now=0.0, context=shared)
    try:
        deadline = time.monotonic() + 5.0
        while own._io_before is not None and time.monotonic() < deadline:
            own.poll(0.0)
            other.poll(0.0)
        after = _io_policies()
        new = set(after) - set(before)
        assert len(new) == 1, after
        assert after[new.pop()] == os.SCHED_BATCH
        assert all(after.get(t, policy) == policy for t, policy in before.items()), "a shared context's thread changed"
    finally:
        own.close(0.0)
        other.close(0.0)
        shared.term()
