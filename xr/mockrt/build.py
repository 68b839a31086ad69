"""Build the mocked OpenXR runtime (libmockxr.so + its loader manifest) with gcc.

Runnable as a script (scripts/setup.sh: `.venv/bin/python xr/mockrt/build.py`), imported by
`headcast.xr.mockrt.ensure_runtime()` and by setup.py (the build backend compiles the same library
into a Linux wheel, next to mockxr.json in this folder). Standard library only, so the script needs
no install. Idempotent: rebuilds only when mockxr.c (or this file) is newer than the library, and
swaps the new library in atomically so a process that has the old one loaded keeps a valid mapping.
`headcast.xr.fastframe` builds the session's frame helper with the same functions. The messages
say what the user of *this* platform should install (`install_hint`).
"""

from __future__ import annotations

import os
import shlex
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
# Where openxr/openxr.h is looked for: $OPENXR_INCLUDE_DIR, then the system's include folders.
INCLUDE_DIRS = tuple(
    Path(d)
    for d in (os.environ.get("OPENXR_INCLUDE_DIR"), "/usr/include", "/usr/local/include", "/opt/homebrew/include")
    if d
)
HEADERS = next(
    (d / "openxr" / "openxr.h" for d in INCLUDE_DIRS if (d / "openxr" / "openxr.h").is_file()),
    Path("/usr/include/openxr/openxr.h"),
)
CFLAGS = ["-shared", "-fPIC", "-fvisibility=hidden", "-O2", "-std=c11", "-Wall", "-Wextra"]
LIBS = ["-lm", "-ldl", "-lpthread"]

# What each need is called in each family's packages (install_hint).
_PACKAGES = {
    "compiler": {"debian": "gcc libc6-dev", "fedora": "gcc glibc-devel"},
    "openxr": {"debian": "libopenxr-dev", "fedora": "openxr-devel"},
    "python": {"debian": "python3-dev", "fedora": "python3-devel"},
}
_GENERIC = {
    "compiler": "a C compiler (gcc) and the C library headers",
    "openxr": "the OpenXR SDK headers (openxr/openxr.h; or set OPENXR_INCLUDE_DIR)",
    "python": "the Python development headers (Python.h)",
}


def in_checkout() -> bool:
    """This code runs from a repository checkout (an editable install), not an installed package."""
    repo = HERE.parent.parent
    return (repo / "pyproject.toml").is_file() and (repo / "xr" / "mockrt" / "mockxr.c").is_file()


def platform_family() -> str:
    """ "debian" (Debian, Ubuntu and their derivatives), "fedora" (Fedora, RHEL), "linux" (any
    other), "windows" or "macos": whose install instructions the messages give."""
    if sys.platform == "win32":
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    ids: set[str] = set()
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            if key in ("ID", "ID_LIKE"):
                ids.update(value.strip().strip('"').split())
    except OSError:
        pass
    if ids & {"debian", "ubuntu"}:
        return "debian"
    if ids & {"fedora", "rhel", "centos"}:
        return "fedora"
    return "linux"


def install_hint(*needs: str, family: str | None = None) -> str:
    """What to install for `needs` ("compiler", "openxr", "python") on this platform."""
    family = family or platform_family()
    if family in ("debian", "fedora"):
        pkgs = " ".join(_PACKAGES[n][family] for n in needs)
        tool, name = ("apt-get", "Debian/Ubuntu") if family == "debian" else ("dnf", "Fedora")
        what = "package" if len(pkgs.split()) == 1 else "packages"
        hint = f"install the {name} {what} {pkgs} (sudo {tool} install {pkgs})"
        setup = in_checkout() and (HERE.parent.parent / "scripts" / "setup.sh").is_file()
        return hint + ("; scripts/setup.sh does" if family == "debian" and setup else "")
    if family == "linux":
        return "install " + ", ".join(_GENERIC[n] for n in needs) + " with your distribution's package manager"
    system = "Windows" if family == "windows" else "macOS"
    return (
        f"on {system}, install headcast from its wheel for {system} (pip install headcast), which carries "
        "what could be built for it; what it lacks runs on the pure-Python path (the same results)"
    )


def rebuild_hint(*needs: str) -> str:
    """How to get a missing or stale native part: scripts/setup.sh in a checkout; elsewhere what to
    install, then a reinstall from the sdist (Linux), or the platform's wheel (Windows, macOS)."""
    if in_checkout() and (HERE.parent.parent / "scripts" / "setup.sh").is_file():
        return "bash scripts/setup.sh (needs gcc, python3-dev and libopenxr-dev; rebuilds what is stale)"
    hint = install_hint(*needs)
    return (
        hint
        if platform_family() in ("windows", "macos")
        else f"{hint}, then reinstall headcast (pip install --force-reinstall --no-binary headcast headcast)"
    )


def mock_unsupported() -> str | None:
    """Why the mock runtime cannot exist on this platform, with what to do instead; None on Linux."""
    if sys.platform.startswith("linux"):
        return None
    system = {"win32": "Windows", "darwin": "macOS"}.get(sys.platform, sys.platform)
    return (
        f"the mock OpenXR runtime is built for Linux only, not for {system}: `headcast run` here needs a "
        "real OpenXR runtime (SteamVR, Meta Quest Link, Virtual Desktop; macOS has none), while probe, "
        "replay and swarm need no runtime at all; `--mock` runs on Linux (its wheel carries the runtime)"
    )


class RuntimeBuildError(RuntimeError):
    """A native part (the mock runtime, the frame helper) could not be built (missing compiler/headers
    or a compile error)."""


def default_build_dir(name: str = "mockrt") -> Path:
    """build/<name>/ in a repository checkout; the user cache directory when installed."""
    if in_checkout():
        return HERE.parent.parent / "build" / name
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "headcast" / name


def stale(target: Path, sources: tuple[Path, ...] = (SOURCE, Path(__file__).resolve())) -> bool:
    """`target` is missing or older than one of `sources`."""
    if not target.exists():
        return True
    built = target.stat().st_mtime
    return any(src.stat().st_mtime > built for src in sources)


def compile_library(
    library: Path, say, source: Path = SOURCE, libs: tuple[str, ...] = tuple(LIBS), flags: tuple[str, ...] = ()
) -> None:
    """gcc `source` (with CFLAGS and `flags`) into the shared library `library`, swapped in atomically.

    The compiler is $CC, else gcc, else cc; the OpenXR headers are HEADERS' folder's parent."""
    cc = shlex.split(os.environ.get("CC", ""))  # may carry flags ("gcc -pthread")
    gcc = shutil.which(cc[0]) if cc else (shutil.which("gcc") or shutil.which("cc"))
    if gcc is None:
        where = f" (CC={cc[0]})" if cc else " (nor cc)"
        raise RuntimeBuildError(f"gcc not found{where}: {install_hint('compiler')}")
    if not HEADERS.is_file():
        raise RuntimeBuildError(f"{HEADERS} not found: {install_hint('openxr')}")
    include = HEADERS.parent.parent
    library.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{library.stem}-", suffix=".so", dir=library.parent)
    os.close(fd)
    extra = [] if include == Path("/usr/include") else [f"-I{include}"]
    cmd = [gcc, *cc[1:], *CFLAGS, *extra, *flags, "-o", tmp, str(source), *libs]
    say(f"compiling {source.name} -> {library}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise RuntimeBuildError(f"gcc failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, library)


def packaged_manifest() -> Path | None:
    """The manifest of the runtime a wheel carries (built by setup.py into this folder, next to
    mockxr.json); None in a checkout (which builds into build/mockrt/) or when there is none."""
    if in_checkout() or not (HERE / LIBRARY_NAME).is_file():
        return None
    return HERE / MANIFEST_NAME


def build(build_dir: Path | None = None, *, force: bool = False, say=lambda msg: None) -> Path:
    """Build when missing or stale; returns the manifest path (absolute).

    Without `build_dir`, an installed wheel's own runtime is used as it is (it was built with the
    package; there may be no compiler here): `force` compiles into the user cache directory instead.
    Raises RuntimeBuildError saying what to install on this platform (or that the mock runtime is
    Linux-only) when it cannot be built."""
    packaged = packaged_manifest() if build_dir is None and not force else None
    if packaged is not None:
        say(f"{HERE / LIBRARY_NAME} was built with the package")
        return packaged
    unsupported = mock_unsupported()
    if unsupported:
        raise RuntimeBuildError(unsupported)
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
