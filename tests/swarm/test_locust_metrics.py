"""What each swarm figure becomes in Locust's stats (locust_metrics.py), without Locust: the
request events recorded as Locust's `events.request.fire` would get them."""

from __future__ import annotations

from headcast.app.swarm.locust_metrics import JoinFailed, Kicked, LocustMetrics, LostUpdate


def test_each_figure_is_one_request_event():
    events = []
    m = LocustMetrics(["q3"], 0.0, lambda **kw: events.append(kw), slip_after=0.005)
    m.joined("q3", 0, 0.25, now=0.0)
    m.join_failed("q3", 1, "server is full", now=0.1)
    m.sent("q3", 0, 40, 0.2)
    m.received("q3", 0, 300, 0.2)
    m.broadcast("q3", 0, 0.2)  # the first: no gap yet
    m.broadcast("q3", 0, 0.25)
    m.relay("q3", 0.012, now=0.3)
    m.lost("q3", 2, now=0.3)
    m.tick("q3", 0.001, now=0.3)  # on time: no event
    m.tick("q3", 0.02, now=0.3)
    m.kicked("q3", 0, "Server command overflow", now=0.4)
    m.broadcast("q3", 0, 5.0)  # after the kick: a new life, no gap across it
    got = [
        (
            e["request_type"],
            e["name"],
            round(e["response_time"], 6),
            e["response_length"],
            type(e["exception"]).__name__ if e["exception"] else None,
        )
        for e in events
    ]
    assert got == [
        ("q3", "join", 250.0, 0, None),
        ("q3", "join", 0.0, 0, JoinFailed.__name__),
        ("q3", "send", 0.0, 40, None),
        ("q3", "receive", 0.0, 300, None),
        ("q3", "broadcast", 50.0, 0, None),
        ("q3", "relay", 12.0, 0, None),
        ("q3", "relay", 0.0, 0, LostUpdate.__name__),
        ("q3", "relay", 0.0, 0, LostUpdate.__name__),
        ("q3", "slipped tick (ours)", 20.0, 0, None),  # the generator's lateness: not a failure
        ("q3", "kick", 0.0, 0, Kicked.__name__),
    ]
    assert str(events[-1]["exception"]) == "Server command overflow"
    # ... and the headcast figures are counted as by SwarmMetrics itself.
    r = m.report(6.0)["protocols"]["q3"]
    assert r["relay"] == {"delivered": 1, "lost": 2, "loss_pct": round(200 / 3, 3)}
    assert r["players"]["kicked"] == 1 and r["players"]["join_failed"] == 1 and r["ticks"]["slipped"] == 1
