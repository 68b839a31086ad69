"""Rig state → the Sauerbraten player (app/sinks/sauer/mapping.py) and the sink without a server: axes, the
spawn anchor and its turn, the eye height, the speed cap, move/strafe, the 30 Hz take and a loss."""

from __future__ import annotations

import math

import pytest

from headcast.app.run.rig import Origin, Rig
from headcast.app.run.synthetic import orientation
from headcast.app.sinks.sauer.mapping import UNITS_PER_METRE, SauerWorld, anchor_at, game_pose, game_tick, pose_of
from headcast.app.sinks.sauer.sink import SauerSink, npos_for
from headcast.netcode.sauer.npos import EYEHEIGHT, MAX_SAFE_SPEED, PHYS_FLOOR, encode_npos, npos_bytes, pose_record
from headcast.xr.frame import Controls, Pose, TrackingFrame

U = UNITS_PER_METRE


def frame(head=(0, 0, 0), pos=(0.0, 1.6, 0.0), ok=True, controls=Controls()):
    h = Pose(pos, orientation(*head), ok, ok, ok, ok)
    a = Pose((0.2, 1.2, -0.3), orientation(0, 0, 0), True, True, True, True)
    return TrackingFrame(0, 0, h, a, a, a, a, controls)


def state(f, move=(0.0, 0.0), yaw=0.0):
    rig = Rig()
    rig.origin = Origin(0.0, 0.0, yaw)
    st = rig.update(f, 0.0)
    st.move_world = move
    return st


WORLD = SauerWorld(spawn=(500.0, 600.0, 64.0), spawn_yaw=90.0)


def test_the_spawn_puts_the_head_at_the_spawn_point_facing_its_heading():
    s = state(frame(head=(10, 30, 5), pos=(1.0, 1.7, -2.0)))
    anchor = anchor_at(s, WORLD)
    assert anchor.turn == pytest.approx(60.0) and anchor.standing == pytest.approx(1.7)
    gp = game_pose(s, WORLD, anchor)
    assert gp.pose.eye == pytest.approx((500.0, 600.0, 64.0 + EYEHEIGHT))  # feet on the spawn floor
    assert gp.pose.yaw == pytest.approx(90.0) and gp.pose.pitch == pytest.approx(-10.0)
    assert gp.pose.roll == pytest.approx(5.0)
    rec = npos_for(gp, cn=3, lifesequence=5)
    assert (rec.cn, rec.lifebit, rec.yaw, rec.pitch, rec.roll_deg) == (3, 1, 90, -10, 5)
    assert rec.position == (500.0, 600.0, 64.0)


def test_walking_away_from_the_spawn_turns_with_the_anchor():
    start = state(frame(head=(0, 0, 0), pos=(0.0, 1.6, 0.0)))
    anchor = anchor_at(start, WORLD)  # the head faced −Z (Quake yaw 0); the game faces yaw 90 (−x)
    ahead = state(frame(head=(0, 0, 0), pos=(0.0, 1.6, -1.0)))  # one metre where the head faced
    gp = game_pose(ahead, WORLD, anchor)
    assert gp.pose.eye[:2] == pytest.approx((500.0 - U, 600.0))  # one metre along the game's yaw 90
    left = state(frame(head=(0, 0, 0), pos=(-1.0, 1.6, 0.0)))  # a step to the left
    assert game_pose(left, WORLD, anchor).pose.eye[:2] == pytest.approx((500.0, 600.0 - U))
    turned = state(frame(head=(0, 45, 0), pos=(0.0, 1.6, 0.0)))  # a snap turn: the yaw goes through
    assert game_pose(turned, WORLD, anchor).pose.yaw == pytest.approx(135.0)


def test_the_eye_rises_with_the_head_and_never_sinks_below_standing():
    anchor = anchor_at(state(frame(pos=(0.0, 1.6, 0.0))), WORLD)
    up = game_pose(state(frame(pos=(0.0, 1.85, 0.0))), WORLD, anchor)
    down = game_pose(state(frame(pos=(0.0, 1.0, 0.0))), WORLD, anchor)
    assert up.pose.eye[2] == pytest.approx(64.0 + EYEHEIGHT + 0.25 * U)
    assert down.pose.eye[2] == pytest.approx(64.0 + EYEHEIGHT)
    fixed = SauerWorld(spawn=(0.0, 0.0, 0.0), eye_height=1.5)
    a = anchor_at(state(frame(pos=(0.0, 1.2, 0.0))), fixed)  # seated at the spawn: still 1.5 m standing
    assert game_pose(state(frame(pos=(0.0, 1.7, 0.0))), fixed, a).pose.eye[2] == pytest.approx(EYEHEIGHT + 0.2 * U)


def test_speed_is_capped_below_the_kick_and_move_strafe_follow_the_stick():
    anchor = anchor_at(state(frame()), SauerWorld())
    slow = game_pose(state(frame(), move=(0.0, -2.0)), SauerWorld(), anchor)  # 2 m/s where the head faces
    assert (slow.pose.move, slow.pose.strafe, slow.capped) == (1, 0, False)
    assert math.hypot(*slow.pose.vel[:2]) == pytest.approx(16.0)
    fast = game_pose(state(frame(), move=(30.0, -30.0)), SauerWorld(), anchor)  # forward right, 42 m/s
    assert fast.capped and fast.speed == pytest.approx(math.hypot(30, 30) * U)
    assert math.hypot(*fast.pose.vel[:2]) == pytest.approx(MAX_SAFE_SPEED) and fast.pose.vel[2] == 0.0
    assert (fast.pose.move, fast.pose.strafe) == (1, -1)
    rec = npos_for(fast)
    assert rec.vel == 179 and max(math.hypot(*rec.velocity[:2]), abs(rec.velocity[2])) < 180
    back_left = game_pose(state(frame(), move=(-1.0, 1.0)), SauerWorld(), anchor)
    assert (back_left.pose.move, back_left.pose.strafe) == (-1, 1)
    side = game_pose(state(frame(head=(0, 90, 0)), move=(0.0, -2.0)), SauerWorld(), anchor)  # head faces left
    assert (side.pose.move, side.pose.strafe) == (0, -1)  # moving −Z is to the head's right


def test_a_place_outside_the_24_bit_world_sends_nothing():
    far = SauerWorld(spawn=(520000.0, 0.0, 0.0))  # the record holds ±2^23 sixteenths: ±524288 units
    s = state(frame(pos=(1000.0, 1.6, 0.0)))
    gp = game_pose(s, far, anchor_at(state(frame()), far))
    assert gp is not None and npos_for(gp) is None


def test_offline_sink_takes_the_state_at_30_hz_and_a_loss_at_once():
    sink = SauerSink()
    assert sink.seen is None and "tracking lost" in sink.status(0.0).detail
    a, b = frame(head=(0, 10, 0)), frame(head=(0, 50, 0))
    sink.send(state(a), a, 0.0)
    assert sink.seen.yaw == 0 and sink.seen.position == (512.0, 512.0, 512.0)  # anchored: the default spawn
    sink.send(state(b), b, 0.02)  # before 1/30 s: the game would not send
    assert sink.seen.yaw == 0
    sink.send(state(b), b, 0.04)
    assert sink.seen.yaw == 40 and "N_POS 16 B yaw 40" in sink.status(0.04).packed
    assert sink.data == encode_npos(sink.seen) and sink.status(0.04).state == "offline"
    lost = frame(ok=False)
    sink.send(state(lost), lost, 0.041)  # a loss is taken at once, whatever the rate
    assert sink.data == b"" and sink.seen is None and "tracking lost" in sink.status(0.05).detail


def test_offline_status_says_when_the_cap_bites():
    sink = SauerSink()
    f = frame()
    sink.send(state(f, move=(0.0, -40.0)), f, 0.0)
    sink.seen  # noqa: B018 - builds the record
    st = sink.status(0.0)
    assert st.values["vel"] == 179 and st.values["move"] == 1


def test_the_linked_tick_sends_the_bytes_of_the_game_pose():
    """The linked sink's tick (app/sinks/sauer/sink.py: game_tick's numbers, npos_bytes of them,
    no Pose or record built on the frame thread) puts on the wire the bytes the game pose's record
    has (pose_record of game_pose: what the live tests pin against the real server), and the game
    pose read later is game_pose's; outside the common case (3-byte coordinates, a client number
    from 128) npos_bytes says None and the sink takes the pose's way."""
    worlds = (WORLD, SauerWorld(), SauerWorld(spawn=(4.0, 4090.0, 0.0), spawn_yaw=-170.0, eye_height=1.5))
    heads = [
        (p, y, r)
        for p in (-89.0, -30.0, 0.0, 45.0, 89.5)
        for y in (-179.0, -0.4, 0.0, 12.3, 179.9)
        for r in (-20.0, 0.0, 7.0)
    ]
    moves = ((0.0, 0.0), (0.0, -2.0), (-1.0, 1.0), (30.0, -30.0), (0.3, 0.0))
    places = ((0.0, 1.6, 0.0), (1.5, 1.9, -2.25), (-3.0, 1.1, 4.0), (40.0, 1.7, -40.0))
    common = other = 0
    for w, world in enumerate(worlds):
        anchor = anchor_at(state(frame(head=(0, 20, 0), pos=(0.3, 1.6, -0.2))), world)
        for i, head in enumerate(heads):
            s = state(frame(head=head, pos=places[i % len(places)]), move=moves[i % len(moves)], yaw=15.0 * w)
            tick = game_tick(s, world, anchor)
            gp = game_pose(s, world, anchor)
            assert pose_of(tick) == gp and vars(pose_of(tick).pose) == vars(gp.pose)
            for cn, ls in ((0, 1), (5, 2), (127, 7), (128, 3)):
                want = npos_for(gp, cn, ls)
                got = npos_bytes(cn, *tick[:8], 0.0, tick[8], tick[9], PHYS_FLOOR, ls)
                if got is None:
                    other += 1
                    assert cn >= 128 or want is None or not all(0 <= c <= 0xFFFF for c in want.o)
                else:
                    common += 1
                    assert want is not None and got == encode_npos(want) == pose_record(cn, gp.pose, ls)[1]
    assert common > 500 and other > 100
    lost = state(frame(ok=False))
    assert game_tick(lost, WORLD, anchor_at(state(frame()), WORLD)) is None
