"""Pump.send_pose (the Q3 sink's whole command tick in one C call, app/sinks/q3/link.py
Q3Link.send_pose) against the Python path it stands in for: q3_intent (RigState.world_orientation,
pose.quake_angles, the roll clamp, weapon_frame_moves), then Q3Link.send's send_input.

The intent must be the same floats, bit for bit (signed zeros included), for any quaternion: random,
gimbal (straight up or down), non-unit, zero, huge, tiny, NaN and infinite components; where the
Python raises, the C leaves the tick to it. The wire must be the same bytes: tests/q3/test_pump.py's
Rig (a Q3Client on 127.0.0.1 with a scripted server behind a UDP socket, our own stand-in: the
scenario needs a server whose every message is chosen) runs its scenario once through q3_intent +
send_input and once through send_pose, and every datagram must be byte-identical.
"""

from __future__ import annotations

import math
import random
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.app.run.rig import Origin, RigState
from headcast.app.sinks.q3.link import SENT_HISTORY, SENT_LIMIT, SENT_TRIM, Q3Link
from headcast.app.sinks.q3.mapping import q3_intent
from headcast.app.sinks.q3.sink import Q3Sink
from headcast.netcode.pose import q_mul, quat_from_axis_angle, yaw_quat
from headcast.netcode.q3.native import NATIVE
from headcast.xr.frame import Controls, Pose, TrackingFrame

from q3.test_pump import end_state, native, pure_python_send, scenario
from q3.test_send_input import LinkRig, frames

SPECIAL = [0.0, -0.0, 1.0, -1.0, math.sqrt(0.5), -math.sqrt(0.5), 1e-300, 5e-324, 1e300, math.nan, math.inf, -math.inf]
COMPONENT = st.one_of(st.floats(-2.0, 2.0), st.floats(), st.sampled_from(SPECIAL))


@st.composite
def quats(draw) -> tuple[float, float, float, float]:
    kind = draw(st.integers(0, 3))
    if kind == 0:  # anything, unit or not
        return draw(st.tuples(COMPONENT, COMPONENT, COMPONENT, COMPONENT))
    # straight up or down, or within a hair of it, at any yaw and roll (the gimbal branch and its edge)
    pitch = draw(st.sampled_from([90.0, -90.0, 89.9999999, -89.99999999999, 90.0000001]))
    q = q_mul(yaw_quat(draw(st.floats(-720.0, 720.0))), quat_from_axis_angle((1.0, 0.0, 0.0), pitch))
    if kind == 2:
        q = q_mul(q, quat_from_axis_angle((0.0, 0.0, 1.0), draw(st.floats(-180.0, 180.0))))
    if kind == 3:  # non-unit
        s = draw(st.sampled_from([0.5, 3.0, 1e-150, 1e150]))
        q = (q[0] * s, q[1] * s, q[2] * s, q[3] * s)
    return q


def bits(v):
    """Floats by their bits (-0.0 is not 0.0, NaNs compare), tuples item by item."""
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))
    if isinstance(v, tuple):
        return tuple(bits(x) for x in v)
    return v


def rig_state(head: Pose, aim: Pose, origin: Origin, trig, controls: Controls, move) -> RigState:
    frame = TrackingFrame(0, 0, head, aim, aim, aim, aim, controls)
    return RigState(origin, origin, frame, 0.0, move, trig)


def python_intent(state: RigState, vr: bool, move_speed: float):
    """q3_intent's fields in pose_intent's order (angles, head, user, forward, right, up), or None
    where it raises (the C then leaves the tick to it)."""
    try:
        i = q3_intent(state, state.frame.controls, vr, move_speed)
    except (ValueError, OverflowError):
        return None
    return i.angles, i.head, i.user_buttons, i.forwardmove, i.rightmove, i.upmove


def c_intent(state: RigState, vr: bool, move_speed: float):
    frame, trig, controls = state.frame, state.trig, state.frame.controls
    vx, vz = state.move_world
    return NATIVE.pose_intent(
        frame.head,
        frame.right_aim,
        trig[4],
        trig[5],
        state.origin.yaw,
        controls.trigger_right,
        controls.jump,
        vx,
        vz,
        move_speed,
        vr,
    )


@native
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=quats(),
    aim=quats(),
    valid=st.tuples(st.booleans(), st.booleans()),
    yaw=st.one_of(st.floats(-400.0, 400.0), st.sampled_from([0.0, -0.0, 180.0, math.nan, math.inf])),
    odd_trig=st.one_of(st.none(), st.tuples(COMPONENT, COMPONENT)),
    trigger=st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.5, math.nan])),
    jump=st.booleans(),
    move=st.one_of(
        st.just((0.0, 0.0)), st.tuples(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0)), st.tuples(COMPONENT, COMPONENT)
    ),
    move_speed=st.one_of(st.just(2.0), st.floats(-1.0, 5.0), st.sampled_from([0.0, math.nan, 1e-320])),
    vr=st.booleans(),
)
def test_the_c_intent_is_q3_intents_floats_bit_for_bit(
    head, aim, valid, yaw, odd_trig, trigger, jump, move, move_speed, vr
):
    origin = Origin(0.3, -0.2, yaw)
    if odd_trig is None:  # (the rig's own: of a finite yaw)
        trig = Origin(0.3, -0.2, yaw if math.isfinite(yaw) else 33.0).trig()
    else:
        trig = (0.0, 0.0, 1.0, 0.0, *odd_trig)
    hp = Pose((0.0, 1.6, 0.0), head, True, valid[0], True, valid[0])
    ap = Pose((0.2, 1.2, -0.3), aim, True, valid[1], True, valid[1])
    state = rig_state(hp, ap, origin, trig, Controls(trigger_right=trigger, jump=jump), move)
    want = python_intent(state, vr, move_speed)
    got = c_intent(state, vr, move_speed)
    if want is None:
        assert got is None  # Python raises there: the C leaves it to Python
    else:
        assert got is not None and bits(got) == bits(want)


@native
def test_the_c_intent_leaves_what_it_does_not_handle_to_python():
    """Inputs that are not floats (an int yaw would be the intent's own object; a list orientation)
    come back as None: the link then runs q3_intent and send(), as always."""
    origin = Origin(0.0, 0.0, 0.0)
    good = Pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), True, True, True, True)
    listed = Pose((0.0, 0.0, 0.0), [0.0, 0.0, 0.0, 1.0], True, True, True, True)  # type: ignore[arg-type]
    trig = origin.trig()
    args = (good, good, trig[4], trig[5], 0.0, 0.0, False, 0.0, 0.0, 2.0, True)
    assert NATIVE.pose_intent(*args) is not None
    assert NATIVE.pose_intent(listed, *args[1:]) is None
    assert NATIVE.pose_intent(*args[:4], 0, *args[5:]) is None
    assert NATIVE.pose_intent(*args[:5], "0.9", *args[6:]) is None
    with pytest.raises(TypeError):
        NATIVE.pose_intent(*args[:10])


SPECIAL_QUATS = [
    (0.0, 0.0, 0.0, 0.0),
    (math.nan, 0.0, 0.0, 1.0),
    (0.0, math.inf, 0.0, 1.0),
    (1e200, 0.0, 0.0, 1e200),
    (1e-200, 0.0, 0.0, 0.0),
    quat_from_axis_angle((1.0, 0.0, 0.0), 90.0),
    quat_from_axis_angle((1.0, 0.0, 0.0), -90.0),
    (0.0, 0.0, 0.0, -3.0),
]


def frame_state(i: int) -> tuple[RigState, bool, float]:
    """Frame i's rig state (random but fixed by i): poses valid or not, unit and special
    quaternions, the origin's yaw, trigger, jump and stick moves."""
    rnd = random.Random(i)

    def q():
        if rnd.random() < 0.15:
            return rnd.choice(SPECIAL_QUATS)
        return tuple(rnd.gauss(0.0, 1.0) for _ in range(4))

    head = Pose((0.0, 1.6, 0.0), q(), True, rnd.random() > 0.15, True, True)
    aim = Pose((0.2, 1.2, -0.3), q(), True, rnd.random() > 0.3, True, True)
    origin = Origin(0.0, 0.0, rnd.uniform(-180.0, 180.0))
    move = (0.0, 0.0) if rnd.random() < 0.4 else (rnd.uniform(-3.0, 3.0), rnd.uniform(-3.0, 3.0))
    controls = Controls(trigger_right=rnd.random(), jump=rnd.random() < 0.2)
    return rig_state(head, aim, origin, origin.trig(), controls, move), rnd.random() > 0.1, 2.0


class PoseRig(LinkRig):
    """A Rig driven as Q3Sink drives its link: each frame's rig state (frame_state) through
    q3_intent and send_input (`pose` False), or through send_pose while the pump is armed."""

    def __init__(self, pose: bool) -> None:
        super().__init__(fast=True)
        self.pose = pose
        self.pose_ticks = 0
        self.history: dict = {}
        self.sent_cmds: list = []  # (cmd time, angles) of send_pose's ticks

    def give(self, angles, forward, right, up, buttons, weapon, head) -> None:
        self.frame += 1

    def poll(self, now: float) -> None:
        state, vr, speed = frame_state(self.frame)
        fast = self.client.send_input
        if self.pose and fast is not None:
            if self.unread:
                self.unread = False
                self.client.receive(now)
            fast = self.client.send_input  # (the receive may re-arm it)
        if self.pose and fast is not None:
            frame, trig, controls = state.frame, state.trig, state.frame.controls
            r = fast.__self__.send_pose(
                now,
                frame.head,
                frame.right_aim,
                trig[4],
                trig[5],
                state.origin.yaw,
                controls.trigger_right,
                controls.jump,
                *state.move_world,
                speed,
                vr,
                self.history,
                (1, 2, 3),
            )
            if r.__class__ is tuple:
                self.pose_ticks += 1
                self.unread = r[4]
                self.sent_cmds.append((r[3], r[5]))
                want = python_intent(state, vr, speed)
                assert bits(r[5:11]) == bits((want[0], want[1], *want[2:]))
                return
        i = q3_intent(state, state.frame.controls, vr, speed)
        self.given = (i.angles, i.forwardmove, i.rightmove, i.upmove, i.user_buttons, 0, i.head)
        super().poll(now)


@native
def test_a_scripted_session_through_send_pose_equals_q3_intent_and_send_input():
    a, b = PoseRig(pose=False), PoseRig(pose=True)
    a.stepped = b.stepped = "link"
    older = [(-1000 + k, ((0.0, 0.0, 0.0), (0, 0, 0))) for k in range(SENT_LIMIT)]  # a full history before
    b.history.update(older)
    try:
        with pure_python_send():
            scenario(a, frames())
            scenario(b, frames())
        assert len(a.wire.log) == len(b.wire.log) > 150
        for i, (x, y) in enumerate(zip(a.wire.log, b.wire.log)):
            assert x == y, f"datagram {i} differs"
        b.client.sync()
        assert end_state(a) == end_state(b)
        assert a.core._input == b.core._input
        assert a.pose_ticks == 0 and b.pose_ticks > 100 and a.fast_ticks > 100
        # the history: Q3Link.send's rule on each tick's cmd time → (angles, delta) (a map change
        # restarts the cmd times: a key seen again keeps its place), the oldest dropped past SENT_LIMIT
        want = dict(older)
        for t, angles in b.sent_cmds:
            want[t] = (angles, (1, 2, 3))
            if len(want) > SENT_LIMIT:
                del want[next(iter(want))]
        assert list(b.history.items()) == list(want.items())
    finally:
        a.close()
        b.close()


class SinkRig(PoseRig):
    """The same frames through Q3Sink.send and Q3Sink.poll as the frame loop calls them (send from
    send_at on, poll from poll_at on), with a real Q3Link whose client is the rig's: in game the
    sink calls the pump's send_pose itself (Q3Link.pose_tick), else q3_intent and Q3Link.send."""

    def __init__(self) -> None:
        super().__init__(pose=False)
        # the link's own client goes to a socket nobody reads, then gives way to the rig's
        self.hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.hole.bind(("127.0.0.1", 0))
        host, port = self.hole.getsockname()
        link = self.link = Q3Link(host, port)
        link.client.close(time.perf_counter())
        link.client = self.client
        link._counters = self.core.counters
        link._update_due()
        self.sink = Q3Sink(link=link)
        self.sends = 0

    def poll(self, now: float) -> None:
        state, vr, speed = frame_state(self.frame)
        sink = self.sink
        sink.vr, sink.move_speed = vr, speed
        client = self.client  # the link's calls give the core its input (the scenario's go to give)
        client.set_input = client.core.set_input if client._pump is None else client._set_input_pumped
        if now >= sink.poll_at:
            sink.poll(now)
        if now >= sink.send_at and sink.send(state, state.frame, now) is not None:
            self.sends += 1
        client.set_input = self.give

    def close(self) -> None:
        super().close()
        self.hole.close()


@native
def test_a_scripted_session_through_the_sink_equals_q3_intent_and_send_input():
    """The sink's own call of the pump (no Q3Link.send_pose in between) puts the same bytes on the
    wire; the meter counts every datagram of the sink's sends; the history keeps each tick's cmd."""
    a, b = PoseRig(pose=False), SinkRig()
    a.stepped = b.stepped = "link"
    try:
        with pure_python_send():
            scenario(a, frames())
            scenario(b, frames())
        assert len(a.wire.log) == len(b.wire.log) > 150
        for i, (x, y) in enumerate(zip(a.wire.log, b.wire.log)):
            assert x == y, f"datagram {i} differs"
        sink, link = b.sink, b.link
        assert sink._pose_tick is not None  # the pump's send_pose was armed and used
        b.client.sync()
        assert b.client.native_ticks > 100
        assert sink.meter.total_messages == b.sends > 150  # the ticks the frames left went in
        assert sink.meter.total_bytes == sum(map(len, b.wire.log[-b.sends :]))
        assert sink._ticks_in == sink._ticks_out
        assert SENT_HISTORY < len(link.sent) <= SENT_HISTORY + SENT_TRIM or len(link.sent) <= SENT_HISTORY
        assert link.last_cmd_time in link.sent
        # poll() trims the history back to SENT_HISTORY, oldest first, once it holds SENT_TRIM more
        kept = list(link.sent.items())
        for k in range(SENT_HISTORY + SENT_TRIM - len(kept)):
            link.sent[10**9 + k] = ((0.0, 0.0, 0.0), (0, 0, 0))
        full = list(link.sent.items())
        link.poll(frames()[-1] + 1.0)
        assert list(link.sent.items()) == full  # not past SENT_HISTORY + SENT_TRIM: left alone
        link.sent[2 * 10**9] = ((1.0, 2.0, 3.0), (0, 0, 0))
        link.poll(frames()[-1] + 1.0)
        assert list(link.sent.items()) == (full + [(2 * 10**9, ((1.0, 2.0, 3.0), (0, 0, 0)))])[-SENT_HISTORY:]
    finally:
        a.close()
        b.close()


def test_the_meter_takes_in_the_ticks_the_frames_left():
    """The ticks send() leaves in the ring reach the meter in order when it is read, at a poll, or
    at once when the ring is full (nothing read it for TICK_RING ticks): none lost, none twice."""
    from headcast.app.sinks.q3 import sink as sink_module

    sink = Q3Sink()
    ring = sink_module.TICK_RING
    for k in range(2 * ring + 5):  # as send() stores them (the ring's rule, full included)
        i = sink._ticks_in
        sink._ticks[i] = (10 + k % 3, 100.0 + k * 0.01)
        i = i + 1 if i + 1 < ring else 0
        sink._ticks_in = i
        if i == sink._ticks_out:
            sink._take_ticks(full=True)
    meter = sink.meter
    assert meter.total_messages == 2 * ring + 5
    assert meter.total_bytes == sum(10 + k % 3 for k in range(2 * ring + 5))
    assert meter.last_time == pytest.approx(100.0 + (2 * ring + 4) * 0.01)
    assert sink.meter.total_messages == 2 * ring + 5  # read again: nothing taken twice
