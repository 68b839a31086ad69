"""The swarm's final report: JSON as the metrics gave it, one self-contained well-formed HTML
page with its percentiles and per-second plots, both written atomically."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from headcast.app.swarm import report
from headcast.app.swarm.metrics import SwarmMetrics


def a_run() -> dict:
    """12 s of 8 Q3 players (60 Hz up, 20 Hz snapshots) and 20 NetSync players (10 Hz both ways)
    with relays sampled each broadcast, one loss, a kick and a failed join."""
    m = SwarmMetrics(["q3", "netsync"], 500.0)
    for proto, n, up, down in (("q3", 8, 60, 20), ("netsync", 20, 10, 10)):
        for p in range(n):
            m.joined(proto, p, 0.05 + 0.01 * p, now=500.0)
        for k in range(12 * 60):
            now = 500.0 + k / 60
            if k % (60 // up) == 0:
                for p in range(n):
                    m.sent(proto, p, 40, now)
                    m.tick(proto, 0.0002)
            if k % (60 // down) == 0:
                for p in range(n):
                    m.received(proto, p, 300, now)
                    m.broadcast(proto, p, now)
                m.relay(proto, 0.004 + 0.001 * (k % 11), now=now)
    m.lost("q3", 1, now=503.0)
    m.kicked("q3", 2, "Server command overflow", now=506.0)
    m.join_failed("netsync", 20, "no answer within 5 s", now=501.0)
    r = m.report(512.0)
    r["run"] = {
        "source": "motion tour",
        "servers": {"q3": "127.0.0.1:27960", "netsync": "127.0.0.1:5555"},
        "rates_hz": {"q3": 60.0, "netsync": 10.0},
        "errors": ["q3 player 3: read: OSError"],
    }
    return r


def parse(html: str) -> ET.Element:
    """The page is well-formed XML (every element closed); raises on anything else."""
    return ET.fromstring(html.split("\n", 1)[1] if html.startswith("<!DOCTYPE html>") else html)


def test_report_files_hold_the_run(tmp_path):
    r = a_run()
    written = report.write(r, tmp_path / "run.json", tmp_path / "run.html")
    assert [p.name for p in written] == ["run.json", "run.html"]
    assert json.loads((tmp_path / "run.json").read_text()) == json.loads(json.dumps(r))
    html = (tmp_path / "run.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    root = parse(html)
    assert root.tag == "html"
    # Self-contained: nothing fetched from anywhere, no script.
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert not re.search(r"<(script|link|iframe|img|object|embed)\b|@import|url\(", html, re.I)
    assert "http" not in html
    # Five plots per protocol with data, each an SVG with one path per series drawn.
    svgs = root.findall(".//svg")
    assert len(svgs) == 10
    assert all(s.find("path") is not None for s in svgs)
    text = "".join(root.itertext())
    for proto in ("q3", "netsync"):
        p = r["protocols"][proto]
        assert f"{p['relay_ms']['p50']:.1f} ms" in text  # the card shows the JSON's p50
        assert f"{p['relay_ms']['p99']:.2f}" in text  # the table its p99
    assert "Server command overflow" in text and "no answer within 5 s" in text
    assert "Quake 3 (127.0.0.1:27960), players send at 60 Hz" in text and "motion tour" in text
    assert "q3 player 3: read: OSError" in text
    assert os.stat(tmp_path / "run.html").st_mode & 0o044  # readable by others, like any file we write


def test_an_empty_run_renders(tmp_path):
    r = SwarmMetrics(["sauer"], 0.0).report(0.0)
    report.write(r, html_path=tmp_path / "empty.html")
    root = parse((tmp_path / "empty.html").read_text())
    assert "Sauerbraten" in "".join(root.itertext())
    assert root.findall(".//svg") == []  # no second, no plot


def test_no_data_chart_says_so():
    svg = report.line_chart("relay", [0, 1], [("p50", [None, None], report.BLUE)], "ms")
    assert "no data" in svg and ET.fromstring(svg).tag == "svg"


def test_a_failed_write_leaves_the_last_report_whole(tmp_path, monkeypatch):
    target = tmp_path / "run.json"
    report.write(a_run(), json_path=target)
    before = target.read_text()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        report.write({"kind": "headcast swarm report", "protocols": {}}, json_path=target)
    assert target.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no temporary left


def test_a_report_that_cannot_render_touches_no_file(tmp_path):
    """Both texts are made before either file is written: the JSON is not replaced alone."""
    report.write(a_run(), tmp_path / "run.json")
    before = (tmp_path / "run.json").read_text()
    with pytest.raises(ValueError):
        report.write({"duration_s": float("nan"), "protocols": {}}, tmp_path / "run.json", tmp_path / "run.html")
    assert (tmp_path / "run.json").read_text() == before
    assert not (tmp_path / "run.html").exists()
