"""The base of every protocol core's counters: a dataclass of ints (and Counters of reasons) that
reads as the mapping `driver.Core.counters` promises, name → int.

A protocol declares its own fields (what it counts differs: packets, poses, spawns):

    @dataclass
    class Counters(CoreCounters):
        packets_in: int = 0
        drops: DropCounter = field(default_factory=DropCounter)

and a caller reads `counters.packets_in`, or `counters["packets_in"]` / `dict(counters)` without
knowing the protocol. A Counter field reads as its total (`counters["drops"]`: every drop); its
reasons stay on the attribute (`counters.drops`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["CoreCounters"]

_NAMES: dict[type, tuple[str, ...]] = {}


class CoreCounters(Mapping[str, int]):
    """Subclass it with @dataclass; the mapping's keys are the dataclass's fields, in order."""

    def _names(self) -> tuple[str, ...]:
        cls = type(self)
        names = _NAMES.get(cls)
        if names is None:
            names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]
        return names

    def __getitem__(self, key: str) -> int:
        if key not in self._names():
            raise KeyError(key)
        value: Any = getattr(self, key)
        return sum(value.values()) if isinstance(value, Counter) else int(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())
