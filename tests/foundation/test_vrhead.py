"""Quake 3 VR head codec against ioq3's vectors, GoldSrc anglemod and the seed's float formulas.

The float32 reference formulas here use numpy.float32 — a different mechanism from the module's
struct-based rounding — so a mistake in one shows up against the other. Decodes are checked for
both receivers: a native build (the C as gcc compiles it) and Trinity's QVM (q3lcc's folded
constants, as its .asm output shows them).
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from headcast.netcode.q3.vrhead import (
    DISPLAY_LIMITS,
    EF_VR_PLAYER,
    HeadSmoother,
    Receiver,
    angle2short,
    clamp_display,
    deg_from_stat,
    pack7,
    pack_head,
    roll_short,
    short2angle,
    stat_from_deg,
    unpack7,
    unpack_head,
)

from support import VECTORS_FILE

F = np.float32
TABLE = json.loads(VECTORS_FILE.read_text())["angle2short"]["table"]


def _from_hex(h: str) -> float:
    return struct.unpack(">f", bytes.fromhex(h))[0]


def gs_anglemod_int(x: float) -> int:
    """GoldSrc pm_math.c anglemod's integer: the float promoted, times a double constant, truncated."""
    return int(x * (65536 / 360.0)) & 65535


def ref_pack7(v: float, limit: float) -> int:
    x = F(v)
    x = F(-limit) if x < F(-limit) else F(limit) if x > F(limit) else x
    return int(F(F(F(x + F(90)) * F(127)) / F(180))) & 0x7F


def ref_unpack7(p: int) -> float:
    """A native build: `(p * 180.0f / 127.0f) - 90.0f`, two float operations then the subtraction."""
    return float(F(F(F(p) * F(180)) / F(127)) - F(90))


# q3lcc's .asm for that line: CVIF4, CNSTF4 1068853974, MULF4, CNSTF4 1119092736 (90.0), SUBF4.
QVM_FACTOR = np.array([1068853974], dtype=np.uint32).view(np.float32)[0]


def ref_unpack7_qvm(p: int) -> float:
    return float(F(F(p) * QVM_FACTOR) - F(90))


# --- ANGLE2SHORT ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", TABLE, ids=[e["angle_f32_hex"] for e in TABLE])
def test_angle2short_matches_ioq3_table(entry):
    x = _from_hex(entry["angle_f32_hex"])
    assert angle2short(x) == entry["q3"]
    assert math.isclose(short2angle(entry["q3"]), entry["q3_back"], rel_tol=1e-8, abs_tol=1e-12)
    # GoldSrc anglemod gives the same integer for every vector (docs/protocols/quake3.md#anglemod)
    assert gs_anglemod_int(x) == entry["gs_int"] == entry["q3"]
    assert math.isclose(short2angle(angle2short(x)), entry["gs_anglemod"], rel_tol=1e-8, abs_tol=1e-12)


def test_angle2short_table_has_the_documented_cases():
    # the non-rounding and negative-truncation cases of docs/protocols/quake3.md#anglemod must be in what we test
    by_angle = {round(e["angle"], 4): e["q3"] for e in TABLE}
    assert by_angle[0.01] == 1 and by_angle[-0.5] == 65445 and by_angle[-12.3456] == 63289
    assert by_angle[-0.001] == 0


def test_angle2short_equals_goldsrc_anglemod_on_every_unit_and_its_float_neighbours():
    """docs/protocols/quake3.md#anglemod: each multiple of 360/65536 in [−720, 720] and two f32 neighbours each side."""
    units = np.arange(-131072, 131073, dtype=np.int64)
    base = (units * (360 / 65536)).astype(np.float32)
    cands = [base]
    up = down = base
    for _ in range(2):
        up = np.nextafter(up, F(np.inf))
        down = np.nextafter(down, F(-np.inf))
        cands += [up, down]
    xs = np.concatenate(cands)
    assert len(xs) == 1_310_725
    want = (np.trunc(xs.astype(np.float64) * (65536 / 360.0)).astype(np.int64)) & 65535
    got = np.fromiter((angle2short(x) for x in xs.tolist()), dtype=np.int64, count=len(xs))
    assert int(np.count_nonzero(got != want)) == 0


def test_angle2short_truncates_and_rejects_non_finite():
    assert angle2short(359.9973) == 65535  # rounding would give 0
    assert angle2short(-1.0) == 65354
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            angle2short(bad)


# --- 7-bit head angles ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "v,want",
    [
        (80.0, 119),
        (80.0001, 119),
        (1e9, 119),
        (90.0, 119),
        (180.0, 119),
        (-80.0, 7),
        (-80.0001, 7),
        (-1e9, 7),
        (-90.0, 7),
        (-180.0, 7),
        (79.99999, 119),
        (0.0, 63),
        (30.0, 84),
        (57.4016, 104),
        (-0.0, 63),
    ],
)
def test_pack7_clamp_edges(v, want):
    assert pack7(v, 80.0) == want == ref_pack7(v, 80.0)


def test_pack7_sweep_matches_the_float_formula():
    for v in np.linspace(-100.0, 100.0, 20001).tolist():
        assert pack7(v, 80.0) == ref_pack7(v, 80.0), v


def test_pack7_is_float32_arithmetic_not_double():
    # (v + 90)·127/180 lands exactly on the integer in float but just below it in double
    for v, want in [(-68.74016, 15), (10.62992, 71), (50.31496, 99), (71.5748, 114)]:
        x = float(F(v))
        assert int((x + 90) * 127 / 180) == want - 1
        assert pack7(x, 80.0) == want


@settings(deadline=None)
@given(st.floats(-200, 200, allow_nan=False))
def test_pack7_property_against_float_formula(v):
    assert pack7(v, 80.0) == ref_pack7(v, 80.0)


@pytest.mark.parametrize("p", range(128))
def test_unpack7_formula_every_code(p):
    assert unpack7(p, Receiver.NATIVE) == ref_unpack7(p)
    assert unpack7(p, Receiver.QVM) == unpack7(p) == ref_unpack7_qvm(p)  # the QVM is the default


def test_reference_decode_examples():
    assert abs(unpack7(84) - 29.055) < 1e-3 and stat_from_deg(unpack7(84)) == 5289
    assert abs(unpack7(104) - 57.4016) < 1e-4
    assert pack7(0.0, 80.0) == 63 and abs(unpack7(63) - (-0.709)) < 1e-3


# --- buttons -------------------------------------------------------------------------------


def test_pack_head_layout_and_user_bits():
    b = pack_head(0xFFFFFFFF, 0.0, 30.0, 0.0)
    assert b & 0xFFF == 0xFFF
    assert (b >> 12) & 0x7F == 63 and (b >> 19) & 0x7F == 84
    assert b >> 26 == 0
    # +button12..14 must never reach the head bits
    assert pack_head(1 << 12 | 1 << 13 | 1 << 14 | 1, 0.0, 0.0, 0.0) == (1 | 63 << 12 | 63 << 19)


@pytest.mark.parametrize(
    "head,weapon,offset_code",
    [
        (170.0, -170.0, ref_pack7(-20.0, 80.0)),  # AngleSubtract wraps: offset −20
        (-170.0, 170.0, ref_pack7(20.0, 80.0)),
        (100.0, 0.0, 119),
        (-100.0, 0.0, 7),  # clamped at ±80
        (45.0, 45.0, 63),
        (405.0, 45.0, 63),
        (720.0 + 30.0, 0.0, 84),
    ],
)
def test_pack_head_yaw_offset(head, weapon, offset_code):
    assert (pack_head(0, 0.0, head, weapon) >> 19) & 0x7F == offset_code


@settings(deadline=None)
@given(st.integers(0, 0xFFFFFFFF), st.floats(-500, 500), st.floats(-1e4, 1e4), st.floats(-1e4, 1e4))
def test_pack_head_properties(user, pitch, head_yaw, weapon_yaw):
    b = pack_head(user, pitch, head_yaw, weapon_yaw)
    assert 0 <= b < 1 << 26
    assert b & 0xFFF == user & 0xFFF
    assert b & 0x03FFF000  # detection rule always sees head data
    assert 7 <= (b >> 12) & 0x7F <= 119 and 7 <= (b >> 19) & 0x7F <= 119
    assert (b >> 12) & 0x7F == ref_pack7(pitch, 80.0)
    got = unpack_head(b, Receiver.NATIVE)
    assert got is not None and got[0] == ref_unpack7((b >> 12) & 0x7F)
    assert unpack_head(b) == (ref_unpack7_qvm((b >> 12) & 0x7F), ref_unpack7_qvm((b >> 19) & 0x7F))


def test_pack_head_rejects_non_finite():
    with pytest.raises(ValueError):
        pack_head(0, math.nan, 0.0, 0.0)
    with pytest.raises(ValueError):
        pack_head(0, 0.0, math.inf, 0.0)


@pytest.mark.parametrize(
    "buttons,want",
    [
        (0, None),
        (0xFFF, None),
        (0xFC000FFF, None),  # only user/reserved bits: not VR
        (1 << 12, (ref_unpack7(1), -90.0)),
        (1 << 25, (-90.0, ref_unpack7(64))),
        (104 << 12 | 84 << 19 | 1, (ref_unpack7(104), ref_unpack7(84))),
        (-1, (90.0, 90.0)),  # a negative int32 still decodes bits 12–25
    ],
)
def test_unpack_head_detection_rule(buttons, want):
    assert unpack_head(buttons, Receiver.NATIVE) == want
    assert (unpack_head(buttons) is None) is (want is None)


# --- roll, stats -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "roll,want",
    [
        (0.0, 0),
        (30.0, 5461),
        (60.0, 10922),
        (60.5, 10922),
        (1e6, 10922),
        (-60.0, 54614),
        (-61.0, 54614),
        (-30.0, 60075),
        (-0.001, 0),
    ],
)
def test_roll_short_clamps_then_truncates(roll, want):
    assert roll_short(roll) == want


def test_roll_30_degrees_is_what_trinity_sees():
    # docs/protocols/quake3.md#vr-head: apos.trBase[2] = 29 for a 30° roll (SHORT2ANGLE then SnapVector truncation)
    assert int(short2angle(roll_short(30.0))) == 29


def _c_short(v: int) -> int:
    return int(np.array([v], dtype=np.int64).astype(np.int16)[0])


@pytest.mark.parametrize("deg", [0.0, 29.055, -90.0, 90.0, 179.9, 180.0, 200.0, -200.0, 359.0, -0.004])
def test_stat_from_deg_is_a_c_short(deg):
    want = _c_short(int(F(F(deg) * F(182.04))))
    assert stat_from_deg(deg) == want
    assert -32768 <= stat_from_deg(deg) <= 32767


def test_stat_wraps_past_180_degrees():
    assert stat_from_deg(200.0) == 36408 - 65536


QVM_STAT_FACTOR = np.array([1001652512], dtype=np.uint32).view(np.float32)[0]  # q3lcc: / 182.04f → * this


@pytest.mark.parametrize("p", range(128))
def test_stat_chain_for_every_packed_code(p):
    stat = stat_from_deg(unpack7(p, Receiver.NATIVE))
    assert stat == int(F(F(ref_unpack7(p)) * F(182.04)))
    assert stat == stat_from_deg(unpack7(p, Receiver.QVM))  # one multiply: both builds agree
    assert deg_from_stat(stat, Receiver.NATIVE) == float(F(F(stat) / F(182.04)))
    assert deg_from_stat(stat, Receiver.QVM) == deg_from_stat(stat) == float(F(F(stat) * QVM_STAT_FACTOR))
    assert abs(deg_from_stat(stat) - unpack7(p)) < 1 / 182.0


def test_ef_vr_player():
    assert EF_VR_PLAYER == 0x400


# --- receiver helpers --------------------------------------------------------------------------


def test_display_limits_edges():
    assert DISPLAY_LIMITS == (80.0, 80.0, 60.0)
    assert clamp_display(80.0, -80.0, 60.0) == (80.0, -80.0, 60.0)
    assert clamp_display(80.5, -95.0, -61.0) == (80.0, -80.0, -60.0)
    assert clamp_display(-12.0, 3.0, 4.0) == (-12.0, 3.0, 4.0)


def test_smoother_alpha_from_dt():
    s = HeadSmoother()
    assert s.update(10.0, 0.0, 0.0, 0.0) == (0.0, 0.0, 0.0)  # first sample is taken as is
    # dt = 30 ms = tau → alpha 1/2
    p, y, r = s.update(10.030, 10.0, -20.0, 4.0)
    assert (p, y, r) == pytest.approx((5.0, -10.0, 2.0), abs=1e-9)
    # dt = 10 ms → alpha 10/40
    p, _, _ = s.update(10.040, 13.0, -10.0, 2.0)
    assert p == pytest.approx(5.0 + 0.25 * 8.0, abs=1e-9)


def test_smoother_holds_when_clock_stalls_or_goes_back():
    s = HeadSmoother()
    s.update(1.0, 0.0, 0.0)
    assert s.update(1.0, 50.0, 50.0) == (0.0, 0.0, 0.0)
    assert s.update(0.5, 50.0, 50.0) == (0.0, 0.0, 0.0)
    p, _, _ = s.update(1.030, 50.0, 50.0)  # dt measured from 1.0, not 0.5
    assert p == pytest.approx(25.0, abs=1e-9)


def test_smoother_takes_the_short_way_across_180():
    s = HeadSmoother()
    s.update(0.0, 0.0, 170.0)
    _, y, _ = s.update(0.030, 0.0, -170.0)
    assert abs(abs(y) - 180.0) < 1e-9


def test_smoother_converges_and_custom_tau():
    s = HeadSmoother(tau_ms=10.0)
    s.update(0.0, 0.0, 0.0)
    out = (0.0, 0.0, 0.0)
    for i in range(1, 200):
        out = s.update(i / 90.0, unpack7(84), 0.0, 0.0)
    assert out[0] == pytest.approx(unpack7(84), abs=1e-6)
    s.reset()
    assert s.update(5.0, 1.0, 2.0, 3.0) == (1.0, 2.0, 3.0)
