#!/usr/bin/env bash
# The wheel, as a user without a compiler gets it. Builds headcast's sdist and its wheel from the
# sdist (`python -m build`, in a throwaway venv), a wheel straight from the tree too (the two must
# hold the same files: the sdist is complete), checks what they carry (every C source in the sdist;
# the two extensions, the mock runtime and its manifest in the wheel), then installs the wheel into
# a CLEAN venv with NO C compiler on PATH (PATH = the venv's bin + symlinks to the few tools the
# tests need; CC/CXX = a stub that fails loudly and logs any call; binary packages only) and, against
# that INSTALLED package (not this checkout):
#   - the real-server tests of `run --mock`, `replay` and `probe` (tests/app, with
#     HEADCAST_TEST_INSTALLED naming the venv: tests/support.py refuses a headcast from elsewhere);
#   - `headcast run --mock tour --q3 … --netsync … --sauer …` joining a real ioq3ded, a real
#     styly-netsync-server and a real cube2-server on 127.0.0.1 for a few seconds.
# Needs what scripts/setup.sh installs (the Debian servers, gcc and libopenxr-dev for the build).
# Bounded (each step has a timeout); prints each step's time; removes its temp folder
# (--keep leaves it, for a look). Exit 0 when every check passed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$HERE"
KEEP=0
for arg in "$@"; do
  case "$arg" in
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: bash scripts/wheel-check.sh [--keep]" >&2; exit 2 ;;
  esac
done

PY="${HEADCAST_PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/headcast-wheel-check.XXXXXX")"
cleanup() {
  if [ "$KEEP" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
log() { printf '[wheel-check] %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
START=$(now)
TIMES=()
# step NAME SECONDS CMD...: run CMD bounded, record its wall time
step() {
  local name=$1 limit=$2; shift 2
  local t0 rc=0
  t0=$(now)
  log "$name ..."
  timeout --kill-after=10 "$limit" "$@" || rc=$?
  TIMES+=("$(printf '%-46s %7s s' "$name" "$(since "$t0")")")
  [ "$rc" = 0 ] || fail "$name (exit $rc$([ "$rc" = 124 ] && echo ": timed out after $limit s"))"
}

# quietly LOG CMD...: CMD's output into LOG; on failure, its last lines (without pip's notes on
# the machine's own index folders)
QUIETLY=(bash -c 'log=$1; shift; "$@" > "$log" 2>&1 && exit 0; rc=$?
                  grep -v "^WARNING: Location" "$log" | tail -n 40 >&2; exit $rc' quietly)

# ---------------------------------------------------------------- build (with a compiler)
step "throwaway venv with build" 300 "${QUIETLY[@]}" "$WORK/buildenv.log" \
  bash -c "'$PY' -m venv '$WORK/buildenv' && '$WORK/buildenv/bin/python' -m pip install build"
step "python -m build (sdist, wheel from sdist)" 600 "${QUIETLY[@]}" "$WORK/build.log" \
  "$WORK/buildenv/bin/python" -m build --outdir "$WORK/dist" .
grep -F '[headcast build]' "$WORK/build.log" | sed 's/^/  /' >&2 || true
SDIST="$(ls "$WORK"/dist/headcast-*.tar.gz)"
WHEEL="$(ls "$WORK"/dist/headcast-*.whl)"
# The tree as git has it (tracked files, as they are now), built straight into a wheel.
mkdir -p "$WORK/tree"
git ls-files -z | xargs -0 cp --parents -t "$WORK/tree"
step "python -m build --wheel (from the tree)" 600 "${QUIETLY[@]}" "$WORK/build-tree.log" \
  "$WORK/buildenv/bin/python" -m build --wheel --outdir "$WORK/dist-tree" "$WORK/tree"

"$PY" - "$SDIST" "$WHEEL" "$(ls "$WORK"/dist-tree/headcast-*.whl)" <<'EOF' || fail "the sdist or the wheel lacks a part"
import subprocess, sys, tarfile, zipfile
sdist, wheel, tree_wheel = sys.argv[1:]
tracked = subprocess.run(["git", "ls-files", "*.c", "*.h"], capture_output=True, text=True, check=True).stdout.split()
with tarfile.open(sdist) as t:
    in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
missing = [c for c in tracked if c not in in_sdist]
assert not missing, f"C sources missing from the sdist: {missing}"
names = zipfile.ZipFile(wheel).namelist()
need = {"headcast/netcode/q3/_q3native.": ".so", "headcast/xr/_fastframe.": ".so",
        "headcast/xr/mockrt/libmockxr.so": "", "headcast/xr/mockrt/mockxr.json": ""}
for prefix, suffix in need.items():
    assert any(n.startswith(prefix) and n.endswith(suffix) for n in names), f"{prefix}*{suffix} is not in {wheel}"
strip = lambda ns: sorted(n for n in ns if ".dist-info/" not in n)
other = zipfile.ZipFile(tree_wheel).namelist()
assert strip(names) == strip(other), f"the wheels from the sdist and from the tree differ: {set(strip(names)) ^ set(strip(other))}"
print(f"[wheel-check] sdist: {len(tracked)} C sources of the tree, all in; wheel: {len(names)} files, "
      f"the native parts in; the same files as the wheel built from the tree", file=sys.stderr)
EOF
log "sdist $(basename "$SDIST"): $(du -k "$SDIST" | cut -f1) KiB; wheel $(basename "$WHEEL"): $(du -k "$WHEEL" | cut -f1) KiB"

# ---------------------------------------------------------------- no compiler from here on
NOCC="$WORK/nocc-bin"
mkdir -p "$NOCC" "$WORK/stub" "$WORK/home"
# The tools the tests and servers call through PATH (the servers themselves have absolute paths).
for tool in sh bash env cat ls uname quakestat; do
  p="$(command -v "$tool" || true)"
  [ -n "$p" ] || fail "$tool is not installed (scripts/setup.sh installs what the tests need)"
  ln -s "$p" "$NOCC/$tool"
done
STUB="$WORK/stub/cc"
printf '#!/bin/sh\necho "wheel-check: a C compiler was called: $0 $*" >&2\necho "$0 $*" >> "%s"\nexit 97\n' \
  "$WORK/stub-calls.log" > "$STUB"
chmod 755 "$STUB"
: > "$WORK/stub-calls.log"
# Every command from here on: in $WORK (not this checkout), no compiler, the clean venv first.
CLEAN_ENV=(env -C "$WORK" -u PYTHONPATH -u VIRTUAL_ENV -u PYTHONHOME PATH="$WORK/venv/bin:$NOCC"
           CC="$STUB" CXX="$STUB" LDSHARED="$STUB")
found="$("${CLEAN_ENV[@]}" sh -c 'for c in gcc cc c++ g++ clang tcc x86_64-linux-gnu-gcc; do command -v $c; done; true')"
[ -z "$found" ] || fail "a compiler is on the clean PATH: $found"
log "no compiler on the clean PATH (gcc, cc, c++, clang: not found; CC=CXX=a stub that fails)"

step "clean venv" 120 "$PY" -m venv "$WORK/venv"
# Binary packages only: nothing may be compiled (and the stub would say so if anything tried).
step "pip install the wheel [test] (no compiler)" 900 "${QUIETLY[@]}" "$WORK/pip.log" \
  "${CLEAN_ENV[@]}" "$WORK/venv/bin/python" -m pip install --only-binary :all: "$WHEEL[test]"

# What the installed package is and uses.
step "what the installed package uses" 60 "${CLEAN_ENV[@]}" HOME="$WORK/home" "$WORK/venv/bin/python" - "$WORK/venv" <<'EOF'
import sys
from pathlib import Path
import headcast.app
from headcast.netcode.q3.native import NATIVE_STATUS
from headcast.xr import fastframe, mockrt
venv = Path(sys.argv[1]).resolve()
where = [Path(p).resolve() for p in (*headcast.__path__, headcast.app.__file__)]
assert all(venv in p.parents for p in where), f"headcast is not the clean venv's: {where}"
manifest = mockrt.ensure_runtime()
assert venv in manifest.parents, f"the mock runtime is not the wheel's: {manifest}"
assert NATIVE_STATUS == "in use", f"_q3native: {NATIVE_STATUS}"
assert fastframe.load() is not None, f"_fastframe is not loaded from {fastframe.library_path()}"
print(f"[wheel-check] installed: headcast from {where[0]}; mock runtime {manifest}; _q3native in use; "
      f"_fastframe {fastframe.library_path().name} in use", file=sys.stderr)
EOF

# ---------------------------------------------------------------- the tests, against the installed package
# NetSync 0.10.4 (protocol 3) is found under $XDG_CACHE_HOME/headcast/build/netsync when installed:
# the releases scripts/setup.sh put into this checkout's build/netsync.
mkdir -p "$WORK/cache/headcast/build"
[ -d "$HERE/build/netsync" ] && ln -s "$HERE/build/netsync" "$WORK/cache/headcast/build/netsync"
TESTS=(
  "tests/app/test_cli.py::test_text_summary_without_sends"
  "tests/app/test_cli.py::test_record_then_replay"
  "tests/app/test_cli.py::test_unreachable_servers_fail_clearly"
  "tests/app/test_cli.py::test_probe_answers_and_ctrl_c_disconnects"
  "tests/app/test_cli.py::test_run_detects_each_servers_protocol_and_joins"
  "tests/app/test_cli.py::test_probe_netsync_reports_protocol_version_and_members"
  "tests/app/test_probe_q3.py"
  "tests/app/test_stop_live.py::test_kill_9_leaves_a_trace_replay_plays_to_its_last_frame"
  "tests/app/test_sauer_live.py::test_run_mock_tour_streams_through_a_map_change_and_a_death_without_a_kick"
)
step "tests against the installed package" 1200 "${CLEAN_ENV[@]}" HEADCAST_TEST_INSTALLED="$WORK/venv" \
  XDG_CACHE_HOME="$WORK/cache" "$WORK/venv/bin/python" -m pytest -c "$HERE/pyproject.toml" --rootdir "$HERE" \
  -p no:cacheprovider -q "${TESTS[@]/#/$HERE/}"

# ---------------------------------------------------------------- the smoke run: all three real servers
step "headcast run --mock tour --q3 --netsync --sauer" 180 "${CLEAN_ENV[@]}" HOME="$WORK/home" \
  "$WORK/venv/bin/python" - "$WORK/venv/bin/headcast" <<'EOF'
import json, subprocess, sys, time
from headcast.netcode.netsync.localserver import LocalNetSyncServer
from headcast.netcode.q3.localserver import LocalQ3Server
from headcast.netcode.sauer.localserver import LocalSauerServer

headcast = sys.argv[1]
netsync = LocalNetSyncServer(None)
try:
    netsync.start(timeout=60)
    with LocalQ3Server(kind="ioq3", pure=False) as q3, LocalSauerServer() as sauer:
        a = netsync.address
        cmd = [headcast, "run", "--mock", "tour", "--no-mirror", "--json", "--duration", "8",
               "--q3", "%s:%d" % q3.address, "--netsync", f"{a.host}:{a.dealer_port}:{a.pub_port}",
               "--sauer", "%s:%d" % sauer.address, "--name", "wheelcheck"]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        took = time.monotonic() - t0
finally:
    netsync.close()
assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
summary = json.loads(proc.stdout.splitlines()[-1])
sinks = {s["name"]: s for s in summary["sinks"]}
for name in ("q3", "netsync", "sauer"):
    s = sinks[name]
    assert s.get("joined_at") is not None and s["sent"] > 0, f"{name} did not join: {s}"
    print(f"[wheel-check]   {name}: {s['outcome']}; sent {s['sent']}", file=sys.stderr)
print(f"[wheel-check] smoke: {summary['frames']} frames, {summary['stopped']}, all three joined ({took:.1f} s)",
      file=sys.stderr)
EOF

[ ! -s "$WORK/stub-calls.log" ] || fail "a C compiler was called: $(cat "$WORK/stub-calls.log")"
log "the compiler stub was never called"
log "times:"
for t in "${TIMES[@]}"; do log "  $t"; done
log "total $(since "$START") s: passed"
