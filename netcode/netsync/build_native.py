"""Build the optional C accelerator of the NetSync codec (_nscodec.c) into this folder.

The build backend builds the same extension (setup.py, with CFLAGS from here) into a wheel, or in
place for the editable install scripts/setup.sh makes; this script rebuilds it when missing or
stale (older than _nscodec.c or this file), standard library only, and swaps the new file in
atomically. Without it codec.py runs its pure-Python paths, which stay the reference (same bytes,
same floats: tests/netsync/test_codec_native.py). `HEADCAST_PURE_PYTHON=1` leaves it unused.

    python netcode/netsync/build_native.py [--force]
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
SOURCE = HERE / "_nscodec.c"
_HINTS = HERE.parent.parent / "xr" / "mockrt" / "build.py"
# -ffp-contract=off: no fused multiply-add, every + and * rounds as Python's (the same floats)
CFLAGS = [
    "-shared",
    "-fPIC",
    "-O2",
    "-std=c99",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
]


class NativeBuildError(RuntimeError):
    """The extension could not be built (missing compiler or Python headers, or a compile error)."""


def in_checkout() -> bool:
    repo = HERE.parent.parent
    return (repo / "pyproject.toml").is_file() and SOURCE.is_file()


def install_hint(*needs: str) -> str:
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
    return HERE / f"_nscodec{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def stale(path: Path | None = None) -> bool:
    path = path or target()
    if not path.exists():
        return True
    built = path.stat().st_mtime
    return any(src.stat().st_mtime > built for src in (SOURCE, Path(__file__).resolve()))


def _compile(out: Path, say: Callable[[str], object]) -> None:
    cc = shlex.split(os.environ.get("CC", ""))
    gcc = shutil.which(cc[0]) if cc else (shutil.which("gcc") or shutil.which("cc"))
    if gcc is None:
        raise NativeBuildError(f"no C compiler found{f' (CC={cc[0]})' if cc else ''}: {install_hint('compiler')}")
    include = os.environ.get("HEADCAST_PYTHON_INCLUDE") or sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise NativeBuildError(f"Python.h not found in {include}: {install_hint('python')}")
    fd, tmp = tempfile.mkstemp(prefix="._nscodec-", suffix=".so", dir=out.parent)
    os.close(fd)
    cmd = [gcc, *cc[1:], *CFLAGS, f"-I{include}", "-o", tmp, str(SOURCE), "-lm"]
    say(f"compiling {SOURCE.name} -> {out}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise NativeBuildError(f"the compiler failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
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
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    try:
        build(force="--force" in argv, say=lambda msg: print(f"[nscodec] {msg}"))
    except NativeBuildError as exc:
        print(f"[nscodec] {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
