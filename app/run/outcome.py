"""Each sink's way into its server, and what the run's end and exit code say about it.

Sinks fail alone: a link that cannot reach its server keeps retrying with its own backoff (Q3:
getchallenge resent every 1–3 s, a new attempt after 0.5–8 s; NetSync: ZeroMQ reconnects every
0.1–1 s) and says why on the status line, while the others stream. A sink that failed for good
(a refusal retrying cannot help, a NetSync server of another protocol, a pure Quake 3 server
without our pk3 files) is disconnected and the rest go on. The run itself ends early only when
no sink can stream any more — every linked sink failed, or none had joined within
run.connect_timeout (up to JOIN_STRETCH times that for a server that answers but has not let us in
yet) — or, with --require-all, as soon as one failed or had not joined by then.
Whenever it ends, a run in which no sink ever joined (or, with --require-all, one did not) is a
failure: a run shorter than the connect timeout is no longer a silent success. So is a run that
ended while a server it had joined was lost (silent for LOST_AFTER s and more; exit 3, as for no
answer): the status line says "server lost" and for how long, and the summary when it was lost
and whether it came back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from headcast.app.errors import AppError, UnreachableError

# How far past run.connect_timeout a first join goes on while its server still answers.
JOIN_STRETCH = 3.0
# A joined server silent this long is lost (the status line says so; the summary and exit status
# carry it). Every linked server sends more often than this while we stream: Quake 3 snapshots
# (20/s), NetSync room broadcasts (10/s, every 2 s in an idle room), Sauerbraten pongs (4/s).
LOST_AFTER = 3.0


@dataclass
class Outcome:
    """One sink's story: when it first joined (seconds into the run), or why it never did."""

    name: str
    sink: Any
    link: Any  # the sink's server link, None = offline (computes and shows only)
    joined_at: float | None = None  # seconds into the run
    failure: AppError | None = None  # stopped for good (and disconnected)
    failed_state: str = ""  # the link's state when it failed ("refused", "protocol mismatch" ...)
    # Times the joined server went silent: [lost at, back at or None (still lost)], seconds into
    # the run; `lost at` is when it was last heard from.
    lost: list[list] = field(default_factory=list)
    heard_at: float | None = None  # seconds into the run the link last received anything
    _received: int = -1

    @property
    def lost_now(self) -> float | None:
        """Seconds into the run its server was lost, while it still is (else None)."""
        return self.lost[-1][0] if self.lost and self.lost[-1][1] is None else None

    def lost_text(self, end: float) -> str:
        """The summary's words for the server's silences ("" when none)."""
        parts = []
        for at, back in self.lost:
            if back is None:
                parts.append(
                    f"lost the server at {at:.1f} s and it never came back "
                    f"(nothing from it for the last {max(0.0, end - at):.1f} s)"
                )
            else:
                parts.append(f"lost the server at {at:.1f} s for {back - at:.1f} s (back at {back:.1f} s)")
        return "; ".join(parts)

    def lost_error(self, end: float) -> AppError | None:
        """A server still lost when the run ended: this sink's error (exit 3, no answer)."""
        at = self.lost_now
        if at is None:
            return None
        where = getattr(self.link, "address", "the server")
        return UnreachableError(
            f"{self.name}: lost the server {where} at {at:.1f} s and it never came back "
            f"(nothing from it for the last {max(0.0, end - at):.1f} s of the run)"
        )

    @property
    def linked(self) -> bool:
        return self.link is not None

    def never_joined_error(self, waited: float) -> AppError:
        """Why this sink is not in after `waited` seconds: its failure, or its link's own words."""
        if self.failure is not None:
            return self.failure
        own = getattr(self.link, "join_timeout_error", None)
        if own is not None:
            return own(waited)
        return UnreachableError(
            f"{self.name}: not let in by {getattr(self.link, 'address', 'the server')} within {waited:g} s"
        )

    def sent(self) -> tuple[int, int]:
        """(messages, bytes) this sink put on the wire."""
        meter = getattr(self.sink, "meter", None)
        return (0, 0) if meter is None else (meter.total_messages, meter.total_bytes)


def combine(errors: Sequence[AppError], prefix: str = "") -> AppError:
    """One error for the run from its sinks' errors: one line, each sink's reason in turn; the
    exit code theirs when they agree, else 1."""
    if len(errors) == 1 and not prefix:
        return errors[0]
    err = AppError(prefix + "; ".join(str(e) for e in errors))
    codes = {e.exit_code for e in errors}
    err.exit_code = codes.pop() if len(codes) == 1 else AppError.exit_code
    return err


class Outcomes:
    """The run's verdict, kept up to date by the console's status tick (every 0.5 s).

    A sink's `link` (None: offline) has `joined` and `close()`; it may have `joined_at` (clock
    time of the first join), `failure` (an AppError once it stopped for good) and
    `join_timeout_error(seconds)` (why it is not in, in its own words)."""

    def __init__(self, sinks: Sequence[Any], connect_timeout: float, require_all: bool = False) -> None:
        self.items = [Outcome(s.name, s, getattr(s, "link", None)) for s in sinks]
        self.connect_timeout = connect_timeout
        self.require_all = require_all
        self.start: float | None = None

    @property
    def linked(self) -> list[Outcome]:
        return [o for o in self.items if o.linked]

    def update(self, now: float) -> list[Outcome]:
        """Note first joins and failures (a failed link is closed: it leaves its server at once);
        returns the outcomes that failed since the last call."""
        if self.start is None:
            self.start = now
        failed = []
        for o in self.linked:
            link = o.link
            self._note_join(o, now)
            self._note_silence(o, now)
            if o.failure is None:
                fault = getattr(o.sink, "fault", None)  # its core raised: the loop closed it (app/run/loop.py)
                if fault is not None:
                    o.failure, o.failed_state = fault, "failed"
                    failed.append(o)
                    continue
                failure = getattr(link, "failure", None)
                if failure is not None:
                    o.failure, o.failed_state = failure, link.state
                    link.close()
                    failed.append(o)
        return failed

    def _note_join(self, o: Outcome, now: float) -> None:
        if o.joined_at is None and o.link.joined:
            at = getattr(o.link, "joined_at", None)
            start = now if self.start is None else self.start  # (set: the run has started)
            o.joined_at = max(0.0, (now if at is None else at) - start)

    def _note_silence(self, o: Outcome, now: float) -> None:
        """Whether the joined server still sends: a link's `received` (anything counted in from
        its server) that has not moved for LOST_AFTER s is a lost server; the next thing in
        brings it back."""
        received = getattr(o.link, "received", None)
        if received is None or o.joined_at is None or o.failure is not None or getattr(o.link, "closed", False):
            return
        t = now - (now if self.start is None else self.start)  # (set: the run has started)
        if received != o._received:
            o._received = received
            o.heard_at = t
            if o.lost_now is not None:
                # Kept to 10 ms, as the time it was lost is: the summary's words and --json's
                # figures are then the same numbers.
                o.lost[-1][1] = round(t, 2)
        elif o.heard_at is not None and o.lost_now is None and t - o.heard_at >= LOST_AFTER:
            o.lost.append([round(o.heard_at, 2), None])

    def check(self, now: float) -> AppError | None:
        """The error that ends the run now, or None: go on."""
        linked = self.linked
        if not linked or self.start is None:
            return None
        failures = [o.failure for o in linked if o.failure is not None]
        failed = len(failures)
        if failed and self.require_all:
            return combine(failures, "--require-all: " if failed < len(linked) else "")
        if failed == len(linked):
            return combine(failures)
        elapsed = now - self.start
        # Nothing listens at a server's address (ICMP port unreachable, TCP connection refused,
        # again and again): said now, not after run.connect_timeout, when no other sink can go on.
        refused = [
            o for o in linked if o.joined_at is None and o.failure is None and getattr(o.link, "unreachable", False)
        ]
        if refused and (self.require_all or len(refused) + failed == len(linked)):
            prefix = "--require-all: " if len(refused) + failed < len(linked) else ""
            return combine([o.never_joined_error(round(elapsed, 1)) for o in refused] + failures, prefix)
        if elapsed <= self.connect_timeout:
            return None
        out = [o for o in linked if o.joined_at is None and not self._still_answering(o, now, elapsed)]
        if not out or (len(out) < len(linked) and not self.require_all):
            return None
        prefix = "--require-all: " if len(out) < len(linked) else ""
        waited = self.connect_timeout if elapsed < self.connect_timeout + 1.0 else round(elapsed, 1)
        return combine([o.never_joined_error(waited) for o in out], prefix)

    def _still_answering(self, o: Outcome, now: float, elapsed: float) -> bool:
        """A first join past run.connect_timeout goes on, up to JOIN_STRETCH times the timeout,
        when its server has answered anything but a refusal (a handshake slowed by loss, a rate
        limit that lifts): under 20 % loss a Quake 3 join's resends can take longer than 10 s.
        A server that refuses us, or never answered, gets run.connect_timeout as before."""
        return (
            getattr(o.link, "answered_at", None) is not None
            and o.failure is None
            and getattr(o.link, "refused", None) is None
            and elapsed <= JOIN_STRETCH * self.connect_timeout
        )

    def final(self, now: float) -> AppError | None:
        """After the run (links closed): a failure when no sink ever joined — however short the
        run — or, with --require-all, when one did not or failed."""
        linked = self.linked
        if not linked:
            return None
        if self.start is None:  # stopped before the first status tick
            self.start = now
        for o in linked:  # a join since the last tick (a closed link still knows it joined)
            self._note_join(o, now)
            fault = getattr(o.sink, "fault", None)  # a sink that failed after the last tick (app/run/loop.py)
            if o.failure is None and fault is not None:
                o.failure, o.failed_state = fault, "failed"
        waited = round(now - self.start, 1)
        out = [o for o in linked if o.joined_at is None]
        if len(out) == len(linked):
            return combine([o.never_joined_error(waited) for o in out])
        if self.require_all:
            bad = [o for o in linked if o.joined_at is None or o.failure is not None]
            if bad:
                return combine([o.never_joined_error(waited) for o in bad], "--require-all: ")
        end = now - self.start
        lost = [e for e in (o.lost_error(end) for o in linked) if e is not None]
        if lost:
            return combine(lost)
        return None

    def of(self, name: str) -> Outcome:
        return next(o for o in self.items if o.name == name)
