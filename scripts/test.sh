#!/usr/bin/env bash
# The whole test suite against real local servers (bounded soak/fuzz runs; HEADCAST_LONG=1 for long ones).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$HERE/scripts/setup.sh" || exit 1
cd "$HERE"
.venv/bin/python -m pytest "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "test.sh: no test ran" >&2
  exit 1
fi
exit $rc
