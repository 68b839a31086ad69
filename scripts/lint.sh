#!/usr/bin/env bash
# The lint and type gates CI runs, configured in pyproject.toml ([tool.ruff], [tool.mypy]):
#   ruff check     the rules (pycodestyle E/W, pyflakes F, import order I) on the whole tree;
#   ruff format    whether the tree is formatted (--check: nothing is rewritten);
#   mypy           the package as installed (headcast.*): strict on headcast.netcode, the rest
#                  with check_untyped_defs.
# One line per tool with its verdict, then the findings of the tools that failed. Exits 1 on any
# finding, 2 when a tool could not run. PYTHON picks the interpreter (default .venv/bin/python).
#
# mypy must see the real module names (headcast.app..., which setuptools maps to top-level folders,
# see [tool.setuptools.package-dir]) and must not take our xr/ folder for pyopenxr's `xr`. So it
# runs from build/lint, where headcast/{app,netcode,xr,assets} are links to the folders, on
# `-p headcast`; its findings are printed with the repository's own paths. Its cache stays in
# build/lint/cache: the first run takes ~30 s, the next ones a few seconds.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PY="${PYTHON:-$REPO/.venv/bin/python}"
if ! "$PY" -c "import ruff, mypy" 2>/dev/null; then
  echo "lint: $PY has no ruff/mypy: pip install -e '.[test]' (or set PYTHON)" >&2
  exit 2
fi

OUT="$REPO/build/lint"
TREE="$OUT/headcast"
mkdir -p "$TREE"
for d in app netcode xr assets; do
  [ -L "$TREE/$d" ] || ln -sfn "../../../$d" "$TREE/$d"
done

worst=0
verdict() {  # verdict TOOL RC SUMMARY LOGFILE
  local tool="$1" rc="$2" summary="$3" log="$4"
  if [ "$rc" -eq 0 ]; then
    printf '%-13s clean%s\n' "$tool" "${summary:+ ($summary)}"
  else
    printf '%-13s FAILED: %s\n' "$tool" "${summary:-exit $rc}"
    fails+=("$log")
    [ "$rc" -eq 1 ] && [ "$worst" -lt 1 ] && worst=1
    [ "$rc" -gt 1 ] && worst=2
  fi
}
fails=()

"$PY" -m ruff check --no-fix --output-format concise . >"$OUT/ruff-check.log" 2>&1; rc=$?
n=$(grep -cE '^[^ ].*:[0-9]+:[0-9]+: ' "$OUT/ruff-check.log")
verdict "ruff check" $rc "$([ $rc -eq 1 ] && echo "$n findings")" "$OUT/ruff-check.log"

"$PY" -m ruff format --check --output-format concise . >"$OUT/ruff-format.log" 2>&1; rc=$?
n=$(grep -c 'would be reformatted' "$OUT/ruff-format.log")
verdict "ruff format" $rc "$([ $rc -eq 1 ] && echo "$n files would be reformatted")" "$OUT/ruff-format.log"

(cd "$OUT" && "$PY" -m mypy --config-file "$REPO/pyproject.toml" --cache-dir cache -p headcast) 2>&1 \
  | sed -E 's#^headcast/##' >"$OUT/mypy.log"; rc=${PIPESTATUS[0]}
verdict "mypy" $rc "$(tail -n 1 "$OUT/mypy.log" | sed -E 's/^(Success: |Found )//')" "$OUT/mypy.log"

for log in "${fails[@]}"; do
  printf '\n--- %s\n' "${log#"$REPO"/}"
  cat "$log"
done
exit $worst
