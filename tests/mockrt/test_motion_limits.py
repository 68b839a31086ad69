"""The runtime's motion parser refuses values no tracking frame can hold, naming file, line,
value and limit (the app shows it as one line, exit 2, before the OpenXR instance exists)."""

from __future__ import annotations

import re

import pytest

from headcast.xr import mockrt


@pytest.fixture(scope="module")
def manifest():
    return mockrt.ensure_runtime()


@pytest.mark.parametrize(
    "line, words",
    [
        ("0 /user/head pos 1e300 0 0", "position 1e+300 is outside -10000..10000 m"),
        ("0 /user/head pose 0 -20000 0 0 0 0 1", "position -20000 is outside -10000..10000 m"),
        ("0 /user/head pos nan 0 0", "'nan' is not a finite number"),
        ("0 /user/head pos 0 x 0", "'x' is not a finite number"),
        ("0 /user/head quat 1e308 1e308 0 1", "quaternion too large to normalise"),
        ("0 /user/hand/right/input/thumbstick 1e300 0", "value 1e+300 is outside -1..1"),
        ("0 /user/hand/right/input/trigger/value 5", "value 5 is outside 0..1"),
        ("0 /user/hand/right/input/a/click -1", "value -1 is outside 0..1"),
        ("1e300 /user/head pos 0 0 0", "time beyond 10^12 frames"),
    ],
)
def test_out_of_range_values_are_named(manifest, tmp_path, line, words):
    f = tmp_path / "bad.motion"
    f.write_text(f"rate 90\n{line}\n")
    with pytest.raises(mockrt.MockControlError, match=re.escape(f"{f}:2: {words}")):
        mockrt.check_motion(f, manifest)


def test_exact_samples_must_be_unit_quaternions(manifest, tmp_path):
    f = tmp_path / "exact.motion"
    f.write_text("timebase frames\ninterpolate off\n0 /user/head quat 0.5 0 0 1\n")
    with pytest.raises(
        mockrt.MockControlError,
        match="exact.motion:3: quaternion of length 1.11803: with "
        "interpolate off it is used as given, so it must be unit",
    ):
        mockrt.check_motion(f, manifest)
    f.write_text("rate 90\n0 /user/head quat 0.5 0 0 1\n")  # interpolated keyframes are normalised
    mockrt.check_motion(f, manifest)


def test_every_shipped_motion_is_within_the_limits(manifest):
    from headcast.app.run.mock import find_motion, shipped_motions

    for name in shipped_motions():
        mockrt.check_motion(find_motion(name), manifest)
