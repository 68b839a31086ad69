"""Build the mocked OpenXR runtime (libmockxr.so + its loader manifest) with gcc.

Runnable as a script (scripts/setup.sh: `.venv/bin/python xr/mockrt/build.py`) and imported by
`headcast.xr.mockrt.ensure_runtime()`. Standard library only, so the script needs no install.
Idempotent: rebuilds only when mockxr.c (or this file) is newer than the library, and swaps the
new library in atomically so a process that has the old one loaded keeps a valid mapping.
`headcast.xr.fastframe` builds the session's frame helper with the same functions.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "mockxr.c"
MANIFEST_TEMPLATE = HERE / "mockxr.json"  # copied next to the library: library_path is relative
LIBRARY_NAME = "libmockxr.so"
MANIFEST_NAME = "mockxr.json"
HEADERS = Path("/usr/include/openxr/openxr.h")
CFLAGS = ["-shared", "-fPIC", "-fvisibility=hidden", "-O2", "-std=c11", "-Wall", "-Wextra"]
LIBS = ["-lm", "-ldl", "-lpthread"]


class RuntimeBuildError(RuntimeError):
    """A native part (the mock runtime, the frame helper) could not be built (missing compiler/headers or a compile error)."""


def default_build_dir(name: str = "mockrt") -> Path:
    """build/<name>/ in a repository checkout; the user cache directory when installed."""
    repo = HERE.parent.parent
    if (repo / "pyproject.toml").is_file() and (repo / "xr" / "mockrt" / "mockxr.c").is_file():
        return repo / "build" / name
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "headcast" / name


def stale(target: Path, sources: tuple[Path, ...] = (SOURCE, Path(__file__).resolve())) -> bool:
    """`target` is missing or older than one of `sources`."""
    if not target.exists():
        return True
    built = target.stat().st_mtime
    return any(src.stat().st_mtime > built for src in sources)


def compile_library(library: Path, say, source: Path = SOURCE, libs: tuple[str, ...] = tuple(LIBS),
                    flags: tuple[str, ...] = ()) -> None:
    """gcc `source` (with CFLAGS and `flags`) into the shared library `library`, swapped in atomically."""
    gcc = shutil.which(os.environ.get("CC", "gcc"))
    if gcc is None:
        raise RuntimeBuildError("gcc not found: install the Debian packages gcc libc6-dev (scripts/setup.sh does)")
    if not HEADERS.is_file():
        raise RuntimeBuildError(f"{HEADERS} not found: install the Debian package libopenxr-dev (scripts/setup.sh does)")
    library.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{library.stem}-", suffix=".so", dir=library.parent)
    os.close(fd)
    cmd = [gcc, *CFLAGS, *flags, "-o", tmp, str(source), *libs]
    say(f"compiling {source.name} -> {library}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise RuntimeBuildError(f"gcc failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, library)


def build(build_dir: Path | None = None, *, force: bool = False, say=lambda msg: None) -> Path:
    """Build when missing or stale; returns the manifest path (absolute)."""
    out = (build_dir or default_build_dir()).resolve()
    library, manifest = out / LIBRARY_NAME, out / MANIFEST_NAME
    if force or stale(library):
        compile_library(library, say)
    else:
        say(f"{library} is up to date")
    text = MANIFEST_TEMPLATE.read_text()
    if not manifest.is_file() or manifest.read_text() != text:
        say(f"writing {manifest}")
        fd, tmp = tempfile.mkstemp(prefix=".mockxr-", suffix=".json", dir=out)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, manifest)
    return manifest


def main(argv: list[str]) -> int:
    force = "--force" in argv
    try:
        manifest = build(force=force, say=lambda msg: print(f"[mockrt] {msg}"))
    except RuntimeBuildError as exc:
        print(f"[mockrt] {exc}", file=sys.stderr)
        return 1
    print(f"[mockrt] runtime manifest: {manifest}")
    print(f"[mockrt] use it with: XR_RUNTIME_JSON={manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
