"""Drop counters a peer cannot grow: every protocol's "dropped, and why" (Quake 3, NetSync,
Sauerbraten), bounded however many distinct bad inputs a server sends.

A reason is kept as written (cut to MAX_REASON_LEN characters) while its kind has few variants:
"room pose: protocol 8" says which protocol. A kind is the reason with every number as N (message
types, offsets, counts, client numbers vary; the kinds of reason are few): past VERBATIM_PER_KIND
variants a kind is counted under its normalised text, and once MAX_DROP_REASONS keys exist a new
one is counted as "other". A counter thus holds at most MAX_DROP_REASONS keys of at most
MAX_REASON_LEN characters.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

MAX_DROP_REASONS = 32
MAX_REASON_LEN = 64
MAX_DETAIL_LEN = 200  # a last-drop text kept for display (it may quote the peer's bytes)
OTHER = "other"
VERBATIM_PER_KIND = 4  # reasons of one kind kept as written (e.g. the protocols a broadcast named)
_NUMBER = re.compile(r"-?\d+")


def drop_key(reason: str) -> str:
    """The reason's kind: numbers as N, at most MAX_REASON_LEN characters."""
    return _NUMBER.sub("N", reason)[:MAX_REASON_LEN]


def detail(text: str) -> str:
    """A drop's detail text, bounded for keeping (the last one a status line shows)."""
    return text if len(text) <= MAX_DETAIL_LEN else text[: MAX_DETAIL_LEN - 1] + "…"


class DropCounter(Counter[str]):
    """A Counter of drop reasons, bounded (module doc): `drops[reason] += 1` as with any Counter,
    and `dict(drops)` / `drops.items()` read the keys."""

    limit = MAX_DROP_REASONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._variants: dict[str, int] = {}  # kind -> reasons of that kind kept as written
        super().__init__(*args, **kwargs)

    def _key(self, reason: str, register: bool = True) -> str:
        """The key `reason` is counted under; `register` records a new verbatim variant (a read
        through `drops[reason]` looks the key up the same way without recording it, so that
        `drops[reason] += 1` reads the count of the key it then writes)."""
        text = reason[:MAX_REASON_LEN]
        if dict.__contains__(self, text):
            return text
        room = len(self) < self.limit - 1  # one slot kept for "other"
        kind = drop_key(reason)
        if kind != text and room:
            n = self._variants.get(kind, 0)
            if n < VERBATIM_PER_KIND:
                if register:
                    self._variants[kind] = n + 1
                return text
        if dict.__contains__(self, kind) or kind == OTHER or room:
            return kind
        return OTHER

    def _lookup(self, reason: str) -> str:
        return self._key(reason, register=False)

    def add(self, reason: str, n: int = 1) -> str:
        """Count `reason`; returns the key it was counted under."""
        key = self._key(reason)
        dict.__setitem__(self, key, dict.get(self, key, 0) + n)
        return key

    def __getitem__(self, reason: str) -> int:
        return super().__getitem__(self._lookup(reason))

    def __setitem__(self, reason: str, count: int) -> None:
        super().__setitem__(self._key(reason), count)

    def __contains__(self, reason: object) -> bool:
        return isinstance(reason, str) and dict.__contains__(self, self._lookup(reason))
