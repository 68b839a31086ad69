"""Trace file format: exact round trip, atomic writing, clear errors on damaged files."""
from __future__ import annotations

import json
import os
import re
import struct

import pytest
from hypothesis import given, settings, strategies as st

from headcast.xr.frame import Controls, Pose, TrackingFrame
from headcast.xr.trace import (
    TraceError, TraceWriter, frame_row, iter_trace, read_meta, read_trace, write_trace,
)

f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
f64 = st.floats(allow_nan=False, allow_infinity=False)
poses = st.builds(Pose, st.tuples(f32, f32, f32), st.tuples(f32, f32, f32, f32),
                  st.booleans(), st.booleans(), st.booleans(), st.booleans())
controls = st.builds(Controls, st.tuples(f64, f64), st.tuples(f64, f64), f64, f64, f64, f64,
                     st.booleans(), st.booleans())
frames = st.builds(TrackingFrame, st.integers(0, 2**63), st.integers(0, 2**63), poses, poses, poses,
                   poses, poses, controls, st.text(max_size=40), st.text(max_size=40), st.booleans())


def bits(frame: TrackingFrame) -> bytes:
    """Every float of a frame as its IEEE bytes, so -0.0 vs 0.0 and any rounding show up."""
    out = []

    def walk(x):
        if isinstance(x, float):
            out.append(struct.pack("<d", x))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        else:
            out.append(repr(x).encode())
    walk(frame_row(frame))
    return b"".join(out)


@settings(max_examples=60, deadline=None)
@given(st.lists(frames, max_size=5))
def test_round_trip_is_bit_exact(tmp_path_factory, fs):
    path = tmp_path_factory.mktemp("t") / "trace.jsonl"
    write_trace(path, fs, meta={"runtime": "test"})
    back = read_trace(path)
    assert back.meta == {"runtime": "test"}
    assert back.frames == tuple(fs)
    assert [bits(f) for f in back.frames] == [bits(f) for f in fs]


def sample(n: int = 3) -> list[TrackingFrame]:
    head = Pose((0.1, 1.7, -0.25), (0.0, 0.38268343, 0.0, 0.9238795), True, True, True, True)
    return [TrackingFrame(i, 1000 + i * 11_111_111, head=head, controls=Controls(trigger_right=0.5),
                          profile_right="/interaction_profiles/oculus/touch_controller", focused=True)
            for i in range(n)]


def test_nothing_appears_until_close_and_abort_leaves_nothing(tmp_path):
    path = tmp_path / "rec.jsonl"
    w = TraceWriter(path)
    for f in sample():
        w.write(f)
    assert not path.exists()
    w.abort()
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(RuntimeError):
        with TraceWriter(path) as w:
            w.write(sample(1)[0])
            raise RuntimeError("recording failed")
    assert list(tmp_path.iterdir()) == []

    with TraceWriter(path) as w:
        for f in sample():
            w.write(f)
    assert [p.name for p in tmp_path.iterdir()] == ["rec.jsonl"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert read_trace(path).frames == tuple(sample())


def test_failed_rewrite_keeps_the_old_file(tmp_path):
    path = write_trace(tmp_path / "rec.jsonl", sample(2))
    before = path.read_bytes()
    with pytest.raises(KeyError):
        with TraceWriter(path) as w:
            w.write(sample(1)[0])
            raise KeyError("boom")
    assert path.read_bytes() == before


@pytest.fixture
def good(tmp_path):
    return write_trace(tmp_path / "good.jsonl", sample(3))


def damaged(good, data: bytes):
    good.write_bytes(data)
    return good


@pytest.mark.parametrize("cut", [1, 10, 200, -20, -2, -1])
def test_truncated_file_is_a_clear_error(good, cut):
    data = good.read_bytes()
    path = damaged(good, data[:cut])
    with pytest.raises(TraceError, match="truncated|not JSON|not a headcast trace"):
        list(iter_trace(path))


def test_missing_end_record_is_truncation(good):
    lines = good.read_bytes().splitlines(keepends=True)
    path = damaged(good, b"".join(lines[:-1]))
    with pytest.raises(TraceError, match="truncated after 3 frames"):
        list(iter_trace(path))


# (bytes, what the message says, the line it names; None: a whole-file fault, named by the path alone)
@pytest.mark.parametrize("data, message, line", [
    (b"", "empty file", None),
    (b"hello\n", "not JSON", 1),
    (b'{"format": "other"}\n', "not a headcast trace", None),
    (b'{"format": "headcast-trace", "version": 99, "meta": {}}\n{"end": 0}\n', "version 99", None),
    (b'\xff\xfe\n', "not JSON", 1),
    (b'{"format": "headcast-trace", "version": 1, "meta": {}}\n[1, 2]\n{"end": 1}\n', "bad frame", 2),
    (b'{"format": "headcast-trace", "version": 1, "meta": {}}\n{"end": 5}\n', "does not match", 2),
    (b'{"format": "headcast-trace", "version": 1, "meta": {}}\n{"end": 0}\nxx\n', "after the end", 3),
    (b'{"format": "headcast-trace", "version": 1, "meta": {}}\n' + b"[" * 100_000 + b"\n", "too long", 2),
    (b'{"format": "headcast-trace", "version": 1, "meta": {}}\n\n{"end": 0}\n', "not JSON", 2),
    (b'{"format": "headcast-trace", "version": 1, "meta": {}}\n{"end": 0}', "truncated line", 2),
])
def test_bad_files(good, data, message, line):
    path = damaged(good, data)
    where = re.escape(f"{path}:{line}: " if line else f"{path}: ")
    with pytest.raises(TraceError, match=f"^{where}.*{message}"):
        list(iter_trace(path))


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="cannot open"):
        read_meta(tmp_path / "nope.jsonl")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=12) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                    max_leaves=40))
def test_any_json_frame_line_is_a_frame_or_a_trace_error(tmp_path_factory, obj):
    path = tmp_path_factory.mktemp("f") / "t.jsonl"
    header = json.dumps({"format": "headcast-trace", "version": 1, "meta": {}})
    path.write_text(f"{header}\n{json.dumps(obj)}\n" + '{"end": 1}\n')
    try:
        frames = list(iter_trace(path))
    except TraceError:
        return
    assert len(frames) == 1 and isinstance(frames[0], TrackingFrame)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_after_header_never_crash(tmp_path_factory, junk):
    path = tmp_path_factory.mktemp("b") / "t.jsonl"
    path.write_bytes(b'{"format": "headcast-trace", "version": 1, "meta": {}}\n' + junk)
    try:
        list(iter_trace(path))
    except TraceError:
        pass
