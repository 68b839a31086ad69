"""Q3Client as a driver.Transport: driven by `driver.drive` alone (descriptors, deadline,
on_readable / on_timer, next_event) into a real ioq3ded's world, counting its traffic through the
metrics hook; a socket made by the caller, a source address; ICMP errors counted as send errors
when nothing listens."""

from __future__ import annotations

import socket
import time
from collections import Counter

import pytest

from headcast.netcode import driver
from headcast.netcode.q3.client import ClientConfig, Q3ClientCore, State
from headcast.netcode.q3.events import EnteredWorld, SnapshotReceived
from headcast.netcode.q3.transport import Q3Client

from support import free_port


def test_client_and_core_satisfy_the_driver_protocols():
    core = Q3ClientCore(ClientConfig())
    assert isinstance(core, driver.Core)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        client = Q3Client(s.getsockname(), ClientConfig(), source="127.0.0.1")
        assert isinstance(client, driver.Transport)
        assert client.next_deadline() is None and client.filenos() == (client.fileno(),)
        client.close(time.perf_counter())
        assert client.filenos() == () and client.next_deadline() is None


@pytest.mark.parametrize("made_socket", [False, True], ids=["source-address", "made-socket"])
def test_drive_alone_takes_the_client_into_the_world_and_counts_every_datagram(ioq3_server, made_socket):
    counts: Counter[str] = Counter()
    events: list = []
    source = "127.0.0.3"
    if made_socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((source, 0))
        client = Q3Client(
            ioq3_server.address,
            ClientConfig(name="driven"),
            sock=sock,
            metrics=lambda name, n: counts.update({name: n}),
        )
    else:
        client = Q3Client(ioq3_server.address, ClientConfig(name="driven"), source=source)
        client.metrics = lambda name, n: counts.update({name: n})
    assert client.local_address[0] == source
    client.start(time.perf_counter())
    end = time.perf_counter() + 15.0
    while not any(isinstance(e, EnteredWorld) for e in events) and time.perf_counter() < end:
        driver.drive([client], min(end, time.perf_counter() + 0.5), lambda t, e: events.append(e), time.perf_counter)
    assert any(isinstance(e, EnteredWorld) for e in events), f"{client.status}\n{ioq3_server.log_tail(10)}"
    driver.drive([client], time.perf_counter() + 1.0, lambda t, e: events.append(e), time.perf_counter)
    assert client.state is State.ACTIVE
    assert sum(isinstance(e, SnapshotReceived) for e in events) >= 10  # 20/s for a second and more
    client.close(time.perf_counter())
    c = client.core.counters
    assert counts["sent_datagrams"] == c["packets_out"] and counts["sent_bytes"] == c["bytes_out"]
    assert counts["received_datagrams"] == c["packets_in"] and counts["received_bytes"] == c["bytes_in"]
    assert counts["send_errors"] == client.socket_errors == 0
    assert c["usercmds"] >= 50  # 60 Hz ticks ran from on_timer


def test_nothing_listening_counts_the_icmp_errors_as_send_errors():
    counts: Counter[str] = Counter()
    client = Q3Client(
        ("127.0.0.1", free_port(socket.SOCK_DGRAM)), ClientConfig(), metrics=lambda name, n: counts.update({name: n})
    )
    client.start(time.perf_counter())
    end = time.perf_counter() + 5.0
    while counts["send_errors"] < 2 and time.perf_counter() < end:
        driver.drive([client], min(end, time.perf_counter() + 0.5), None, time.perf_counter)
    client.close(time.perf_counter())
    assert counts["send_errors"] >= 2 and counts["send_errors"] == client.socket_errors
    assert counts["received_datagrams"] == 0 and counts["sent_datagrams"] >= 2
