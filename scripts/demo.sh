#!/usr/bin/env bash
# The main job on its embedded default: mock runtime + local servers (+ mirror window on a display).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$HERE/scripts/setup.sh"
exec "$HERE/.venv/bin/headcast" demo "$@"
