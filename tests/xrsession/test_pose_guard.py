"""What a runtime hands back is only marked valid when it is a usable pose."""

from __future__ import annotations

import math

from hypothesis import given, strategies as st

from headcast.xr.frame import IDENTITY, INVALID_POSE, ORIGIN
from headcast.xr.session import _pose

ALL = 0xF
NAN, INF = math.nan, math.inf


def test_good_pose_passes_through_unchanged():
    p = _pose(ALL, 0.0, 0.70710677, 0.0, 0.70710677, 0.1, 1.6, -0.2)
    assert p.orientation == (0.0, 0.70710677, 0.0, 0.70710677) and p.position == (0.1, 1.6, -0.2)
    assert p.valid and p.position_tracked and p.orientation_tracked


def test_no_flags_is_the_invalid_pose_whatever_the_numbers():
    assert _pose(0, 9.0, 9.0, 9.0, 9.0, 5.0, 5.0, 5.0) == INVALID_POSE


def test_garbage_is_never_valid():
    nan_pos = _pose(ALL, 0.0, 0.0, 0.0, 1.0, NAN, 1.0, 0.0)
    assert not nan_pos.position_valid and not nan_pos.position_tracked and nan_pos.position == ORIGIN
    assert nan_pos.orientation_valid
    inf_pos = _pose(ALL, 0.0, 0.0, 0.0, 1.0, 0.0, INF, 0.0)
    assert not inf_pos.position_valid and inf_pos.position == ORIGIN
    for q in [(0.0, 0.0, 0.0, 0.0), (NAN, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 2.0), (INF, 0.0, 0.0, 1.0)]:
        bad = _pose(ALL, *q, 0.0, 1.0, 0.0)
        assert not bad.orientation_valid and not bad.orientation_tracked and bad.orientation == IDENTITY
        assert bad.position_valid and not bad.valid


def test_tracked_without_valid_is_not_tracked():
    # TRACKED bits without VALID bits are a runtime bug: neither is believed.
    p = _pose(0x1 | 0x8, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0)
    assert p.orientation_valid and not p.orientation_tracked
    assert not p.position_valid and not p.position_tracked and p.position == ORIGIN


floats = st.floats(width=32)


@given(st.integers(0, ALL), floats, floats, floats, floats, floats, floats, floats)
def test_any_location_gives_a_finite_unit_valid_pose_or_flags_off(flags, qx, qy, qz, qw, px, py, pz):
    p = _pose(flags, qx, qy, qz, qw, px, py, pz)
    assert all(math.isfinite(v) for v in p.position + p.orientation)
    assert abs(sum(v * v for v in p.orientation) - 1.0) <= 1e-3
    assert p.position_valid <= bool(flags & 2) and p.orientation_valid <= bool(flags & 1)
    assert p.position_tracked <= p.position_valid and p.orientation_tracked <= p.orientation_valid
    if not p.position_valid:
        assert p.position == ORIGIN
    if not p.orientation_valid:
        assert p.orientation == IDENTITY
