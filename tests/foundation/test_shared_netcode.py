"""The pieces netcode/ shares between protocols: the resend schedule (q3/status.py and
sauer/info.py send their queries with it), the counters mapping every core's counters are."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from headcast.netcode.address import AddressError, parse_address
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


def test_one_address_parser_for_every_protocol():
    assert parse_address("h", 27960) == ("h", (27960,))
    assert parse_address("h:1", 27960) == ("h", (1,))
    netsync = ("CONTROL_PORT", "PUB_PORT", "TRANSFORM_PORT")
    assert parse_address("h:6000:7000", 5555, ports=netsync) == ("h", (6000, 7000))
    assert parse_address("[::1]:5", 27960, ipv6=True) == ("::1", (5,))
    assert parse_address("fe80::1", 27960, ipv6=True) == ("fe80::1", (27960,))
    bad = {
        ("", ()): "expected HOST or HOST:PORT",
        ("h:1:2", ()): "expected HOST or HOST:PORT",
        ("h:x", ()): "the port must be a number",
        ("h:", ()): "the port must be a number",
        ("h:²", ()): "the port must be a number",  # a digit to str.isdigit, not to int()
        ("h:0", ()): "the port must be 1..65535",
        ("h:1:2:3:4", netsync): "expected HOST, HOST:CONTROL_PORT, HOST:CONTROL_PORT:PUB_PORT or "
        "HOST:CONTROL_PORT:PUB_PORT:TRANSFORM_PORT",
        ("h:1:x", netsync): "ports must be numbers",
    }
    for (text, names), message in bad.items():
        with pytest.raises(AddressError) as e:
            parse_address(text, 1, ports=names or ("PORT",))
        assert str(e.value) == message, text
    with pytest.raises(AddressError, match=r"^--sauer 'h:65535': the port must be 1..65534 \(info\)$"):
        parse_address("h:65535", 28785, option="--sauer", last_port=65534, note=" (info)")
    with pytest.raises(AddressError, match="expected HOST, HOST:PORT, \\[IPV6\\] or \\[IPV6\\]:PORT"):
        parse_address("[::1]x", 1, ipv6=True)
