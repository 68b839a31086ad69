"""When a pose goes out: Unity's TransformSyncManager policy (docs/protocols/netsync.md#send-policy).

- at most SendRate Hz (default 10, clamped 0.5–60), measured from the last actual send;
- only on change: Unity compares a 64-bit FNV-1a signature of the body after poseSeq (flags …
  last virtual, i.e. exactly the quantised wire fields) with the last sent one. The signature never
  leaves the sender, and two bodies sign alike exactly when their bytes are equal (short of a 2⁻⁶⁴
  collision), so the bytes themselves are compared: no per-byte Python hashing on the send path;
- an unchanged pose still goes out once per heartbeat (1 s) so the server's 5 s timeout
  never removes an idle client;
- poseSeq advances only when a pose is actually sent.

A stealth client's body never changes, so it goes out at the heartbeat (1 Hz, like the official
Python client; Unity repeats it at SendRate) — enough to stay registered.

Pure logic: the caller passes `now` (seconds, any monotonic clock).
"""

from __future__ import annotations

SEND_RATE_MIN = 0.5
SEND_RATE_MAX = 60.0
HEARTBEAT_S = 1.0


class SendPolicy:
    def __init__(self, send_rate: float = 10.0, heartbeat: float = HEARTBEAT_S) -> None:
        self.send_rate = send_rate
        self.heartbeat = heartbeat
        self.pose_seq = 0  # the seq of the last send (Unity increments before writing)
        self._last_send: float | None = None
        self._last_tail: bytes | None = None  # the body (after poseSeq) last sent
        self.last_skip = ""  # why the last None: "rate" or "unchanged" (for counters)

    @property
    def send_rate(self) -> float:
        return self._rate

    @send_rate.setter
    def send_rate(self, hz: float) -> None:
        self._rate = min(max(float(hz), SEND_RATE_MIN), SEND_RATE_MAX)
        self._interval = 1.0 / self._rate

    def decide(self, now: float, tail: bytes) -> int | None:
        """The poseSeq to send `tail` with now, or None when this frame sends nothing."""
        last = self._last_send
        if last is not None and now - last < self._interval:
            self.last_skip = "rate"
            return None
        if last is not None and tail == self._last_tail and now - last < self.heartbeat:  # equal: sent before
            self.last_skip = "unchanged"
            return None
        self._last_send = now
        self._last_tail = tail
        self.pose_seq = (self.pose_seq + 1) & 0xFFFF
        return self.pose_seq

    def forget_last(self) -> None:
        """The last send never left: treat the next pose as changed (the rate cap still holds)."""
        self._last_tail = None
