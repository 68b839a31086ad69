#!/usr/bin/env bash
# The fuzz campaign (issue 27) with one command: every decoder that reads a peer's bytes or a
# user's file, mutational (seeded from the real traffic in tests/data/fuzz/), the C extension
# under AddressSanitizer + UBSan against its Python reference, and coverage-guided with atheris.
#
#   bash scripts/fuzz.sh                 # a quick pass: 20,000 inputs per decoder
#   HEADCAST_LONG=1 bash scripts/fuzz.sh # the long run: 1,000,000 inputs per decoder
#   bash scripts/fuzz.sh --inputs 200000 --jobs 4 --no-atheris
#
# Options: --inputs N (per decoder), --jobs N (worker processes, default: the cores), --long,
# --no-asan, --no-atheris, --atheris-runs N (per target; default inputs/10), --capture (record a
# fresh corpus from the real servers first: tests/fuzz/capture.py).
# Progress goes to stderr; figures to build/fuzz/last-run.json. Every crash is kept as
# tests/data/fuzz/<target>/crash-*.bin: the suite's bounded run (pytest -m fuzz) replays it from
# then on. Exit status: 0 no crash, 1 a crash or a disagreement, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
INPUTS=20000
[ "${HEADCAST_LONG:-}" = 1 ] && INPUTS=1000000
JOBS=$(nproc 2>/dev/null || echo 2)
ASAN=1 ATHERIS=1 CAPTURE=0 ATHERIS_RUNS=
while [ $# -gt 0 ]; do
    case $1 in
        --inputs|--jobs|--atheris-runs)
            [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || { echo "fuzz.sh: $1 takes a whole number (see --help)" >&2; exit 2; } ;;
    esac
    case $1 in
        --inputs) INPUTS=$2; shift ;;
        --jobs) JOBS=$2; shift ;;
        --long) INPUTS=1000000 ;;
        --no-asan) ASAN=0 ;;
        --no-atheris) ATHERIS=0 ;;
        --atheris-runs) ATHERIS_RUNS=$2; shift ;;
        --capture) CAPTURE=1 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$PY" ] || { echo "fuzz.sh: $PY not found: run scripts/setup.sh first" >&2; exit 2; }
ATHERIS_RUNS=${ATHERIS_RUNS:-$(( INPUTS / 10 ))}
status=0
mkdir -p build/fuzz
[ "$CAPTURE" = 1 ] && "$PY" tests/fuzz/capture.py

echo "== mutational: $INPUTS inputs per decoder, $JOBS jobs" >&2
"$PY" tests/fuzz/run.py --inputs "$INPUTS" --jobs "$JOBS" || status=1

if [ "$ASAN" = 1 ]; then
    echo "== _q3native.c under ASan + UBSan vs the Python reference: $INPUTS inputs" >&2
    "$PY" tests/fuzz/native_asan.py --inputs "$INPUTS" || status=1
fi

if [ "$ATHERIS" = 1 ]; then
    # atheris 3.1.0 ships wheels for CPython 3.13 only (no sdist that builds here); 3.0.0 is the
    # last with cp311/cp312 wheels. Installed into build/fuzz/atheris, never into the venv.
    minor=$("$PY" -c 'import sys; print(sys.version_info[1])')
    if [ "$minor" -ge 13 ]; then version=3.1.0; else version=3.0.0; fi
    lib=build/fuzz/atheris-lib
    if ! PYTHONPATH=$lib "$PY" -c 'import atheris' 2>/dev/null; then
        "$PY" -m pip install --quiet --target "$lib" "atheris==$version" \
            || echo "fuzz.sh: atheris $version does not install for CPython 3.$minor: coverage-guided part skipped" >&2
    fi
    if PYTHONPATH=$lib "$PY" -c 'import atheris' 2>/dev/null; then
        echo "== coverage-guided (atheris $version): $ATHERIS_RUNS runs per decoder" >&2
        for t in $("$PY" tests/fuzz/run.py --list | cut -d' ' -f1); do
            if ! PYTHONPATH=$lib "$PY" tests/fuzz/atheris_fuzz.py "$t" --runs "$ATHERIS_RUNS" \
                    > "build/fuzz/atheris-$t.log" 2>&1; then
                status=1
                echo "fuzz.sh: atheris found a crash in $t (build/fuzz/atheris-$t.log)" >&2
                for c in build/fuzz/atheris/"$t"/crash-*; do
                    [ -e "$c" ] && cp "$c" "tests/data/fuzz/$t/crash-atheris-$(basename "$c" | cut -c7-22).bin"
                done
            fi
            echo "   $t: $(grep -h 'Done [0-9]* runs' "build/fuzz/atheris-$t.log" | tail -1)" >&2
        done
    fi
fi
exit $status
