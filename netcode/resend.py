"""The resend schedule of a query sent over UDP until answered (a server's info or status): each
named request goes out at `start`, then again after `first` seconds, then after twice that, and so
on, until `answered`. Sans-IO: the caller asks what is `due` at a time and sends it; it reads no
clock. Used by netcode/q3/status.py and netcode/sauer/info.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ResendSchedule"]

K = TypeVar("K")


@dataclass
class _Entry:
    interval: float
    next_send: float | None = None  # None: answered, or not started
    last_sent: float | None = None


class ResendSchedule(Generic[K]):
    """Requests named by `names`, each resent with a wait that starts at `first` seconds and grows
    by `factor` after every resend."""

    def __init__(self, names: Iterable[K], first: float, factor: float = 2.0) -> None:
        if first <= 0 or factor < 1:
            raise ValueError(f"a resend wait must start above 0 and not shrink: {first}, ×{factor}")
        self.factor = factor
        self.entries = {name: _Entry(first) for name in names}

    def start(self, now: float) -> None:
        """Every request is due at `now`."""
        for e in self.entries.values():
            e.next_send = now

    def get_timer(self) -> float | None:
        """When `due` has something again, or None (all answered)."""
        times = [e.next_send for e in self.entries.values() if e.next_send is not None]
        return min(times) if times else None

    def due(self, now: float) -> list[K]:
        """The requests to send now; each counts as sent at `now` (its next wait grown after the first)."""
        out = []
        for name, e in self.entries.items():
            if e.next_send is not None and now >= e.next_send:
                if e.last_sent is not None:
                    e.interval *= self.factor
                e.last_sent = now
                e.next_send = now + e.interval
                out.append(name)
        return out

    def answered(self, name: K) -> None:
        """No more sends of `name`."""
        self.entries[name].next_send = None

    def pending(self, name: K) -> bool:
        return self.entries[name].next_send is not None

    def last_sent(self, name: K) -> float | None:
        """When `name` last went out (None: never)."""
        return self.entries[name].last_sent
