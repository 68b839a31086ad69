"""Cost of the Quake 3 codecs per second of a 60 Hz / 20 Hz session (no sockets, no server).

Per second: 60 client packets (the client's per-tick call, Netchan.transmit_client_message: the
client message with 2 cmds, 32-bit buttons, its key, and the legacy netchan transmit with XOR) and
20 server messages (legacy netchan process with XOR, then a playerState
delta and 16 entity deltas read). Also the single operations. Target: the codec share of a
session under 0.5 % of one core (< 5 ms of CPU per second), half the session budget of 1 %.
With the C extension built (netcode/q3/build_native.py) its hot paths run in C;
`HEADCAST_PURE_PYTHON=1` measures the pure-Python reference. The line printed first says which.
RUNS runs (each operation the best of its 3 timed rounds in a run); the min–max over the runs and
the load at the start and end are printed, the verdict is on the worst run.

    .venv/bin/python tests/benchmarks/bench_q3_codec.py
"""

from __future__ import annotations

import struct
import sys
import time
from pathlib import Path

from headcast.netcode.q3.delta import (
    EntityState,
    PlayerState,
    read_delta_entity,
    read_delta_playerstate,
    write_delta_entity,
    write_delta_playerstate,
)
from headcast.netcode.q3.msg import BitReader, BitWriter
from headcast.netcode.q3.native import NATIVE_STATUS
from headcast.netcode.q3.netchan import Netchan, NetchanMode
from headcast.netcode.q3.usercmd import UserCmd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/benchmarks: _report
from _report import cli, load_now, report, span  # noqa: E402

TARGET_MS_PER_S = 5.0
RUNS = 5
RING = [f'cs {i} "\\\\sv_hostname\\\\VR {i}"' for i in range(64)]


def snapshot_body(frame: int) -> tuple[bytes, PlayerState, dict[int, EntityState]]:
    """A server message: ack long, a 16-entity packet body (ps + entities) and EOF."""
    ps0 = PlayerState.from_dict(
        {
            "commandTime": 50000,
            "origin": (512, 300, 24),
            "viewangles": (10.5, 20.25, 0),
            "stats[0]": 100,
            "delta_angles": (1000, 2000, 0),
            "eFlags": 0x404,
        }
    )
    ps1 = PlayerState.from_dict(
        {
            "commandTime": 50050 + frame,
            "origin": (515.25, 301.5, 24),
            "velocity": (320, 12.5, 0),
            "viewangles": (11.25, 21.5, 3),
            "stats[7]": 5289,
        },
        ps0,
    )
    old = {
        n: EntityState.from_dict(
            {
                "number": n,
                "eType": 1,
                "pos.trBase": (n * 10, -n * 5, 24),
                "apos.trBase": (0, n * 3.5, 0),
                "clientNum": n % 8,
            }
        )
        for n in range(1, 17)
    }
    w = BitWriter()
    w.write_long(7)
    write_delta_playerstate(w, ps0, ps1)
    for n in range(1, 17):
        new = EntityState.from_dict(
            {
                "pos.trBase": (n * 10 + 1.5, -n * 5 + 2.25, 24),
                "pos.trTime": 50050,
                "apos.trBase[1]": n * 3.5 + 7.25,
                "legsAnim": 3,
            },
            old[n],
        )
        write_delta_entity(w, old[n], new, force=False)
    w.write_bits(1023, 10)
    w.write_byte(8)
    return w.to_bytes(), ps0, old


def server_packet(seq: int, body: bytes, challenge: int, text: str) -> bytes:
    data = bytearray(body)
    key = (challenge ^ seq) & 0xFF
    for i in range(4, len(data)):
        c = ord(text[(i - 4) % len(text)])
        key = (key ^ (c << (i & 1))) & 0xFF
        data[i] ^= key
    return struct.pack("<I", seq) + bytes(data)


def parse(data: bytes, ps0: PlayerState, old: dict[int, EntityState]) -> None:
    r = BitReader(data)
    r.read_long()
    read_delta_playerstate(r, ps0)
    while True:
        n = r.read_bits(10)
        if n == 1023:
            break
        read_delta_entity(r, old[n], n)


def timed(fn, repeat: int) -> float:
    """Best-of-3 mean seconds per call (CPU time)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        for _ in range(repeat):
            fn()
        best = min(best, (time.process_time() - t0) / repeat)
    return best


def main() -> None:
    cli(__doc__).parse_args()
    load0 = load_now()
    challenge = 1592594996
    body, ps0, old = snapshot_body(0)
    cmds = [
        UserCmd(50000, (64626, 22464, 182), (84 << 19) | (104 << 12) | 1, 1, 127, 0, 0),
        UserCmd(50016, (64590, 22555, 364), (85 << 19) | (104 << 12) | 1, 1, 127, -64, 0),
    ]
    tx = Netchan(NetchanMode.LEGACY, challenge, 31337)
    rx = [Netchan(NetchanMode.LEGACY, challenge, 31337)]  # a new one per run: it takes each sequence once
    seq = [0]

    def client_packet() -> None:
        tx.transmit_client_message(987654, 1234, 7, [], cmds, 439041101, RING, 32)

    packets = [server_packet(s, body, challenge, RING[7]) for s in range(1, 301)]

    def server_message() -> None:
        got = rx[0].process(packets[seq[0]], RING)
        seq[0] += 1
        assert got is not None
        parse(got.data, ps0, old)

    print(f"codec C extension: {NATIVE_STATUS}; {RUNS} runs; load average {load0:.2f}")
    writes, parses, servers, shares = [], [], [], []
    for run in range(1, RUNS + 1):
        seq[0] = 0
        rx[0] = Netchan(NetchanMode.LEGACY, challenge, 31337)
        t_write = timed(client_packet, 300)
        t_parse = timed(lambda: parse(body, ps0, old), 100)
        t_server = timed(server_message, 100)
        per_second = 60 * t_write + 20 * t_server
        writes.append(t_write * 1e6)
        parses.append(t_parse * 1e6)
        servers.append(t_server * 1e6)
        shares.append(round(per_second * 100, 3))
        print(
            f"  run {run}: client packet {t_write * 1e6:.1f} µs; snapshot parse {t_parse * 1e6:.1f} µs, with the "
            f"netchan unscramble {t_server * 1e6:.1f} µs; codec share {per_second * 100:.3f} % of one core"
        )
    load1 = load_now()
    print(f"over {RUNS} runs (min–max), verdict on the worst; load average {load0:.2f} → {load1:.2f}:")
    print(f"  client packet (2 cmds, 32-bit buttons, legacy XOR): {span(writes)} µs")
    print(
        f"  16-entity snapshot body ({len(body)} bytes) parse: {span(parses)} µs; "
        f"with legacy netchan unscramble: {span(servers)} µs"
    )
    res = report(
        "q3_codec",
        f"codec share of one core, 60 Hz cmds + 20 Hz snapshots (C extension: {NATIVE_STATUS})",
        "<",
        TARGET_MS_PER_S / 10,
        None,
        " %",
        shares,
        (load0, load1),
        note="worst run; each operation the best of its 3 timed rounds in a run",
    )
    print(
        f"  codec CPU per second at 60 Hz cmds + 20 Hz 16-entity snapshots: {span(shares, 3)} % of one core "
        f"(target < {TARGET_MS_PER_S / 10:.1f} %: {'OK' if res['met'] else 'MISSES'})"
    )


if __name__ == "__main__":
    main()
