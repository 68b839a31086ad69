#!/usr/bin/env bash
# The main job on its embedded default: mock runtime + local servers (+ mirror window on a display).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# --help needs no set-up once headcast is installed.
for a in "$@"; do
  if { [ "$a" = -h ] || [ "$a" = --help ]; } && [ -x "$HERE/.venv/bin/headcast" ]; then
    exec "$HERE/.venv/bin/headcast" demo --help
  fi
done
# setup.sh's lines (its build steps print to stdout) go to stderr: `demo --json | jq` reads JSON only.
bash "$HERE/scripts/setup.sh" >&2
exec "$HERE/.venv/bin/headcast" demo "$@"
