"""The build of headcast's optional C extensions in place (netcode/q3/_q3native.c,
netcode/netsync/_nscodec.c): one mechanism, each extension's build_native.py says only its source,
its flags and its libraries, and is its own script:

    EXT: Any = runpy.run_path(str(HERE.parent / "cbuild.py"))["Extension"](SOURCE, CFLAGS, script=__file__, doc=__doc__)
    if __name__ == "__main__":
        sys.exit(EXT.main(sys.argv[1:]))

Its callers use `build_native.EXT` (`.build()`, `.stale()`, `.target()`, `.in_checkout()`,
`.install_hint()`, `.Error`).

Standard library only, and run by file path (`runpy.run_path` in each build_native.py), because
it runs where the package cannot be imported: as a script from scripts/setup.sh (`python netcode/q3/build_native.py`)
and from setup.py before anything is installed. Idempotent: compiles only when the extension is
missing or older than its source (or its build files), and swaps the new file in atomically so a
running process keeps a valid mapping. Without a compiler the package runs its pure-Python paths,
which stay the reference.
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
from typing import Callable, Sequence

# xr/mockrt/build.py, standard library only too: its install_hint says what to install where.
_HINTS = Path(__file__).resolve().parent.parent / "xr" / "mockrt" / "build.py"


class NativeBuildError(RuntimeError):
    """The extension could not be built (missing compiler or Python headers, or a compile error)."""


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


class Extension:
    """One C extension built next to its source: `name` is the module's name (`_q3native`);
    `script` the build_native.py that says so (its `doc` is the script's --help)."""

    Error = NativeBuildError
    install_hint = staticmethod(install_hint)

    def __init__(
        self,
        source: Path,
        cflags: Sequence[str],
        *,
        libs: Sequence[str] = (),
        script: str | Path,
        doc: str | None = None,
    ) -> None:
        self.source = source
        self.name = source.stem
        self.cflags = list(cflags)
        self.libs = list(libs)
        self.doc = doc
        self.inputs = (source, Path(script).resolve(), Path(__file__).resolve())  # a newer one: rebuild

    def in_checkout(self) -> bool:
        """The source's folder is a repository checkout's (an editable install), not an installed package."""
        repo = self.source.parent.parent.parent
        return (repo / "pyproject.toml").is_file() and self.source.is_file()

    def target(self) -> Path:
        """Where the extension goes: next to its source, named with the interpreter's extension suffix."""
        return self.source.parent / f"{self.name}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"

    def stale(self, path: Path | None = None) -> bool:
        path = path or self.target()
        if not path.exists():
            return True
        built = path.stat().st_mtime
        return any(src.stat().st_mtime > built for src in self.inputs)

    def _compile(self, out: Path, say: Callable[[str], object]) -> None:
        cc = shlex.split(os.environ.get("CC", ""))  # may carry flags ("gcc -pthread")
        gcc = shutil.which(cc[0]) if cc else (shutil.which("gcc") or shutil.which("cc"))
        if gcc is None:
            where = f" (CC={cc[0]})" if cc else " (nor cc)"
            raise NativeBuildError(f"gcc not found{where}: {install_hint('compiler')}")
        # HEADCAST_PYTHON_INCLUDE: another interpreter's headers (building for a root's Python)
        include = os.environ.get("HEADCAST_PYTHON_INCLUDE") or sysconfig.get_paths()["include"]
        if not (Path(include) / "Python.h").is_file():
            raise NativeBuildError(f"Python.h not found in {include}: {install_hint('python')}")
        fd, tmp = tempfile.mkstemp(prefix=f".{self.name}-", suffix=".so", dir=out.parent)
        os.close(fd)
        cmd = [gcc, *cc[1:], *self.cflags, f"-I{include}", "-o", tmp, str(self.source), *self.libs]
        say(f"compiling {self.source.name} -> {out}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            os.unlink(tmp)
            raise NativeBuildError(f"gcc failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
        if proc.stderr.strip():
            say(proc.stderr.strip())
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)

    def build(self, *, force: bool = False, say: Callable[[str], object] = lambda msg: None) -> Path:
        """Build when missing or stale; returns the extension's path."""
        out = self.target()
        if force or self.stale(out):
            self._compile(out, say)
        else:
            say(f"{out} is up to date")
        return out

    def main(self, argv: list[str]) -> int:
        """The build_native.py script: [--force], -h/--help prints its doc; lines say [q3native] …"""
        tag = self.name.lstrip("_")
        if "-h" in argv or "--help" in argv:
            print((self.doc or "").strip())
            return 0
        try:
            self.build(force="--force" in argv, say=lambda msg: print(f"[{tag}] {msg}"))
        except NativeBuildError as exc:
            print(f"[{tag}] {exc}", file=sys.stderr)
            return 1
        return 0
