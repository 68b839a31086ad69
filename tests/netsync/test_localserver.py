"""LocalNetSyncServer and the releases: every protocol's real server on loopback only, reporting its
own version, stopped by PID and restarted on the same ports; install folders; isolated serializers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
import zmq

from headcast.netcode.netsync import releases
from headcast.netcode.netsync.localserver import (
    TRANSFORM_PORT_OFFSET,
    LocalNetSyncServer,
    ServerStartError,
    free_port,
)
from headcast.netcode.netsync.releases import CURRENT, RELEASES

from support import wait_for

pytestmark = pytest.mark.live

LOOPBACK = "127.0.0.1"


# ---------------------------------------------------------------------------------------------
# helpers


def inet_sockets(pid: int) -> list:
    """Every IPv4/IPv6 socket (TCP and UDP) the process holds."""
    return psutil.Process(pid).net_connections(kind="inet")


def listening(pid: int) -> set[tuple[str, str, int]]:
    """(tcp|udp, ip, port) of every socket bound for listening or receiving."""
    out = set()
    for c in inet_sockets(pid):
        if c.type == socket.SOCK_STREAM and c.status == psutil.CONN_LISTEN:
            out.add(("tcp", c.laddr.ip, c.laddr.port))
        elif c.type == socket.SOCK_DGRAM:
            out.add(("udp", c.laddr.ip, c.laddr.port))
    return out


def accepts(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.2):
            return True
    except OSError:
        return False


def probe_message(protocol: int, device_id: str) -> bytes:
    """What makes the server send us a device-ID mapping without joining visibly: a stealth client
    pose (protocol ≤ 6, to the dealer port) or a stealth HELLO (≥ 7, to the control port)."""
    d = device_id.encode()
    if protocol <= 6:
        return bytes([11, protocol, len(d)]) + d + bytes([0, 0, 0x01, 0x1F, 0])  # seq 0, stealth, 0x1F, 0 virtuals
    return bytes([19, protocol, 0x01, len(d)]) + d  # HELLO, flags: stealth


def mapping_from(srv: LocalNetSyncServer, room: str, device_id: str, timeout: float = 15.0) -> bytes:
    """Send the probe on a fresh DEALER and return the first device-ID mapping (type 6) that
    lists us; other unicasts (network-variable syncs …) are skipped. Polls with a bound."""
    a = srv.address
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    port = a.dealer_port  # ≤ 6: poses go here; ≥ 7: the control port (HELLO)
    dealer.connect(f"tcp://{LOOPBACK}:{port}")
    try:
        payload = probe_message(a.protocol, device_id)
        dealer.send_multipart([room.encode(), payload])
        deadline = time.monotonic() + timeout
        resent = time.monotonic()
        while (left := deadline - time.monotonic()) > 0:
            if not dealer.poll(int(min(left, 1.0) * 1000)):
                if time.monotonic() - resent >= 1.0:  # like the official clients' 1 Hz stealth heartbeat
                    dealer.send_multipart([room.encode(), payload])
                    resent = time.monotonic()
                continue
            parts = dealer.recv_multipart()
            if (
                len(parts) == 2
                and parts[0] == room.encode()
                and parts[1][:1] == b"\x06"
                and device_id.encode() in parts[1]
            ):
                return parts[1]
        pytest.fail(f"no device-ID mapping from {a.version} within {timeout:.0f} s:\n{srv.log_tail()}")
    finally:
        dealer.close(0)
        ctx.term()


def version_of(version: str) -> tuple[int, int, int]:
    return tuple(int(x) for x in version.split(".")[:3])


def check_loopback_only(srv: LocalNetSyncServer) -> None:
    a = srv.address
    socks = listening(srv.pid)
    expected = {("tcp", LOOPBACK, p) for p in (a.dealer_port, a.transform_port, a.pub_port, a.rest_port)}
    assert socks == expected, f"{a.version}: listening on {sorted(socks)}, expected exactly {sorted(expected)}"
    for c in inet_sockets(srv.pid):  # nothing else either: no peer beyond loopback, no wildcard bind
        assert c.laddr.ip in (LOOPBACK, "::1"), c
        assert not c.raddr or c.raddr.ip in (LOOPBACK, "::1"), c


# ---------------------------------------------------------------------------------------------
# every release


def test_release_on_loopback_reports_its_version_and_restarts_on_the_same_ports(netsync_release):
    srv = netsync_release
    a = srv.address
    v = a.version
    assert a.protocol == RELEASES[v] == releases.protocol_of_version(v)
    assert srv.version() == v  # what the server's interpreter imports under PYTHONPATH
    if a.protocol >= 7:
        assert a.transform_port == a.control_port + TRANSFORM_PORT_OFFSET  # the clients' default derivation
        assert len({a.control_port, a.transform_port, a.pub_port, a.rest_port}) == 4
    else:
        assert a.transform_port == a.dealer_port  # one ROUTER: poses go to the dealer port
    check_loopback_only(srv)
    assert "Discovery: Disabled" in srv.log_path.read_text()

    oracle = releases.load_serializer(v)
    device = f"probe-{v}"
    mapping = mapping_from(srv, "release-room", device)
    assert tuple(mapping[1:4]) == version_of(v)  # major, minor, patch of the running release
    assert mapping == oracle.serialize_device_id_mapping([(1, device, True)], version_of(v))
    _, data, _ = oracle.deserialize(mapping)
    assert data["mappings"] == [{"clientNo": 1, "deviceId": device, "isStealthMode": True}]

    pid = srv.pid
    srv.stop()
    assert not psutil.pid_exists(pid), "the server's PID is gone after stop()"
    assert not any(accepts(p) for p in srv.ports() + [a.rest_port])
    srv.stop()  # nothing left to stop: no error, no stray signal

    srv.start(timeout=60)
    assert srv.pid != pid and srv.address == a
    check_loopback_only(srv)
    mapping = mapping_from(srv, "release-room", device)  # a new process: client numbers start again
    assert tuple(mapping[1:4]) == version_of(v) and mapping[4:6] == b"\x01\x00"


@pytest.mark.parametrize("version", list(RELEASES))
def test_probe_bytes_are_the_official_serializers(version):
    """The hand-built probe messages above are what each release's own serializer writes."""
    s = releases.load_serializer(version)
    p = RELEASES[version]
    assert s.PROTOCOL_VERSION == p
    if p <= 6:
        official = s.serialize_client_transform({"deviceId": "dev", "poseSeq": 0, "flags": 0x01})
    else:
        official = s.serialize_client_hello("dev", is_stealth=True)
    assert probe_message(p, "dev") == official


# ---------------------------------------------------------------------------------------------
# releases.py


@pytest.mark.parametrize("version", list(RELEASES))
def test_release_folder_runs_its_own_version(version):
    folder = releases.ensure_release(version)
    assert folder == releases.release_dir(version)
    got, protocol, init = releases.probe(folder)
    assert (got, protocol) == (version, RELEASES[version])
    assert folder.resolve() in init.resolve().parents


def test_serializers_of_several_protocols_side_by_side():
    mods = {v: releases.load_serializer(v) for v in RELEASES}
    assert {v: m.PROTOCOL_VERSION for v, m in mods.items()} == RELEASES
    assert len({id(m) for m in mods.values()}) == len(RELEASES)  # separate modules, not one import
    assert releases.load_serializer(CURRENT) is mods[CURRENT]
    assert "styly_netsync.binary_serializer" not in {m.__name__ for m in mods.values()}
    frame = {
        "deviceId": "x",
        "poseSeq": 7,
        "flags": 0x04,
        "head": {"posX": 1.25, "posY": 1.6, "posZ": -2.0, "rotX": 0, "rotY": 0, "rotZ": 0, "rotW": 1},
    }
    for v, m in mods.items():
        raw = m.serialize_client_transform(frame)
        assert raw[:2] == bytes([11, RELEASES[v]])
        _, data, _ = m.deserialize(raw)
        assert data["deviceId"] == "x" and data["poseSeq"] == 7


def test_protocol_of_version_ranges():
    expect = {
        "0.8.0": None,
        "0.7.5": None,
        "0.0.5": None,
        "0.9.0": 3,
        "0.9.1": 3,
        "0.10.0": 3,
        "0.10.4": 3,
        "0.11.0": 4,
        "0.12.0": 5,
        "0.13.0": 5,
        "0.14.0": 6,
        "0.15.0": 7,
        "0.15.1": 7,
        "0.16.0": 8,
        "0.16.3": 8,
        "0.17.0": 8,
        "0.17.5": 8,
        "not a version": None,
    }
    assert {v: releases.protocol_of_version(v) for v in expect} == expect
    assert releases.protocol_of_version((0, 10, 4)) == 3  # as a mapping message carries it
    assert releases.protocol_of_version((0, 17, 5)) == 8
    assert all(releases.protocol_of_version(v) == p for v, p in RELEASES.items())


def test_failed_install_names_the_pip_command_and_leaves_no_folder(tmp_path):
    with pytest.raises(
        releases.ReleaseInstallError, match=r"pip install --no-deps .*--target .*styly-netsync-server==0\.0\.0"
    ):
        releases.ensure_release("0.0.0", tmp_path)
    assert list((tmp_path / "build" / "netsync").iterdir()) == []  # the temp folder is gone, nothing renamed


# ---------------------------------------------------------------------------------------------
# LocalNetSyncServer


def test_default_is_the_venv_release_and_restarts_on_the_same_ports(netsync_server):
    srv = netsync_server
    assert srv.address.version == srv.version() == CURRENT and srv.release_dir is None
    first = srv.pid
    srv.stop()
    srv.stop()
    srv.start(timeout=60)
    assert srv.pid != first
    assert "Server is ready" in srv.log_path.read_text()
    srv.close()
    assert srv.pid is None


def test_interpreter_without_the_server_is_a_clear_error(tmp_path):
    srv = LocalNetSyncServer(python="/usr/bin/python3", log_dir=tmp_path)  # the system Python: no server
    try:
        assert srv.address.version is None and srv.address.protocol is None
        with pytest.raises(ServerStartError, match="exited"):
            srv.start(timeout=30)
        with pytest.raises(ServerStartError, match="no styly-netsync-server"):
            srv.version()
    finally:
        srv.close()


def test_python_argument_runs_that_interpreters_release(tmp_path):
    """python= (as the bandwidth benchmark passes a 0.8.0 venv): its version and ports are read
    from that interpreter's install — here the venv's own python with a release on PYTHONPATH."""
    env_py = tmp_path / "py.sh"
    env_py.write_text(f'#!/bin/sh\nPYTHONPATH={releases.ensure_release("0.12.0")} exec {sys.executable} "$@"\n')
    env_py.chmod(0o755)
    with LocalNetSyncServer(python=env_py, log_dir=tmp_path) as srv:
        assert srv.address.version == "0.12.0" and srv.address.protocol == 5
        assert srv.address.transform_port == srv.address.dealer_port
        check_loopback_only(srv)


def test_busy_port_is_a_clear_error(tmp_path):
    a = LocalNetSyncServer(log_dir=tmp_path / "a")
    try:
        a.start(timeout=60)
        b = LocalNetSyncServer(dealer_port=a.address.dealer_port, pub_port=free_port(), log_dir=tmp_path / "b")
        try:
            with pytest.raises(ServerStartError):
                b.start(timeout=20)
        finally:
            b.close()
    finally:
        a.close()


def test_busy_transform_port_is_a_clear_error(tmp_path):
    with socket.socket() as blocker:
        blocker.bind((LOOPBACK, 0))
        blocker.listen()
        busy = blocker.getsockname()[1]
        srv = LocalNetSyncServer("0.15.0", transform_port=busy, log_dir=tmp_path)
        try:
            assert srv.address.transform_port == busy
            with pytest.raises(ServerStartError, match="exited"):
                srv.start(timeout=20)
        finally:
            srv.close()


def test_versions_before_the_split_have_no_transform_port():
    with pytest.raises(ValueError, match="no transform port"):
        LocalNetSyncServer("0.14.0", transform_port=free_port())
    with pytest.raises(ValueError, match="not a styly-netsync-server version"):
        LocalNetSyncServer("latest")


def test_config_keys_per_version(tmp_path):
    """Only the keys each release knows (older ones warn about the rest); dealer_port mirrors
    control_port from 0.15.0 on, as the server requires."""
    for v in RELEASES:
        srv = LocalNetSyncServer(v, log_dir=tmp_path)
        try:
            keys = dict(line.split(" = ", 1) for line in srv.config_path.read_text().splitlines())
            a = srv.address
            if a.protocol >= 7:
                assert keys["control_port"] == keys["dealer_port"] == str(a.control_port)
                assert keys["transform_port"] == str(a.transform_port)
            else:
                assert "control_port" not in keys and "transform_port" not in keys
                assert keys["dealer_port"] == str(a.dealer_port)
            assert keys["enable_server_discovery"] == "false"
        finally:
            srv.close()


def test_config_keys_for_0_8_0(tmp_path):
    """python= with 0.8.0 (the bandwidth benchmark's baseline): no rest_api_port key, which 0.8.0
    does not know (it reads NETSYNC_REST_PORT). A stand-in interpreter that only answers the
    version question is enough to check the file."""
    fake = tmp_path / "python080"
    fake.write_text("#!/bin/sh\necho 0.8.0\n")
    fake.chmod(0o755)
    srv = LocalNetSyncServer(python=fake, log_dir=tmp_path)
    try:
        assert (srv.address.version, srv.address.protocol) == ("0.8.0", None)
        keys = dict(line.split(" = ", 1) for line in srv.config_path.read_text().splitlines())
        assert keys.keys() == {"dealer_port", "pub_port", "server_discovery_port", "enable_server_discovery"}
    finally:
        srv.close()


def test_no_unknown_key_warnings(tmp_path):
    for v in ("0.14.0", "0.15.0"):
        with LocalNetSyncServer(v, log_dir=tmp_path) as srv:
            pass
        assert "Unknown keys" not in srv.log_path.read_text(), v


def test_launcher_keeps_even_discovery_on_loopback(tmp_path):
    """Belt and braces: the launcher confines a server started *with* discovery (which 0.17.5
    binds on UDP+TCP and announces with a LAN broadcast probe) — binds on 127.0.0.1, probe refused."""
    from headcast.netcode.netsync.localserver import LAUNCHER

    control = free_port()
    ports = dict(
        control_port=control,
        dealer_port=control,
        transform_port=free_port(),
        pub_port=free_port(),
        rest_api_port=free_port(),
        server_discovery_port=free_port(),
    )
    cfg = tmp_path / "discovery.toml"
    cfg.write_text("".join(f"{k} = {v}\n" for k, v in ports.items()))
    log = tmp_path / "discovery.log"
    env = dict(os.environ, PYTHONPATH=str(releases.ensure_release(CURRENT)), PYTHONUNBUFFERED="1")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER), "--config", str(cfg), "--log-level-console", "DEBUG"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        want = {("tcp", LOOPBACK, p) for p in ports.values()} | {("udp", LOOPBACK, ports["server_discovery_port"])}

        def ready():
            assert proc.poll() is None, log.read_text()[-2000:]
            return want <= listening(proc.pid) and "Server is ready" in log.read_text()

        wait_for(ready, 30, "the server with discovery on")
        assert listening(proc.pid) == want
        assert f"<broadcast>:{ports['server_discovery_port']} is beyond loopback" in log.read_text()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:  # and it still answers on loopback
            u.settimeout(5)
            u.sendto(b"STYLY-NETSYNC-DISCOVER", (LOOPBACK, ports["server_discovery_port"]))
            reply = u.recv(1024).decode()
        assert reply.startswith(f"STYLY-NETSYNC3|{control}|{ports['transform_port']}|{ports['pub_port']}|")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
