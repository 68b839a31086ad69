"""The mirror's Quake 3 far side equals what a decoding server computes — also where head and
weapon are about 180°, 360° or 540° apart, where double and float AngleSubtract part ways.

The path under test is the application's own: `Q3Link.send` hands the intent to a real
`Q3ClientCore`, whose usercmd datagrams a scripted VR-aware server (tests/q3/test_client_core.py)
reads with 32-bit buttons; the server mod's decode is then done here in numpy.float32 with the
constants each build runs (Trinity's QVM: q3lcc's folded 180/127; a native build: the C as
written). `Q3Sink.far_side` — what the mirror and the HUD show — must give the same numbers, bit
for bit, and the roll our playerState carries and the one others see (SnapVector) must follow
from the roll short on the wire.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import headcast.app.sinks.q3.link as q3_link
from headcast.app.sinks.q3.mapping import Q3Intent
from headcast.app.sinks.q3.sink import Q3Sink
from headcast.netcode.pose import angle_subtract
from headcast.netcode.q3.delta import PlayerState
from headcast.netcode.q3.vrhead import Receiver, pack_head, yaw_offset

from q3.test_client_core import ScriptedQ3Client

F = np.float32
QVM_180_127 = np.array([0x3FB56AD6], dtype=np.uint32).view(np.float32)[0]  # q3lcc: CNSTF4 1068853974
EXAMPLES = 400


def server_decode(buttons: int, receiver: Receiver) -> tuple[float, float]:
    """Trinity g_active.c ClientThink_real: `(packed * 180.0f / 127.0f) - 90.0f` for bits 12–18 / 19–25."""
    out = []
    for shift in (12, 19):
        p = F((buttons >> shift) & 0x7F)
        v = F(p * QVM_180_127) if receiver is Receiver.QVM else F(F(p * F(180)) / F(127))
        out.append(float(F(v - F(90))))
    return out[0], out[1]


def c_client_buttons(pitch: float, head_yaw: float, weapon_yaw: float) -> int:
    """The seed's sender in numpy.float32: Com_Clamp, AngleSubtract's loops, the 7-bit packing."""

    def pack7(v):
        v = min(max(F(v), F(-80)), F(80))
        return int(F(F(F(v + F(90)) * F(127)) / F(180))) & 0x7F

    a = F(F(head_yaw) - F(weapon_yaw))
    while a > F(180):
        a = F(a - F(360))
    while a < F(-180):
        a = F(a + F(360))
    return pack7(pitch) << 12 | pack7(a) << 19


class ScriptedClient(ScriptedQ3Client):
    """Q3Client under Q3Link: a real Q3ClientCore talking to the scripted VR server."""

    def wire_cmd(self, now: float):
        """The newest usercmd the server read from our datagrams, then a snapshot back (keeps us in)."""
        msgs = self.server.read(now, button_bits=32)
        cmd = [c for m in msgs for c in m.cmds][-1]
        self.server_time += 20
        self.server.snapshot(now, self.server_time, PlayerState.from_dict({"commandTime": cmd.server_time}))
        return cmd


@pytest.fixture(scope="module")
def rig():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(q3_link, "Q3Client", ScriptedClient)
        link = q3_link.Q3Link("127.0.0.1", 27960, vr=True, clock=lambda: 0.0)
    assert link.client.core.status.vr_active
    sinks = {r: Q3Sink(link=link, receiver=r) for r in Receiver}
    return link, sinks, [0.0]


def intent_of(pitch: float, head_yaw: float, weapon_yaw: float, roll: float) -> Q3Intent:
    roll = max(-60.0, min(60.0, roll))
    return Q3Intent((-5.0, weapon_yaw, roll), 0, 0, 0, 0, (pitch, head_yaw, roll), True)


def check_far_side(rig, pitch: float, head_yaw: float, weapon_yaw: float, roll: float) -> None:
    link, sinks, clock = rig
    clock[0] += 0.02  # > 1/60 s: the core's next command tick falls due
    intent = intent_of(pitch, head_yaw, weapon_yaw, roll)
    link.send(intent, clock[0])
    cmd = link.client.wire_cmd(clock[0])
    assert cmd.buttons == c_client_buttons(pitch, head_yaw, weapon_yaw)  # the C client's bits
    view_roll = (cmd.angles[2] - 65536 if cmd.angles[2] >= 32768 else cmd.angles[2]) * (360.0 / 65536)
    for receiver, sink in sinks.items():
        sink.intent = intent
        far = sink.far_side
        assert (far.pitch, far.yaw_offset) == server_decode(cmd.buttons, receiver), (receiver, far)
        assert far.receiver is receiver
        assert far.roll_own == float(F(view_roll)) and far.roll_others == float(np.trunc(F(view_roll)))


def near_wrap(draw) -> tuple[float, float]:
    """(head yaw, weapon yaw) with head − weapon within a few ulps … a millidegree of ±180/360/540."""
    weapon = draw(st.floats(-720.0, 720.0, allow_nan=False, width=32))
    k = draw(st.sampled_from((-3, -2, -1, 1, 2, 3)))
    head = float(F(weapon + 180.0 * k))
    ulps = draw(st.integers(-6, 6))
    head = float(np.nextafter(F(head), F(math.copysign(math.inf, ulps)))) if ulps else head
    for _ in range(abs(ulps) - 1):
        head = float(np.nextafter(F(head), F(math.copysign(math.inf, ulps))))
    return head + draw(st.sampled_from((0.0, 0.0, 1e-6, -1e-6, 1e-3, -1e-3))), weapon


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.floats(-100.0, 100.0), st.floats(-90.0, 90.0))
def test_far_side_equals_the_servers_decode_near_the_wrap(rig, data, pitch, roll):
    head, weapon = data.draw(st.composite(lambda draw: near_wrap(draw))())
    check_far_side(rig, pitch, head, weapon, roll)


@pytest.mark.parametrize(
    "head,weapon",
    [
        (701.8318128183577, 161.83181133773468),  # the case: double +78.66°, the server −80.08°
        (180.0, 0.0),
        (-180.0, 0.0),
        (0.0, 180.0),
        (540.0, 0.0),
        (-540.0, 0.0),
        (360.0, 0.0),
        (179.99999, -0.00001),
        (-179.99999, 0.00001),
        (90.0, -90.0),
        (100.0, -80.0),
    ],
)
def test_far_side_at_the_edges(rig, head, weapon):
    check_far_side(rig, 12.5, head, weapon, 30.0)


def test_the_core_gets_the_usercmds_head_not_the_tracked_one(rig):
    """Q3Intent.head is the head as tracked (pitch, yaw, roll); Q3ClientCore.set_input takes the
    usercmd's (pitch, yaw offset from the view yaw), vrhead.WireHead. Q3Link converts (100° of head
    yaw over a 90° view is a 10° offset), and the core refuses a tracked head outright instead of
    reading its absolute yaw as an offset (the two were one variable in Q3Link.send, typed as both)."""
    link, _, clock = rig
    core = link.client.core
    with pytest.raises(ValueError):
        core.set_input((-5.0, 90.0, 0.0), head=(5.0, 100.0, 0.0))
    link.send(intent_of(5.0, 100.0, 90.0, 0.0), clock[0])
    assert core._input[8] == (5.0, 10.0)
    link.send(Q3Intent((-5.0, 90.0, 0.0), 0, 0, 0, 0, None, True), clock[0])  # tracking lost: no head
    assert core._input[8] is None


def c_client_yaw_codes(head_yaw: np.ndarray, weapon_yaw: np.ndarray) -> np.ndarray:
    """`c_client_buttons`' yaw code for arrays (float32 throughout, the loops as masked steps)."""
    a = head_yaw.astype(F) - weapon_yaw.astype(F)
    while (hi := a > F(180)).any():
        a = np.where(hi, a - F(360), a)
    while (lo := a < F(-180)).any():
        a = np.where(lo, a + F(360), a)
    v = np.clip(a, F(-80), F(80))
    return (((v + F(90)) * F(127) / F(180)).astype(np.int32)) & 0x7F


def test_the_sweep_disagrees_in_double_and_never_in_float():
    """200,000 random pairs near ±180/360/540°: the double AngleSubtract (what the link used) packs
    thousands differently from the C client; the float one, none."""
    rng = np.random.default_rng(13)
    n = 200_000
    w = rng.uniform(-180.0, 180.0, n)
    h = w + rng.choice((-540, -360, -180, 180, 360, 540), n) + rng.uniform(-1e-4, 1e-4, n)
    want = c_client_yaw_codes(h, w).tolist()
    hs, ws = h.tolist(), w.tolist()
    float_wrong = sum(pack_head(0, 0.0, yaw_offset(a, b), 0.0) >> 19 != c for a, b, c in zip(hs, ws, want))
    double_wrong = sum(pack_head(0, 0.0, angle_subtract(a, b), 0.0) >> 19 != c for a, b, c in zip(hs, ws, want))
    assert float_wrong == 0
    assert double_wrong > n // 50, double_wrong  # the region the property test draws from is the hard one
