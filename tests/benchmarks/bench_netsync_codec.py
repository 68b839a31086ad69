"""Encode + decode cost per client-pose body: headcast's codec vs the shipped Python serializer.

Same poses for both (the Unity default: head + both hands + XROrigin Δ, no virtuals; then one
mix with 3 virtuals), whole client-pose messages both ways: build the message from the pose,
parse it back to poses with the physical pose reconstructed. Best of several rounds.
Target: ours at least 2× faster (the issue); the project keeps a margin of 2.5× on top.

    .venv/bin/python tests/benchmarks/bench_netsync_codec.py
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the oracle helpers

from netsync.oracle import oracle_client, random_frame  # noqa: E402
from styly_netsync import binary_serializer as shipped  # noqa: E402

from headcast.netcode.netsync.codec import decode_client_pose, encode_client_pose  # noqa: E402

TARGET = 2.0
MARGIN = 2.5  # the 2× target with room for a noisy, shared machine
POSES = 500
ROUNDS = 25  # short rounds, the two codecs alternating, best of each: the machine is shared


def timed(fn, items) -> float:
    t0 = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - t0) / len(items)


def ours(frame) -> None:
    decode_client_pose(encode_client_pose("3f2a9c1e-bench-device", 42, frame))


def theirs(d) -> None:
    shipped.deserialize(shipped.serialize_client_transform(d))


def main() -> None:
    rng = random.Random(2024)
    worst = float("inf")
    for label, flags, n in (("Unity default 0x1E, 44-byte body", 0x1E, 0), ("0x3E with 3 virtuals, 74-byte body", 0x3E, 3)):
        frames = [random_frame(rng, flags, n) for _ in range(POSES)]
        dicts = [oracle_client("3f2a9c1e-bench-device", 42, f) for f in frames]
        assert all(encode_client_pose("3f2a9c1e-bench-device", 42, f) == shipped.serialize_client_transform(d) for f, d in zip(frames, dicts))
        a = b = float("inf")
        for _ in range(ROUNDS):
            a = min(a, timed(ours, frames))
            b = min(b, timed(theirs, dicts))
        worst = min(worst, b / a)
        print(f"{label}: headcast {a * 1e6:6.2f} µs, shipped {b * 1e6:6.2f} µs per encode+decode → {b / a:.2f}× (same bytes)")
    print(f"speed-up {worst:.2f}× (target ≥ {TARGET:.0f}×: {'MEETS' if worst >= TARGET else 'MISSES'}; "
          f"margin ≥ {MARGIN}×: {'MEETS' if worst >= MARGIN else 'MISSES'})")


if __name__ == "__main__":
    main()
