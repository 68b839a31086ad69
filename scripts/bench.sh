#!/usr/bin/env bash
# Runs every benchmark in tests/benchmarks/ (or the ones named: bash scripts/bench.sh q3_session app_loop)
# and prints their figures against the targets. Benchmarks are bounded (tens of seconds each).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$HERE/scripts/setup.sh" || exit 1
cd "$HERE"
if [ $# -gt 0 ]; then
  benches=(); for n in "$@"; do benches+=("tests/benchmarks/bench_${n#bench_}"); done
  benches=("${benches[@]/%.py/}"); benches=("${benches[@]/%/.py}")
else
  benches=(tests/benchmarks/bench_*.py)
fi
failed=0
for b in "${benches[@]}"; do
  printf '\n=== %s\n' "$b"
  .venv/bin/python "$b" || { echo "!!! $b exited with $?"; failed=1; }
done
exit $failed
