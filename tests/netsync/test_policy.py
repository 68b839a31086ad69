"""Unity's send policy and traffic behaviour (docs/protocols/netsync.md#send-policy), with an injected clock."""

from __future__ import annotations

import pytest
from netsync.coredrive import send_pose

from headcast.netcode.netsync.client import NetSyncClientCore
from headcast.netcode.netsync.codec import decode_client_pose, encode_body_tail
from headcast.netcode.netsync.model import FLAG_STEALTH, OriginDelta, PoseFrame, Transform
from headcast.netcode.netsync.policy import SendPolicy

FRAME = 1 / 90  # a 90 Hz headset


def test_every_byte_of_the_body_counts_as_a_change():
    """Unity's FNV-1a signature covers the body after poseSeq; the policy compares those bytes."""
    tail = encode_body_tail(PoseFrame.build(Transform((1, 2, 3))))
    for i in range(len(tail)):
        policy = SendPolicy()
        assert policy.decide(0.0, tail) == 1
        assert policy.decide(0.5, tail) is None and policy.last_skip == "unchanged"
        changed = bytearray(tail)
        changed[i] ^= 1
        assert policy.decide(0.5, bytes(changed)) == 2
        assert policy.decide(1.0, tail) == 3  # back to the first body: a change again
        assert policy.decide(2.0, tail) == 4  # unchanged, but the 1 s heartbeat is due


def test_send_rate_is_clamped():
    assert SendPolicy(0.1).send_rate == 0.5
    assert SendPolicy(1000).send_rate == 60.0
    assert SendPolicy().send_rate == 10.0


def head_at(t: float) -> PoseFrame:
    return PoseFrame.build(Transform((3.0 * t, 1.7, 0.0)), delta=OriginDelta(0.0, 0.0, 0.0))  # > 1 cm a frame


def run(core: NetSyncClientCore, seconds: float, frame_at, t0: float = 0.0) -> list[tuple[float, bytes]]:
    sent = []
    for i in range(round(seconds / FRAME)):
        now = t0 + i * FRAME
        msg = send_pose(core, now, frame_at(now))
        if msg is not None:
            sent.append((now, msg))
    return sent


def test_idle_is_a_1_hz_heartbeat():
    core = NetSyncClientCore("r", "d")
    idle = PoseFrame.build(Transform((0, 1.7, 0)))
    sent = run(core, 30.0, lambda now: idle)
    assert len(sent) == 30  # t = 0, 1, …, 29
    gaps = [b[0] - a[0] for a, b in zip(sent, sent[1:])]
    assert min(gaps) >= 1.0 and max(gaps) < 1.0 + FRAME + 1e-9
    # within 0.1 s of a send the rate cap answers first; after that, change detection
    assert core.counters.skipped["rate"] + core.counters.skipped["unchanged"] == 2700 - 30
    assert core.counters.skipped["unchanged"] > 2000


@pytest.mark.parametrize("rate", [10.0, 30.0, 0.5])
def test_motion_is_capped_at_send_rate(rate):
    core = NetSyncClientCore("r", "d", send_rate=rate)
    sent = run(core, 10.0, head_at)
    gaps = [b[0] - a[0] for a, b in zip(sent, sent[1:])]
    assert min(gaps) >= 1.0 / rate - 1e-9
    # at 90 Hz frames a 1/rate interval ends within one frame: no visible stutter
    assert max(gaps) < 1.0 / rate + FRAME + 1e-9
    assert len(sent) >= 10.0 / (1 / rate + FRAME) - 1


def test_only_on_change_uses_the_quantised_pose():
    core = NetSyncClientCore("r", "d")
    assert send_pose(core, 0.0, PoseFrame.build(Transform((0.0, 1.7, 0.0))))
    # a 1 mm move is below the 1 cm head quantum: same bytes, no send before the heartbeat
    assert send_pose(core, 0.5, PoseFrame.build(Transform((0.001, 1.7, 0.0)))) is None
    assert send_pose(core, 0.6, PoseFrame.build(Transform((0.02, 1.7, 0.0)))) is not None


def test_pose_seq_increments_only_on_a_send_and_wraps():
    core = NetSyncClientCore("r", "d")
    sent = run(core, 5.0, head_at)
    seqs = [decode_client_pose(m).body.pose_seq for _, m in sent]
    assert seqs == list(range(1, len(sent) + 1))
    p = SendPolicy()
    p.pose_seq = 65535
    assert p.decide(0.0, b"x") == 0


def test_stealth_sends_the_minimal_body_at_the_heartbeat():
    """Protocols 3–6: stealth is a 5-byte body at the heartbeat (from 7 on it is the hello alone:
    test_client_core.py)."""
    core = NetSyncClientCore("r", "d", stealth=True, protocol=3)
    sent = run(core, 10.0, head_at)  # moving, but nothing of it is sent
    assert len(sent) == 10
    for _, msg in sent:
        body = decode_client_pose(msg).body
        assert body.flags == FLAG_STEALTH and body.head is None
        assert len(msg) == 3 + 1 + 5


def test_a_lost_send_is_retried_on_the_next_frame_not_the_next_heartbeat():
    core = NetSyncClientCore("r", "d")
    idle = PoseFrame.build(Transform((0, 1.7, 0)))
    core.set_pose(idle)
    (out,) = [o for o in core.datagrams_to_send(0.0) if o.kind == "pose"]  # (and the hello)
    core.send_failed(out)
    assert send_pose(core, 0.05, idle) is None  # rate cap still holds
    assert send_pose(core, 0.1, idle) is not None
    assert core.counters.drops["send: no server connection or queue full"] == 1
