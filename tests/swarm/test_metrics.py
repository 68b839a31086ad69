"""The swarm's stats model: histogram percentiles against numpy on the raw values (hypothesis),
merging, and the per-protocol figures a run of known events must give."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from headcast.app.swarm.metrics import LogHistogram, SecondHistogram, SwarmMetrics

QS = (1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0)
in_range = st.floats(
    min_value=LogHistogram.LO, max_value=LogHistogram.HI * 0.999, allow_nan=False, allow_infinity=False
)
any_latency = st.one_of(
    in_range, st.floats(min_value=-1.0, max_value=LogHistogram.LO), st.floats(min_value=LogHistogram.HI, max_value=1e6)
)


def close(got: float, want: float) -> bool:
    """Within the histogram's stated error: relative above LO, LO absolute below it."""
    if want < LogHistogram.LO or got < LogHistogram.LO:
        return abs(got - want) <= LogHistogram.LO
    return abs(got / want - 1.0) <= LogHistogram.REL_ERROR + 1e-9


@settings(max_examples=300, deadline=None)
@given(st.lists(in_range, min_size=1, max_size=400))
def test_percentiles_within_the_stated_error_of_numpy(values):
    h = LogHistogram()
    for v in values:
        h.add(v)
    want = np.percentile(np.array(values), QS, method="inverted_cdf")
    for q, got, w in zip(QS, h.percentiles(QS), want):
        assert close(got, float(w)), (q, got, float(w))
    assert h.n == len(values)
    assert h.min == min(values) and h.max == max(values)
    assert math.isclose(h.total, math.fsum(values), rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(any_latency, min_size=1, max_size=200))
def test_out_of_range_values_are_counted_and_clamped(values):
    """Early ticks (negative lateness), zero, and values past HI: counted, percentiles stay in
    [min, max], the 100th percentile is the max."""
    h = LogHistogram()
    for v in values:
        h.add(v)
    got = h.percentiles(QS)
    assert all(min(values) <= g <= max(values) for g in got)
    assert got[-1] == max(values)
    assert sum(h.counts) == len(values)
    want = np.percentile(np.array(values), QS, method="inverted_cdf")
    for g, w in zip(got, want):
        if LogHistogram.LO <= w < LogHistogram.HI and g < LogHistogram.HI:
            assert close(g, float(w))


@settings(max_examples=100, deadline=None)
@given(st.lists(in_range, min_size=1, max_size=200), st.lists(in_range, min_size=1, max_size=200))
def test_merged_histograms_are_the_histogram_of_all_values(a, b):
    """What Locust workers' histograms add up to at the master, also through JSON."""
    ha, hb, hall = LogHistogram(), LogHistogram(), LogHistogram()
    for v in a:
        ha.add(v), hall.add(v)
    for v in b:
        hb.add(v), hall.add(v)
    hb = LogHistogram.from_state(json.loads(json.dumps(hb.state())))
    ha.merge(hb)
    assert ha.counts == hall.counts and ha.n == hall.n
    assert ha.percentiles(QS) == hall.percentiles(QS)


def test_empty_histogram_has_no_percentiles():
    h = LogHistogram()
    assert h.percentiles(QS) == [None] * len(QS)
    assert h.summary() == {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=SecondHistogram.LO, max_value=50.0), min_size=1, max_size=100))
def test_second_histogram_within_its_coarse_error(values):
    counts = [0] * SecondHistogram.BINS
    for v in values:
        counts[SecondHistogram.index(v)] += 1
    for q in (50, 99):
        want = float(np.percentile(values, q, method="inverted_cdf"))
        got = SecondHistogram.percentile(counts, q, max(values))
        assert abs(got / want - 1) <= math.sqrt(SecondHistogram.GROWTH) - 1 + 1e-9


def test_a_known_run_gives_its_figures():
    """Two protocols, 10 s: q3 players 0..3 send 60 Hz × 40 B, get 20 Hz snapshots of 200 B;
    player 3 gets none; relays of 10..50 ms; 5 lost; one kick, one failed join, ticks late."""
    t0 = 1000.0
    m = SwarmMetrics(["q3", "netsync"], t0)
    for p in range(4):
        m.joined("q3", p, 0.1 * (p + 1), now=t0)
    m.join_failed("q3", 4, "server is full", now=t0)
    relays = []
    for k in range(600):  # 10 s at 60 Hz
        now = t0 + k / 60.0
        for p in range(4):
            m.sent("q3", p, 40, now)
            m.tick("q3", 0.010 if k == 100 and p == 0 else 0.0001)
        if k % 3 == 0:  # 20 Hz
            for p in range(3):
                m.received("q3", p, 200, now)
                m.broadcast("q3", p, now)
            lat = 0.010 + 0.040 * (k % 7) / 6
            relays.append(lat)
            m.relay("q3", lat)
    m.lost("q3", 5)
    m.kicked("q3", 1, "timed out")
    m.left("q3", 0)
    m.left("q3", 0)  # twice: counted, but the player is gone once
    end = t0 + 10.0
    r = json.loads(json.dumps(m.report(end)))  # JSON-able all the way
    q3 = r["protocols"]["q3"]
    assert q3["players"] == {
        "joined": 4,
        "active": 2,
        "peak_active": 4,
        "left": 2,
        "kicked": 1,
        "kick_reasons": {"timed out": 1},
        "join_failed": 1,
        "join_failed_reasons": {"server is full": 1},
        "silent": 1,
    }
    assert q3["join_ms"]["count"] == 4 and q3["join_ms"]["max"] == 400.0
    assert q3["up"]["bytes"] == 600 * 4 * 40 and q3["up"]["bytes_per_s"] == 600 * 4 * 40 / 10
    assert q3["up"]["per_player_bytes_per_s"]["min"] == 2400.0
    assert q3["down"]["bytes"] == 200 * 3 * 200 and q3["down"]["broadcasts"] == 600
    bc = q3["broadcast_hz"]
    assert bc["players"] == 3 and abs(bc["min"] - 20.0) < 0.01 and abs(bc["max"] - 20.0) < 0.01
    want = np.percentile(relays, (50, 90, 99), method="inverted_cdf") * 1000
    for key, w in zip(("p50", "p90", "p99"), want):
        assert abs(q3["relay_ms"][key] / w - 1) <= LogHistogram.REL_ERROR + 1e-6
    assert q3["relay_ms"]["max"] == 50.0
    assert q3["relay"] == {"delivered": 200, "lost": 5, "loss_pct": round(100 * 5 / 205, 3)}
    assert q3["ticks"]["count"] == 2400 and q3["ticks"]["slipped"] == 1
    s = r["series"]["q3"]
    assert s["t"] == list(range(10))
    assert sum(s["up_Bps"]) == 600 * 4 * 40 and s["up_msgs"][0] == 60 * 4
    assert sum(s["relays"]) == 200 and s["relays"][0] == 20
    assert s["active"][0] == 4 and s["active"][-1] == 2
    assert s["slipped"][1] == 1 and sum(s["slipped"]) == 1
    assert r["protocols"]["netsync"]["relay"]["loss_pct"] is None
    assert r["series"]["netsync"]["t"] == []
    live = m.live(end)["q3"]
    assert live["active"] == 2 and live["up_Bps"] == 60 * 4 * 40
    assert live["loss_pct"] is not None and live["relay_p50_s"] is not None


def test_time_before_the_start_lands_in_the_first_second():
    m = SwarmMetrics(["netsync"], 50.0)
    m.sent("netsync", 0, 10, 49.0)
    m.received("netsync", 2, 30, 49.5)
    r = m.report(51.0)
    assert r["series"]["netsync"]["up_Bps"] == [10]
    assert r["series"]["netsync"]["down_Bps"] == [30]


def _feed(m: SwarmMetrics, players: range, t0: float, kick: bool) -> None:
    for p in players:
        m.joined("netsync", p, 0.02 * (p + 1), now=t0 + 0.1 * p)
    for k in range(50):
        now = t0 + 0.1 * k
        for p in players:
            m.sent("netsync", p, 100 + p, now)
            m.received("netsync", p, 500, now)
            m.broadcast("netsync", p, now)
            m.tick("netsync", 0.001 * (k % 9), now)
        m.relay("netsync", 0.01 + 0.001 * (k % 13), now=now)
    m.lost("netsync", 2, now=t0 + 2.5)
    if kick:
        m.kicked("netsync", players[0], "server silent for 3 s", now=t0 + 3.2)
    m.join_failed("netsync", players[-1] + 1, "no answer", now=t0 + 1.0)


def test_merged_states_give_the_report_of_one_process_seeing_everything():
    """Two Locust workers' states (through JSON, as msgpack carries them) merged at the master:
    the same report as one SwarmMetrics fed every event, when their clocks started together;
    a worker that started 2 s later has its seconds shifted by 2."""
    one = SwarmMetrics(["netsync"], 0.0)
    _feed(one, range(0, 3), 0.0, True)
    _feed(one, range(10, 14), 0.0, False)
    a, b = SwarmMetrics(["netsync"], 0.0), SwarmMetrics(["netsync"], 0.0)
    _feed(a, range(0, 3), 0.0, True)
    _feed(b, range(10, 14), 0.0, False)
    states = [json.loads(json.dumps(x.state(wall_started=1_700_000_000.0))) for x in (a, b)]
    merged = SwarmMetrics.merged(states)
    want, got = one.report(5.0), merged.report(1_700_000_000.0 + 5.0)
    # `one` was fed a's whole run before b's (its peak saw 3 then 6); merged, the peak is the
    # most players in at the end of a second: all 7, before the kick.
    assert got["protocols"]["netsync"]["players"].pop("peak_active") == 7
    want["protocols"]["netsync"]["players"].pop("peak_active")
    for key in ("protocols", "series"):
        assert got[key] == want[key], key
    for name, h in want["histograms"]["netsync"].items():  # the sums add in another order
        g = got["histograms"]["netsync"][name]
        assert math.isclose(g.pop("total"), h.pop("total"), rel_tol=1e-12) and g == h, name
    late = SwarmMetrics(["netsync"], 0.0)
    _feed(late, range(20, 22), 0.0, False)
    states.append(late.state(wall_started=1_700_000_002.0))
    s = SwarmMetrics.merged(states).report(1_700_000_000.0 + 7.0)["series"]["netsync"]
    assert s["up_msgs"][2] == want["series"]["netsync"]["up_msgs"][2] + 10 * 2  # its first second
    assert s["active"][-1] == 6 + 2 and s["t"] == list(range(7))


def test_relay_figures_in_seconds_with_slipped_ticks_are_counted_apart():
    """A slipped tick is the load generator running late: the relays and losses of its second
    are counted apart (suspect), and the report and the summary say so."""
    from headcast.app.swarm.report import stall_text

    m = SwarmMetrics(["q3"], 100.0)
    m.tick("q3", 0.001, 100.2)
    m.relay("q3", 0.030, 100.3)
    m.tick("q3", 0.020, 101.1)  # slipped, in second 1 …
    m.relay("q3", 0.120, 101.2)  # … so this spike is suspect,
    m.lost("q3", 2, 101.5)  # and this loss
    m.relay("q3", 0.030, 102.5)
    t = m.report(103.0)["protocols"]["q3"]["ticks"]
    assert (t["slipped"], t["seconds_with_slips"], t["relayed_in_them"], t["lost_in_them"]) == (1, 1, 1, 2)
    said = stall_text(t)
    assert said.startswith("1 slipped ticks (> 5 ms late): the load generator ran late, not the server")
    assert "suspect (1 relayed, 2 lost in them)" in said
    assert stall_text({**t, "slipped": 0}) == ""
