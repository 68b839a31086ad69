"""netcode/drops.py: a DropCounter is bounded in keys and never loses a count, whichever way it is
fed (`drops[r] += 1` as the cores do, or `.add`)."""

from headcast.netcode.drops import MAX_DROP_REASONS, OTHER, DropCounter


def _kinds(n: int) -> list[str]:
    # number-free reasons: each one is a kind of its own (no normalisation can merge them)
    return [f"bad message kind {chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(n)]


def test_plus_equals_keeps_every_count_past_the_cap():
    d = DropCounter()
    for r in _kinds(100):
        d[r] += 1
    assert len(d) <= MAX_DROP_REASONS
    assert sum(d.values()) == 100, dict(d)
    assert d[OTHER] == 100 - (MAX_DROP_REASONS - 1)


def test_add_and_plus_equals_agree():
    a, b = DropCounter(), DropCounter()
    reasons = _kinds(60) + [f"offset {i} bad" for i in range(50)] + _kinds(60)
    for r in reasons:
        a.add(r)
        b[r] += 1
    assert dict(a) == dict(b)
    assert sum(a.values()) == len(reasons)


def test_numbered_variants_fold_into_their_kind_without_loss():
    d = DropCounter()
    for i in range(1000):
        d[f"unknown message type {i}"] += 1
    assert sum(d.values()) == 1000 and len(d) <= 5, dict(d)


def test_q3_core_drop_totals_match_its_counter():
    """The Quake 3 core's per-reason drops add up to its total drop count past the cap."""
    from headcast.netcode.q3.client import Q3ClientCore

    core = Q3ClientCore.__new__(Q3ClientCore)
    core._counters = {"drops": 0}
    core._drops = DropCounter()
    for r in _kinds(60):
        core._drop(r)
    assert sum(core._drops.values()) == core._counters["drops"] == 60
