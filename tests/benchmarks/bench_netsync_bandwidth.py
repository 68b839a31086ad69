"""docs/protocols/netsync.md#acceptance 6: room bytes/s at one subscriber, 10 clients × 10 Hz, virtualCount 0, for
the protocols of three server releases:

- protocol 3: headcast's NetSyncClient(protocol=3) ×10 against styly-netsync-server 0.10.4
  (build/netsync/0.10.4): poses on the one ROUTER;
- protocol 8, the current one: NetSyncClient(protocol=8) ×10 against styly-netsync-server 0.17.5
  (build/netsync/0.17.5): hello once a second on the control ROUTER, poses on the transform
  ROUTER (control + 2);
- baseline, protocol 2: styly-netsync-server 0.8.0 and its own client simulator (10 clients,
  10 Hz, virtuals forced to 0), installed on demand from PyPI into build/netsync-server-0.8.0/.

Every server runs on 127.0.0.1 through headcast's loopback launcher; one raw SUB socket counts
the room-pose messages (type 12) on the room topic and checks their protocol byte. Per protocol:
the pose body (read back from the room messages: (size − header) / count − entry header), the
client pose message (headcast's counters; for 0.8.0 its own serializer with the simulator's
uuid4 deviceId), the typical room message and room bytes/s. Target (docs/protocols/netsync.md#acceptance, for protocol
3): ≥ 55 % fewer room bytes/s than protocol 2; protocol 8 is reported against it too.

The three servers run side by side (a thread each) and are measured in the same RUNS windows
(each printed with the load at its start and end): each protocol's window is compared with
protocol 2's in the same window, and the verdict is on the worst window.

    .venv/bin/python tests/benchmarks/bench_netsync_bandwidth.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import math
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import zmq

from headcast.netcode.netsync.localserver import LocalNetSyncServer
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.transport import NetSyncClient

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/benchmarks: _report
from _report import load_now, report, span  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BASELINE_VENV = REPO / "build" / "netsync-server-0.8.0"
ROOM = "bench-room"
CLIENTS = 10
TARGET = 0.55
RUNS = 3  # measurement windows per server


_PRINT = threading.Lock()


def say(text: str) -> None:
    """One whole line, from whichever measurement's thread (print writes the end on its own)."""
    with _PRINT:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


class Windows:
    """The measurement windows the three servers share: each measurement says when it is warmed up
    and goes on; once all are, the windows start together and end at the same clock times, so each
    protocol's window i is measured beside protocol 2's window i (the same load, the same time)."""

    def __init__(self, parties: int, seconds: float) -> None:
        self.parties, self.window = parties, seconds / RUNS
        self.lock = threading.Lock()
        self.warm = 0
        self.t0: float | None = None

    def ready(self) -> None:
        with self.lock:
            self.warm += 1
            if self.warm == self.parties:
                self.t0 = time.monotonic()

    def end(self, k: int) -> float | None:
        """When window k (1-based) ends; None until every measurement is warm."""
        return None if self.t0 is None else self.t0 + self.window * k


CURRENT = (8, "0.17.5")  # the current protocol and its release
PROTOCOL_3 = (3, "0.10.4")

# Runs the 0.8.0 simulator with every client's virtual transforms set to 0 (it picks 2–3).
SIMULATOR = """
import sys
import styly_netsync.client_simulator as sim
init = sim.SimulationConfig.__init__
def no_virtuals(self, *a, **k):
    init(self, *a, **k)
    self.virtual_count = 0
sim.SimulationConfig.__init__ = no_virtuals
sys.argv = ["client_simulator"] + sys.argv[1:]
sim.main()
"""


def baseline_python() -> Path:
    py = BASELINE_VENV / "bin" / "python"
    if py.exists():
        return py
    print(f"installing styly-netsync-server 0.8.0 into {BASELINE_VENV} (one time) …", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(BASELINE_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--progress-bar", "on", "styly-netsync-server==0.8.0"], check=True)
    return py


@dataclass
class Figures:
    protocol: int
    server: str
    clients: str
    body: int  # bytes per pose body, from the room messages
    client_msg: int  # bytes per client pose message
    room_msg: int  # the typical room message
    room_rate: float  # room messages per second
    room_bps: float  # room payload bytes per second at one subscriber
    room_bps_topic: float  # … with the topic frame
    uplink: float | None = None  # poses per second per client (headcast's clients only)


class RoomMeter:
    """A plain SUB socket on the room topic: counts room-pose bytes in a time window and reads
    each message's protocol byte and entry count."""

    def __init__(self, pub_port: int) -> None:
        self.ctx = zmq.Context()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.RCVHWM, 10000)
        self.sub.setsockopt(zmq.SUBSCRIBE, ROOM.encode())
        self.sub.connect(f"tcp://127.0.0.1:{pub_port}")
        self.reset()

    def reset(self) -> None:
        self.t0 = time.monotonic()
        self.load0 = load_now()
        self.messages = self.payload = self.with_topic = self.other = 0
        self.sizes: Counter[int] = Counter()
        self.protocols: Counter[int] = Counter()
        self.bodies: Counter[float] = Counter()

    def drain(self) -> None:
        head = 3 + len(ROOM.encode())
        while self.sub.poll(0):
            topic, payload = self.sub.recv_multipart()
            if topic != ROOM.encode():
                continue
            if payload[:1] == b"\x0c":
                self.messages += 1
                self.payload += len(payload)
                self.with_topic += len(payload) + len(topic)
                self.sizes[len(payload)] += 1
                self.protocols[payload[1]] += 1
                count = struct.unpack_from("<H", payload, head + 8)[0]  # after roomId, broadcastTime
                if count:
                    self.bodies[(len(payload) - head - 10) / count - 10] += 1  # entry: clientNo, poseTime
            else:
                self.other += 1

    def figures(
        self, protocol: int, server: str, clients: str, client_msg: int, uplink: float | None = None
    ) -> Figures:
        dt = time.monotonic() - self.t0
        if not self.messages:
            raise SystemExit(f"protocol {protocol}: no room messages in {dt:.1f} s")
        seen = sorted(self.protocols)
        if seen != [protocol]:
            raise SystemExit(f"protocol {protocol}: room messages carried protocol bytes {seen}")
        body = self.bodies.most_common(1)[0][0] if self.bodies else 0
        f = Figures(
            protocol,
            server,
            clients,
            int(body),
            client_msg,
            self.sizes.most_common(1)[0][0],
            self.messages / dt,
            self.payload / dt,
            self.with_topic / dt,
            uplink,
        )
        say(
            f"  protocol {protocol}: {f.room_rate:5.1f} room msgs/s, typical {f.room_msg} B, {f.room_bps:8.0f} B/s "
            f"({f.room_bps_topic:8.0f} B/s with the topic frame; {self.other} other msgs); body {f.body} B, "
            f"client message {client_msg} B"
        )
        return f

    def close(self) -> None:
        self.sub.close(0)
        self.ctx.term()


def frame_for(i: int, t: float) -> PoseFrame:
    """Client i walking a circle with swinging hands: every 0.1 s the quantised pose changes."""
    a = t * 0.8 + i
    hx, hz = 3.0 * math.cos(a) + i, 3.0 * math.sin(a)
    yaw = math.degrees(a)
    half = math.radians(yaw) / 2
    rot = (0.0, math.sin(half), 0.0, math.cos(half))
    swing = 0.3 * math.sin(t * 3.0)
    return PoseFrame.build(
        Transform((hx, 1.65, hz), rot),
        Transform((hx + 0.3, 1.2 + swing, hz + 0.1), rot),
        Transform((hx - 0.3, 1.2 - swing, hz + 0.1), rot),
        (),
        OriginDelta(0.1 * i, -0.2 * i, 15.0 * i),
    )


def measure_headcast(protocol: int, version: str, windows: Windows, warmup: float) -> list[Figures]:
    """10 NetSyncClient(protocol=…) against that release; the room traffic at one subscriber."""
    with LocalNetSyncServer(version=version) as srv:
        a = srv.address
        running = srv.version()
        if running != version or a.protocol != protocol:
            raise SystemExit(
                f"asked for styly-netsync-server {version} (protocol {protocol}); got {running} (protocol {a.protocol})"
            )
        lanes = (
            f"control {a.dealer_port}, transform {a.transform_port}"
            if a.transform_port != a.dealer_port
            else f"dealer {a.dealer_port}"
        )
        say(
            f"protocol {protocol}: styly-netsync-server {running} on 127.0.0.1 ({lanes}, pub {a.pub_port}), "
            f"{CLIENTS} headcast clients at 10 Hz"
        )
        meter = RoomMeter(a.pub_port)
        clients = [
            NetSyncClient(
                a.host,
                a.dealer_port,
                a.pub_port,
                ROOM,
                f"bench-{i:02d}",
                transform_port=a.transform_port,
                protocol=protocol,
            )
            for i in range(CLIENTS)
        ]
        try:
            warm = False
            start = time.monotonic()
            sends0 = bytes0 = 0
            out: list[Figures] = []
            while True:
                now = time.monotonic()
                for i, c in enumerate(clients):
                    c.send_pose(now, frame_for(i, now))
                    c.poll(now)
                meter.drain()
                if not warm and now - start >= warmup:
                    if not all(c.client_no for c in clients):
                        raise SystemExit(f"protocol {protocol}: not every client joined during the warm-up")
                    warm = True
                    windows.ready()
                if warm and windows.t0 is not None and sends0 == 0 and not out:
                    meter.reset()  # the first window starts
                    sends0 = sum(c.counters.sends for c in clients)
                    bytes0 = sum(c.counters.bytes_sent for c in clients)
                t_end = windows.end(len(out) + 1)
                if sends0 and t_end is not None and now >= t_end:
                    sends = sum(c.counters.sends for c in clients) - sends0
                    sent = sum(c.counters.bytes_sent for c in clients) - bytes0
                    uplink = sends / (now - meter.t0) / CLIENTS
                    say(
                        f"  protocol {protocol} window {len(out) + 1} (load {meter.load0:.2f} → {load_now():.2f}): "
                        f"uplink {uplink:.1f} poses/s per client"
                    )
                    out.append(meter.figures(protocol, running, f"headcast ×{CLIENTS}", round(sent / sends), uplink))
                    if len(out) == RUNS:
                        return out
                    meter.reset()
                    sends0 += sends
                    bytes0 += sent
                if now - start > warmup + 180 + windows.window * RUNS:
                    raise SystemExit(f"protocol {protocol}: the other servers were not warm within 180 s")
                # a fine loop: the policy sends on the first iteration ≥ 100 ms after the last
                # send, so a coarse loop would undershoot 10 Hz and flatter the comparison
                time.sleep(0.002)
        finally:
            for c in clients:
                c.close()
            meter.close()


# The 0.8.0 simulator's client pose message: its deviceId is a uuid4 (36 B), no virtuals.
CLIENT_MESSAGE_0_8_0 = """
import uuid
from styly_netsync import binary_serializer as b
assert b.PROTOCOL_VERSION == 2, b.PROTOCOL_VERSION
print(len(b.serialize_client_transform({"deviceId": str(uuid.uuid4()), "poseSeq": 1, "flags": 0x1E, "virtuals": []})))
"""


def measure_baseline(windows: Windows, warmup: float) -> list[Figures]:
    py = baseline_python()
    client_msg = int(
        subprocess.run([str(py), "-c", CLIENT_MESSAGE_0_8_0], check=True, capture_output=True, text=True).stdout
    )
    with LocalNetSyncServer(python=py) as srv:
        a = srv.address
        say(
            f"protocol 2: styly-netsync-server {srv.version()} on 127.0.0.1:{a.dealer_port}/{a.pub_port}, "
            f"its client simulator, {CLIENTS} clients at 10 Hz, no virtuals"
        )
        meter = RoomMeter(a.pub_port)
        sim = subprocess.Popen(
            [
                str(py),
                "-c",
                SIMULATOR,
                "--clients",
                str(CLIENTS),
                "--server",
                "tcp://127.0.0.1",
                "--dealer-port",
                str(a.dealer_port),
                "--sub-port",
                str(a.pub_port),
                "--room",
                ROOM,
                "--transform-send-rate",
                "10",
                "--no-sync-battery",
                "--log-level",
                "WARNING",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            t_end = time.monotonic() + warmup
            while time.monotonic() < t_end:
                meter.drain()
                time.sleep(0.01)
            if sim.poll() is not None:
                raise SystemExit(f"the 0.8.0 client simulator exited with {sim.returncode}")
            windows.ready()
            deadline = time.monotonic() + 180
            while windows.t0 is None:
                meter.drain()
                time.sleep(0.01)
                if time.monotonic() > deadline:
                    raise SystemExit("protocol 2: the other servers were not warm within 180 s")
            out = []
            meter.reset()
            for n in range(1, RUNS + 1):
                t_end = windows.end(n)
                assert t_end is not None
                while time.monotonic() < t_end:
                    meter.drain()
                    time.sleep(0.01)
                say(f"  protocol 2 window {n} (load {meter.load0:.2f} → {load_now():.2f}):")
                out.append(meter.figures(2, srv.version(), f"its simulator ×{CLIENTS}", client_msg))
                meter.reset()
            return out
        finally:
            for action in (lambda: sim.send_signal(signal.SIGINT), sim.terminate, sim.kill):
                action()
                try:
                    sim.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
            meter.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--seconds", type=float, default=30.0, help=f"measurement, in {RUNS} windows the servers share (default 30)"
    )
    ap.add_argument("--warmup", type=float, default=4.0)
    args = ap.parse_args()
    load0 = load_now()
    print(
        f"load average {load0:.2f}; the three servers side by side, {RUNS} common windows of {args.seconds / RUNS:g} s"
    )
    shared = Windows(3, args.seconds)
    jobs = [
        lambda: measure_headcast(*PROTOCOL_3, shared, args.warmup),
        lambda: measure_headcast(*CURRENT, shared, args.warmup),
        lambda: measure_baseline(shared, args.warmup),
    ]
    done: list[list[Figures] | None] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            done[i] = jobs[i]()
        except BaseException as e:  # SystemExit included: said once all have ended
            errors.append(e)
            shared.ready()  # the others do not wait for this one

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors or any(d is None for d in done):
        raise SystemExit(f"a measurement failed: {errors[0] if errors else 'no figures'}")
    windows = [d for d in done if d is not None]
    load1 = load_now()
    runs = [w[-1] for w in windows]  # the table: each server's last window
    base = runs[-1]
    print(
        f"\n{CLIENTS} clients × 10 Hz, virtualCount 0, room bytes/s at one subscriber (payload frames; "
        f"the last {args.seconds / RUNS:g}-s window per server)"
    )
    print("protocol  server  clients             body  client msg  room msg  room msgs/s  room B/s  vs protocol 2")
    for f in sorted(runs, key=lambda f: f.protocol):
        vs = "—" if f is base else f"{(f.room_bps / base.room_bps - 1) * 100:+.1f} %"
        print(
            f"{f.protocol:8d}  {f.server:6s}  {f.clients:18s} {f.body:4d} B {f.client_msg:8d} B {f.room_msg:7d} B "
            f"{f.room_rate:11.1f} {f.room_bps:9.0f}  {vs}"
        )
    print(f"over {RUNS} windows (min–max), verdict on the worst; load average {load0:.2f} → {load1:.2f}:")
    for ws in windows[:-1]:
        f = ws[-1]
        reductions = [round((1.0 - w.room_bps / b.room_bps) * 100, 1) for w, b in zip(ws, windows[-1])]
        r = report(
            "netsync_bandwidth",
            f"protocol {f.protocol} room B/s reduction vs protocol 2",
            ">=",
            TARGET * 100,
            None,
            " %",
            reductions,
            (load0, load1),
            note=f"{f.server}; each window against protocol 2's in the same window (side by side); worst window",
        )
        verdict = "MEETS" if r["met"] else f"MISSES by {TARGET * 100 - r['value']:.1f} pt"
        target = (
            f"target ≥ {TARGET * 100:.0f} %"
            if f.protocol == 3
            else f"≥ {TARGET * 100:.0f} %, the target set for protocol 3"
        )
        print(
            f"protocol {f.protocol} ({f.server}): room bytes/s {span([w.room_bps for w in ws], 0)} vs protocol 2 "
            f"{span([w.room_bps for w in windows[-1]], 0)} → reduction {span(reductions)} % ({target}: {verdict}); "
            f"room message {f.room_msg} vs {base.room_msg} B ({(1 - f.room_msg / base.room_msg) * 100:.1f} % smaller)"
        )
    print(
        "(the B/s figures also reflect each server's broadcast rate; protocols 4–8 carry dy in the Δ block, "
        "2 B more per body than 3; docs/protocols/netsync.md#bandwidth, protocol 3: 5,548 vs 12,694 B/s, −56.3 %)"
    )


if __name__ == "__main__":
    main()
