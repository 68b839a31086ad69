#!/usr/bin/env bash
# A root of the OTHER Debian release (host Debian 12 -> trixie, host Debian 13 -> bookworm) in which
# headcast's README commands run as on a fresh machine of that release. See --help.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROG="scripts/debian-root.sh"

usage() {
  cat <<EOF
Usage: bash $PROG [OPTIONS] COMMAND [-- CMD [ARG...]]

Makes and uses a minimal root of the other Debian release than this machine's (Debian 12
"bookworm" -> Debian 13 "trixie"; Debian 13 -> Debian 12), so both releases can be tested from
one machine. Needs root (debootstrap, mount, chroot).

Commands:
  create        Make the root if it is not there or not healthy (debootstrap --variant=minbase,
                about a minute plus download), configure it (see below) and clone this checkout's
                HEAD (or --ref) into /root/headcast inside it. Reuses a healthy root.
  run -- CMD    create (if needed), mount /proc /sys /dev /dev/pts (+ tmpfs /dev/shm and /run),
                run CMD inside the root via chroot in /root/headcast as root, unmount everything.
                Exits with CMD's status.
  shell         The same with an interactive login shell.
  status        Say whether the root exists, its release, its clone's commit and any mounts.
  umount        Unmount anything left under the root (only needed after a kill -9 of this script).
  destroy       Unmount, then delete the root.

Options:
  --release NAME  Debian release of the root (bookworm, trixie, ...); default: the other one.
  --dir DIR       Where the root lives; default: build/debian-root/<release> in this checkout
                  (build/ is gitignored). DIR must be an absolute path without spaces.
  --ref REF       Commit/branch/tag of this checkout to put in the root; default: HEAD.
                  Committed state only: uncommitted edits are not copied.
  --fresh-clone   Delete the root's clone first and clone again (its .venv and build/ go too).
  --keep-clone    Leave the root's clone as it is (do not move it to --ref/HEAD).
  --private-net   Run CMD in a new network namespace with only loopback up: its servers cannot
                  collide with ports in use on this machine (no downloads possible in there).
  -h, --help      This text.

What the root gets, each time it is used (so installs work as on this machine):
  - apt sources: the mirror addresses of THIS machine's apt sources (read at run time; none is
    written in the repository), with the root's release, <release>-updates and <release>-security,
    plus this machine's apt Acquire:: settings (proxy, validity checks);
  - this machine's CA certificates (the bundle, and /usr/local/share/ca-certificates so a later
    update-ca-certificates inside keeps them);
  - this machine's pip configuration: /etc/pip.conf, /etc/xdg/pip/, root's user pip.conf,
    PIP_CONFIG_FILE, and every local file a pip setting names (a constraints file pip would
    fail without is copied; a local --find-links folder is bind-mounted read-only); the PIP_*
    and HEADCAST_* environment variables are passed through to CMD;
  - resolv.conf and hosts.

The clone follows --ref/HEAD on every create/run/shell (git checkout --force: edits made inside
the root's clone are overwritten; use --keep-clone to keep them). Its gitignored .venv and build/
are kept, so a second run does not reinstall. Mounts are removed whatever happens (EXIT/INT/TERM/
HUP trap; processes CMD left running inside the root are stopped first); 'findmnt' is checked
afterwards and the script fails if anything is left mounted.

Examples:
  bash $PROG create
  bash $PROG run -- bash scripts/demo.sh
  bash $PROG run -- bash scripts/test.sh tests/sauer -q
  bash $PROG --release bookworm --dir /srv/roots/bookworm shell
  bash $PROG destroy
EOF
}

log() { printf '[debian-root %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 2; }

RELEASE="" DIR="" REF="HEAD" FRESH=0 KEEP=0 PRIVNET=0 CMD=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --release) [ $# -ge 2 ] || die "--release needs a name"; RELEASE="$2"; shift 2 ;;
    --release=*) RELEASE="${1#*=}"; shift ;;
    --dir) [ $# -ge 2 ] || die "--dir needs a path"; DIR="$2"; shift 2 ;;
    --dir=*) DIR="${1#*=}"; shift ;;
    --ref) [ $# -ge 2 ] || die "--ref needs a commit, branch or tag"; REF="$2"; shift 2 ;;
    --ref=*) REF="${1#*=}"; shift ;;
    --fresh-clone) FRESH=1; shift ;;
    --keep-clone) KEEP=1; shift ;;
    --private-net) PRIVNET=1; shift ;;
    --) shift; args=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *)
      [ -z "$CMD" ] || die "one command only ('$CMD' and '$1'; put the command to run after --)"
      CMD="$1"; shift ;;
  esac
done
[ -n "$CMD" ] || { usage >&2; exit 2; }
case "$CMD" in
  create|run|shell|status|umount|destroy) ;;
  *) die "unknown command '$CMD' (create, run, shell, status, umount, destroy; see --help)" ;;
esac
if [ "$CMD" = run ] && [ ${#args[@]} -eq 0 ]; then die "run needs a command: $PROG run -- CMD [ARG...]"; fi
if [ "$CMD" != run ] && [ ${#args[@]} -gt 0 ]; then die "only 'run' takes a command after --"; fi
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, mount and chroot need it)"

# --- host release and the other one -------------------------------------------------------
HOST_CODENAME="$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")"
if [ -z "$RELEASE" ]; then
  case "$HOST_CODENAME" in
    bookworm) RELEASE=trixie ;;
    trixie) RELEASE=bookworm ;;
    *) die "this machine is '${HOST_CODENAME:-unknown}', not Debian 12 or 13: give --release" ;;
  esac
fi
[[ "$RELEASE" =~ ^[a-z]+$ ]] || die "bad release name '$RELEASE'"
[ -n "$DIR" ] || DIR="$REPO/build/debian-root/$RELEASE"
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
[[ "$DIR" =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "--dir must be an absolute path of letters, digits and ._/+- only: $DIR"
DIR="${DIR%/}"
[ "$DIR" != "" ] && [ "$DIR" != / ] || die "refusing to use / as the root"
MARK="$DIR/.headcast-debian-root"
CLONE=/root/headcast

# --- mounts -----------------------------------------------------------------------------------
mounts_under() {  # every mount point at or below $DIR, deepest first
  findmnt -rn -o TARGET | awk -v d="$DIR" '$0 == d || index($0, d "/") == 1' | awk '{ print length($0) "\t" $0 }' |
    sort -rn | cut -f2-
}
procs_in_root() {  # PIDs whose root directory is $DIR (started by a command run inside it)
  local p r
  for p in /proc/[0-9]*; do
    r="$(readlink "$p/root" 2>/dev/null)" || continue
    if [ "$r" = "$DIR" ]; then echo "${p#/proc/}"; fi
  done
}
stop_procs_in_root() {
  local pids i
  pids="$(procs_in_root)"
  [ -n "$pids" ] || return 0
  log "stopping $(echo "$pids" | wc -w) process(es) left running inside the root: $(echo $pids)"
  kill -TERM $pids 2>/dev/null || true
  for i in $(seq 50); do
    pids="$(procs_in_root)"; [ -n "$pids" ] || return 0
    sleep 0.1
  done
  kill -KILL $pids 2>/dev/null || true
  for i in $(seq 50); do [ -n "$(procs_in_root)" ] || return 0; sleep 0.1; done
}
unmount_all() {
  local m left
  [ -n "$(mounts_under)" ] || return 0
  stop_procs_in_root
  while read -r m; do
    [ -n "$m" ] || continue
    umount "$m" 2>/dev/null && continue
    sleep 0.5
    mountpoint -q "$m" || continue
    umount "$m" 2>/dev/null && continue
    log "umount $m busy: detaching it (umount -l)"; umount -l "$m" || true
  done < <(mounts_under)
  left="$(mounts_under)"
  if [ -n "$left" ]; then
    log "still mounted under $DIR:"; printf '  %s\n' $left >&2
    return 1
  fi
  return 0
}
MOUNTED=0 HAVE_LOCK=0
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  # Only the holder of the root's lock unmounts: a second instance that was still waiting for
  # the lock must not take the mounts (and processes) of the one using the root.
  if [ "$HAVE_LOCK" = 1 ] && { [ "$MOUNTED" = 1 ] || [ -n "$(mounts_under 2>/dev/null)" ]; }; then
    if unmount_all; then log "unmounted; findmnt shows nothing under $DIR"
    else log "ERROR: mounts left under $DIR (run: bash $PROG --dir $DIR umount)"; [ $rc -ne 0 ] || rc=1; fi
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

LOCK_FD=""
take_lock() {  # one user of a root at a time: a second run would unmount under the first
  mkdir -p "$(dirname "$DIR")"
  exec {LOCK_FD}>"$DIR.lock"
  if ! flock -n "$LOCK_FD"; then
    [ "${1:-}" != nowait ] || die "another $PROG is using $DIR right now (its mounts are its own; try again when it ends)"
    log "another $PROG is using $DIR; waiting for it"
    flock "$LOCK_FD"
  fi
  HAVE_LOCK=1
}

pip_paths() {  # local paths named by this machine's pip settings (files and folders that exist)
  local f
  {
    for f in /etc/pip.conf /etc/xdg/pip/pip.conf "${PIP_CONFIG_FILE:-}" "${HOME:-/root}/.config/pip/pip.conf" "${HOME:-/root}/.pip/pip.conf"; do
      [ -n "$f" ] && [ -f "$f" ] && sed -e 's/^[^=]*=//' "$f"
    done
    env | sed -n 's/^PIP_[A-Z_]*=//p'
  } | tr ' \t=,' '\n\n\n\n' | sed -e 's#^file://##' | grep '^/' | sort -u | while read -r f; do
    [ -e "$f" ] && echo "$f"
  done
}

do_mount() {
  local p
  [ -z "$(mounts_under)" ] || { log "leftover mounts under $DIR from an earlier run: removing them"; unmount_all || die "cannot unmount"; }
  MOUNTED=1
  mount -t proc proc "$DIR/proc"
  mount -t sysfs -o ro sysfs "$DIR/sys"
  mount --bind /dev "$DIR/dev";        mount --make-private "$DIR/dev"
  mount --bind /dev/pts "$DIR/dev/pts"; mount --make-private "$DIR/dev/pts"
  mkdir -p "$DIR/dev/shm" 2>/dev/null || true
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$DIR/dev/shm"
  mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$DIR/run"
  mkdir -p "$DIR/run/lock" && chmod 1777 "$DIR/run/lock"
  # Local folders a pip setting names (e.g. --find-links): read-only, at the same path. A local
  # index (.../simple, as in file:///srv/pypi/simple) links its files relative to it, so its
  # parent folder is mounted.
  while read -r p; do
    [ -d "$p" ] || continue
    case "$p" in */simple|*/simple/) p="$(dirname "${p%/}")" ;; esac
    mountpoint -q "$DIR$p" 2>/dev/null && continue  # already mounted (two settings naming one folder)
    mkdir -p "$DIR$p"
    mount --bind "$p" "$DIR$p" && mount --make-private "$DIR$p" && mount -o remount,bind,ro "$DIR$p"
  done < <(pip_paths)
}

# --- apt sources from this machine's own configuration ----------------------------------------
# Prints "URI<TAB>SUITE" for every enabled deb source (one-line .list and deb822 .sources).
host_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' "$f" | awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $i "\t" $(i+1) }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() { if (types ~ /(^| )deb( |$)/ && enabled != "no") { n = split(uris, u, " "); m = split(suites, s, " ");
                           for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print u[i] "\t" s[j] } types = uris = suites = ""; enabled = "" }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val) }
      key == "types" { types = val } key == "uris" { uris = val } key == "suites" { suites = val } key == "enabled" { enabled = tolower(val) }
      END { flush() }' "$f"
  done
}
MIRROR="" SECURITY=""
find_mirrors() {
  local list
  list="$(host_sources)"
  MIRROR="$(printf '%s\n' "$list" | awk -F'\t' -v s="$HOST_CODENAME" '$2 == s { print $1; exit }')"
  SECURITY="$(printf '%s\n' "$list" | awk -F'\t' -v s="$HOST_CODENAME-security" '$2 == s || $2 == s "/updates" { print $1; exit }')"
  [ -n "$MIRROR" ] || die "no apt source for '$HOST_CODENAME' in /etc/apt/sources.list{,.d}: cannot tell which Debian mirror to use"
  MIRROR="${MIRROR%/}"; SECURITY="${SECURITY%/}"
  [ -n "$SECURITY" ] || log "warning: this machine has no $HOST_CODENAME-security source; the root gets none either"
}

configure_root() {
  local f p
  find_mirrors
  rm -f "$DIR/etc/apt/sources.list"
  {
    echo "# written by headcast's $PROG from this machine's own apt sources"
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n' "$MIRROR" "$RELEASE" "$RELEASE"
    if [ -n "$SECURITY" ]; then printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' "$SECURITY" "$RELEASE"; fi
  } > "$DIR/etc/apt/sources.list.d/debian.sources"
  # Acquire:: settings (proxy, validity checks against a snapshot mirror, ...).
  for f in /etc/apt/apt.conf /etc/apt/apt.conf.d/*; do
    [ -f "$f" ] && grep -q '^[[:space:]]*Acquire' "$f" && cp "$f" "$DIR/etc/apt/apt.conf.d/$(basename "$f" | sed 's/^apt\.conf$/99host-apt-conf/')"
  done
  # CA certificates.
  mkdir -p "$DIR/etc/ssl/certs" "$DIR/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$DIR/etc/ssl/certs/ca-certificates.crt"
  if [ -d /usr/local/share/ca-certificates ]; then cp -a /usr/local/share/ca-certificates/. "$DIR/usr/local/share/ca-certificates/"; fi
  # pip configuration and the local files it names.
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$DIR/etc/pip.conf"
  if [ -d /etc/xdg/pip ]; then mkdir -p "$DIR/etc/xdg/pip"; cp -a /etc/xdg/pip/. "$DIR/etc/xdg/pip/"; fi
  for f in "${HOME:-/root}/.config/pip/pip.conf" "${HOME:-/root}/.pip/pip.conf"; do
    if [ -f "$f" ]; then mkdir -p "$(dirname "$DIR/root/${f#"${HOME:-/root}"/}")"; cp "$f" "$DIR/root/${f#"${HOME:-/root}"/}"; fi
  done
  if [ -n "${PIP_CONFIG_FILE:-}" ] && [ -f "$PIP_CONFIG_FILE" ]; then mkdir -p "$DIR$(dirname "$PIP_CONFIG_FILE")"; cp "$PIP_CONFIG_FILE" "$DIR$PIP_CONFIG_FILE"; fi
  while read -r p; do
    [ -f "$p" ] || continue
    mkdir -p "$DIR$(dirname "$p")"; cp "$p" "$DIR$p"
  done < <(pip_paths)
  cp /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
  cp /etc/hosts "$DIR/etc/hosts"
}

healthy() {
  [ -f "$MARK" ] && [ -x "$DIR/usr/bin/apt-get" ] && [ -x "$DIR/bin/bash" ] &&
    [ "$(. "$DIR/etc/os-release" 2>/dev/null; echo "${VERSION_CODENAME:-}")" = "$RELEASE" ] &&
    chroot "$DIR" /bin/true 2>/dev/null
}

create_root() {
  local t0 t1
  if healthy; then log "reusing the $RELEASE root in $DIR ($(cat "$DIR/etc/debian_version"))"; return 0; fi
  if [ -e "$DIR" ] && [ ! -f "$MARK" ] && [ ! -f "$DIR/.headcast-debian-root.partial" ] &&
     [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
    die "$DIR is not empty and is not a root this script made: not touching it (choose another --dir)"
  fi
  if [ -e "$DIR" ]; then
    log "$DIR is not a healthy $RELEASE root (interrupted or of another release): removing it"
    unmount_all || die "cannot unmount what is under $DIR"
    rm -rf --one-file-system "$DIR"
  fi
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2; } || die "cannot install debootstrap"
  fi
  # A release newer than this debootstrap (e.g. Debian's testing release on an older host) is
  # made with its 'sid' script, which testing releases share.
  BOOTSTRAP_SCRIPT="/usr/share/debootstrap/scripts/$RELEASE"
  if [ ! -e "$BOOTSTRAP_SCRIPT" ]; then
    [ -e /usr/share/debootstrap/scripts/sid ] || die "this debootstrap does not know '$RELEASE' (update the debootstrap package)"
    log "this debootstrap has no '$RELEASE' script: using its 'sid' script (as for any testing release)"
    BOOTSTRAP_SCRIPT=/usr/share/debootstrap/scripts/sid
  fi
  find_mirrors
  log "debootstrap --variant=minbase $RELEASE into $DIR from this machine's Debian mirror (about a minute or two)"
  t0=$(date +%s)
  mkdir -p "$DIR"
  date -u +%FT%TZ > "$DIR/.headcast-debian-root.partial"  # ours, even if debootstrap stops half-way
  # debootstrap's own progress lines, stamped; its full log stays in DIR/debootstrap/ on failure.
  if ! debootstrap --variant=minbase --components=main "$RELEASE" "$DIR" "$MIRROR" "$BOOTSTRAP_SCRIPT" 2>&1 |
       while IFS= read -r line; do
         case "$line" in I:\ Retriev*|I:\ Valid*|I:\ Checking*) ;; *) log "  $line" ;; esac
       done; then
    die "debootstrap failed (see $DIR/debootstrap/debootstrap.log if present)"
  fi
  [ -x "$DIR/usr/bin/apt-get" ] || die "debootstrap finished but $DIR has no apt-get"
  t1=$(date +%s)
  date -u +%FT%TZ > "$MARK"
  rm -f "$DIR/.headcast-debian-root.partial"
  log "root ready: Debian $(cat "$DIR/etc/debian_version") in $((t1 - t0)) s"
}

sync_clone() {
  local sha
  sha="$(git -C "$REPO" rev-parse --verify "$REF^{commit}")" || die "no commit '$REF' in $REPO"
  if [ "$FRESH" = 1 ] && [ -e "$DIR$CLONE" ]; then log "removing the root's clone (--fresh-clone)"; rm -rf --one-file-system "$DIR$CLONE"; fi
  if [ ! -d "$DIR$CLONE/.git" ]; then
    log "git clone $REPO ($REF = ${sha:0:12}) into the root's $CLONE"
    rm -rf --one-file-system "$DIR$CLONE"
    git clone -q --no-checkout "$REPO" "$DIR$CLONE"
    git -C "$DIR$CLONE" checkout -q --detach "$sha"
  elif [ "$KEEP" = 1 ]; then
    log "keeping the root's clone at $(git -C "$DIR$CLONE" rev-parse --short=12 HEAD) (--keep-clone)"
  else
    git -C "$DIR$CLONE" fetch -q "$REPO" "$sha" 2>/dev/null || git -C "$DIR$CLONE" fetch -q "$REPO"
    git -C "$DIR$CLONE" checkout -q --force --detach "$sha"
    log "root's clone at ${sha:0:12} ($REF)"
  fi
}

in_root() {  # run "$@" inside the root, mounted, with a clean environment
  local envs=() v rc
  set -e  # a failed mount stops here (the trap unmounts), never a half-mounted root (callers set +e)
  envs=(HOME=/root "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "TERM=${TERM:-dumb}" LANG=C.UTF-8
        "DEBIAN_ROOT_RELEASE=$RELEASE")
  while IFS= read -r v; do envs+=("$v"); done < <(env | grep -E '^(PIP|HEADCAST)_[A-Za-z0-9_]*=' || true)
  do_mount
  local inner=(env -i "${envs[@]}" chroot "$DIR" /bin/bash -c 'cd "$0" && exec "$@"' "$CLONE" "$@")
  if [ "$PRIVNET" = 1 ]; then inner=(unshare --net -- bash -c 'ip link set lo up && exec "$@"' bash "${inner[@]}"); fi
  set +e
  if [ "$CMD" = shell ]; then
    "${inner[@]}"  # in the foreground: the terminal is the shell's
    rc=$?
  else
    # In the background with a wait, so a TERM/INT/HUP to this script runs its trap at once (bash
    # runs traps only between commands); the trap stops what runs inside the root and unmounts.
    "${inner[@]}" <&0 &
    wait $!
    rc=$?
  fi
  set -e
  return $rc
}

case "$CMD" in
  status)
    if [ -f "$MARK" ]; then
      echo "root: $DIR (Debian $(cat "$DIR/etc/debian_version" 2>/dev/null), created $(cat "$MARK"))"
      if [ -d "$DIR$CLONE/.git" ]; then echo "clone: $CLONE at $(git -C "$DIR$CLONE" log -1 --format='%h %s')"; fi
    else
      echo "no healthy root in $DIR"
    fi
    m="$(mounts_under)"; if [ -n "$m" ]; then echo "mounted:"; printf '  %s\n' $m; else echo "nothing mounted under it"; fi
    ;;
  umount)
    take_lock nowait
    unmount_all && log "nothing mounted under $DIR"
    ;;
  destroy)
    take_lock
    unmount_all || die "cannot unmount what is under $DIR: not deleting it"
    if [ -e "$DIR" ]; then log "deleting $DIR"; rm -rf --one-file-system "$DIR"; fi
    # the lock file stays: an instance waiting on it holds it open (a new file would let two run)
    ;;
  create)
    take_lock
    create_root; configure_root; sync_clone
    ;;
  run|shell)
    take_lock
    create_root; configure_root; sync_clone
    t0=$(date +%s)
    if [ "$CMD" = shell ]; then
      log "shell in the $RELEASE root ($CLONE); exit to leave (mounts are removed then)"
      set +e; in_root /bin/bash -l; rc=$?; set -e
    else
      log "run in the $RELEASE root: ${args[*]}"
      set +e; in_root "${args[@]}"; rc=$?; set -e
      log "exit status $rc after $(( $(date +%s) - t0 )) s in the $RELEASE root"
    fi
    exit $rc
    ;;
esac
