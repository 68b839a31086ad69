"""Drop counters a peer cannot grow: every protocol's "dropped, and why" (Quake 3, NetSync,
Sauerbraten) keyed by the reason's kind, not its text.

A reason is normalised (every number → N: message types, offsets, counts and client numbers vary,
the kinds of reason are few), cut to MAX_REASON_LEN characters, and once MAX_DROP_REASONS kinds
are counted a new kind is counted as "other". However many distinct bad inputs a server sends,
a counter holds at most MAX_DROP_REASONS keys of at most MAX_REASON_LEN characters.
"""
from __future__ import annotations

import re
from collections import Counter

MAX_DROP_REASONS = 32
MAX_REASON_LEN = 64
MAX_DETAIL_LEN = 200   # a last-drop text kept for display (it may quote the peer's bytes)
OTHER = "other"
_NUMBER = re.compile(r"-?\d+")


def drop_key(reason: str) -> str:
    """The reason's kind: numbers as N, at most MAX_REASON_LEN characters."""
    return _NUMBER.sub("N", reason)[:MAX_REASON_LEN]


def detail(text: str) -> str:
    """A drop's detail text, bounded for keeping (the last one a status line shows)."""
    return text if len(text) <= MAX_DETAIL_LEN else text[:MAX_DETAIL_LEN - 1] + "…"


class DropCounter(Counter):
    """A Counter of drop reasons, normalised and capped (module doc): `drops[reason] += 1` as with
    any Counter, and `dict(drops)` / `drops.items()` read the kinds."""

    limit = MAX_DROP_REASONS

    def _key(self, reason: str) -> str:
        key = drop_key(reason)
        if key != OTHER and not dict.__contains__(self, key) and len(self) >= self.limit - 1:
            return OTHER  # one slot kept for "other": never more than `limit` keys
        return key

    def __getitem__(self, reason: str) -> int:
        return super().__getitem__(self._key(reason))

    def __setitem__(self, reason: str, count: int) -> None:
        super().__setitem__(self._key(reason), count)

    def add(self, reason: str, n: int = 1) -> str:
        """Count `reason`; returns the key it was counted under."""
        key = self._key(reason)
        dict.__setitem__(self, key, dict.get(self, key, 0) + n)
        return key

    def __contains__(self, reason: object) -> bool:
        return isinstance(reason, str) and dict.__contains__(self, drop_key(reason))
