"""A motion file with a byte that is not UTF-8 on a bad line: the runtime's error text echoes the
line, and it still reads as one clean error (issue 27, defect 6), not a UnicodeDecodeError."""

from __future__ import annotations

import pytest

from headcast.xr import mockrt


def test_non_utf8_byte_on_a_bad_line_is_a_clean_error(tmp_path):
    manifest = mockrt.ensure_runtime()
    f = tmp_path / "bad.motion"
    f.write_bytes(b"rate 90\n0 /user/head ypr 0 \xff 0\n")
    with pytest.raises(mockrt.MockControlError) as info:
        mockrt.check_motion(f, manifest)
    text = str(info.value)
    assert f"{f}:2:" in text and "\ufffd" in text  # the bad byte shown as U+FFFD, the line named
