#!/usr/bin/env bash
# The test suite against real local servers, in parallel where tests wait on real time. See --help.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'EOF'
Usage: bash scripts/test.sh [--fast] [--serial] [-h|--help] [PYTEST ARGS...]

Runs headcast's test suite (pytest) after scripts/setup.sh. Two tiers:

  (default)  Everything: the live tests against real local servers (ioq3ded, OpenArena,
             styly-netsync-server, cube2-server, Monado where present), the mock runtime,
             hello_xr, the Xvfb tests, bounded soak and fuzz runs. Three phases:
               1. every test not marked `serial`, spread over N pytest-xdist workers (most
                  tests wait on servers and real time, so N exceeds the core count);
               2. the `serial` tests (they measure rates, latencies and time bounds) after
                  it, two at a time (they wait on real time, using little CPU), so the
                  CPU-heavy tests of phase 1 cannot decide them;
               3. the few tests that change a file others read or need the machine
                  to themselves (tests/tiers.py ALONE), one at a time.
             About 9 minutes on 2 cores (one test at a time: 15-19 minutes).
  --fast     Only what needs no live server, no display, no real-time measurement and no
             long run (markers live, slow, display, fuzz, monado, platform_sim, heavy,
             serial left out), in parallel: about 35 s on 2 cores, for everyday work.

Options:
  --serial   One process, every test in collection order (no xdist, no phases): as
             `python -m pytest` runs it.
  -h, --help This text.

Under plain pytest the same selection is `--tier fast` and `--phase parallel|serial|alone`
(tests/conftest.py); `python -m pytest` alone runs everything in one process.

PYTEST ARGS pass through to every phase: paths, -k EXPR, -m EXPR, -x, -q, --durations=N ...
(a phase with nothing selected is not an error as long as some phase ran tests).
`-n N` or `-p no:xdist` among them: test.sh passes pytest's own choice on, one run, no phases.

Environment:
  HEADCAST_TEST_WORKERS=N  workers for the parallel phase (default: 2 x cores, at least 4,
                           at most 16; 0 or 1 = no xdist);
  HEADCAST_LONG=1          the long soak/fuzz versions instead of the bounded ones;
  PYTHONPYCACHEPREFIX      where bytecode is kept (default build/pycache; compiled once, not
                           on every one of the hundreds of interpreters the suite starts;
                           test.sh writes bytecode even under PYTHONDONTWRITEBYTECODE).

Examples:
  bash scripts/test.sh                       # everything (what CI runs)
  bash scripts/test.sh --fast                # the fast tier
  bash scripts/test.sh tests/q3 -k handshake # a part, every phase
  HEADCAST_TEST_WORKERS=1 bash scripts/test.sh tests/netsync   # one at a time
EOF
}

FAST=0 SERIAL=0 XDIST_OWN=0
args=()
prev=""
for a in "$@"; do
  case "$a" in
    -h|--help) usage; exit 0 ;;
    --fast) FAST=1 ;;
    --serial) SERIAL=1 ;;
    *)
      args+=("$a")
      case "$a" in
        -n|-n[0-9]*|--numprocesses|--numprocesses=*|-pno:xdist) XDIST_OWN=1 ;;
        no:xdist) [ "$prev" = "-p" ] && XDIST_OWN=1 ;;
      esac ;;
  esac
  prev="$a"
done

bash "$HERE/scripts/setup.sh" || exit 1
cd "$HERE"

# Bytecode: compiled once into build/pycache, not by every interpreter (and pytest's assertion
# rewrite of every test file in every worker) again.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$HERE/build/pycache}"

cores="$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)')"
workers="${HEADCAST_TEST_WORKERS:-}"
if [ -z "$workers" ]; then
  workers=$(( cores * 2 )); [ "$workers" -lt 4 ] && workers=4; [ "$workers" -gt 16 ] && workers=16
fi
case "$workers" in ''|*[!0-9]*) echo "test.sh: HEADCAST_TEST_WORKERS=$workers is not a number" >&2; exit 2 ;; esac
[ "$SERIAL" = 1 ] && workers=1
unset HEADCAST_TEST_WORKERS  # test.sh's own: headcast would warn about an unknown HEADCAST_ variable
xdist=()
[ "$workers" -gt 1 ] && xdist=(-n "$workers" --dist loadscope)

run() {  # run PHASE ARGS...: pytest's run of one phase (tests/conftest.py: --phase, --tier)
  local phase="$1"; shift
  .venv/bin/python -m pytest --phase "$phase" ${tier[@]+"${tier[@]}"} "$@"
}

t0=$(date +%s)
tier=()
[ "$FAST" = 1 ] && tier=(--tier fast)
if [ "$XDIST_OWN" = 1 ] || [ "$SERIAL" = 1 ]; then
  # pytest's own choice (-n / -p no:xdist), or --serial: one run, every selected test
  .venv/bin/python -m pytest ${tier[@]+"${tier[@]}"} ${args[@]+"${args[@]}"}
  rc=$?
  [ $rc -eq 5 ] && { echo "test.sh: no test ran" >&2; exit 1; }
  exit $rc
fi

if [ "$FAST" = 1 ]; then
  # the fast tier has no serial tests (it leaves them out): one parallel run
  run parallel ${xdist[@]+"${xdist[@]}"} ${args[@]+"${args[@]}"}
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  echo "test.sh: fast tier: exit $rc after $((dt / 60)):$(printf %02d $((dt % 60)))" >&2
  [ $rc -eq 5 ] && { echo "test.sh: no test ran" >&2; exit 1; }
  exit $rc
fi

echo "test.sh: phase 1 of 3: the parallel tests on $workers worker(s) ($cores core(s))" >&2
run parallel ${xdist[@]+"${xdist[@]}"} ${args[@]+"${args[@]}"}
rc1=$?
t1=$(date +%s)
# The serial tests wait on real time with little CPU (a 60 Hz stream, a server's 20 Hz): two at
# a time keep each other's rates (measured: 27 % of 2 cores), the CPU-heavy tests of phase 1 would not.
serial_xdist=()
[ "$workers" -gt 1 ] && serial_xdist=(-n 2 --dist loadscope)
echo "test.sh: phase 2 of 3: the serial tests, two at a time, none of phase 1 beside them" >&2
run serial ${serial_xdist[@]+"${serial_xdist[@]}"} ${args[@]+"${args[@]}"}
rc2=$?
t2=$(date +%s)
echo "test.sh: phase 3 of 3: the tests that change what others read or need the machine alone, one at a time" >&2
run alone ${args[@]+"${args[@]}"}
rc3=$?
t3=$(date +%s)
mmss() { printf '%d:%02d' $(( $1 / 60 )) $(( $1 % 60 )); }
echo "test.sh: parallel exit $rc1 after $(mmss $((t1 - t0))), serial exit $rc2 after $(mmss $((t2 - t1)))," \
  "alone exit $rc3 after $(mmss $((t3 - t2))); $(mmss $((t3 - t0))) in all" >&2
# 5 = nothing selected in that phase: fine if another phase ran tests
if [ $rc1 -eq 5 ] && [ $rc2 -eq 5 ] && [ $rc3 -eq 5 ]; then
  echo "test.sh: no test ran" >&2
  exit 1
fi
for rc in $rc1 $rc2 $rc3; do
  [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && exit "$rc"
done
exit 0
