"""Relay matching by content (app/swarm/observer.py): yaw steps (Q3, Sauerbraten) and poseSeqs
(NetSync) matched to what an observer saw, losses counted only for updates that stood long
enough to be relayed."""

from __future__ import annotations

import math

import pytest

from headcast.app.swarm.observer import MARK_HOLD, MARK_STEP, NETSYNC_STOOD, Board, Marker, SeqLog


def board():
    got = {"relay": [], "lost": 0}
    b = Board(
        "x",
        lambda p, s, now: got["relay"].append(round(s, 6)),
        lambda p, n, now: got.__setitem__("lost", got["lost"] + n),
    )
    return b, got


def q3_view(v: float) -> float:
    """What ioq3 relays of a marked yaw: ANGLE2SHORT, SHORT2ANGLE, then SnapVector's truncation."""
    short = int(v * 65536 / 360) & 0xFFFF
    return float(int(short * 360 / 65536))


def test_marker_steps_are_exact_angle_shorts_and_never_repeat_the_last():
    m = Marker()
    values = [m.yaw(k * (MARK_HOLD + 1e-6), 10.0) for k in range(20)]  # a still motion: steps anyway
    assert all(abs(math.remainder(a - b, 360)) >= MARK_STEP for a, b in zip(values, values[1:]))
    for v in values:  # each a whole number of 1024-unit angle shorts: the server's view is the step
        assert (v % 360) * 65536 / 360 % 1024 == pytest.approx(0, abs=1e-6)
    # held for MARK_HOLD: the same value within the hold
    m2 = Marker()
    assert m2.yaw(0.0, 33.0) == m2.yaw(MARK_HOLD * 0.9, 170.0)
    assert m2.yaw(MARK_HOLD, 170.0) == pytest.approx(round(170 / MARK_STEP) * MARK_STEP)


def test_yaw_matching_latency_and_losses():
    b, got = board()
    m = Marker()
    b.register(7, m)
    sent = [m.yaw(k * (MARK_HOLD + 0.001), -120.0 + 17.0 * k) for k in range(6)]  # step k at 0.201·k s
    b.saw_yaw(0, 7, q3_view(sent[0]), 0.03)  # step 1 seen 30 ms after it was sent
    b.saw_yaw(0, 7, q3_view(sent[0]), 0.08)  # the same again: nothing new
    b.saw_yaw(0, 7, q3_view(sent[1]), 0.225)
    b.saw_yaw(0, 7, q3_view(sent[4]), 0.84)  # steps 3 and 4 never shown: lost
    assert got["relay"] == [0.03, 0.024, 0.036]
    assert got["lost"] == 2
    b.saw_yaw(0, 7, q3_view(sent[5]), 1.0)  # step 5 goes out at 1.005: a yaw seen before is no match
    assert len(got["relay"]) == 3
    b.saw_yaw(0, 99, 10.0, 1.1)  # not a marked player
    assert len(got["relay"]) == 3


def test_a_rejoined_sender_starts_over():
    b, got = board()
    m1 = Marker()
    b.register(3, m1)
    b.saw_yaw(0, 3, q3_view(m1.yaw(0.0, 0.0)), 0.02)
    m1.yaw(MARK_HOLD, 0.0)
    b.unregister(3, m1)
    m2 = Marker()
    b.register(3, m2)  # a new player in slot 3: its steps count from its first
    b.saw_yaw(0, 3, q3_view(m2.yaw(5.0, 90.0)), 5.01)
    assert got["relay"] == [0.02, pytest.approx(0.01)] and got["lost"] == 0


def test_netsync_seq_matching_counts_only_poses_that_stood():
    b, got = board()
    log = SeqLog()
    b.register(4, log)
    log.add(1, 0.0)
    log.add(2, 0.1)
    log.add(3, 0.13)  # superseded after 30 ms: the broadcast may skip it
    log.add(4, 0.2 + NETSYNC_STOOD)  # 3 stood 0.22 s (its successor came late): it must show
    log.add(5, 0.6)
    b.saw_seq(0, 4, 1, 0.05)
    b.saw_seq(0, 4, 1, 0.15)
    b.saw_seq(0, 4, 2, 0.16)
    b.saw_seq(0, 4, 2, 0.28)  # a broadcast while 3 was the latest, without it
    b.saw_seq(0, 4, 4, 0.40)  # 3 skipped: it stood ≥ NETSYNC_STOOD and > the broadcast gap → lost
    b.saw_seq(0, 4, 2, 0.45)  # older than what was seen: reordered, no news
    assert got["relay"] == [0.05, pytest.approx(0.06), pytest.approx(0.05)]
    assert got["lost"] == 1
    log2 = SeqLog()
    for s, t in ((10, 0.0), (11, 0.02), (12, 0.04)):
        log2.add(s, t)
    b.register(5, log2)
    b.saw_seq(1, 5, 10, 0.01)
    b.saw_seq(1, 5, 12, 0.09)  # 11 lived 20 ms: superseded, not lost
    assert got["lost"] == 1


def test_netsync_pose_that_stood_within_one_broadcast_gap_is_no_loss():
    """Broadcasts 250 ms apart (the server late, or our loop reading late): a pose that stood
    160 ms between them had no broadcast to carry it; the same pose between broadcasts 100 ms
    apart would have been carried, and is lost."""
    for gap, lost in ((0.25, 0), (0.10, 1)):
        b, got = board()
        log = SeqLog()
        b.register(4, log)
        for seq, t in ((1, 0.0), (2, 0.05), (3, 0.05 + NETSYNC_STOOD + 0.01)):
            log.add(seq, t)
        reads = [0.03, 0.13] if gap < 0.2 else [0.03]  # 0.13: during 2's life, showing 1 still
        for t in reads:
            b.saw_seq(0, 4, 1, t)
        b.saw_seq(0, 4, 3, reads[-1] + gap)
        assert got["lost"] == lost, gap


def test_seq_log_is_bounded_and_wraps():
    log = SeqLog()
    for i in range(1000):
        log.add((65530 + i) & 0xFFFF, i * 0.1)
    assert len(log.sent) == len(log.order) == 256
    b, got = board()
    b.register(1, log)
    b.saw_seq(0, 1, (65530 + 998) & 0xFFFF, 99.85)
    b.saw_seq(0, 1, (65530 + 999) & 0xFFFF, 99.95)
    assert got["relay"] == [pytest.approx(0.05), pytest.approx(0.05)]


def test_steps_missed_out_of_sight_are_no_loss_and_back_in_sight_matches_the_newest():
    b, got = board()
    m = Marker()
    b.register(2, m)
    sent = [m.yaw(k * (MARK_HOLD + 0.001), 0.0) for k in range(8)]  # a still motion: two yaws alternate
    b.saw_yaw(0, 2, q3_view(sent[0]), 0.02)
    b.out_of_sight(0, 2)  # left the observer's PVS
    b.saw_yaw(0, 2, q3_view(sent[6]), 1.21)  # back: step 6 (sent 1.206), not step 2 or 4
    assert got["relay"] == [0.02, pytest.approx(0.004)] and got["lost"] == 0
    b.saw_yaw(0, 2, q3_view(sent[7]), 1.42)
    assert got["relay"][-1] == pytest.approx(0.013) and got["lost"] == 0
