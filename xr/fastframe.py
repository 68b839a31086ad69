"""The native frame helper (_fastframe.c, a C extension): build it with gcc, load it for XRSession.

XRSession makes a frame's whole sequence of OpenXR calls and builds its TrackingFrame in one call
into this extension when it is built; otherwise it makes the same calls one by one through ctypes
and builds the frame in Python (equal frames, the same errors). The build backend builds it as an
optional extension (setup.py: into a wheel, or in place next to this file for the editable install
scripts/setup.sh makes); `.venv/bin/python -m headcast.xr.fastframe` builds it with gcc into the
same place of a repository checkout, into the user cache directory when installed (for the running
interpreter: its extension suffix). The session never compiles: `load()` gives the module only when
it is built from the current source (a wheel's own build is taken as it is: it was built with it).
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from .mockrt.build import (
    HERE as MOCKRT_DIR,
    RuntimeBuildError,
    compile_library,
    default_build_dir,
    in_checkout,
    install_hint,
    stale,
)

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_fastframe.c"
_SOURCES = (SOURCE, Path(__file__).resolve(), MOCKRT_DIR / "build.py")  # FLAGS here, CFLAGS in mockrt/build.py
MODULE = "headcast.xr._fastframe"
LIBRARY_NAME = "_fastframe" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
# The C code repeats session.py's float arithmetic: no fused multiply-adds, on any machine.
FLAGS = ("-ffp-contract=off", "-fno-strict-aliasing")

NLOCATE, NSTATE = 5, 8
# Steps of _fastframe.Step(step, result, frame): the call that failed (FF_EVENT: xrPollEvent found
# an event, or failed; FF_TIME: xrConvertTimespecTimeToTimeKHR failed).
FF_DONE, FF_WAIT, FF_EVENT, FF_BEGIN, FF_SYNC, FF_LOCATE, FF_STATES, FF_END, FF_TIME = range(9)

_P = ctypes.c_void_p


class FrameContext(ctypes.Structure):
    """_fastframe.c's Calls: the runtime's entry points, handles and the session's struct addresses."""

    _fields_ = [
        ("poll_event", _P),
        ("wait_frame", _P),
        ("begin_frame", _P),
        ("end_frame", _P),
        ("sync_actions", _P),
        ("locate_space", _P),
        ("get_state", _P * NSTATE),
        ("instance", _P),
        ("session", _P),
        ("wait_info", _P),
        ("frame_state", _P),
        ("begin_info", _P),
        ("end_info", _P),
        ("sync_info", _P),
        ("event", _P),
        ("space", _P * NLOCATE),
        ("base", _P),
        ("location", _P * NLOCATE),
        ("state_info", _P * NSTATE),
        ("state", _P * NSTATE),
        ("convert_time", _P),
        ("result", ctypes.c_int32),
    ]


def library_path(build_dir: Path | None = None) -> Path:
    """The extension in `build_dir`; by default next to this file (where the build backend puts it:
    always so in a checkout, and in an install when its wheel has it), else in the user cache."""
    if build_dir is not None:
        return build_dir.resolve() / LIBRARY_NAME
    packaged = HERE / LIBRARY_NAME
    if in_checkout() or packaged.exists():
        return packaged
    return default_build_dir("fastframe").resolve() / LIBRARY_NAME


def _stale(library: Path) -> bool:
    """Missing, or older than its sources; an installed package's own extension is never stale
    (the wheel built it from the sources beside it, whose file times the install does not keep)."""
    if library == HERE / LIBRARY_NAME and library.exists() and not in_checkout():
        return False
    return stale(library, _SOURCES)


def build(build_dir: Path | None = None, *, force: bool = False, say=lambda msg: None) -> Path:
    """Build when missing or older than _fastframe.c; returns the extension's path.

    Raises RuntimeBuildError saying what to install on this platform when gcc, the OpenXR or the
    Python headers are missing. An installed package's own extension is not rebuilt in place:
    `force` builds into the user cache directory, which `load()` reads only when the package has none.
    """
    library = library_path(build_dir)
    if force and build_dir is None and not in_checkout():
        library = default_build_dir("fastframe").resolve() / LIBRARY_NAME
    if force or _stale(library):
        include = Path(sysconfig.get_paths()["include"])
        if not (include / "Python.h").is_file():
            raise RuntimeBuildError(f"Python.h not found in {include}: {install_hint('python')}")
        compile_library(library, say, source=SOURCE, libs=(), flags=(*FLAGS, f"-I{include}"))
    else:
        say(f"{library} is up to date")
    return library


def load(build_dir: Path | None = None) -> ModuleType | None:
    """The extension module; None when it is not built, or built from an older source."""
    library = library_path(build_dir)
    if _stale(library):
        return None
    loaded = sys.modules.get(MODULE)
    if loaded is not None and loaded.__file__ == str(library):
        return loaded
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(library))
    spec = importlib.util.spec_from_file_location(MODULE, library, loader=loader)
    if spec is None:
        return None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[MODULE] = module
    return module


def main(argv: list[str]) -> int:
    try:
        library = build(force="--force" in argv, say=lambda msg: print(f"[fastframe] {msg}"))
    except RuntimeBuildError as exc:
        print(f"[fastframe] {exc}", file=sys.stderr)
        return 1
    print(f"[fastframe] frame helper: {library}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
