"""NetSync codec speed against each protocol's shipped serializer, interleaved message by message.

For every protocol, the serializer of the release that defines it (tests/netsync/oracle.py:
3 → 0.10.4, 4 → 0.11.0, 5 → 0.12.0, 6 → 0.14.0, 7 → 0.15.0, 8 → 0.17.5, each release's own
binary_serializer.py loaded side by side) and headcast's codec take the same inputs:

- client pose: build the message from the pose, parse it back (physical pose rebuilt), for the
  Unity default (flags 0x1E: head, both hands, XROrigin Δ; 46-byte body, 44 in protocol 3) and
  0x3E with 3 virtuals (76 / 74 bytes);
- room of 200: decode one room broadcast of 200 Unity-default bodies (what the server relays ten
  times a second to every member of a full room).

The bytes are asserted identical before anything is timed. The two codecs alternate item by
item (which goes first alternating too), each call timed on its own (wall clock), so both see
the same moments of a shared machine; a pair the scheduler cut into (the thread's CPU time over
it short of its wall time) is measured again, so the p99 is the codecs' own tail (allocation,
garbage collection, cache misses) rather than the machine's load; per run the ratio of their
medians and of their p99s. A room decode (≥ 0.5 ms) is timed by the thread's CPU time instead.
The inputs are built first and frozen out of the garbage collector's sight (gc.freeze(), as
app/run/loop.py does with the app's start-up heap), so a full collection costs what it would in
the app, not a walk over this benchmark's own thousands of poses. Goal
(issue 26 item 4, issue 22 on Python 3.13): ≥ 3× at every protocol, median and p99, each
run's worst ratio counted; min–max over runs printed. headcast's figures are for the path in
use — the C accelerator when built (netcode/netsync/build_native.py), else the pure-Python
codec — and the pure-Python path is timed beside it (HEADCAST_PURE_PYTHON=1: only it).

    .venv/bin/python tests/benchmarks/bench_netsync_codec.py [--runs 5] [--poses 300] [--rooms 30]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: the oracle helpers
sys.path.insert(0, str(HERE))  # _report

from _report import load_now, report  # noqa: E402
from netsync.oracle import ORACLE_RELEASE, oracle, oracle_client, random_frame  # noqa: E402

from headcast.netcode.netsync import codec  # noqa: E402

GOAL = 3.0
DEVICE = "3f2a9c1e-bench-device"
LAYOUTS = (("0x1E", 0x1E, 0), ("0x3E+3v", 0x3E, 3))
ROOM = 200
RETRIES = 8  # measurements of one pair at most, waiting for one the scheduler did not cut into
SLACK = 2e-6  # wall time a pair may exceed its thread CPU time by and still count as unpreempted
NATIVE = codec.NATIVE


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def interleaved(ours, theirs, items: list) -> tuple[list[float], list[float], int]:
    """Each item through both, alternating which goes first; per-call wall times (s) of pairs the
    thread ran through unpreempted (its CPU time over the pair covers the pair's wall time: a
    pair that was not is measured again, up to RETRIES times), and how many pairs were redone."""
    clock, cpu = time.perf_counter, time.thread_time
    a, b, redone = [], [], 0
    for i, (x, y) in enumerate(items):
        for _ in range(RETRIES):
            c0 = cpu()
            if i % 2:
                t0 = clock()
                theirs(y)
                t1 = clock()
                ours(x)
                t2 = clock()  # noqa: E702
                ta, tb = t2 - t1, t1 - t0
            else:
                t0 = clock()
                ours(x)
                t1 = clock()
                theirs(y)
                t2 = clock()  # noqa: E702
                ta, tb = t1 - t0, t2 - t1
            c1 = cpu()
            if t2 - t0 <= c1 - c0 + SLACK:
                break
            redone += 1
        a.append(ta)
        b.append(tb)
    return a, b, redone


def interleaved_cpu(ours, theirs, items: list) -> tuple[list[float], list[float], int]:
    """Rooms: each call long enough (≥ 0.5 ms) to time by the thread's own CPU time (a few µs
    per reading), which leaves out the time the scheduler gave others; alternating as above."""
    cpu = time.thread_time
    a, b = [], []
    for i, (x, y) in enumerate(items):
        if i % 2:
            t0 = cpu()
            theirs(y)
            t1 = cpu()
            ours(x)
            t2 = cpu()  # noqa: E702
            a.append(t2 - t1)
            b.append(t1 - t0)  # noqa: E702
        else:
            t0 = cpu()
            ours(x)
            t1 = cpu()
            theirs(y)
            t2 = cpu()  # noqa: E702
            a.append(t1 - t0)
            b.append(t2 - t1)  # noqa: E702
    return a, b, 0


def pure_times(fn, items: list) -> list[float]:
    saved, codec.NATIVE = codec.NATIVE, None
    try:
        clock = time.perf_counter
        out = []
        for x, _ in items:
            t0 = clock()
            fn(x)
            out.append(clock() - t0)  # noqa: E702
        return out
    finally:
        codec.NATIVE = saved


def client_case(protocol: int, flags: int, n: int, poses: int, rng: random.Random):
    shipped = oracle(protocol)
    frames = [random_frame(rng, flags, n) for _ in range(poses)]
    dicts = [oracle_client(DEVICE, 42, f) for f in frames]
    msgs = [codec.encode_client_pose(DEVICE, 42, f, protocol) for f in frames]
    assert all(m == shipped.serialize_client_transform(d) for m, d in zip(msgs, dicts)), (
        f"protocol {protocol}, flags 0x{flags:02X}: bytes differ from {ORACLE_RELEASE[protocol]}'s serializer"
    )
    assert all(shipped.deserialize(m)[1] is not None for m in msgs)

    def ours(f) -> None:
        codec.decode_client_pose(codec.encode_client_pose(DEVICE, 42, f, protocol), protocol)

    def theirs(d) -> None:
        shipped.deserialize(shipped.serialize_client_transform(d))

    return ours, theirs, list(zip(frames, dicts)), len(msgs[0]) - 3 - len(DEVICE)


def room_case(protocol: int, rooms: int, rng: random.Random):
    shipped = oracle(protocol)
    items = []
    for _ in range(rooms):
        frames = [random_frame(rng, 0x1E, 0) for _ in range(ROOM)]
        entries = [(i + 1, 1000.0 + i, codec.encode_body(i, f, protocol)) for i, f in enumerate(frames)]
        msg = codec.encode_room_pose("bench-room", 1234.5, entries, protocol)
        theirs_msg = shipped.serialize_room_transform(
            {
                "roomId": "bench-room",
                "broadcastTime": 1234.5,
                "clients": [
                    {
                        **{k: v for k, v in oracle_client("", i, f).items() if k != "deviceId"},
                        "clientNo": i + 1,
                        "poseTime": 1000.0 + i,
                    }
                    for i, f in enumerate(frames)
                ],
            }
        )
        assert msg == theirs_msg, f"protocol {protocol}: room bytes differ from {ORACLE_RELEASE[protocol]}'s"
        assert len(shipped.deserialize(msg)[1]["clients"]) == ROOM
        items.append((msg, msg))

    def ours(m) -> None:
        codec.decode_room_pose(m, protocol)

    def theirs(m) -> None:
        shipped.deserialize(m)

    return ours, theirs, items, len(items[0][0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs (each: every protocol and case once)")
    ap.add_argument("--poses", type=int, default=300, help="client poses per case and run")
    ap.add_argument("--rooms", type=int, default=30, help="rooms of 200 per protocol and run")
    args = ap.parse_args()
    load0 = load_now()
    rng = random.Random(2024)
    path = "C accelerator" if NATIVE is not None else f"pure Python ({codec.NATIVE_STATUS})"
    print(
        f"Python {sys.version.split()[0]}; headcast's codec: {path}; {args.runs} runs, "
        f"{args.poses} poses / {args.rooms} rooms of {ROOM} per case; load {load0}"
    )
    cases = []
    for protocol in sorted(ORACLE_RELEASE):
        for label, flags, n in LAYOUTS:
            cases.append((protocol, label, "client", client_case(protocol, flags, n, args.poses, rng)))
        cases.append((protocol, f"room {ROOM}", "room", room_case(protocol, args.rooms, rng)))
    # As the app's loop does (app/run/loop.py): what was built before the measuring starts is frozen
    # out of the collector's sight, so a full collection walks only what the codecs make.
    gc.collect()
    gc.freeze()
    ratios: dict[tuple, list[tuple[float, float]]] = {(p, label): [] for p, label, _, _ in cases}
    last: dict[tuple, tuple] = {}
    redone = pairs = 0
    for _ in range(args.runs):
        for protocol, label, kind, (ours, theirs, items, size) in cases:
            a, b, r = (interleaved_cpu if kind == "room" else interleaved)(ours, theirs, items)
            redone += r
            pairs += len(items)
            ratios[(protocol, label)].append((pct(b, 50) / pct(a, 50), pct(b, 99) / pct(a, 99)))
            last[(protocol, label)] = (a, b, size)
    print(
        f"\n{'protocol':>8}  {'release':>7}  {'case':>9}  {'size':>6}  {'headcast p50/p99':>18}  "
        f"{'pure Py p50':>11}  {'shipped p50/p99':>19}  {'× median (min–max)':>19}  {'× p99 (min–max)':>16}"
    )
    worst = {"client": [float("inf"), float("inf")], "room": [float("inf"), float("inf")]}
    per_run = {
        "client": [[float("inf")] * args.runs, [float("inf")] * args.runs],
        "room": [[float("inf")] * args.runs, [float("inf")] * args.runs],
    }
    for protocol, label, kind, (ours, theirs, items, size) in cases:
        a, b, size = last[(protocol, label)]
        pure = pure_times(ours, items[: max(20, len(items) // 3)]) if NATIVE is not None else a
        rs = ratios[(protocol, label)]
        med, p99 = [r[0] for r in rs], [r[1] for r in rs]
        for i, (m, p) in enumerate(rs):
            per_run[kind][0][i] = min(per_run[kind][0][i], m)
            per_run[kind][1][i] = min(per_run[kind][1][i], p)
        unit, scale = ("ms", 1e3) if kind == "room" else ("µs", 1e6)
        print(
            f"{protocol:8d}  {ORACLE_RELEASE[protocol]:>7}  {label:>9}  {size:5d}B  "
            f"{pct(a, 50) * scale:7.2f}/{pct(a, 99) * scale:7.2f} {unit}  {pct(pure, 50) * scale:8.2f} {unit}  "
            f"{pct(b, 50) * scale:7.2f}/{pct(b, 99) * scale:8.2f} {unit}  "
            f"{min(med):6.2f}× ({min(med):.2f}–{max(med):.2f})  {min(p99):6.2f}× ({min(p99):.2f}–{max(p99):.2f})",
            flush=True,
        )
        worst[kind][0] = min(worst[kind][0], min(med))
        worst[kind][1] = min(worst[kind][1], min(p99))
    load1 = load_now()
    print(
        f"\n{pairs} pairs timed, {redone} measurements redone after the scheduler cut into them; load {load0} → {load1}"
    )
    note = f"Python {sys.version.split()[0]}, {path}; worst over protocols 3–8 per run; unpreempted pairs"
    for kind, what in (
        ("client", "client pose enc+dec (0x1E, 0x3E+3v) vs shipped"),
        ("room", f"room of {ROOM} decode vs shipped"),
    ):
        for i, stat in enumerate(("median", "p99")):
            report(
                "netsync_codec",
                f"{what}, {stat}",
                ">=",
                GOAL,
                round(worst[kind][i], 2),
                "×",
                [round(x, 2) for x in per_run[kind][i]],
                (load0, load1),
                note,
            )


if __name__ == "__main__":
    main()
