"""The one driver API the three protocol cores and their transports share.

A **core** is sans-IO, in aioquic's shape: it never touches a socket or a clock. The caller
hands it what arrived (`receive_datagram`), asks what to send (`datagrams_to_send`), asks when
it next needs the clock (`get_timer`) and calls `handle_timer` then, and reads what happened
(`next_event`). What a "datagram" is differs per protocol and is typed by the core:

| core | `receive_datagram(data, now)` takes | `datagrams_to_send(now)` gives |
|---|---|---|
| `q3.client.Q3ClientCore` | one UDP payload (`bytes`) | UDP payloads (`bytes`) |
| `sauer.client.SauerClientCore` | `Incoming(channel, data)` from ENet | `Outgoing(channel, data, reliable)` |
| `netsync.client.NetSyncClientCore` | `Incoming(lane, frames)` from ZeroMQ | `Outgoing(lane, frames)` |

A **transport** owns the sockets of one core and drives it: it says which file descriptors to
wait on (`filenos`) and until when (`next_deadline`); the caller calls `on_readable(now)` when
one is readable and `on_timer(now)` when the deadline passed (calling either early is harmless),
and reads the core's events with `next_event`. A `metrics` hook, when set, is called with a
counter's name and an amount for every datagram sent or received and every send error, so a load
generator counts traffic without reaching into the transport. `drive()` below is the whole loop
for one or many transports: the swarm runs its players with it.

Each protocol keeps its events and errors in one module (`<protocol>/events.py`,
`<protocol>/errors.py`) with one error root, and its connection state machine in one table.
"""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

In = TypeVar("In", contravariant=True)
Out = TypeVar("Out")

#: metrics(name, amount): "sent_datagrams", "sent_bytes", "received_datagrams", "received_bytes",
#: "send_errors" and any protocol-specific counter the transport documents.
MetricsHook = Callable[[str, int], None]


@runtime_checkable
class Core(Protocol[In, Out]):
    """A sans-IO protocol state machine (the aioquic shape)."""

    @property
    def state(self) -> Any: ...

    @property
    def counters(self) -> Mapping[str, int]: ...

    def connect(self, now: float) -> None: ...

    def receive_datagram(self, data: In, now: float) -> None: ...

    def datagrams_to_send(self, now: float) -> list[Out]: ...

    def get_timer(self) -> float | None: ...

    def handle_timer(self, now: float) -> None: ...

    def next_event(self) -> Any | None: ...

    def close(self, now: float) -> None: ...


@runtime_checkable
class Transport(Protocol):
    """The sockets of one core and the calls that drive it from any event loop."""

    metrics: MetricsHook | None

    def filenos(self) -> tuple[int, ...]: ...

    def next_deadline(self) -> float | None: ...

    def on_readable(self, now: float) -> None: ...

    def on_timer(self, now: float) -> None: ...

    def next_event(self) -> Any | None: ...

    def close(self, now: float) -> object: ...  # (a transport may return its last events)


def drive(
    transports: Iterable[Transport],
    until: float,
    on_event: Callable[[Transport, Any], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run transports until `until` (on `clock`): wait on all their descriptors up to the earliest
    deadline, call `on_readable` / `on_timer`, and hand each event to `on_event(transport, event)`.
    A transport whose descriptors change (reconnects) is re-registered at each turn."""
    chosen = list(transports)
    with selectors.DefaultSelector() as sel:
        registered: dict[int, Transport] = {}
        while True:
            now = clock()
            if now >= until:
                return
            wanted = {fd: t for t in chosen for fd in t.filenos() if fd >= 0}
            for fd in list(registered):
                if wanted.get(fd) is not registered[fd]:
                    sel.unregister(fd)
                    del registered[fd]
            for fd, t in wanted.items():
                if fd not in registered:
                    sel.register(fd, selectors.EVENT_READ, t)
                    registered[fd] = t
            deadlines = [d for d in (t.next_deadline() for t in chosen) if d is not None]
            wake = min([until, *deadlines])
            ready = sel.select(max(0.0, wake - now)) if registered else _sleep(wake - now)
            now = clock()
            for key, _ in ready:
                key.data.on_readable(now)
            for t in chosen:
                deadline = t.next_deadline()
                if deadline is not None and deadline <= now:
                    t.on_timer(now)
                if on_event is not None:
                    while (event := t.next_event()) is not None:
                        on_event(t, event)


def _sleep(seconds: float) -> list[Any]:
    time.sleep(max(0.0, seconds))
    return []
