"""The fuzz campaign from the command line (scripts/fuzz.sh runs it).

    .venv/bin/python tests/fuzz/run.py                  # every target, 20,000 inputs each
    .venv/bin/python tests/fuzz/run.py --inputs 1000000 --jobs 2     # the long run
    .venv/bin/python tests/fuzz/run.py --target sauer_messages --inputs 50000
    .venv/bin/python tests/fuzz/run.py --list

Each target's inputs are split into chunks (different seeds) shared by --jobs worker processes;
progress lines go to stderr every few seconds, a table and build/fuzz/last-run.json at the end.
Every crash is saved as tests/data/fuzz/<target>/crash-<sha1>.bin, a regression input the
suite's corpus replay (tests/fuzz/test_fuzz.py) runs from then on. Exit status 1 if any crashed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import fuzzlib  # noqa: E402

CHUNK = 250_000


def _work(args) -> dict:
    name, n, seed = args

    def progress(rep) -> None:
        print(
            f"fuzz: {name} seed {seed}: {rep.inputs:,} inputs, {rep.rate:,.0f}/s, {len(rep.crashes)} crashes",
            file=sys.stderr,
            flush=True,
        )

    rep = fuzzlib.fuzz(name, n, seed=seed, progress=progress, progress_every=30.0)
    return {"target": name, "inputs": rep.inputs, "seconds": rep.seconds, "crashes": rep.crashes, "seeds": rep.seeds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument("--inputs", type=int, default=20_000, help="mutated inputs per target (default 20000)")
    ap.add_argument("--target", action="append", choices=sorted(fuzzlib.TARGETS), help="only this target (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--seed", type=int, default=0, help="first chunk's seed (a run is reproducible)")
    ap.add_argument("--list", action="store_true", help="list the targets and exit")
    ap.add_argument("--out", default=str(fuzzlib.REPO / "build" / "fuzz" / "last-run.json"))
    args = ap.parse_args(argv)
    if args.list:
        for t in fuzzlib.TARGETS.values():
            print(f"{t.name:16} {t.what} ({len(fuzzlib.corpus(t.name))} seeds)")
        return 0
    names = args.target or list(fuzzlib.TARGETS)
    # Round robin: every target's first chunk, then every second one ...: stopped early (a deadline,
    # Ctrl-C) the run has covered every decoder alike; the slow decoders lead each round.
    slow = {"q3_huffman": 0, "config": 1, "trace": 2, "pk3": 3, "motion": 4}
    chunk = min(CHUNK, max(1, args.inputs // 10))
    rounds = -(-args.inputs // chunk)
    tasks = []
    for k in range(rounds):
        for name in sorted(names, key=lambda n: slow.get(n, 9)):
            n = min(chunk, args.inputs - k * chunk)
            if n > 0:
                tasks.append((name, n, args.seed + k))
    t0 = time.monotonic()
    totals: dict[str, dict] = {n: {"inputs": 0, "seconds": 0.0, "crashes": {}, "seeds": 0} for n in names}
    print(
        f"fuzz: {len(names)} targets, {args.inputs:,} inputs each, {len(tasks)} chunks, {args.jobs} jobs",
        file=sys.stderr,
        flush=True,
    )
    if args.jobs > 1:
        with mp.get_context("fork").Pool(args.jobs, maxtasksperchild=1) as pool:
            results = pool.imap_unordered(_work, tasks)
            for r in results:
                _add(totals, r, t0)
    else:
        for task in tasks:
            _add(totals, _work(task), t0)
    crashed = 0
    print(f"{'target':16} {'inputs':>10} {'per s':>8} {'crashes':>7}")
    for name, tot in totals.items():
        rate = tot["inputs"] / tot["seconds"] if tot["seconds"] else 0
        print(f"{name:16} {tot['inputs']:>10,} {rate:>8,.0f} {len(tot['crashes']):>7}")
        for sig, saved in tot["crashes"].items():
            print(f"    {sig}: {saved}")
        crashed += len(tot["crashes"])
    total = sum(t["inputs"] for t in totals.values())
    wall = time.monotonic() - t0
    print(f"total {total:,} inputs in {wall:,.0f} s wall, {crashed} distinct crashes")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"inputs_per_target": args.inputs, "wall_seconds": round(wall, 1), "total": total, "targets": totals},
            indent=1,
        )
    )
    return 1 if crashed else 0


def _add(totals, r, t0) -> None:
    tot = totals[r["target"]]
    tot["inputs"] += r["inputs"]
    tot["seconds"] += r["seconds"]
    tot["seeds"] = r["seeds"]
    tot["crashes"].update(r["crashes"])
    print(
        f"fuzz: [{time.monotonic() - t0:7.0f} s] {r['target']}: chunk of {r['inputs']:,} done "
        f"({tot['inputs']:,} so far, {len(tot['crashes'])} crashes)",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
