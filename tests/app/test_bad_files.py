"""A user's files that broke headcast before issue 27 (found by fuzzing each file reader): each is
now one clean error line with its exit status (docs/guide/config.md#exit-codes), no traceback."""

from __future__ import annotations

import json
import struct
import zipfile

from support import headcast


def assert_clean_error(r, code: int, *needles: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # one line
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def test_config_integer_over_the_digit_limit_is_a_config_error(tmp_path):
    """tomllib raises ValueError (not TOMLDecodeError) for an integer of 4,301+ digits."""
    bad = tmp_path / "big.toml"
    bad.write_text("[rig]\nmove_speed = " + "9" * 4301 + "\n")
    assert_clean_error(headcast("run", "--config", str(bad), "--print-config"), 2, str(bad), "4300")


def _zip_with_name_flagged_utf8(path) -> None:
    """A zip whose one name has the UTF-8 flag (bit 11) but is not UTF-8: zipfile decodes it on open."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a\xe9.txt", b"x")  # stored as UTF-8 (flag set) because it is not ASCII
    data = bytearray(path.read_bytes())
    utf8 = "a\xe9.txt".encode()
    i = data.rfind(utf8)  # the central directory's copy
    data[i + 1 : i + 3] = b"\xff\xfe"  # not UTF-8 any more, same length
    path.write_bytes(bytes(data))


def _zip_of_version(path, version: int) -> None:
    """A zip whose central directory asks for a reader of `version` (84 = 8.4)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.txt", b"x")
    data = bytearray(path.read_bytes())
    i = data.find(b"PK\x01\x02")
    struct.pack_into("<H", data, i + 6, version)  # "version needed to extract"
    path.write_bytes(bytes(data))


def test_broken_pk3_is_one_line(tmp_path):
    for name, make, words in (
        ("utf8.pk3", _zip_with_name_flagged_utf8, "UnicodeDecodeError"),
        ("v84.pk3", lambda p: _zip_of_version(p, 84), "zip file version 8.4"),
    ):
        pk3 = tmp_path / name
        make(pk3)
        r = headcast("run", "--pk3", str(pk3), "--no-mirror", "--print-config")
        assert_clean_error(r, 2, str(pk3), "not a readable pk3", words)


def test_motion_with_a_non_utf8_byte_on_a_bad_line(tmp_path):
    motion = tmp_path / "bytes.motion"
    motion.write_bytes(b"rate 90\n0 /user/head ypr 0 \xff 0\n")
    assert_clean_error(headcast("run", "--mock", str(motion), "--no-mirror", "--duration", "1"), 2, f"{motion}:2:")


def test_trace_with_a_401_digit_integer_is_a_trace_error(tmp_path):
    from headcast.app.run.synthetic import LOOK_AROUND, frame_at
    from headcast.xr.trace import TraceError, read_trace, write_trace

    good = tmp_path / "good.trace"
    write_trace(good, [frame_at(LOOK_AROUND, i, i / 90, int(i / 90 * 1e9)) for i in range(3)])
    lines = good.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[1])
    row[2][0] = 10**400  # head x: an integer json reads and float() cannot hold
    lines[1] = (json.dumps(row) + "\n").encode()
    bad = tmp_path / "big.trace"
    bad.write_bytes(b"".join(lines))
    try:
        read_trace(bad)
    except TraceError as e:
        assert "out of range" in str(e)
    else:
        raise AssertionError("read_trace accepted 10**400")
    assert_clean_error(headcast("replay", str(bad), "--no-mirror"), 2, str(bad), "out of range")
