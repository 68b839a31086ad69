#!/usr/bin/env bash
# Installs everything headcast needs on a Debian 12 or Debian 13 machine (as root), idempotently:
# Debian packages (compiler + OpenXR headers for the mock runtime, Xvfb/Mesa for the mirror,
# the OpenArena / ioquake3 and Sauerbraten dedicated servers), a virtual environment in .venv with headcast
# and its test tools, one styly-netsync-server release per NetSync protocol in build/netsync/,
# and the mock OpenXR runtime library. Safe to run again: it only does
# what is missing. Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$HERE"

APT_PACKAGES=(
  gcc libc6-dev make libopenxr-dev                      # mock OpenXR runtime build
  xvfb xauth x11-utils imagemagick                       # virtual display + screenshots
  libgl1 libglx-mesa0 libgl1-mesa-dri libopengl0         # Mesa llvmpipe OpenGL
  fonts-dejavu-core fonts-droid-fallback                 # the mirror's fonts: DejaVu Sans Mono + CJK (4 MB; Noto CJK is ~300 MB)
  libx11-6 libxrandr2 libxinerama1 libxcursor1 libxi6 libxxf86vm1 libxext6 libxrender1 libx11-xcb1
  openarena-server                                       # ioq3ded + OpenArena data (real Q3 servers)
  qstat                                                  # quakestat: a third-party Q3 status client the probe tests compare with
  tmux                                                   # a real terminal for the status-line tests
  cube2-server                                           # Sauerbraten 2020 Edition server (protocol 260), /usr/lib/cube2/cube2_server;
                                                         # in main (non-free's sauerbraten-server only wraps it); no service
  openxr-layer-corevalidation                            # Khronos core validation layer (Debian's), run over the XR tests
  libopenxr-utils                                        # Khronos hello_xr (system loader): a third-party app the mock runtime must run
  python3-venv
  python3-dev                                            # Python.h for the Q3 codec C extension
  git ca-certificates procps iproute2                    # what a minimal system (container, debootstrap root) lacks:
                                                         # git (the layout test lists the checkout), CAs, ps/pgrep, ip
)
# Debian 13 (trixie) has Monado 25, a second real OpenXR runtime the monado tests run headcast on
# (headless, Vulkan on Mesa's lavapipe); Debian 12's Monado 21 is not used.
RELEASE_ID="$(. /etc/os-release 2>/dev/null; echo "${VERSION_ID:-}")"
if [ "${RELEASE_ID%%.*}" -ge 13 ] 2>/dev/null; then
  APT_PACKAGES+=(monado-service libopenxr1-monado mesa-vulkan-drivers)
fi

log() { printf '[setup] %s\n' "$*" >&2; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "missing Debian packages: ${missing[*]}"
    log "run this script as root (or: sudo apt-get install ${missing[*]})"
    exit 1
  fi
  log "installing Debian packages: ${missing[*]} (the Q3 server data is ~420 MB; a few minutes)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # Debian's openarena-server would start a game server on UDP 27960 now and at every boot. The
  # standard policy-rc.d hook (exit 101: "action forbidden") keeps maintainer scripts from
  # starting any service during this install; ours only if none is there already.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# headcast setup.sh: no service starts during its apt-get install\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  if [ -f "$policy" ] && grep -q "headcast setup.sh" "$policy"; then rm -f "$policy"; trap - EXIT; fi
fi
# ...and is not left enabled for the next boot (the tests and `doctor` want 27960 free). Checked
# on every run, so a machine set up by an older setup.sh is put right too.
for unit in openarena-server; do
  if command -v systemctl >/dev/null 2>&1 && [ "$(systemctl is-enabled "$unit" 2>/dev/null)" = enabled ]; then
    if [ "$(id -u)" = 0 ]; then
      log "disabling the $unit service Debian enabled (headcast starts its own servers on demand)"
      systemctl disable "$unit" >/dev/null 2>&1 || log "could not disable $unit: run 'systemctl disable $unit'"
    else
      log "the $unit service is enabled: it will hold UDP 27960 at boot ('sudo systemctl disable $unit')"
    fi
  fi
done

PY="${HEADCAST_PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  log "Python >= 3.11 is required; $("$PY" --version 2>&1) found (set HEADCAST_PYTHON)"
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  log "creating the virtual environment in .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.headcast-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  log "installing headcast and its dependencies into .venv (pyopenxr is ~260 MB; a few minutes)"
  # pip's own lines (each package as it is fetched and built) go to stderr as they come, and to
  # the log; a failure repeats the log's tail.
  # pyproject.toml once named `pyenet` for the `enet` module; it now names pyenet-vladfi, which
  # installs the same module file: remove the old distribution first, or its uninstall later
  # would delete the module both share.
  if .venv/bin/python -m pip show -q pyenet >/dev/null 2>&1; then
    log "removing pyenet 1.3.17 (replaced by pyenet-vladfi: the same enet module, wheels for 3.11-3.13)"
    .venv/bin/python -m pip uninstall -y -q pyenet >&2
  fi
  if ! { .venv/bin/python -m pip install --upgrade pip setuptools wheel &&
         .venv/bin/python -m pip install -e '.[test]'; } 2>&1 | tee .venv/pip-install.log | sed -u 's/^/[pip] /' >&2; then
    tail -n 30 .venv/pip-install.log >&2
    log "pip install failed (full log: .venv/pip-install.log)"
    exit 1
  fi
  touch "$stamp"
fi

# One styly-netsync-server release per NetSync protocol (0.10.4 … 0.17.5), each in its own folder
# build/netsync/<version> (pip --no-deps --target; the servers run on the .venv interpreter with
# PYTHONPATH=that folder). Skips a folder that has its dist-info; a new one is installed into a
# temporary folder, checked (version, PROTOCOL_VERSION) and renamed into place. One line each.
.venv/bin/python -m headcast.netcode.netsync.releases

if [ -f xr/mockrt/build.py ]; then
  .venv/bin/python xr/mockrt/build.py
fi
if [ -f xr/fastframe.py ]; then
  .venv/bin/python -m headcast.xr.fastframe
fi
if [ -f netcode/q3/build_native.py ]; then
  .venv/bin/python netcode/q3/build_native.py
fi
if [ -f netcode/netsync/build_native.py ]; then
  .venv/bin/python netcode/netsync/build_native.py
fi
