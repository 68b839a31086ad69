"""Locust's stats read back into a headcast report's "locust" section: the master's (or a lone
process's) in-process stats at the end of a run — the aggregate of every worker that Locust's
summary, `--json-file` and `--csv` also show (tests/swarm/test_locust.py reads those files
and checks they agree). The HTML report shows the section as Locust's own table.

Imports nothing from locust (the stats object is read by its attributes).
"""

from __future__ import annotations


def from_stats(stats) -> dict:
    """`stats` is a locust RequestStats (runner.stats)."""
    rows = []
    for (name, method), e in sorted(stats.entries.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rows.append(_row(method, name, e))
    failures = [
        {"method": err.method, "name": err.name, "error": str(err.error), "occurrences": err.occurrences}
        for err in stats.errors.values()
    ]
    return {
        "note": "Locust's stats of the same run (its master's aggregate of every worker).",
        "rows": rows,
        "total": _row("", "Aggregated (messages sent)", stats.total),
        "failures": failures,
    }


def _row(method: str, name: str, e) -> dict:
    n = e.num_requests
    pct = lambda p: float(e.get_response_time_percentile(p)) if n else None  # noqa: E731
    return {
        "type": method,
        "name": name,
        "requests": n,
        "failures": e.num_failures,
        "median_ms": pct(0.5),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "max_ms": float(e.max_response_time) if n else None,
        "avg_bytes": float(e.avg_content_length) if n else None,
        "total_bytes": int(e.total_content_length),
        "rps": float(e.total_rps),
    }


def row(section: dict, proto: str, name: str) -> dict | None:
    """The section's row for (protocol, name), None if Locust saw no such event."""
    for r in section["rows"]:
        if r["type"] == proto and r["name"] == name:
            return r
    return None
