"""The fuzz campaign's bounded run (issue 27): every decoder that reads a peer's bytes or a user's
file, fed its corpus (real traffic captured from ioq3ded, OpenArena, styly-netsync-server 0.10.4 to
0.17.5 and cube2-server by tests/fuzz/capture.py, plus every crash ever found: crash-*.bin) and
then BOUNDED mutated inputs. A decoder returns or raises its own typed error; any other exception
or a hang fails the test with the input in hex.

The long run is `bash scripts/fuzz.sh` (≥ 1 M inputs per decoder with HEADCAST_LONG=1)."""

from __future__ import annotations

import os

import pytest

from fuzz import fuzzlib
from support import LONG

pytestmark = pytest.mark.fuzz

INPUTS = int(os.environ.get("HEADCAST_FUZZ_INPUTS", 1_000_000 if LONG else 400))


@pytest.mark.parametrize("name", sorted(fuzzlib.TARGETS))
def test_the_corpus_and_bounded_mutations_decode_or_raise_typed_errors(name):
    seeds = fuzzlib.corpus(name)
    assert seeds, f"no corpus for {name}: run tests/fuzz/capture.py"
    rep = fuzzlib.fuzz(name, len(seeds) + INPUTS, seed=int(os.environ.get("HEADCAST_FUZZ_SEED", 0)), save=LONG)
    assert rep.inputs == len(seeds) + INPUTS
    assert not rep.crashes, f"{name}: " + "; ".join(f"{k}: {v}" for k, v in rep.crashes.items())


def test_every_decoder_that_reads_a_peer_or_a_file_has_a_harness():
    groups = {n.split("_")[0] for n in fuzzlib.TARGETS}
    assert {"q3", "ns", "sauer", "trace", "motion", "config", "pk3"} <= groups
    for p in range(3, 9):
        assert f"ns_room_p{p}" in fuzzlib.TARGETS and f"ns_body_p{p}" in fuzzlib.TARGETS


def test_a_crash_is_saved_as_a_regression_input(tmp_path, monkeypatch):
    """The engine itself: an exception the decoder does not own is a crash, saved once per kind."""
    monkeypatch.setattr(fuzzlib, "CORPUS", tmp_path)
    (tmp_path / "boom").mkdir()
    (tmp_path / "boom" / "seed.bin").write_bytes(b"abc")

    def harness(data: bytes) -> None:
        if len(data) != 3:
            raise KeyError(len(data))
        raise ValueError("typed")

    monkeypatch.setitem(fuzzlib.TARGETS, "boom", fuzzlib.Target("boom", lambda: harness, lambda: (ValueError,), "test"))
    rep = fuzzlib.fuzz("boom", 200)
    assert list(rep.crashes) and all(k.startswith("KeyError at ") for k in rep.crashes)
    saved = list((tmp_path / "boom").glob("crash-*.bin"))
    assert len(saved) == 1 and len(saved[0].read_bytes()) != 3
