"""Sauerbraten N_POS: the seed's example with the game's own numbers, hand-built records, properties, fuzz."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from headcast.netcode.sauer.npos import (
    EYEHEIGHT,
    PHYS_FALL,
    NPos,
    decode_npos,
    decode_npos_packet,
    encode_npos,
    make_npos,
    normalize_yaw,
    pack_dir,
    vec_to_yaw_pitch,
)
from headcast.netcode.sauer.wire import Reader, SauerDecodeError, put_int, put_uint

from support import LONG

FUZZ_EXAMPLES = 50_000 if LONG else 1500
EXAMPLE = bytes([4, 1, 17, 16, 11, 39, 102, 35, 207, 27, 134, 112, 90, 132, 151, 126, 35])


def _vec(yaw_deg, pitch_deg, mag):
    y, p = math.radians(yaw_deg), math.radians(pitch_deg)
    return (-math.sin(y) * math.cos(p) * mag, math.cos(y) * math.cos(p) * mag, math.sin(p) * mag)


# --- the seed's worked example (docs/protocols/sauerbraten.md#errata) -------------------------------------


def test_example_decodes_with_the_games_values():
    rec, end = decode_npos(EXAMPLE)
    assert end == len(EXAMPLE)
    assert (rec.cn, rec.physstate, rec.lifebit, rec.move, rec.strafe) == (1, PHYS_FALL, 0, 1, 0)
    assert rec.position == (624.6875, 566.375, 444.9375)
    assert rec.eye() == (624.6875, 566.375, 444.9375 + 14)
    assert (rec.dir, rec.yaw, rec.pitch, rec.roll_deg) == (28806, 6, -10, 0)  # not −9.984
    assert (rec.vel, rec.veldir, dir_parts(rec.veldir)) == (132, 32407, (7, 0))  # not 0.019
    assert (rec.fall, rec.falldir) == (35, None)  # magnitude only: no direction bytes
    assert rec.falling == (0.0, 0.0, -35.0)
    vx, vy, vz = rec.velocity
    assert vz == 0.0 and math.isclose(math.hypot(vx, vy), 132.0)
    assert math.isclose(math.degrees(-math.atan2(vx, vy)), 7.0)


def dir_parts(d):
    return d % 360, min(max(d // 360, 0), 180) - 90


def test_example_reencodes_byte_for_byte():
    assert encode_npos(decode_npos(EXAMPLE)[0]) == EXAMPLE


def test_example_from_the_players_float_state():
    # truncation everywhere: 6.9° → 6, −9.7° → int(80.3) = 80 → −10, roll 0.4 → int(90.4) = 90
    rec = make_npos(
        1,
        eye=(624.69, 566.38, 444.9375 + EYEHEIGHT + 0.03),
        yaw=6.9,
        pitch=-9.7,
        roll=0.4,
        vel=_vec(7.5, 0.2, 132.6),
        falling=(0.0, 0.0, -35.5),
        physstate=PHYS_FALL,
        lifesequence=2,
        move=1,
        strafe=0,
    )
    assert encode_npos(rec) == EXAMPLE


# --- the game's own arithmetic -----------------------------------------------------------------
# Inputs (float hex: cn physstate lifesequence move strafe gameclip, eye xyz, yaw pitch roll,
# vel xyz, falling xyz) and the bytes client.cpp sendposition wrote for them, compiled with the
# game's src/Makefile flags (g++ 12 -O3 -ffast-math, x86-64, glibc) in a private harness.
# Chosen where a build without -ffast-math would differ (whole-degree directions), where a
# vector's float magnitude underflows (NaN pitch), and for the yaw normalisation.
GAME_SENDPOSITION = [
    (
        "0 6 7 0 0 0 0x1.3818860000000p+12 -0x1.1b40000000000p+12 0x1.3580000000000p+8 0x1.9904180000000p+4 -0x1.4c6e9a0000000p+6 0x1.a820c40000000p+1 -0x1.c34de20000000p+5 0x1.f539620000000p+5 0x1.dbb45c0000000p+3 0x1.9adaa80000000p+5 0x1.6634640000000p+7 0x1.1ee8600000000p+8",
        "04000e73183801c0e4fe781289085d55ca8c560110d0",
    ),
    (
        "200 6 4 0 -1 1 0x1.4b80000000000p+10 0x1.9600000000000p+11 0x1.e4c0000000000p+6 -0x1.587df40000000p+5 0x1.29a4fa0000000p+3 -0x1.c800080000000p+1 -0x1.6bd0860000000p+6 -0x1.f4bf6e0000000p+6 -0x1.7e2cc80000000p+7 -0x1.c000000000000p+3 0x1.67fffa0000000p+8 0x1.a3fffc0000000p+2",
        "04c801c6f001e05200cbb306748c56f500366801fa7f",
    ),
    (
        "1 7 8 0 -1 0 0x1.4484c00000000p-100 -0x1.5940000000000p+10 0x0.0p+0 0x1.67fffa0000000p+8 0x1.6800000000000p+6 -0x1.2800000000000p+2 -0x1.52c4d20000000p+5 -0x1.1f99020000000p+4 0x1.1b5abc0000000p+6 0x0.0p+0 0x0.0p+0 -0x1.3930020000000p+4",
        "0401c7160000b0a9ff20ffff87fe555429cf13",
    ),
    (
        "0 5 7 0 1 0 -0x1.08c0000000000p+12 0x1.6800000000000p+6 -0x1.af7df40000000p+5 -0x1.5ab1b60000000p+9 -0x0.0p+0 -0x1.5800080000000p+1 0x1.2400000000000p+4 0x1.de08320000000p+3 -0x1.0c6f7a0000000p-20 -0x1.35eb5a0000000p+6 -0x1.071b1c0000000p+5 0x1.4a63ce0000000p+7",
        "04004d5540f7fea005c2fbffaa7e5717c67fb999d7",
    ),
    (
        "200 7 7 -1 -1 0 -0x1.0210000000000p+8 0x1.3254160000000p+12 -0x1.3b80000000000p+7 -0x1.c000140000000p+3 -0x1.7000000000000p+2 0x1.6800000000000p+6 0x1.338ef00000000p+7 0x1.1ecd860000000p+7 -0x1.03a8520000000p+8 0x1.20deba0000000p+8 -0x1.5164a20000000p+6 0x1.6cde0c0000000p+6",
        "04c801ff7fdfefff54320144f5ff7a77b44e01aa363a010e96",
    ),
    (
        "0 7 8 0 0 0 0x1.67fffa0000000p+8 0x1.989c4c0000000p+11 0x1.a1565a0000000p+10 -0x1.0c6f7a0000000p-20 0x0.0p+0 -0x1.0c070e0000000p+4 -0x1.df96ac0000000p+7 -0x1.2bae200000000p+7 0x1.051f120000000p+6 0x1.9afe060000000p+3 0x1.0baafa0000000p+5 -0x1.7574380000000p+6",
        "040007587f164ecc7567907e492201519164731d",
    ),
    (
        "200 6 8 1 1 1 -0x1.6800000000000p+6 -0x1.0000000000000p-1 -0x1.9c1f7c0000000p+7 -0x1.4f0a5e0000000p+6 0x1.2bc00e0000000p+6 0x1.0000000000000p-1 0x0.0p+0 0x0.0p+0 0x0.0p+0 -0x1.6f0a920000000p+7 0x1.c5421e0000000p+7 -0x1.4e7ac40000000p+6",
        "04c80156f70160fafff8ffff40f2ffb4e75a00907e2f013768",
    ),
    (
        "0 4 2 1 -1 0 -0x1.9500000000000p+6 0x1.07858c0000000p+11 0x1.20c0000000000p+7 0x1.e000000000000p+8 -0x1.f000000000000p+3 -0x1.7a00000000000p+6 0x1.d1b9740000000p+7 -0x1.0422d20000000p+2 -0x1.1f9acc0000000p+8 0x1.209b8a0000000p+7 0x0.0p+0 0x1.bffff00000000p+0",
        "0400d459acf9ffc283260888680072017d36909e7f",
    ),
    (
        "200 2 0 1 0 1 -0x1.fa1c660000000p+11 0x1.be02380000000p+10 0x1.9450ec0000000p+11 -0x1.4e00020000000p+4 0x1.daf6f00000000p+5 -0x1.1ffff60000000p+4 -0x1.4484c00000000p-100 0x0.0p+0 -0x1.4484c00000000p-100 0x1.017c420000000p+6 0x1.1d73f40000000p+5 -0x1.b476200000000p+6",
        "04c80112d101f202ff806f48c9dbd248005a0083932f",
    ),
    (
        "200 7 0 0 0 0 0x1.1090000000000p+8 -0x1.ddfac60000000p+10 0x1.1f40000000000p+10 -0x1.6800000000000p+6 -0x1.0000000000000p-1 0x1.0000000000000p+4 0x1.4484c00000000p-100 0x0.0p+0 0x0.0p+0 -0x1.23f8140000000p+8 -0x1.6dfffe0000000p+3 -0x1.ceb73a0000000p+6",
        "04c801077209118288fff046367e6a000e013a01fc5f",
    ),
    (
        "200 4 7 0 -1 1 0x1.8a40000000000p+11 0x1.ed00000000000p+6 -0x1.5179d60000000p+11 -0x0.0p+0 -0x1.7800020000000p+6 -0x1.4a00000000000p+6 0x1.9a79a40000000p+7 0x1.5dc5120000000p+6 0x1.4484c00000000p-100 0x1.2800020000000p+7 -0x1.79a8200000000p+7 -0x0.0p+0",
        "04c801ccd40120c5b4076456ff000007dfb67fef6b7f",
    ),
    (
        "128 2 5 -1 0 1 0x1.b7bdd00000000p+10 -0x1.10cc400000000p+12 0x1.0210000000000p+12 -0x1.438bc60000000p+9 -0x1.c9200c0000000p+4 -0x1.6800000000000p+6 0x0.0p+0 0x0.0p+0 0x0.0p+0 -0x1.6693f40000000p+7 -0x1.09fffe0000000p+3 -0x1.9600020000000p+7",
        "0480013af601ef6d34effe30010110560000907e0e01043a",
    ),
    (
        "0 2 5 -1 1 0 0x1.6e80000000000p+10 0x1.0371900000000p+12 0x1.5b2a0a0000000p+4 -0x1.0000000000000p-1 0x1.4484c00000000p-100 0x1.6020c40000000p+1 -0x1.4484c00000000p-100 -0x1.ffef9e0000000p+2 -0x1.5800080000000p+1 0x1.043e0c0000000p+6 -0x1.6c72840000000p+5 -0x1.0a94640000000p+6",
        "04007a52a05b7103017b00f77f5c088c64673b47",
    ),
]


@pytest.mark.parametrize("line,want", GAME_SENDPOSITION)
def test_make_npos_matches_the_games_sendposition(line, want):
    f = line.split()
    cn, phys, life, move, strafe, clip = map(int, f[:6])
    x = [float.fromhex(v) for v in f[6:]]
    rec = make_npos(
        cn,
        eye=tuple(x[0:3]),
        yaw=x[3],
        pitch=x[4],
        roll=x[5],
        vel=tuple(x[6:9]),
        falling=tuple(x[9:12]),
        physstate=phys,
        lifesequence=life,
        move=move,
        strafe=strafe,
        gameclip=bool(clip),
    )
    assert encode_npos(rec).hex() == want


# --- integer encodings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,hexbytes",
    [
        (0, "00"),
        (4, "04"),
        (127, "7f"),
        (-126, "82"),
        (-127, "8081ff"),
        (128, "808000"),
        (-128, "8080ff"),
        (32767, "80ff7f"),
        (-32768, "800080"),
        (32768, "8100800000"),
        (-32769, "81ff7fffff"),
    ],
)
def test_putint_getint(n, hexbytes):
    out = bytearray()
    put_int(out, n)
    assert out.hex() == hexbytes
    r = Reader(bytes(out))
    assert r.get_int("n") == n and r.remaining() == 0


@pytest.mark.parametrize(
    "n,hexbytes",
    [
        (0, "00"),
        (127, "7f"),
        (128, "8001"),
        (200, "c801"),
        (16383, "ff7f"),
        (16384, "808001"),
        ((1 << 21) - 1, "ffff7f"),
        (1 << 21, "80808001"),
        (-1, "ffffffff"),
        ((1 << 28) - 1, "ffffff7f"),
        (-(1 << 28), "80808080"),
    ],
)
def test_putuint_getuint(n, hexbytes):
    out = bytearray()
    put_uint(out, n)
    assert out.hex() == hexbytes
    r = Reader(bytes(out))
    assert r.get_uint("n") == n and r.remaining() == 0


@settings(deadline=None)
@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_putint_roundtrip(n):
    out = bytearray()
    put_int(out, n)
    assert Reader(bytes(out)).get_int("n") == n


@settings(deadline=None)
@given(st.integers(-(1 << 28), (1 << 28) - 1))
def test_putuint_roundtrip(n):
    out = bytearray()
    put_uint(out, n)
    assert Reader(bytes(out)).get_uint("n") == n


def test_put_out_of_range_is_refused():
    with pytest.raises(ValueError):
        put_uint(bytearray(), 1 << 28)
    with pytest.raises(ValueError):
        put_int(bytearray(), 1 << 31)


# --- direction words and the yaw quirk --------------------------------------------------------


@pytest.mark.parametrize(
    "yaw,pitch,want",
    [
        (0.0, 0.0, 90 * 360),
        (6.9, -9.7, 6 + 80 * 360),
        (359.99, 90.0, 359 + 180 * 360),
        (0.0, 95.0, 180 * 360),
        (0.0, -95.0, 0),
        (0.0, -89.5, 0),
        (0.0, 89.99, 179 * 360),
        (-0.5, 0.0, 360 + 90 * 360),  # the quirk: yaw 0 and pitch +1 on the receiver
        (-1.0, 0.0, 359 + 90 * 360),
        (-370.0, 0.0, 350 + 90 * 360),
        (725.0, 0.0, 5 + 90 * 360),
    ],
)
def test_pack_dir_c_truncation_and_remainder(yaw, pitch, want):
    assert pack_dir(yaw, pitch) == want


def test_quirk_decodes_as_pitch_plus_one():
    assert dir_parts(pack_dir(-0.5, 0.0)) == (0, 1)


@pytest.mark.parametrize(
    "yaw,want",
    [
        (0.0, 0.0),
        (-0.5, 359.5),
        (-1e-6, 0.0),
        (360.0, 0.0),
        (725.25, 5.25),
        (-725.25, 354.75),
    ],
)
def test_view_yaw_is_normalised_first(yaw, want):
    assert normalize_yaw(yaw) == pytest.approx(want, abs=1e-4)
    rec = make_npos(0, eye=(0, 0, 20), yaw=yaw, pitch=0.0, roll=0.0)
    assert rec.yaw == int(want) and rec.pitch == 0


def test_velocity_yaw_hits_the_quirk_like_the_game():
    # a velocity just right of straight +y: yaw = −atan2(x, y) ∈ (−1, 0)
    rec = make_npos(0, eye=(0, 0, 20), yaw=0.0, pitch=0.0, roll=0.0, vel=(0.01, 100.0, 0.0))
    assert rec.veldir == 360 + 90 * 360
    assert dir_parts(rec.veldir) == (0, 1)


def test_vec_to_yaw_pitch():
    assert vec_to_yaw_pitch((0.0, 0.0, 0.0)) == (0.0, 0.0)
    assert vec_to_yaw_pitch((-1.0, 0.0, 0.0)) == pytest.approx((90.0, 0.0), abs=1e-5)
    assert vec_to_yaw_pitch((0.0, 0.0, -5.0)) == pytest.approx((0.0, -90.0), abs=1e-5)


# --- hand-built records (field by field from the reference table) ------------------------------


def test_all_optional_bytes():
    rec = make_npos(
        200,
        eye=(-1.5, 4096.0, 4096.0 + EYEHEIGHT),
        yaw=90.0,
        pitch=0.0,
        roll=-30.0,
        vel=(0.0, 300.0, 0.0),
        falling=(0.0, 0.0, 300.0),
        physstate=PHYS_FALL,
        lifesequence=1,
        move=-1,
        strafe=-1,
        gameclip=True,
    )
    want = bytes(
        [
            0x04,
            0xC8,
            0x01,  # type, cn 200 (putuint: two bytes)
            0b11111001,  # FALL | life 1 << 3 | move 3 << 4 | strafe 3 << 6
            0xFF,
            0x01,  # flags: all 8 bits (x3 y3 z3 vel2 fall fall2 falldir gameclip) → two bytes
            0xE8,
            0xFF,
            0xFF,  # x −24
            0x00,
            0x00,
            0x01,  # y 65536
            0x00,
            0x00,
            0x01,  # z 65536 (feet)
            *((90 + 90 * 360).to_bytes(2, "little")),  # dir
            60,  # roll −30 + 90
            0x2C,
            0x01,  # vel 300
            *((0 + 90 * 360).to_bytes(2, "little")),  # veldir: +y is yaw 0
            0x2C,
            0x01,  # fall 300
            *((0 + 180 * 360).to_bytes(2, "little")),  # falldir: straight up
        ]
    )
    assert encode_npos(rec) == want
    back, end = decode_npos(want)
    assert end == len(want) and back == rec
    assert back.position == (-1.5, 4096.0, 4096.0)
    assert (back.move, back.strafe, back.gameclip, back.roll_deg) == (-1, -1, True, -30)
    assert back.falling == pytest.approx((0.0, 0.0, 300.0), abs=1e-9)


def test_two_records_in_one_packet():
    a = make_npos(3, eye=(10, 20, 30), yaw=10, pitch=5, roll=0)
    b = make_npos(4, eye=(-10, 20, 30), yaw=20, pitch=-5, roll=3, vel=(1, 2, 3))
    assert decode_npos_packet(encode_npos(a) + encode_npos(b)) == [a, b]
    assert decode_npos_packet(b"") == []


# --- properties ---------------------------------------------------------------------------------

coord = st.floats(-500_000.0, 500_000.0)
small = st.floats(-2000.0, 2000.0)
angle = st.floats(-1000.0, 1000.0)


@st.composite
def game_states(draw):
    return dict(
        cn=draw(st.integers(0, 300)),
        eye=(draw(coord), draw(coord), draw(coord)),
        yaw=draw(angle),
        pitch=draw(st.floats(-90.0, 90.0)),
        roll=draw(st.floats(-90.0, 90.0)),
        vel=(draw(small), draw(small), draw(small)),
        falling=draw(
            st.sampled_from([(0.0, 0.0, 0.0)])
            | st.tuples(small, small, small)
            | st.tuples(st.just(0.0), st.just(0.0), st.floats(-2000.0, 0.0))
        ),
        physstate=draw(st.integers(0, 7)),
        lifesequence=draw(st.integers(0, 1000)),
        move=draw(st.integers(-1, 1)),
        strafe=draw(st.integers(-1, 1)),
        gameclip=draw(st.booleans()),
    )


def _angle_between(a, b):
    na, nb = math.hypot(*a), math.hypot(*b)
    c = sum(x * y for x, y in zip(a, b)) / (na * nb)
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(game_states())
def test_decode_encode_matches_the_state_within_quantisation(s):
    rec = make_npos(**s)
    b = encode_npos(rec)
    back, end = decode_npos(b)
    assert end == len(b) and back == rec and encode_npos(back) == b
    # the game's floats: o is a float vector, feet z a float subtraction, then ·16 and truncation
    ex, ey, ez = (np.float32(c) for c in s["eye"])
    feet = (ex, ey, np.float32(ez - np.float32(EYEHEIGHT)))
    assert back.o == tuple(int(np.float32(c * np.float32(16))) for c in feet)
    for got, want in zip(back.position, feet):
        assert abs(got) <= abs(want) and abs(got - want) < 1 / 16
    yaw_err = (normalize_yaw(s["yaw"]) - back.yaw) % 360
    assert yaw_err < 1.0 + 1e-3 or yaw_err > 360 - 1e-3
    # pitch + 90 and roll + 90 are float sums: a tiny negative angle rounds up to 90 → 0
    assert -1e-5 <= s["pitch"] - back.pitch < 1.0 + 1e-4 or back.pitch == 90
    assert -1e-5 <= s["roll"] - back.roll_deg < 1.0 + 1e-4 or back.roll_deg == 90
    assert (back.physstate, back.lifebit, back.move, back.strafe, back.gameclip) == (
        s["physstate"],
        s["lifesequence"] & 1,
        s["move"],
        s["strafe"],
        s["gameclip"],
    )
    for vec, mag, got in ((s["vel"], back.vel, back.velocity), (s["falling"], back.fall, back.falling)):
        v32 = [np.float32(c) for c in vec]
        speed32 = np.sqrt(np.float32(np.float32(v32[0] * v32[0] + v32[1] * v32[1]) + v32[2] * v32[2]))
        assert mag == min(int(speed32), 0xFFFF)  # vec::magnitude in float, truncated
        speed = math.sqrt(sum(c * c for c in vec))
        assert -speed * 1e-6 <= speed - mag < 1.0 + speed * 1e-6 or mag == 0xFFFF
        if mag >= 1 and not (vec is s["falling"] and back.falldir is None):
            assert _angle_between(vec, got) < 2.0
    if s["falling"][0] == 0.0 and s["falling"][1] == 0.0 and s["falling"][2] <= 0.0:
        assert back.falldir is None


wire_records = st.builds(
    NPos,
    cn=st.integers(-(1 << 28), (1 << 28) - 1),
    physstate=st.integers(0, 7),
    lifebit=st.integers(0, 1),
    move=st.integers(-1, 1),
    strafe=st.integers(-1, 1),
    o=st.tuples(*[st.integers(-(1 << 23), (1 << 23) - 1)] * 3),
    dir=st.integers(0, 0xFFFF),
    roll=st.integers(0, 255),
    vel=st.integers(0, 0xFFFF),
    veldir=st.integers(0, 0xFFFF),
    fall=st.just(0),
    falldir=st.none(),
    gameclip=st.booleans(),
)


@st.composite
def any_records(draw):
    rec = draw(wire_records)
    fall = draw(st.integers(0, 0xFFFF))
    falldir = draw(st.none() | st.integers(0, 0xFFFF)) if fall else None
    return NPos(**{**rec.__dict__, "fall": fall, "falldir": falldir})


@settings(max_examples=400, deadline=None)
@given(st.lists(any_records(), min_size=1, max_size=4))
def test_encode_decode_encode_is_exact(recs):
    b = b"".join(encode_npos(r) for r in recs)
    assert decode_npos_packet(b) == recs
    assert b"".join(encode_npos(r) for r in decode_npos_packet(b)) == b


@settings(max_examples=200, deadline=None)
@given(any_records())
def test_every_truncation_is_a_typed_error(rec):
    b = encode_npos(rec)
    for cut in range(len(b)):
        with pytest.raises(SauerDecodeError, match="truncated") as exc:
            decode_npos(b[:cut])
        assert exc.value.offset == cut


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_random_bytes_only_raise_the_typed_error(data):
    try:
        recs = decode_npos_packet(data)
    except SauerDecodeError as e:
        assert 0 <= e.offset <= len(data)
    else:
        # whatever the game would accept is a valid record that survives its own encoding
        for r in recs:
            assert decode_npos(encode_npos(r)) == (r, len(encode_npos(r)))


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(st.binary(min_size=1, max_size=40))
def test_fuzz_records_behind_a_valid_type_byte(tail):
    try:
        decode_npos_packet(b"\x04" + tail)
    except SauerDecodeError:
        pass


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"", "truncated"),
        (b"\x05\x01", "not an N_POS"),
        (b"\x80\x05\x00", "not an N_POS"),
        (b"\x80\x04\x00", "truncated: cn"),  # getint's 2-byte form of 4 is still N_POS
        (b"\x04", "truncated"),
        (b"\x04\x81", "truncated"),
    ],
)
def test_typed_errors(data, reason):
    with pytest.raises(SauerDecodeError, match=reason):
        decode_npos(data)


@pytest.mark.parametrize(
    "field,value",
    [
        ("physstate", 8),
        ("lifebit", 2),
        ("move", 2),
        ("strafe", -2),
        ("o", (0, 0, 1 << 23)),
        ("dir", 65536),
        ("roll", 256),
        ("vel", -1),
        ("veldir", 70000),
        ("fall", 65536),
        ("cn", 1 << 28),
    ],
)
def test_record_fields_are_range_checked(field, value):
    base = decode_npos(EXAMPLE)[0].__dict__
    with pytest.raises(ValueError):
        NPos(**{**base, field: value})


def test_falldir_needs_a_fall():
    with pytest.raises(ValueError):
        NPos(**{**decode_npos(EXAMPLE)[0].__dict__, "fall": 0, "falldir": 5})


@pytest.mark.parametrize(
    "kw",
    [
        {"yaw": math.nan},
        {"pitch": math.inf},
        {"roll": math.nan},
        {"eye": (math.nan, 0, 0)},
        {"eye": (1e7, 0, 0)},
        {"vel": (math.inf, 0, 0)},
        {"eye": (1e39, 0, 0)},
    ],
)
def test_make_npos_refuses_bad_state(kw):
    args = dict(eye=(0.0, 0.0, 20.0), yaw=0.0, pitch=0.0, roll=0.0)
    with pytest.raises(ValueError):
        make_npos(0, **{**args, **kw})
