"""A Quake 3 server that keeps sending sv_pure gamestates and never acknowledges our `cp`
(issue 27, defect 1). No real server misbehaves so on demand: the server here is scripted from
tests/q3/test_client_core.py's ScriptedServer (the wire rules of docs/protocols/quake3.md#connect, #netchan), fed to
the core directly, and — in `HostilePureServer` — over UDP on 127.0.0.1 for the app's end-to-end
test (tests/app/test_hostile_servers.py), bounded in time by its caller."""

from __future__ import annotations

import socket
import struct
import threading
import time
import zipfile

import pytest

from headcast.netcode.q3 import huffman
from headcast.netcode.q3.client import MAX_RELIABLE_COMMANDS, ServerMisbehaved, State
from headcast.netcode.q3.clientmsg import read_client_message
from headcast.netcode.q3.netchan import FRAGMENT_BIT, FRAGMENT_SIZE, netchan_checksum

from q3.test_client_core import CHALLENGE, FEED, ScriptedServer, events, make, run


def _pk3(tmp_path):
    pk3 = tmp_path / "pak0.pk3"
    with zipfile.ZipFile(pk3, "w") as z:
        z.writestr("vm/cgame.qvm", b"c")
        z.writestr("vm/ui.qvm", b"u")
    return pk3


class Reassembly:
    """The server's netchan read of the client's datagrams (checksummed protocol 71): fragments
    joined as ioq3's Netchan_Process does; `message(d)` is a whole client message or None."""

    def __init__(self) -> None:
        self.parts: dict[int, bytes] = {}

    def message(self, d: bytes) -> bytes | None:
        if d.startswith(b"\xff\xff\xff\xff") or len(d) < 10:
            return None
        seq, _qport, chk = struct.unpack_from("<iHi", d)
        fragment = bool(seq & FRAGMENT_BIT)
        seq &= ~FRAGMENT_BIT
        if chk != netchan_checksum(CHALLENGE, seq):
            return None
        if not fragment:
            return d[10:]
        _start, length = struct.unpack_from("<hh", d, 10)
        self.parts[seq] = self.parts.get(seq, b"") + d[14 : 14 + length]
        return self.parts.pop(seq) if length < FRAGMENT_SIZE else None


def _commands(server: ScriptedServer, now: float, netchan: Reassembly | None = None) -> list[str]:
    """Every reliable command text in the client's datagrams, none acknowledged."""
    netchan = netchan or Reassembly()
    out = []
    for d in server.core.datagrams_to_send(now):
        body = netchan.message(d)
        if body is not None:
            out += [text for _, text in read_client_message(body, FEED, server.commands, 16).commands]
    return out


def test_the_65th_unacknowledged_cp_ends_the_connection_with_a_typed_error_and_a_disconnect(tmp_path):
    core, server = make(pure_paks=(tmp_path,))
    _pk3(tmp_path)
    server.handshake(0.0)
    server.read(0.0)
    now = 0.0
    for i in range(MAX_RELIABLE_COMMANDS):  # 64 gamestates, 64 cp commands in flight, none acknowledged
        now += 0.05
        server.gamestate(now, sv_pure=True)
        run(core, now, now + 0.01)
        assert "cp" in " ".join(_commands(server, now))
    assert core.state is State.PRIMED
    with pytest.raises(ServerMisbehaved, match="acknowledged none of our last 64 reliable commands"):
        server.gamestate(now + 0.05, sv_pure=True)
    # The connection is over: `disconnect` went out (three packets, as ioq3), no reconnect, and the
    # server's next bytes are a counted drop, not a second exception (close() sends nothing more).
    assert core.state is State.CLOSED and core.get_timer() is None
    sent = _commands(server, now + 0.05)
    assert sent.count("disconnect") >= 3
    ev = events(core)
    assert not ev[-1].will_reconnect and "64 reliable commands" in ev[-1].reason
    drops = core.status.counters.get("drops", 0)
    server.gamestate(now + 0.1, sv_pure=True)
    assert core.status.counters["drops"] == drops + 1
    core.close(now + 0.2)
    assert core.datagrams_to_send(now + 0.2) == []


class HostilePureServer(threading.Thread):
    """A scripted pure Quake 3 server on 127.0.0.1 UDP that answers the handshake, then sends an
    sv_pure 1 gamestate every `interval` s and never acknowledges a client command. It records the
    client commands it receives (`commands`) and stops after `limit` s at most."""

    def __init__(self, interval: float = 0.01, limit: float = 30.0) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.005)
        self.address = self.sock.getsockname()
        self.interval, self.limit = interval, limit
        self.commands: list[str] = []
        self.gamestates = 0
        self._halt = threading.Event()
        self._client = None
        self.netchan = Reassembly()

        class Wire:  # ScriptedServer hands its datagrams to a "core": here, the client's address
            def receive_datagram(inner, data: bytes, now: float) -> None:
                self.sock.sendto(data, self._client)

        self.script = ScriptedServer(Wire())  # type: ignore[arg-type]

    def run(self) -> None:
        end = time.monotonic() + self.limit
        next_gs = None
        while not self._halt.is_set() and time.monotonic() < end:
            try:
                data, addr = self.sock.recvfrom(65536)
            except socket.timeout:
                data = None
            except OSError:
                return
            if data is not None:
                self._on(data, addr)
            now = time.monotonic()
            if self._client is not None and self.script.seq >= 0 and next_gs is not None and now >= next_gs:
                self.script.gamestate(now, sv_pure=True)
                self.gamestates += 1
                next_gs = now + self.interval
            elif self._client is not None and next_gs is None and self.connected:
                next_gs = now

    connected = False

    def _on(self, data: bytes, addr) -> None:
        if data.startswith(b"\xff\xff\xff\xff"):
            body = data[4:]
            if body.startswith(b"getchallenge"):
                words = body.decode(errors="replace").split()
                self.sock.sendto(f"\xff\xff\xff\xffchallengeResponse {CHALLENGE} {words[1]} 71".encode("latin-1"), addr)
            elif body.startswith(b"connect"):
                self._client = addr
                self.connected = True
                self.sock.sendto(f"\xff\xff\xff\xffconnectResponse {CHALLENGE}".encode("latin-1"), addr)
            return
        body = self.netchan.message(data) if addr == self._client else None
        if body is None:
            return
        try:
            m = read_client_message(body, FEED, self.script.commands, 16)
        except Exception:  # noqa: BLE001 - a packet this script cannot read is not the test's subject
            return
        self.commands += [text for _, text in m.commands]

    def stop(self) -> None:
        self._halt.set()
        self.join(5)
        self.sock.close()


def test_hostile_server_over_udp_ends_the_transport_cleanly(tmp_path):
    """The same server over a real socket, driven by the transport (netcode's Q3Client): the error
    comes out typed once, close() then sends no second traceback and the server got `disconnect`."""
    from headcast.netcode.q3.client import ClientConfig
    from headcast.netcode.q3.oob import Family
    from headcast.netcode.q3.transport import Q3Client

    _pk3(tmp_path)
    srv = HostilePureServer(limit=20.0)
    srv.start()
    client = Q3Client(srv.address, ClientConfig(family=Family.NEW71, pure_paks=(tmp_path,)))
    try:
        client.start(time.monotonic())
        deadline = time.monotonic() + 15.0
        with pytest.raises(ServerMisbehaved):
            while time.monotonic() < deadline:
                now = time.monotonic()
                client.send_due(now)
                client.receive(now)
                time.sleep(0.002)
        client.close(time.monotonic())
        t_end = time.monotonic() + 3.0
        while "disconnect" not in srv.commands and time.monotonic() < t_end:
            time.sleep(0.01)
        assert "disconnect" in srv.commands and srv.gamestates >= MAX_RELIABLE_COMMANDS + 1
        assert huffman is not None
    finally:
        client.close(time.monotonic())
        srv.stop()


def test_100k_distinct_bad_datagrams_keep_the_core_bounded():
    """Everything a server's bytes fill stays bounded: drop reasons (normalised, capped), the last
    drop's text, undrained events, queued datagrams (issue 27, bounded memory)."""
    from headcast.netcode.drops import MAX_DETAIL_LEN, MAX_DROP_REASONS, MAX_REASON_LEN
    from headcast.netcode.q3 import client as qc

    core, server = make()
    server.handshake(0.0)
    server.read(0.0)
    server.gamestate(0.01)
    run(core, 0.01, 0.05)
    t0 = time.perf_counter()
    for i in range(100_000):
        n = i.to_bytes(4, "little")
        if i % 3 == 0:
            core.receive_datagram(b"\xff\xff\xff\xff" + f"word{i % 97}x {i} {'z' * (i % 300)}".encode(), 1.0)
        elif i % 3 == 1:
            core.receive_datagram(struct.pack("<i", server.seq + 1 + i) + n * (1 + i % 40), 1.0)  # bad checksum / junk
        else:
            core.receive_datagram(n[: i % 4], 1.0)  # truncated
    took = time.perf_counter() - t0
    st = core.status
    assert len(st.drops) <= MAX_DROP_REASONS + 8 and all(len(k) <= MAX_REASON_LEN + 10 for k in st.drops), st.drops
    assert len(st.last_drop) <= MAX_DETAIL_LEN
    assert len(core._events) <= qc.MAX_EVENTS and len(core._out) <= qc.MAX_QUEUED_DATAGRAMS
    assert core.state in (State.PRIMED, State.ACTIVE, State.CONNECTED)
    assert took < 20
