"""§12.6 bandwidth: room bytes/s at one subscriber, 10 clients × 10 Hz, virtualCount 0.

- protocol 3: our NetSyncClient ×10 against the real styly-netsync-server 0.10.4 (project venv);
- baseline, protocol 2: styly-netsync-server 0.8.0 and its own client simulator (10 clients,
  10 Hz, virtuals forced to 0), installed on demand from PyPI into build/netsync-server-0.8.0/.

Both servers run on 127.0.0.1 through headcast's loopback launcher; one raw SUB socket counts
the room-pose messages (type 12) on the room topic. Target (seed §12.6): ≥ 55 % fewer bytes.

    .venv/bin/python tests/benchmarks/bench_netsync_bandwidth.py [--seconds 15]
"""
from __future__ import annotations

import argparse
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import zmq

from headcast.netcode.netsync.localserver import LocalNetSyncServer
from headcast.netcode.netsync.model import OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.transport import NetSyncClient

REPO = Path(__file__).resolve().parents[2]
BASELINE_VENV = REPO / "build" / "netsync-server-0.8.0"
ROOM = "bench-room"
CLIENTS = 10
TARGET = 0.55

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


class RoomMeter:
    """A plain SUB socket on the room topic: counts room-pose bytes in a time window."""

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
        self.messages = self.payload = self.with_topic = self.other = 0
        self.sizes: list[int] = []

    def drain(self) -> None:
        while self.sub.poll(0):
            topic, payload = self.sub.recv_multipart()
            if topic != ROOM.encode():
                continue
            if payload[:1] == b"\x0c":
                self.messages += 1
                self.payload += len(payload)
                self.with_topic += len(payload) + len(topic)
                self.sizes.append(len(payload))
            else:
                self.other += 1

    def report(self, label: str) -> tuple[float, int]:
        dt = time.monotonic() - self.t0
        rate = self.payload / dt
        typical = max(set(self.sizes), key=self.sizes.count) if self.sizes else 0
        print(f"  {label}: {self.messages / dt:5.1f} room msgs/s, typical {typical} B, "
              f"{rate:8.0f} B/s ({self.with_topic / dt:8.0f} B/s with the topic frame; {self.other} other msgs)")
        return rate, typical

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


def measure_ours(seconds: float, warmup: float) -> tuple[float, int]:
    with LocalNetSyncServer() as srv:
        a = srv.address
        print(f"protocol 3: styly-netsync-server {srv.version()} on 127.0.0.1:{a.dealer_port}/{a.pub_port}, "
              f"{CLIENTS} headcast clients at 10 Hz", flush=True)
        meter = RoomMeter(a.pub_port)
        clients = [NetSyncClient(a.host, a.dealer_port, a.pub_port, ROOM, f"bench-{i:02d}") for i in range(CLIENTS)]
        try:
            t_end = None
            start = time.monotonic()
            while True:
                now = time.monotonic()
                for i, c in enumerate(clients):
                    c.send_pose(now, frame_for(i, now))
                    c.poll(now)
                meter.drain()
                if t_end is None and now - start >= warmup:
                    if not all(c.client_no for c in clients):
                        raise SystemExit("not every client joined during the warm-up")
                    meter.reset()
                    t_end = now + seconds
                if t_end is not None and now >= t_end:
                    break
                # a fine loop: the policy sends on the first iteration ≥ 100 ms after the last
                # send, so a coarse loop would undershoot 10 Hz and flatter the comparison
                time.sleep(0.002)
            sends = sum(c.counters.sends for c in clients) / (time.monotonic() - start)
            print(f"  uplink: {sends / CLIENTS:.1f} poses/s per client")
            return meter.report("protocol 3")
        finally:
            for c in clients:
                c.close()
            meter.close()


def measure_baseline(seconds: float, warmup: float) -> tuple[float, int]:
    py = baseline_python()
    with LocalNetSyncServer(python=py) as srv:
        a = srv.address
        print(f"protocol 2: styly-netsync-server {srv.version()} on 127.0.0.1:{a.dealer_port}/{a.pub_port}, "
              f"its client simulator, {CLIENTS} clients at 10 Hz, no virtuals", flush=True)
        meter = RoomMeter(a.pub_port)
        sim = subprocess.Popen(
            [str(py), "-c", SIMULATOR, "--clients", str(CLIENTS), "--server", "tcp://127.0.0.1",
             "--dealer-port", str(a.dealer_port), "--sub-port", str(a.pub_port), "--room", ROOM,
             "--transform-send-rate", "10", "--no-sync-battery", "--log-level", "WARNING"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            t_end = time.monotonic() + warmup
            while time.monotonic() < t_end:
                meter.drain()
                time.sleep(0.01)
            if sim.poll() is not None:
                raise SystemExit(f"the 0.8.0 client simulator exited with {sim.returncode}")
            meter.reset()
            t_end = time.monotonic() + seconds
            while time.monotonic() < t_end:
                meter.drain()
                time.sleep(0.01)
            return meter.report("protocol 2")
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
    ap.add_argument("--seconds", type=float, default=15.0, help="measurement window per server (default 15)")
    ap.add_argument("--warmup", type=float, default=4.0)
    args = ap.parse_args()
    ours, ours_msg = measure_ours(args.seconds, args.warmup)
    base, base_msg = measure_baseline(args.seconds, args.warmup)
    reduction = 1.0 - ours / base
    print(f"room message size: {ours_msg} B vs {base_msg} B → {(1 - ours_msg / base_msg) * 100:.1f} % smaller "
          "(the B/s figure also reflects each side's broadcast rate)")
    verdict = "MEETS" if reduction >= TARGET else "MISSES"
    print(f"room bytes/s: protocol 3 {ours:.0f} vs protocol 2 {base:.0f} → reduction {reduction * 100:.1f} % "
          f"(target ≥ {TARGET * 100:.0f} %: {verdict}; reference §10: 5,548 vs 12,694 B/s, −56.3 %)")


if __name__ == "__main__":
    main()
