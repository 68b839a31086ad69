"""Build the optional C accelerator of the Quake 3 codecs (_q3native.c) into this folder.

The build backend builds the same extension (setup.py, with CFLAGS from here): into a wheel, or in
place into this folder for the editable install scripts/setup.sh makes. This script rebuilds it
when stale: runnable as a script (scripts/setup.sh: `.venv/bin/python netcode/q3/build_native.py`),
standard library only. Idempotent: compiles only when the extension is missing or older than
_q3native.c (or this file), and swaps the new file in atomically so a running process keeps a valid
mapping. The extension lands next to the package's modules (`from . import _q3native` finds it);
without it the package runs its pure-Python codecs, which stay the reference (see native.py).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_q3native.c"
# xr/mockrt/build.py, standard library only too: its install_hint says what to install where.
_HINTS = HERE.parent.parent / "xr" / "mockrt" / "build.py"
CFLAGS = [
    "-shared",
    "-fPIC",
    "-O2",
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Wno-missing-field-initializers",
    "-Wno-unused-parameter",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
]


class NativeBuildError(RuntimeError):
    """The extension could not be built (missing compiler or Python headers, or a compile error)."""


def in_checkout() -> bool:
    """This folder is a repository checkout's netcode/q3 (an editable install), not an installed package."""
    repo = HERE.parent.parent
    return (repo / "pyproject.toml").is_file() and (repo / "netcode" / "q3" / "_q3native.c").is_file()


def install_hint(*needs: str) -> str:
    """What to install on this platform for `needs` ("compiler", "python"); see xr/mockrt/build.py."""
    try:
        spec = importlib.util.spec_from_file_location("_headcast_build_hints", _HINTS)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {_HINTS}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.install_hint(*needs))
    except (OSError, ImportError, AttributeError):
        return "install a C compiler and your Python's development headers"


def target() -> Path:
    """Where the extension goes: this folder, named with the interpreter's extension suffix."""
    return HERE / f"_q3native{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def stale(path: Path | None = None) -> bool:
    path = path or target()
    if not path.exists():
        return True
    built = path.stat().st_mtime
    return any(src.stat().st_mtime > built for src in (SOURCE, Path(__file__).resolve()))


def _compile(out: Path, say: Callable[[str], object]) -> None:
    cc = shlex.split(os.environ.get("CC", ""))  # may carry flags ("gcc -pthread")
    gcc = shutil.which(cc[0]) if cc else (shutil.which("gcc") or shutil.which("cc"))
    if gcc is None:
        where = f" (CC={cc[0]})" if cc else " (nor cc)"
        raise NativeBuildError(f"gcc not found{where}: {install_hint('compiler')}")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise NativeBuildError(f"Python.h not found in {include}: {install_hint('python')}")
    fd, tmp = tempfile.mkstemp(prefix="._q3native-", suffix=".so", dir=out.parent)
    os.close(fd)
    cmd = [gcc, *cc[1:], *CFLAGS, f"-I{include}", "-o", tmp, str(SOURCE)]
    say(f"compiling {SOURCE.name} -> {out}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise NativeBuildError(f"gcc failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
    if proc.stderr.strip():
        say(proc.stderr.strip())
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)


def build(*, force: bool = False, say: Callable[[str], object] = lambda msg: None) -> Path:
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
