"""RSS over a run: `headcast run --mock` joined to a real Quake 3 and a real NetSync server, flat or not.

Real servers on 127.0.0.1 (ioq3ded from Debian's openarena-server, not pure, and the venv's
styly-netsync-server). `headcast run --mock look_around --q3 … --netsync … --no-mirror --duration D`
runs as its own process (after a 3-s run that leaves the bytecode compiled, as an installed package
has it: a first start compiling every module keeps ~45 MB more heap for good); this one reads its
resident set (/proc/PID/status VmRSS, and RssAnon: the heap, not the mapped files) once a second
(all samples kept in LOG_DIR/runN.csv). After a warm-up
(the first fifth of the run, at least 150 s: arenas, caches and the servers' first snapshots
settle — a 2-minute run still rose 60 kB between 30 and 120 s, while the 30-minute run did not
grow by one page from 150 s to 1,793 s) a least-squares line is fitted to the samples; its slope
is the figure (kB/s). Goal (issue 26 item 7): flat — a slope under 0.1 kB/s (360 kB an hour; the
leak found in the last session was 1.4 kB/s). The run is repeated `--runs` times; the verdict is
the worst run's.

`--trace` runs the app under tracemalloc instead: it dumps a snapshot every `--snap` seconds, and
this script diffs the first snapshot after the warm-up against the last (by traceback line, the
biggest growths first) — what grows in Python's own allocations. Tracemalloc's own tables grow RSS,
so a traced run gives no RSS verdict.

Bounded: the default (bash scripts/bench.sh) is one 4-minute run (150 s of warm-up, 90 s measured:
0.1 kB/s would be 9 kB, two pages); `bash scripts/bench.sh --long` (BENCH_LONG=1, or
`--minutes 30`) makes it the 30-minute run of the issue.

    .venv/bin/python tests/benchmarks/bench_rss.py [--minutes 4] [--runs 1] [--trace]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _report

from _report import load_now, report  # noqa: E402

from headcast.netcode.netsync.localserver import LocalNetSyncServer  # noqa: E402
from headcast.netcode.q3.localserver import LocalQ3Server  # noqa: E402

GOAL_KB_S = 0.1
PYCACHE = os.environ.get("PYTHONPYCACHEPREFIX") or str(HERE.parents[1] / "build" / "pycache")
WARM_S = 150.0
ROOT = HERE.parents[1]

# The app under tracemalloc: a daemon thread dumps a snapshot every SNAP seconds into DIR.
TRACED = """
import os, sys, threading, time, tracemalloc
tracemalloc.start(int(os.environ.get("RSS_FRAMES", "8")))
d, every = os.environ["RSS_SNAP_DIR"], float(os.environ["RSS_SNAP_EVERY"])
def dump():
    i = 0
    while True:
        time.sleep(every)
        tracemalloc.take_snapshot().dump(os.path.join(d, "%05d.snap" % i))
        i += 1
threading.Thread(target=dump, daemon=True).start()
from headcast.app.commands.cli import main
sys.exit(main())
"""
PLAIN = "import sys; from headcast.app.commands.cli import main; sys.exit(main())"


def rss_kb(pid: int) -> tuple[int, int] | None:
    """(VmRSS, RssAnon) in kB, or None once the process is gone."""
    vals = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "RssAnon"):
                    vals[key] = int(rest.split()[0])
    except (OSError, ValueError):
        return None
    if "VmRSS" not in vals:
        return None
    return vals["VmRSS"], vals.get("RssAnon", 0)


def slope(ts: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over ts."""
    n = len(ts)
    mt, my = sum(ts) / n, sum(ys) / n
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den if den else 0.0


def one_run(q3: LocalQ3Server, ns: LocalNetSyncServer, seconds: float, trace: bool, snap_every: float, log: Path):
    a = ns.address
    # Bytecode kept (as an installed package has its .pyc): a start that compiles every module leaves
    # ~45 MB more heap behind for good (glibc keeps it), which is not what a user's run holds.
    env = dict(os.environ, PYTHONPYCACHEPREFIX=PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    snap_dir = None
    if trace:
        snap_dir = tempfile.mkdtemp(prefix="headcast-rss-")
        env.update(RSS_SNAP_DIR=snap_dir, RSS_SNAP_EVERY=str(snap_every))
    cmd = [
        sys.executable,
        "-c",
        TRACED if trace else PLAIN,
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--json",
        "--q3",
        "%s:%d" % q3.address,
        "--netsync",
        f"{a.host}:{a.dealer_port}:{a.pub_port}",
        "--duration",
        str(seconds),
    ]
    samples: list[tuple[float, int, int]] = []
    out_path = log.with_suffix(".out")
    with open(log, "w") as err, open(out_path, "w") as out:  # files, not pipes: nobody reads them meanwhile
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env=env)
        t0 = time.monotonic()
        try:
            while proc.poll() is None and time.monotonic() - t0 < seconds + 60:
                r = rss_kb(proc.pid)
                if r is not None:
                    samples.append((time.monotonic() - t0, *r))
                time.sleep(1.0)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if proc.returncode != 0:
        raise SystemExit(f"headcast run exited with {proc.returncode}; its stderr: {log}\n{log.read_text()[-2000:]}")
    summary = out_path.read_text(errors="replace").strip().splitlines()[-1:]
    return samples, snap_dir, summary


def diff_snapshots(snap_dir: str, warm: float, every: float) -> None:
    import tracemalloc

    snaps = sorted(Path(snap_dir).glob("*.snap"))
    first = next((s for i, s in enumerate(snaps) if (i + 1) * every >= warm), None)
    if first is None or first == snaps[-1]:
        print("too few snapshots after the warm-up to diff")
        return
    a, b = tracemalloc.Snapshot.load(str(first)), tracemalloc.Snapshot.load(str(snaps[-1]))
    span = (snaps.index(snaps[-1]) - snaps.index(first)) * every
    total = sum(s.size for s in b.statistics("filename")) - sum(s.size for s in a.statistics("filename"))
    print(f"\ntracemalloc: {first.name} → {snaps[-1].name} ({span:.0f} s): traced memory {total / 1e3:+.1f} kB")
    print("biggest growths by line (size, count):")
    for st in b.compare_to(a, "lineno")[:15]:
        print(f"  {st.size_diff / 1e3:+9.1f} kB  {st.count_diff:+6d}  {st.traceback[0]}")
    print("by traceback, the top three:")
    for st in b.compare_to(a, "traceback")[:3]:
        print(f"  {st.size_diff / 1e3:+9.1f} kB  {st.count_diff:+6d}")
        for fr in st.traceback.format()[-12:]:
            print("      " + fr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    long_run = os.environ.get("BENCH_LONG") == "1"
    ap.add_argument("--minutes", type=float, default=30.0 if long_run else 4.0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--trace", action="store_true", help="tracemalloc snapshots, diffed (no RSS verdict)")
    ap.add_argument("--snap", type=float, default=30.0, help="seconds between tracemalloc snapshots")
    ap.add_argument("--log-dir", default=None, help="where the app's stderr goes (default: a temporary folder)")
    args = ap.parse_args()
    seconds = args.minutes * 60
    warm = max(WARM_S, seconds / 5)
    if seconds < warm + 60:
        ap.error(
            f"--minutes {args.minutes:g}: at least {(WARM_S + 60) / 60:g} ({WARM_S:g} s of warm-up, 60 s measured)"
        )
    logs = Path(args.log_dir or tempfile.mkdtemp(prefix="headcast-rss-log-"))
    logs.mkdir(parents=True, exist_ok=True)
    load0 = load_now()
    slopes, anon_slopes = [], []
    with LocalQ3Server(kind="ioq3", pure=False) as q3, LocalNetSyncServer(None, log_dir=logs) as ns:
        one_run(q3, ns, 3.0, False, args.snap, logs / "warm-up.err")  # compiles and keeps the bytecode first
        for run in range(args.runs):
            samples, snap_dir, summary = one_run(q3, ns, seconds, args.trace, args.snap, logs / f"run{run + 1}.err")
            with open(logs / f"run{run + 1}.csv", "w") as f:
                f.write("t_s,vmrss_kb,rssanon_kb\n" + "".join(f"{t:.2f},{v},{an}\n" for t, v, an in samples))
            kept = [s for s in samples if s[0] >= warm]
            if len(kept) < 10:
                raise SystemExit(f"only {len(kept)} RSS samples after the {warm:.0f}-s warm-up")
            ts = [s[0] for s in kept]
            k = slope(ts, [s[1] for s in kept])
            ka = slope(ts, [s[2] for s in kept])
            slopes.append(round(k, 4))
            anon_slopes.append(round(ka, 4))
            step = max(1, len(samples) // 12)
            print(f"run {run + 1} ({seconds:.0f} s, load {load_now()}): t s / VmRSS kB / RssAnon kB")
            for t, v, an in samples[::step] + samples[-1:]:
                print(f"  {t:7.1f}  {v:7d}  {an:7d}")
            print(
                f"  after {warm:.0f} s: VmRSS {kept[0][1]} → {kept[-1][1]} kB, slope {k:+.4f} kB/s "
                f"({k * 3600 / 1e3:+.2f} MB/h); RssAnon slope {ka:+.4f} kB/s; {len(kept)} samples",
                flush=True,
            )
            if summary:
                print(f"  the run's summary: {summary[0][:300]}")
            if snap_dir:
                diff_snapshots(snap_dir, warm, args.snap)
    if args.trace:
        print("\n(--trace: tracemalloc's own tables grow RSS; no verdict)")
        return
    report(
        "rss",
        f"RSS slope over {args.minutes:g} min, Q3 + NetSync (after {warm:.0f} s)",
        "<",
        GOAL_KB_S,
        max(slopes),
        " kB/s",
        slopes,
        (load0, load_now()),
        f"RssAnon slopes {anon_slopes} kB/s; the worst run's VmRSS slope is the verdict",
    )


if __name__ == "__main__":
    main()
