"""The pieces netcode/ shares between protocols: the resend schedule (q3/status.py and
sauer/info.py send their queries with it), the counters mapping every core's counters are."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from headcast.netcode.counters import CoreCounters
from headcast.netcode.resend import ResendSchedule


def test_each_request_is_resent_with_a_doubling_wait_until_answered():
    r = ResendSchedule(["info", "status"], first=1.0)
    assert r.get_timer() is None and r.due(100.0) == []  # not started
    r.start(10.0)
    sent = {t: r.due(t) for t in (10.0, 10.5, 11.0, 12.9, 13.0, 17.0)}
    assert sent == {10.0: ["info", "status"], 10.5: [], 11.0: ["info", "status"], 12.9: [], 13.0: ["info", "status"],
                    17.0: ["info", "status"]}  # fmt: skip
    r.answered("status")
    assert r.last_sent("status") == 17.0 and not r.pending("status") and r.pending("info")
    assert r.get_timer() == 25.0 and r.due(25.0) == ["info"]
    r.answered("info")
    assert r.get_timer() is None
    with pytest.raises(ValueError):
        ResendSchedule(["x"], first=0.0)


def test_a_cores_counters_read_as_a_mapping_of_ints():
    @dataclass(eq=False)
    class C(CoreCounters):
        sent: int = 0
        drops: Counter[str] = field(default_factory=Counter)

    c = C()
    c.sent += 3
    c.drops["bad"] += 2
    c.drops["worse"] += 1
    assert dict(c) == {"sent": 3, "drops": 3} and len(c) == 2 and c["sent"] == c.sent
    with pytest.raises(KeyError):
        c["other"]
