"""Coverage-guided fuzzing of one decoder with atheris (libFuzzer for Python), the fuzz campaign's
coverage-guided engine; scripts/fuzz.sh installs atheris into build/fuzz/atheris/ and runs this
for every target.

    PYTHONPATH=build/fuzz/atheris .venv/bin/python tests/fuzz/atheris_fuzz.py TARGET [--runs N]

headcast's modules are instrumented for coverage; the target's corpus (tests/data/fuzz/TARGET) is
copied to build/fuzz/atheris/TARGET/corpus (libFuzzer adds the inputs that reach new code
there), and an input that makes the decoder raise anything but its own typed error is written as
build/fuzz/atheris/TARGET/crash-<sha1> (scripts/fuzz.sh copies it into the repo's corpus as a
regression input). Exit 0: no crash within N runs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target")
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--max-len", type=int, default=4096)
    args, rest = ap.parse_known_args()
    import atheris

    import fuzzlib

    t = fuzzlib.TARGETS[args.target]
    work = fuzzlib.REPO / "build" / "fuzz" / "atheris" / args.target
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for p in (fuzzlib.CORPUS / args.target).glob("*.bin"):
        shutil.copy(p, corpus / p.name)
    with atheris.instrument_imports(include=["headcast"]):
        harness = t.make()
        allowed = t.allowed()

    def one(data: bytes) -> None:
        try:
            harness(data)
        except allowed:
            pass

    atheris.Setup(
        [
            sys.argv[0],
            f"-runs={args.runs}",
            f"-max_len={min(args.max_len, t.max_len)}",
            f"-artifact_prefix={work}/",
            "-print_final_stats=1",
            "-timeout=5",
            *rest,
            str(corpus),
        ],
        one,
    )
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
