"""A swarm run's final report: the JSON `SwarmMetrics.report()` gives, and one self-contained
HTML page of it — tables of percentiles per protocol and per-second plots drawn here as inline
SVG (no script, no stylesheet or font from elsewhere: the page opens offline, attached to a bug
report or mailed). Both files are written atomically: a temporary file beside the target, then
a rename, so a crash or a full disk never leaves half a report where the last good one was.

The page is also well-formed XML (every element closed, no named entities), which is how the
tests check it.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from html import escape
from pathlib import Path

# Colours that stay apart for common colour-vision deficiencies (Okabe–Ito).
BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY, GREY = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#777777",
)

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:1180px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 6px}.sub{color:#666;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 10px}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}
th{background:#f4f4f4;font-weight:600}td:first-child,th:first-child{text-align:left}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:5px 10px;min-width:80px}
.card b{display:block;font-size:20px}.card span{color:#666;font-size:11px}
.bad b{color:#D55E00}.plots{display:flex;flex-wrap:wrap;gap:8px}svg{background:#fff;border:1px solid #e4e4e4}
.note{color:#666;font-size:12px}.verdict{border:2px solid #ccc;border-radius:6px;padding:8px 12px}
.verdict.bad{border-color:#D55E00;color:#D55E00}
"""


# --- writing -----------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path | str, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # Windows (before 3.13) has none, and no mode bits to hide the file
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would hide the report from other users
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write(report: dict, json_path: Path | str | None = None, html_path: Path | str | None = None) -> list[Path]:
    """Write the report as JSON and/or HTML; both are rendered before either file is touched."""
    out: list[tuple[Path, str]] = []
    if json_path is not None:
        out.append((Path(json_path), json.dumps(report, indent=1, allow_nan=False) + "\n"))
    if html_path is not None:
        out.append((Path(html_path), render_html(report)))
    return [atomic_write(p, text) for p, text in out]


# --- numbers ------------------------------------------------------------------------------------


def _fmt(v, digits: int = 1, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, float):
        if abs(v) >= 1e6:
            return f"{v / 1e6:.{digits}f} M{unit}"
        if abs(v) >= 1e4:
            return f"{v / 1e3:.{digits}f} k{unit}"
        return f"{v:.{digits}f}{(' ' + unit) if unit else ''}"
    return f"{v}{(' ' + unit) if unit else ''}"


def _nice_step(span: float, target: int) -> float:
    raw = span / max(1, target)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _tick_label(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:.3g}"


# --- SVG ----------------------------------------------------------------------------------------


def line_chart(
    title: str,
    t: list[float],
    lines: list[tuple[str, list, str]],
    unit: str = "",
    width: int = 460,
    height: int = 200,
    step: bool = False,
) -> str:
    """An SVG line chart of several series over the same t (seconds); None values leave gaps.
    `step` draws each value as a flat step over its second (counts per second)."""
    left, right, top, bottom = 54, 12, 26, 34
    pw, ph = width - left - right, height - top - bottom
    values = [v for _, ys, _ in lines for v in ys if v is not None and math.isfinite(v)]
    svg = [
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" font-size="13" font-weight="600">{escape(title)}'
        f"{escape(f' ({unit})') if unit else ''}</text>",
    ]
    if not t or not values:
        svg.append(
            f'<text x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle" fill="{GREY}">no data</text></svg>'
        )
        return "".join(svg)
    t0, t1 = min(t), max(t) + (1 if step else 0)
    if t1 <= t0:
        t1 = t0 + 1
    lo, hi = min(0.0, min(values)), max(values)
    if hi <= lo:
        hi = lo + 1
    ystep = _nice_step(hi - lo, 4)
    hi = math.ceil(hi / ystep - 1e-9) * ystep
    x = lambda v: left + (v - t0) / (t1 - t0) * pw  # noqa: E731
    y = lambda v: top + ph - (v - lo) / (hi - lo) * ph  # noqa: E731
    k = 0
    while lo + k * ystep <= hi + 1e-9 * ystep:  # y grid and labels
        v = lo + k * ystep
        svg.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e8e8e8"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end" fill="#555">'
            f"{_tick_label(v)}</text>"
        )
        k += 1
    xstep = _nice_step(t1 - t0, 6)
    v = math.ceil(t0 / xstep) * xstep
    while v <= t1 + 1e-9:
        svg.append(
            f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#555"/>'
            f'<text x="{x(v):.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle" fill="#555">'
            f"{_tick_label(v)}</text>"
        )
        v += xstep
    svg.append(
        f'<text x="{left + pw}" y="{height - 4}" font-size="11" text-anchor="end" fill="#555">s since start</text>'
    )
    svg.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#bbb"/>')
    lx = left + 8
    for label, ys, colour in lines:
        d, pen = [], "M"
        for ti, v in zip(t, ys):
            if v is None or not math.isfinite(v):
                pen = "M"
                continue
            if step:
                d.append(f"{pen}{x(ti):.1f},{y(v):.1f}H{x(ti + 1):.1f}")
            else:
                d.append(f"{pen}{x(ti):.1f},{y(v):.1f}")
            pen = "L"
        if d:
            svg.append(f'<path d="{" ".join(d)}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        svg.append(
            f'<rect x="{lx}" y="{top + 5}" width="10" height="3" fill="{colour}"/>'
            f'<text x="{lx + 14}" y="{top + 11}" font-size="11" fill="#333">{escape(label)}</text>'
        )
        lx += 30 + 7 * len(label)
    svg.append("</svg>")
    return "".join(svg)


# --- HTML ---------------------------------------------------------------------------------------


def _table(head: list[str], rows: list[list]) -> str:
    h = "".join(f"<th>{escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _card(value: str, label: str, bad: bool = False) -> str:
    return f'<div class="card{" bad" if bad else ""}"><b>{escape(value)}</b><span>{escape(label)}</span></div>'


def _dist_row(name: str, d: dict, keys: list[str], digits: int = 1) -> list:
    return [name] + [_fmt(d.get(k), digits) if isinstance(d.get(k), float) else _fmt(d.get(k)) for k in keys]


def _per_player(series: dict, key: str) -> list:
    return [None if not a else v / a for v, a in zip(series.get(key, []), series.get("active", []))]


def protocol_section(proto: str, p: dict, s: dict | None, processes: int = 1, server: str = "") -> str:
    pl, relay, bc = p["players"], p["relay"], p["broadcast_hz"]
    view = p.get("server_view") or {"relay_ms": p["relay_ms"], "relay": relay, "seconds": None}
    loss = view["relay"].get("loss_pct")
    gen = p.get("generator") or {}
    out = [f"<h2>{escape(proto)}</h2>"]
    if server:
        out.append(f'<p class="sub">Server: {escape(server)}</p>')
    verdict = generator_text(p, processes)
    if verdict:
        out.append(f'<p class="verdict{" bad" if gen.get("bottleneck") else ""}"><b>{escape(verdict)}</b></p>')
    out += [
        '<h3>The server</h3><div class="cards">',
        _card(f"{pl['peak_active']}", "players at peak"),
        _card(_fmt(view["relay_ms"]["p50"], 1, "ms"), "relay latency p50"),
        _card(_fmt(view["relay_ms"]["p99"], 1, "ms"), "relay latency p99"),
        _card("–" if loss is None else f"{loss:.2f} %", "relayed updates lost", bool(loss)),
        _card(_fmt(bc.get("min"), 1, "Hz"), "broadcasts/s, worst player", False),
        _card(f"{pl['kicked']}", "kicked", bool(pl["kicked"])),
        _card(f"{pl['join_failed']}", "failed joins", bool(pl["join_failed"])),
        "</div>",
    ]
    if view.get("seconds") is not None and view["seconds"] < view.get("of_seconds", 0):
        out.append(
            f'<p class="note">Relay latency and loss over the {view["seconds"]} of {view["of_seconds"]} s '
            "in which none of our own ticks slipped; the other seconds are under “The load generator”.</p>"
        )
    out += [
        '<h3>The load generator (ours, not the server)</h3><div class="cards">',
        _card(
            f"{p['ticks']['slipped']}",
            f"slipped ticks (> {p['ticks']['slip_after_ms']:g} ms late)",
            bool(p["ticks"]["slipped"]),
        ),
        _card("–" if not gen else f"{gen['slipped_pct']:.2f} %", "of its ticks slipped", bool(gen.get("bottleneck"))),
        _card(_fmt(p["ticks"]["late_ms"]["p99"], 1, "ms"), "tick lateness p99"),
        _card(f"{p['ticks'].get('seconds_with_slips', 0)}", "seconds with slipped ticks"),
        _card(_fmt(_suspect_p99(p), 1, "ms"), "relay p99 in those seconds (ours)"),
        _card(f"{p['ticks'].get('lost_in_them', 0)}", "lost in those seconds (ours)"),
        "</div>",
    ]
    if s and s.get("t"):
        t = s["t"]
        out.append('<h3>Per second</h3><div class="plots">')
        out.append(line_chart("players in", t, [("active", s["active"], BLUE)], step=True))
        out.append(
            line_chart(
                "relay latency",
                t,
                [
                    ("p50", s["relay_p50_ms"], BLUE),
                    ("p99", s["relay_p99_ms"], ORANGE),
                    ("max", s["relay_max_ms"], GREY),
                ],
                "ms",
            )
        )
        out.append(
            line_chart(
                "bytes per second", t, [("up", s["up_Bps"], GREEN), ("down", s["down_Bps"], PURPLE)], "B/s", step=True
            )
        )
        out.append(
            line_chart(
                "broadcasts per second per player", t, [("mean", _per_player(s, "broadcasts"), SKY)], "Hz", step=True
            )
        )
        out.append(
            line_chart(
                "lost updates, slipped ticks, kicks",
                t,
                [("lost", s["lost"], VERMILION), ("slipped", s["slipped"], ORANGE), ("kicks", s["kicks"], PURPLE)],
                step=True,
            )
        )
        out.append("</div>")
    q = ["count", "mean", "p50", "p90", "p99", "max"]
    out.append(
        "<h3>Latency (ms)</h3>"
        + _table(
            ["", *q],
            [
                _dist_row("relay: our send → observer receives it relayed", p["relay_ms"], q, 2),
                _dist_row("join: connect → in the game / room", p["join_ms"], q, 1),
                _dist_row("tick lateness", p["ticks"]["late_ms"], q, 3),
            ],
        )
    )
    d = ["players", "min", "p10", "p50", "p90", "max", "mean"]
    out.append(
        "<h3>Per player (distribution over players)</h3>"
        + _table(
            ["", *d],
            [
                _dist_row("broadcasts received per second (its first to its last)", bc, d, 2),
                _dist_row("bytes/s sent (up), over the whole run", p["up"]["per_player_bytes_per_s"], d, 0),
                _dist_row("bytes/s received (down), over the whole run", p["down"]["per_player_bytes_per_s"], d, 0),
            ],
        )
    )
    out.append(
        "<h3>Totals</h3>"
        + _table(
            ["", "messages", "bytes", "bytes/s"],
            [
                ["up (players → server)", p["up"]["messages"], p["up"]["bytes"], _fmt(p["up"]["bytes_per_s"], 0)],
                [
                    "down (server → players)",
                    p["down"]["messages"],
                    p["down"]["bytes"],
                    _fmt(p["down"]["bytes_per_s"], 0),
                ],
            ],
        )
    )
    never = pl.get("never_in", 0)
    if never:
        out.append(f'<p class="note bad"><b>{escape(never_text(pl))}</b></p>')
    out.append(
        _table(
            [
                "",
                "joined",
                "left",
                "kicked",
                "failed joins",
                "never got in",
                "relayed updates",
                "lost",
                "players with no broadcast",
            ],
            [
                [
                    "players",
                    pl["joined"],
                    pl["left"],
                    pl["kicked"],
                    pl["join_failed"],
                    _fmt(pl.get("never_in")),
                    relay["delivered"],
                    relay["lost"],
                    pl.get("silent", 0),
                ]
            ],
        )
    )
    reasons = [["kick", r, n] for r, n in pl["kick_reasons"].items()] + [
        ["join failed", r, n] for r, n in pl["join_failed_reasons"].items()
    ]
    if reasons:
        out.append("<h3>Kicks and failed joins</h3>" + _table(["", "reason", "players"], reasons))
    return "".join(out)


# What to do about a refusal, where it is known.
HINTS = {"Server is full.": "raise sv_maxclients; ioq3/OpenArena default 8"}


def never_text(players: dict) -> str:
    """ "12 of 20 players never got in: Server is full. (raise sv_maxclients; …)", or ""."""
    never = players.get("never_in") or 0
    if not never:
        return ""
    reasons = players.get("join_failed_reasons") or {}
    why = max(reasons, key=lambda r: reasons[r]) if reasons else "no answer"
    why = why.removeprefix("server refused: ")  # the server's own words
    hint = HINTS.get(why.strip())
    return f"{never} of {players.get('started', '?')} players never got in: {why}" + (f" ({hint})" if hint else "")


def _suspect_p99(p: dict) -> float | None:
    """The relay p99 of the seconds in which our own ticks slipped (None: no relay in them)."""
    return ((p.get("generator") or {}).get("relay_ms_in_those_seconds") or {}).get("p99")


def server_text(proto: str, p: dict, address: str | None) -> str:
    """ "127.0.0.1:5555, styly-netsync-server 0.17.5, protocol 8" — the server a report measured."""
    info = p.get("server") or {}
    parts = [address] if address else []
    if info.get("software"):
        parts.append(str(info["software"]))
    if info.get("protocol") not in (None, ""):
        parts.append(f"protocol {info['protocol']}")
    if info.get("name"):
        parts.append(f"“{info['name']}”")
    if not info:
        parts.append("version not known (no player got in)")
    return ", ".join(parts)


def generator_text(p: dict, processes: int = 1) -> str:
    """The load generator's verdict when it was the bottleneck (more than 1 % of its ticks
    slipped), with what to do; "" otherwise."""
    gen = p.get("generator") or {}
    if not gen.get("bottleneck"):
        return ""
    players = p["players"].get("started") or p["players"]["peak_active"]
    per = f"{players / processes:.0f} players per process" if processes > 1 else f"{players} players in one process"
    more = f"--locust {processes * 2}" if processes > 1 else "--locust N (N worker processes)"
    return (
        f"The load generator was the bottleneck, not the server: {gen['slipped']} of {gen['ticks']} of our ticks "
        f"slipped ({gen['slipped_pct']:.1f} %, p99 {_fmt(gen.get('late_p99_ms'), 1, 'ms')} late) in "
        f"{gen['seconds_with_slips']} s. Relay figures of those seconds are ours and left out of the server's. "
        f"Run fewer players per process ({per} here): fewer players, or spread them with {more} "
        "or Locust workers on more machines."
    )


def stall_text(ticks: dict) -> str:
    """What slipped ticks mean for the figures, or "" when there were none."""
    if not ticks.get("slipped"):
        return ""
    text = (
        f"{ticks['slipped']} slipped ticks (> {ticks['slip_after_ms']:g} ms late): the load generator "
        "ran late, not the server"
    )
    if ticks.get("seconds_with_slips"):
        text += (
            f"; relay figures in those {ticks['seconds_with_slips']} s are suspect "
            f"({ticks['relayed_in_them']} relayed, {ticks['lost_in_them']} lost in them)"
        )
    return text


def locust_section(loc: dict) -> str:
    """Locust's own view of the same run (its stats CSV, read back by `locust_stats.py`)."""
    out = ["<h2>Locust</h2>", f'<p class="sub">{escape(loc.get("note", ""))}</p>']
    rows = [
        [
            r["type"],
            r["name"],
            r["requests"],
            r["failures"],
            _fmt(r.get("median_ms")),
            _fmt(r.get("p95_ms")),
            _fmt(r.get("p99_ms")),
            _fmt(r.get("max_ms")),
            _fmt(r.get("avg_bytes"), 0),
            _fmt(r.get("rps"), 1),
        ]
        for r in loc.get("rows", [])
    ]
    out.append(
        _table(
            ["type", "name", "requests", "failures", "median ms", "p95 ms", "p99 ms", "max ms", "avg bytes", "req/s"],
            rows,
        )
    )
    fails = [[f["method"], f["name"], f["error"], f["occurrences"]] for f in loc.get("failures", [])]
    if fails:
        out.append("<h3>Failures</h3>" + _table(["type", "name", "error", "occurrences"], fails))
    return "".join(out)


NAMES = {"q3": "Quake 3", "netsync": "NetSync", "sauer": "Sauerbraten"}


def render_html(report: dict) -> str:
    title = report.get("title") or "headcast swarm report"
    protos = report.get("protocols", {})
    run = report.get("run") or {}
    servers = run.get("servers", {})
    what = [f"{NAMES.get(p, p)} {servers[p]}" if p in servers else NAMES.get(p, p) for p in protos]
    source = str(report.get("source", ""))
    generator = "the swarm's own loop" if source == "headcast" else source
    started = f"started {report['started_utc']}; " if report.get("started_utc") else ""
    seed = f"; seed {run['seed']} (--seed {run['seed']} repeats the variation)" if run.get("seed") is not None else ""
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(report.get("subtitle", ""))} {escape(started)}'
        f"{_fmt(report.get('duration_s'), 1)} s run; "
        f"{escape(', '.join(what) or 'no protocol')}; players run by {escape(generator)}"
        f"{escape(', ' + str(run['source'])) if run.get('source') else ''}{escape(seed)}</p>",
        '<p class="note">Relay latency: a player\'s send until a sampled observer player receives it relayed '
        "by the server. Lost: relayed updates the observer should have seen and never did. Percentiles are "
        "within 1 % of the exact values (fixed log bins); per-second plot percentiles within 12 %.</p>",
    ]
    if run.get("errors"):
        body.append(
            "<h3>Players closed for an error</h3>"
            + _table(["", "error"], [[i + 1, e] for i, e in enumerate(run["errors"])])
        )
    processes = int(report.get("processes") or 1)
    for proto, p in protos.items():
        title = NAMES.get(proto, proto) + (f" ({servers[proto]})" if proto in servers else "")
        rate = run.get("rates_hz", {}).get(proto)
        body.append(
            protocol_section(
                title + (f", players send at {rate:g} Hz" if rate else ""),
                p,
                report.get("series", {}).get(proto),
                processes,
                server_text(proto, p, servers.get(proto)),
            )
        )
    if report.get("locust"):
        body.append(locust_section(report["locust"]))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"/>'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>" + "".join(body) + "</body></html>\n"
    )
