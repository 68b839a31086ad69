#!/usr/bin/env bash
# Build the documentation site (docs/, mkdocs.yml) strictly and check every link, in seconds:
#   1. `mkdocs build --strict` into a temporary folder (nothing is left in the tree): a broken
#      link or anchor between pages, a page missing from the nav, any warning fails the build;
#   2. every citation of a docs page in the repository (code comments, tests, scripts, README:
#      `docs/protocols/quake3.md#usercmd`) names a page that exists and an anchor it has;
#   3. every repository path the pages name (`netcode/q3/vrhead.py`, `tests/q3/…`) exists, and
#      nothing in the repository cites the design documents outside it (a clone has none).
# Exit 0 when all hold, 1 with one line per problem otherwise. Needs mkdocs (the venv has it:
# `bash scripts/setup.sh`, or `pip install mkdocs`).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
if ! "$PY" -c 'import mkdocs' 2>/dev/null; then
  echo "docs: mkdocs is not installed for $PY (bash scripts/setup.sh, or pip install mkdocs)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! "$PY" -m mkdocs build --strict --config-file mkdocs.yml --site-dir "$tmp/site" >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log" >&2
  echo "docs: mkdocs build --strict failed" >&2
  exit 1
fi
"$PY" - "$tmp/site" <<'PYEOF'
import glob, os, re, subprocess, sys
from pathlib import Path

site = Path(sys.argv[1])
try:  # a checkout: its files; an unpacked sdist: every file under the top
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):
    files = [str(p) for p in Path(".").rglob("*") if not any(x in p.parts for x in (".venv", "build", ".git"))]
files = [f for f in files if os.path.isfile(f)]
problems = []

def anchors(page):
    """The element ids of a built page (docs/x/y.md -> site/x/y/index.html)."""
    rel = Path(page).relative_to("docs").with_suffix("")
    html = site / ("index.html" if rel.name == "index" and rel.parent == Path(".") else
                   rel.parent / "index.html" if rel.name == "index" else rel / "index.html")
    return set(re.findall(r'\bid="([^"]+)"', html.read_text(encoding="utf-8")))

cache = {}
CITE = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.md)(?:#([\w-]+))?")
OUTSIDE = re.compile(r"\.\./shared|\bDESIGN\.md|shared/reference|(?:reference|seed) §"
                     r"|(?<!protocols/)\b(?:quake3|netsync|sauerbraten|openxr|goldsrc)\.md\b")
PAGE_OUTSIDE = re.compile(r"\.\./shared|\bDESIGN\.md|shared/reference|§")
for f in files:
    if f.startswith("docs/") and f.endswith(".md"):
        for n, line in enumerate(Path(f).read_text(encoding="utf-8").splitlines(), 1):
            if PAGE_OUTSIDE.search(line):
                problems.append(f"{f}:{n}: cites a document outside the repository: {line.strip()[:100]}")
    if f.startswith("docs/") or f == "scripts/docs.sh" or f.endswith((".bin", ".png", ".so", ".json", ".trace", ".pk3")):
        continue
    try:
        text = Path(f).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        continue
    for n, line in enumerate(text.splitlines(), 1):
        if OUTSIDE.search(line):
            problems.append(f"{f}:{n}: cites a document outside the repository: {line.strip()[:100]}")
        for page, anchor in CITE.findall(line):
            if not Path(page).is_file():
                problems.append(f"{f}:{n}: {page} does not exist")
                continue
            if anchor:
                ids = cache.setdefault(page, anchors(page))
                if anchor not in ids:
                    problems.append(f"{f}:{n}: {page} has no anchor #{anchor}")

# README's own links (relative, to pages or files)
for n, line in enumerate(Path("README.md").read_text(encoding="utf-8").splitlines(), 1):
    for target in re.findall(r"\]\(([^)\s]+)\)", line):
        if re.match(r"[a-z]+:", target):
            continue
        path = target.split("#", 1)[0]
        if path and not Path(path).exists():
            problems.append(f"README.md:{n}: link to {path}, which does not exist")

# repository paths named in the pages
ROOTS = ("app/", "xr/", "netcode/", "tests/", "scripts/", "assets/", ".ci/", ".github/")
for page in sorted(glob.glob("docs/**/*.md", recursive=True)):
    for n, line in enumerate(Path(page).read_text(encoding="utf-8").splitlines(), 1):
        bare = re.findall(r"(?<![\w/.-])((?:app|xr|netcode|tests|scripts)/[\w./-]+\.(?:py|c|sh|md|json|toml))", line)
        for path in re.findall(r"`([^`\s]+)`", line) + bare:
            path = path.rstrip(".,:;)")
            if not path.startswith(ROOTS) or "<" in path or not Path(path.split("/")[0]).is_dir():
                continue
            if not (glob.glob(path) or Path(path).exists()):
                problems.append(f"{page}:{n}: names {path}, which is not in the repository")

for p in problems:
    print("docs:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"docs: built and checked ({len(list(site.rglob('*.html')))} pages)")
PYEOF
