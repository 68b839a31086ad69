"""Build the optional C accelerator of the Quake 3 codecs (_q3native.c) into this folder.

Runnable as a script (scripts/setup.sh: `.venv/bin/python netcode/q3/build_native.py`), standard
library only. Idempotent: compiles only when the extension is missing or older than _q3native.c
(or this file), and swaps the new file in atomically so a running process keeps a valid mapping.
The extension lands next to the package's modules (`from . import _q3native` finds it); without
it the package runs its pure-Python codecs, which stay the reference (see native.py).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_q3native.c"
CFLAGS = ["-shared", "-fPIC", "-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-missing-field-initializers", "-Wno-unused-parameter",
          "-fvisibility=hidden", "-fno-strict-aliasing"]


class NativeBuildError(RuntimeError):
    """The extension could not be built (missing compiler or Python headers, or a compile error)."""


def target() -> Path:
    """Where the extension goes: this folder, named with the interpreter's extension suffix."""
    return HERE / f"_q3native{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def stale(path: Path | None = None) -> bool:
    path = path or target()
    if not path.exists():
        return True
    built = path.stat().st_mtime
    return any(src.stat().st_mtime > built for src in (SOURCE, Path(__file__).resolve()))


def _compile(out: Path, say) -> None:
    gcc = shutil.which(os.environ.get("CC", "gcc"))
    if gcc is None:
        raise NativeBuildError("gcc not found: install the Debian packages gcc libc6-dev (scripts/setup.sh does)")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise NativeBuildError(f"Python.h not found in {include}: install the Debian package python3-dev "
                               "(scripts/setup.sh does) or your Python's development headers")
    fd, tmp = tempfile.mkstemp(prefix="._q3native-", suffix=".so", dir=out.parent)
    os.close(fd)
    cmd = [gcc, *CFLAGS, f"-I{include}", "-o", tmp, str(SOURCE)]
    say(f"compiling {SOURCE.name} -> {out}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise NativeBuildError(f"gcc failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
    if proc.stderr.strip():
        say(proc.stderr.strip())
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)


def build(*, force: bool = False, say=lambda msg: None) -> Path:
    """Build when missing or stale; returns the extension's path."""
    out = target()
    if force or stale(out):
        _compile(out, say)
    else:
        say(f"{out} is up to date")
    return out


def main(argv: list[str]) -> int:
    try:
        build(force="--force" in argv, say=lambda msg: print(f"[q3native] {msg}"))
    except NativeBuildError as exc:
        print(f"[q3native] {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
