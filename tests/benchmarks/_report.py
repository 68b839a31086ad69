"""The benchmarks' common result line, read by scripts/bench.sh for its closing table.

A benchmark prints one line per goal it measures:

    BENCH-RESULT {"bench": "netsync_codec", "goal": "room of 200 decode vs shipped", "op": ">=",
                  "target": 3.0, "value": 3.4, "unit": "x", "runs": [3.4, 3.6], "met": true,
                  "load": [1.2, 1.9], "note": "..."}

- `value` is the figure the verdict is taken on (the worst run's, unless the benchmark says
  otherwise in `note`; left out, `report` takes the worst of `runs` itself); `runs` the per-run
  figures, every one (the table prints their min–max and how many; a single run is flagged);
- `op` is "<", "<=", ">" or ">=": met = value op target (computed here, never by hand);
- `load` is the 1-minute load average at the start and at the end of the measurement.

Standard library only; a benchmark imports it as `from _report import report, load_now, span`
(tests/benchmarks/ is on sys.path when a benchmark runs as a script). A benchmark measures each
goal over several runs, prints the load at its start and end and each figure's min–max
(`span`), and hands every run to `report`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

PREFIX = "BENCH-RESULT "
_OPS = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}


def cli(doc: str | None, prog: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's command line: `--help` prints its docstring (what it measures, its targets, how
    to run it); the benchmark adds its own arguments and calls parse_args()."""
    return argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def load_now() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return 0.0


def met(value: float, op: str, target: float) -> bool:
    return _OPS[op](float(value), float(target))


def worst(runs, op: str) -> float:
    """The run the verdict is taken on: the highest for a "<"/"<=" goal, the lowest for ">"/">="."""
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, not {op!r}")
    return max(runs) if op in ("<", "<=") else min(runs)


def span(runs, digits: int = 1) -> str:
    """ "min–max" of the runs (one run: its figure), `digits` after the point."""
    lo, hi = min(runs), max(runs)
    return f"{lo:.{digits}f}" if lo == hi and len(runs) == 1 else f"{lo:.{digits}f}–{hi:.{digits}f}"


def report(
    bench: str,
    goal: str,
    op: str,
    target: float,
    value: float | None = None,
    unit: str = "",
    runs: list[float] | None = None,
    load: tuple[float, float] | None = None,
    note: str = "",
) -> dict:
    """Print the result line of one goal and return it as a dict. Without `value`, the verdict is
    on the worst of `runs`."""
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, not {op!r}")
    if value is None:
        if not runs:
            raise ValueError("report: a value or the runs")
        value = worst(runs, op)
    now = load_now()
    line = {
        "bench": bench,
        "goal": goal,
        "op": op,
        "target": target,
        "value": value,
        "unit": unit,
        "runs": [value] if not runs else list(runs),
        "met": met(value, op, target),
        "load": list(load) if load else [now, now],
        "note": note,
    }
    print(PREFIX + json.dumps(line, ensure_ascii=False), flush=True)
    return line


def parse(lines) -> list[dict]:
    """The result lines among a benchmark's output lines (malformed ones are skipped)."""
    out = []
    for text in lines:
        if text.startswith(PREFIX):
            try:
                out.append(json.loads(text[len(PREFIX) :]))
            except ValueError:
                continue
    return out


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _runs(r: dict) -> str:
    """ "min–max, N runs"; one run is said to be one (its min–max says nothing of the spread)."""
    runs = r.get("runs") or [r["value"]]
    if len(runs) == 1:
        return f"{_fmt(runs[0])}, 1 run only"
    return f"{_fmt(min(runs))}–{_fmt(max(runs))}, {len(runs)} runs"


def table(results: list[dict], missing: list[str]) -> str:
    """The closing table: goal / measured (min–max over runs) / met, with the load."""
    rows = [("benchmark", "goal", "measured (min–max over runs)", "load", "met")]
    for r in results:
        unit = r.get("unit", "")
        load = r.get("load") or [0, 0]
        rows.append(
            (
                r["bench"],
                f"{r['goal']} {r['op']} {_fmt(r['target'])}{unit}",
                f"{_fmt(r['value'])}{unit} ({_runs(r)})",
                f"{load[0]:.1f}–{load[-1]:.1f}",
                "yes" if r["met"] else "NO",
            )
        )
    for name in missing:
        rows.append((name, "(no result line: the benchmark failed or printed none)", "—", "—", "NO"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# Issue 26's goals, each as the benchmark that measures it and a piece of its result lines' goal
# text: (the issue's wording, bench, text the goal contains, op, target, unit; op None: the
# benchmark's own). The second table holds each benchmark to these: a result line whose op or
# target differs from the issue's counts as not met.
ISSUE_GOALS = [
    ("frame p99, each server mix at 90 Hz", "app_loop", "frame p99", "<", 0.25, " ms"),
    ("motion-to-wire p99", "app_loop", "motion-to-wire p99", "<", 0.25, " ms"),
    ("app loop CPU", "app_loop", "CPU", "<", 2.0, " %"),
    ("XR poll cold (after ~11 ms) vs raw pyopenxr", "xr_poll", "XR poll cold", "<=", 0.05, "x"),
    ("NetSync pose encode+decode vs shipped", "netsync_codec", "client pose", ">=", 3.0, "×"),
    ("NetSync room of 200 decode vs shipped", "netsync_codec", "room of", ">=", 3.0, "×"),
    ("Q3 client thread CPU vs the C floor beside it", "q3_session", "C floor", "<=", 1.5, "×"),
    ("swarm: NetSync players in", "swarm", "netsync:", None, None, ""),
    ("process start → first Q3 datagram", "startup", "first Q3 datagram", "<", 0.4, " s"),
    ("RSS over a run, Q3 + NetSync: flat", "rss", "RSS slope", "<", 0.1, " kB/s"),
]


def issue_table(results: list[dict], ran: list[str]) -> tuple[str, bool]:
    """Issue 26's goals against the result lines (only the benchmarks that ran); whether all are met.
    A goal whose benchmark ran but printed no line for it, or printed it with another target, is not met."""
    rows = [("issue 26 goal", "target", "measured (min–max over runs)", "load", "met")]
    ok = True
    for label, bench, prefix, op, target, unit in ISSUE_GOALS:
        if bench not in ran:
            continue
        found = [r for r in results if r["bench"] == bench and prefix.lower() in r["goal"].lower()]
        if not found:
            rows.append(
                (label, f"{op or ''} {_fmt(target) if target is not None else ''}{unit}", "no result line", "—", "NO")
            )
            ok = False
            continue
        for r in found:
            load = r.get("load") or [0, 0]
            want_op, want = (op, target) if op is not None else (r["op"], r["target"])
            same = r["op"] == want_op and float(r["target"]) == float(want)
            good = bool(r["met"]) and same
            ok = ok and good
            rows.append(
                (
                    r["goal"] if len(found) > 1 else label,
                    f"{want_op} {_fmt(want)}{r.get('unit', unit)}",
                    f"{_fmt(r['value'])}{r.get('unit', '')} ({_runs(r)})",
                    f"{load[0]:.1f}–{load[-1]:.1f}",
                    ("yes" if good else "NO") + ("" if same else f" (bench's target {r['op']} {_fmt(r['target'])})"),
                )
            )
    if len(rows) == 1:
        return "", True
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines), ok


if __name__ == "__main__":
    # python tests/benchmarks/_report.py LOG... : the table of the result lines in the logs, then
    # issue 26's goals among them
    results, missing, ran = [], [], []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8", errors="replace") as f:
            found = parse(f.read().splitlines())
        name = os.path.basename(path).removesuffix(".log")
        ran.append(name)
        if not found:
            missing.append(name)
        results += found
    print(table(results, missing))
    text, issue_ok = issue_table(results, ran)
    if text:
        print("\n" + text)
    sys.exit(0 if results and not missing and issue_ok and all(r["met"] for r in results) else 1)
