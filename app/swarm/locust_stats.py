"""Locust's stats read back into a headcast report's "locust" section: from the master's
in-process stats (`from_stats`, at the end of a run), from the stats JSON Locust writes at its
end with `--json-file NAME` (`from_json`), or from the CSV files of `--csv PREFIX` (`from_csv`).
All give the same shape; the HTML report shows it as Locust's own table.

Locust rewrites its CSV once a second while it runs and not again at the end, so the CSV can
miss the last second's events (the final worker reports among them); the JSON is written after
the run and holds them all.

Imports nothing from locust (the stats object is read by its attributes).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path


def _num(v: str) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None   # "N/A" for a percentile of a row without successes
    return x


def from_stats(stats, duration_s: float | None = None) -> dict:
    """`stats` is a locust RequestStats (runner.stats)."""
    rows = []
    for (name, method), e in sorted(stats.entries.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rows.append(_row(method, name, e))
    failures = [{"method": err.method, "name": err.name, "error": str(err.error), "occurrences": err.occurrences}
                for err in stats.errors.values()]
    return {"note": "Locust's stats of the same run (its master's aggregate of every worker).",
            "rows": rows, "total": _row("", "Aggregated", stats.total), "failures": failures}


def _row(method: str, name: str, e) -> dict:
    n = e.num_requests
    pct = (lambda p: float(e.get_response_time_percentile(p)) if n else None)  # noqa: E731
    return {"type": method, "name": name, "requests": n, "failures": e.num_failures,
            "median_ms": pct(0.5), "p95_ms": pct(0.95), "p99_ms": pct(0.99),
            "max_ms": float(e.max_response_time) if n else None,
            "avg_bytes": float(e.avg_content_length) if n else None,
            "total_bytes": int(e.total_content_length), "rps": float(e.total_rps)}


def from_csv(prefix: str | Path) -> dict:
    """Read `PREFIX_stats.csv` and `PREFIX_failures.csv` (Locust's `--csv PREFIX`)."""
    prefix = str(prefix)
    rows, total = [], None
    with open(prefix + "_stats.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            n = int(r["Request Count"])
            avg = _num(r["Average Content Size"])
            row = {"type": r["Type"], "name": r["Name"], "requests": n, "failures": int(r["Failure Count"]),
                   "median_ms": _num(r["50%"]) if n else None, "p95_ms": _num(r["95%"]) if n else None,
                   "p99_ms": _num(r["99%"]) if n else None, "max_ms": _num(r["Max Response Time"]) if n else None,
                   "avg_bytes": avg if n else None, "total_bytes": round(avg * n) if avg is not None else 0,
                   "rps": _num(r["Requests/s"])}
            if r["Name"] == "Aggregated" and not r["Type"]:
                total = row
            else:
                rows.append(row)
    failures = []
    fpath = Path(prefix + "_failures.csv")
    if fpath.exists():
        with open(fpath, newline="", encoding="utf-8") as f:
            failures = [{"method": r["Method"], "name": r["Name"], "error": r["Error"],
                         "occurrences": int(r["Occurrences"])} for r in csv.DictReader(f)]
    return {"note": f"Locust's stats of the run, read from {Path(prefix).name}_stats.csv.",
            "rows": rows, "total": total, "failures": failures}


def locust_percentile(response_times: dict, n: int, percent: float) -> float:
    """Locust's own percentile over its rounded response times (stats.py's
    calculate_response_time_percentile): the largest time with more than (1 - percent) of the
    requests at or above it."""
    want = int(n * percent)
    seen = 0
    for t in sorted(response_times, key=float, reverse=True):
        seen += response_times[t]
        if n - seen <= want:
            return float(t)
    return 0.0


def from_json(path: str | Path) -> dict:
    """Read the stats Locust wrote with `--json-file NAME` (the file NAME.json)."""
    entries = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = []
    for e in sorted(entries, key=lambda e: (e["method"] or "", e["name"])):
        n, times = e["num_requests"], e["response_times"]
        pct = (lambda p: locust_percentile(times, n, p) if n else None)  # noqa: E731
        total = e["total_response_time"]
        rows.append({"type": e["method"], "name": e["name"], "requests": n, "failures": e["num_failures"],
                     "median_ms": pct(0.5), "p95_ms": pct(0.95), "p99_ms": pct(0.99),
                     "max_ms": float(e["max_response_time"]) if n else None,
                     "mean_ms": total / n if n else None,
                     "avg_bytes": e["total_content_length"] / n if n else None,
                     "total_bytes": int(e["total_content_length"]), "rps": None})
    return {"note": f"Locust's stats of the run, read from {Path(path).name}.", "rows": rows,
            "total": None, "failures": []}


def row(section: dict, proto: str, name: str) -> dict | None:
    """The section's row for (protocol, name), None if Locust saw no such event."""
    for r in section["rows"]:
        if r["type"] == proto and r["name"] == name:
            return r
    return None
