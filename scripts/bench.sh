#!/usr/bin/env bash
# Runs every benchmark in tests/benchmarks/ (or the ones named: bash scripts/bench.sh q3_session app_loop)
# and ends with two tables: each goal, the figure measured (min–max over its runs, how many), load, met;
# then issue 26's goals among them (a benchmark whose target is not the issue's counts as not met).
# Each benchmark prints its goals as BENCH-RESULT lines (tests/benchmarks/_report.py); its whole
# output is kept in build/bench/<name>.log. Benchmarks are bounded (tens of seconds to minutes each).
# --long: the long forms too (bench_rss: a 30-minute run instead of 4 minutes).
# Exit status: 0 when every goal is met, 1 otherwise (a benchmark that fails or reports nothing counts).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0
fi
if [ "${1:-}" = "--long" ]; then export BENCH_LONG=1; shift; fi
bash "$HERE/scripts/setup.sh" || exit 1
cd "$HERE"
# Bytecode compiled once into build/pycache and kept, as an installed package has its .pyc (start-up
# figures would otherwise include compiling every module from source).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$HERE/build/pycache}"
if [ $# -gt 0 ]; then
  benches=(); for n in "$@"; do n="${n#bench_}"; benches+=("tests/benchmarks/bench_${n%.py}.py"); done
else
  benches=(tests/benchmarks/bench_*.py)
fi
logs="$HERE/build/bench"; mkdir -p "$logs"
failed=0; ran=()
for b in "${benches[@]}"; do
  name="$(basename "$b" .py)"; name="${name#bench_}"
  log="$logs/$name.log"
  printf '\n=== %s (load %s)\n' "$b" "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
  if [ ! -f "$b" ]; then echo "!!! no such benchmark: $b"; failed=1; continue; fi
  .venv/bin/python "$b" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "!!! $b exited with $rc"; failed=1; }
  ran+=("$log")
done
printf '\n=== goals (load now %s)\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
[ ${#ran[@]} -gt 0 ] && { .venv/bin/python tests/benchmarks/_report.py "${ran[@]}" || failed=1; }
exit $failed
