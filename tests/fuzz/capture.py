"""Capture real traffic from the servers the suite starts, as the fuzz corpus's seeds.

    .venv/bin/python tests/fuzz/capture.py [--seconds 4]

Starts each real server on 127.0.0.1 (ioq3ded, OpenArena's legacy-71 server with its pk3s,
styly-netsync-server of every release in build/netsync/ plus the venv's, cube2-server), joins it
with headcast's own client for a few seconds while recording every byte the client's cores are
handed, and writes them to tests/data/fuzz/<target>/<sha1>.bin (at most PER_TARGET per target,
spread over the sizes seen). The files the user supplies (traces, motions, configs, pk3s) are
written from the repo's own assets and a short recorded trace. Re-running adds new seeds and keeps
the old ones (and every crash-*.bin regression input).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import socket
import sys
import time
import zipfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "fuzz"
PER_TARGET = 24
MAX_SEED = 4096  # bytes: small seeds mutate faster; the corpus stays small in the repo


def _store(found: dict[str, list[bytes]]) -> dict[str, int]:
    written = {}
    for target, items in found.items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        uniq = sorted({bytes(b) for b in items if len(b) <= MAX_SEED}, key=len)
        if len(uniq) > PER_TARGET:  # spread over the sizes seen
            step = len(uniq) / PER_TARGET
            uniq = [uniq[int(i * step)] for i in range(PER_TARGET)]
        for b in uniq:
            (folder / f"{hashlib.sha1(b).hexdigest()[:16]}.bin").write_bytes(b)
        written[target] = len(uniq)
    return written


def capture_q3(found, seconds: float) -> None:
    from headcast.netcode.q3 import client as qc, serverparse, status
    from headcast.netcode.q3.client import ClientConfig
    from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files
    from headcast.netcode.q3.oob import Family
    from headcast.netcode.q3.transport import Q3Client

    real_recv = qc.Q3ClientCore.receive_datagram
    real_parse = serverparse.parse_server_message

    def recv(self, data, now):
        found["q3_netchan" if not data.startswith(b"\xff\xff\xff\xff") else "q3_oob"].append(bytes(data))
        return real_recv(self, data, now)

    def parse(data, num, at, baselines):  # message bodies: the q3_client harness adds its own netchan header
        found["q3_serverparse"].append(bytes(data))
        found["q3_client"].append(bytes(data))
        return real_parse(data, num, at, baselines)

    qc.Q3ClientCore.receive_datagram = recv
    qc.serverparse.parse_server_message = parse
    try:
        for kind, family, paks in (("ioq3", Family.NEW71, ()), ("openarena", Family.LEGACY71, tuple(pk3_files()))):
            with LocalQ3Server(kind=kind, pure=bool(paks)) as server:
                for req in (status.getinfo_request("fz"), status.getstatus_request("fz")):
                    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                        s.settimeout(2.0)
                        s.sendto(req, server.address)
                        try:
                            found["q3_status"].append(s.recv(65536))
                        except socket.timeout:
                            pass
                client = Q3Client(server.address, ClientConfig(family=family, name="fuzzseed", pure_paks=paks))
                client.start(time.monotonic())
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    now = time.monotonic()
                    client.send_due(now)
                    client.receive(now)
                    time.sleep(0.005)
                client.close(time.monotonic())
    finally:
        qc.Q3ClientCore.receive_datagram = real_recv
        qc.serverparse.parse_server_message = real_parse
    from headcast.netcode.q3 import huffman, oob

    # Huffman: connect packets as a server decompresses them (the client's own, as sent)
    for i in range(8):
        info = oob.build_userinfo(
            name=f"fuzz{i}", challenge=7919 * i, qport=i + 1, cl_guid=oob.new_guid(), vr=bool(i % 2)
        )
        found["q3_huffman"].append(huffman.compress(oob.connect_text(info)))


def capture_netsync(found, seconds: float) -> None:
    from headcast.netcode.netsync import client as nsc
    from headcast.netcode.netsync.localserver import LocalNetSyncServer
    from headcast.netcode.netsync.model import PoseFrame, Transform
    from headcast.netcode.netsync.releases import is_installed
    from headcast.netcode.netsync.transport import NetSyncClient

    proto = {}
    real = nsc.NetSyncClientCore.receive_datagram

    def receive(self, data, now):
        frames = data.frames
        if data.lane == nsc.LANE_ROOM:
            if len(frames) == 2 and frames[1][:1] == b"\x0c":
                found[f"ns_room_p{proto['p']}"].append(bytes(frames[1]))
            found["ns_core"].append(b"B" + b"\x00".join(frames))
        else:
            if len(frames) == 2:
                found["ns_mapping"].append(bytes(frames[1]))
            found["ns_core"].append(b"U" + b"\x00".join(frames))
        return real(self, data, now)

    nsc.NetSyncClientCore.receive_datagram = receive
    try:
        for version in ("0.10.4", "0.11.0", "0.12.0", "0.14.0", "0.15.0", "0.16.0", None):
            if version is not None and not is_installed(version):
                continue
            server = LocalNetSyncServer(version)
            try:
                server.start(timeout=60)
                a = server.address
                proto["p"] = a.protocol
                c = NetSyncClient(
                    a.host,
                    a.dealer_port,
                    a.pub_port,
                    "default_room",
                    transform_port=a.transform_port,
                    protocol=a.protocol,
                )
                peer = NetSyncClient(
                    a.host,
                    a.dealer_port,
                    a.pub_port,
                    "default_room",
                    transform_port=a.transform_port,
                    protocol=a.protocol,
                )
                end = time.monotonic() + seconds
                i = 0
                while time.monotonic() < end:
                    now = time.monotonic()
                    for k, cl in enumerate((c, peer)):
                        cl.send_pose(now, PoseFrame.build(Transform((0.1 * i, 1.6, k * 1.0))))
                        cl.poll(now)
                    i += 1
                    time.sleep(0.02)
                c.close()
                peer.close()
            finally:
                server.close()
    finally:
        nsc.NetSyncClientCore.receive_datagram = real
    from headcast.netcode.netsync.codec import encode_body
    from headcast.netcode.netsync.model import OriginDelta

    for p in range(3, 9):  # pose bodies as our client sends them (what a room relays, per protocol)
        for i in range(6):
            frame = PoseFrame.build(Transform((0.5 * i, 1.6, -i * 1.0)), delta=OriginDelta(i * 0.5, 0.0, 30.0 * i))
            found[f"ns_body_p{p}"].append(encode_body(1000 + i, frame, p))


def capture_sauer(found, seconds: float) -> None:
    from headcast.netcode.sauer import client as sc
    from headcast.netcode.sauer.client import Pose, SauerClientCore
    from headcast.netcode.sauer.info import info_request
    from headcast.netcode.sauer.localserver import LocalSauerServer
    from headcast.netcode.sauer.transport import SauerClient

    real = sc.SauerClientCore.receive_datagram

    def recv(self, incoming, now):
        channel, data = incoming.channel, incoming.data
        found["sauer_messages" if channel == 1 else "sauer_positions"].append(bytes(data))
        found["sauer_core"].append(bytes([channel]) + bytes(data))
        return real(self, incoming, now)

    sc.SauerClientCore.receive_datagram = recv
    try:
        with LocalSauerServer() as server:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(2.0)
                for tag in (1, 2, 3):
                    s.sendto(info_request(tag), (server.address[0], server.address[1] + 1))
                    try:
                        found["sauer_info"].append(s.recv(65536))
                    except socket.timeout:
                        pass
            clients = []
            for name in ("fuzzA", "fuzzB"):
                core = SauerClientCore(name)
                core.pose = Pose(
                    eye=(512.0, 512.0, 526.0), yaw=30.0, pitch=-10.0, roll=5.0, vel=(0.0, 100.0, 0.0), move=1
                )
                clients.append(SauerClient(server.address, core))
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for c in clients:
                    c.poll(time.monotonic())
                time.sleep(0.005)
            for c in clients:
                c.close()
    finally:
        sc.SauerClientCore.receive_datagram = real


def capture_q3_delta(found) -> None:
    """Entity and playerState deltas as a server writes them (the q3_delta target reads one byte of
    entity number, then the bits)."""
    from headcast.netcode.q3.delta import EntityState, PlayerState, write_delta_entity, write_delta_playerstate
    from headcast.netcode.q3.msg import BitWriter

    for i in range(8):
        w = BitWriter()
        e = EntityState.from_dict(
            {
                "number": 5 + i,
                "eType": i % 4,
                "origin": (10.0 * i, -3.5, 64.0),
                "angles": (0.0, 45.0 * i, 0.0),
                "eFlags": 0x400 * (i % 2),
            }
        )
        write_delta_entity(w, None, e, True)
        found["q3_delta"].append(bytes([5 + i]) + w.to_bytes())
        w = BitWriter()
        ps = PlayerState.from_dict(
            {
                "commandTime": 1000 * i,
                "origin": (1.0, 2.0, 3.0 * i),
                "viewangles": (5.0, 90.0 * i, 0.0),
                "stats[7]": i * 100,
            }
        )
        write_delta_playerstate(w, None, ps)
        found["q3_delta"].append(bytes([i]) + w.to_bytes())


def capture_files(found) -> None:
    """The files a user hands headcast: the shipped motions and configs, a short trace, pk3s."""
    for p in sorted((REPO / "assets").rglob("*.motion")):
        found["motion"].append(p.read_bytes())
    for p in sorted((REPO / "assets").rglob("*.toml")):
        # small seeds mutate faster: the defaults without comments, whole and one section each
        lines = [
            re.sub(r"\s+#.*$", "", ln)
            for ln in p.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")
        ]
        found["config"].append(("\n".join(lines) + "\n").encode())
        section: list[str] = []
        for ln in lines + ["["]:
            if ln.startswith("[") and section:
                found["config"].append(("\n".join(section) + "\n").encode())
                section = []
            section.append(ln)
    import tempfile

    from headcast.app.run.synthetic import LOOK_AROUND, frame_at
    from headcast.xr.trace import write_trace

    with tempfile.TemporaryDirectory() as d:
        t = Path(d) / "t.trace"
        write_trace(t, [frame_at(LOOK_AROUND, i, i / 90, int(i / 90 * 1e9)) for i in range(3)])
        found["trace"].append(t.read_bytes())
        z = Path(d) / "p.pk3"
        with zipfile.ZipFile(z, "w") as zf:
            zf.writestr("vm/cgame.qvm", b"c" * 40)
            zf.writestr("vm/ui.qvm", b"u")
        found["pk3"].append(z.read_bytes())
    from headcast.netcode.q3.localserver import pk3_files

    for p in pk3_files()[:1]:
        with zipfile.ZipFile(p) as src, tempfile.TemporaryDirectory() as d:  # a real pk3's directory, tiny files
            z = Path(d) / "r.pk3"
            with zipfile.ZipFile(z, "w") as zf:
                for info in src.infolist()[:6]:
                    zf.writestr(info.filename, b"x")
            found["pk3"].append(z.read_bytes())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="how long each client stays joined")
    ap.add_argument("--only", choices=["q3", "netsync", "sauer", "files"], action="append")
    args = ap.parse_args(argv)
    found: dict[str, list[bytes]] = defaultdict(list)
    steps = {
        "q3": lambda: capture_q3(found, args.seconds),
        "netsync": lambda: capture_netsync(found, args.seconds),
        "sauer": lambda: capture_sauer(found, args.seconds),
        "files": lambda: (capture_files(found), capture_q3_delta(found)),
    }
    for name in args.only or list(steps):
        print(f"capture: {name} ...", flush=True)
        steps[name]()
    for target, n in sorted(_store(found).items()):
        print(f"  {target:18} {n} seeds")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "tests"))
    sys.exit(main())
