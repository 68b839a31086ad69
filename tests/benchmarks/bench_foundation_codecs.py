"""Per-frame cost of the foundation codecs (one head pose per frame, plain floats).

Target: everything a frame needs from these modules (Quake angles of head and weapon, VR head
bits, roll, one N_POS record encoded and decoded) well under 1% of a 90 Hz frame (< 100 µs).
Also shows why pose.py uses plain floats: numpy's per-call overhead for one quaternion.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

import numpy as np

from headcast.netcode.pose import q_mul, q_rotate, quake_angles, quat_from_axis_angle, unity_quat, yaw_quat
from headcast.netcode.q3.vrhead import pack_head, roll_short, unpack_head
from headcast.netcode.sauer.npos import decode_npos, encode_npos, make_npos

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/benchmarks: _report
from _report import cli, load_now, report  # noqa: E402

TARGET_US = 100.0
HEAD = q_mul(q_mul(yaw_quat(45), quat_from_axis_angle((1, 0, 0), 30)), quat_from_axis_angle((0, 0, -1), 20))
WEAPON = yaw_quat(10)


def frame() -> None:
    pitch, yaw, roll = quake_angles(HEAD)
    _, wyaw, _ = quake_angles(WEAPON)
    b = pack_head(1, pitch, yaw, wyaw)
    unpack_head(b)
    roll_short(roll)
    unity_quat(HEAD)
    rec = make_npos(0, eye=(512.3, 300.7, 80.2), yaw=yaw, pitch=-pitch, roll=roll, vel=(10.0, 20.0, 0.0))
    decode_npos(encode_npos(rec))


def per_call_us(fn, n: int) -> float:
    return min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6


def main() -> int:
    cli(__doc__).parse_args()
    load0 = load_now()
    n = 2000
    rows = [
        ("quake_angles", per_call_us(lambda: quake_angles(HEAD), n)),
        ("pack_head", per_call_us(lambda: pack_head(1, -30.0, 45.0, 10.0), n)),
        ("roll_short", per_call_us(lambda: roll_short(20.0), n)),
        (
            "make_npos",
            per_call_us(
                lambda: make_npos(0, eye=(512.3, 300.7, 80.2), yaw=45.0, pitch=30.0, roll=20.0, vel=(10.0, 20.0, 0.0)),
                n,
            ),
        ),
        (
            "encode+decode N_POS",
            per_call_us(
                lambda r=make_npos(0, eye=(1.0, 2.0, 20.0), yaw=1.0, pitch=2.0, roll=3.0): decode_npos(encode_npos(r)),
                n,
            ),
        ),
    ]
    qn = np.array(HEAD)
    v = np.array((0.0, 0.0, -1.0))

    def np_rotate() -> None:
        u, w = qn[:3], qn[3]
        t = 2.0 * np.cross(u, v)
        v + w * t + np.cross(u, t)

    rows.append(("q_rotate plain floats", per_call_us(lambda: q_rotate(HEAD, (0.0, 0.0, -1.0)), n)))
    rows.append(("q_rotate numpy", per_call_us(np_rotate, n)))
    total = per_call_us(frame, n)
    for name, us in rows:
        print(f"{name:24s} {us:8.2f} µs")
    print(
        f"{'whole frame':24s} {total:8.2f} µs   target < {TARGET_US:.0f} µs: {'OK' if total < TARGET_US else 'MISSED'}"
    )
    runs = [round(t / n * 1e6, 2) for t in timeit.repeat(frame, number=n, repeat=5)]
    load1 = load_now()
    print(
        f"whole frame over 5 repeats: {min(runs):.2f}–{max(runs):.2f} µs (verdict on the best: the others only "
        f"add this machine's noise); load average {load0:.2f} → {load1:.2f}"
    )
    report(
        "foundation_codecs",
        "a frame's foundation codecs (best of 5 repeats)",
        "<",
        TARGET_US,
        min(runs),
        " µs",
        runs,
        (load0, load1),
        "verdict on the best of 5 repeats of the whole frame (the figure printed above is one more)",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
