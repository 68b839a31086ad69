"""The build backend's hooks for headcast's native parts (the metadata is in pyproject.toml).

Built where a C compiler is found, each optional: a part that cannot be built is one line in the
build log saying why and what runs instead, and the build goes on.

  headcast.netcode.q3._q3native  netcode/q3/_q3native.c  the Quake 3 codecs (POSIX: not on Windows);
                                 without it the pure-Python codecs run (the tests pin the same bytes)
  headcast.netcode.netsync._nscodec  netcode/netsync/_nscodec.c  the NetSync pose codec's common case;
                                 without it the pure-Python codec runs (the tests pin the same bytes)
  headcast.xr._fastframe         xr/_fastframe.c         the XR frame helper (needs the OpenXR headers);
                                 without it frames go through ctypes (the tests pin the same frames)
  headcast/xr/mockrt/libmockxr.so  xr/mockrt/mockxr.c    Linux only: the mock OpenXR runtime, a plain
                                 shared library next to its loader manifest mockxr.json, so that
                                 `headcast run --mock` works from a wheel (needs the OpenXR headers)

The compile flags are the run-time builders' own (netcode/q3/build_native.py,
netcode/netsync/build_native.py, xr/mockrt/build.py,
xr/fastframe.py's FLAGS), so a wheel's build and a rebuild by those scripts are the same build.
An editable install (scripts/setup.sh: pip install -e) builds the extensions in place, next to
their modules (swapped in atomically), and the mock runtime into build/mockrt/ — where those
scripts put them too. The OpenXR headers are looked for in $OPENXR_INCLUDE_DIR, /usr/include,
/usr/local/include and /opt/homebrew/include.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _script(name: str, path: str):
    """One of the package's standard-library build scripts, loaded by file (the package itself is
    not importable while it is being built)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _constant(path: str, name: str):
    """A literal assigned at module level in `path` (xr/fastframe.py imports the package: read, not run)."""
    for node in ast.parse((ROOT / path).read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"no {name} = ... in {path}")


mockrt = _script("_headcast_mockrt_build", "xr/mockrt/build.py")
q3build = _script("_headcast_q3_build", "netcode/q3/build_native.py")
nsbuild = _script("_headcast_netsync_build", "netcode/netsync/build_native.py")

LINK_ONLY = {"-shared", "-fPIC"}  # setuptools passes its own
Q3 = "headcast.netcode.q3._q3native"
FASTFRAME = "headcast.xr._fastframe"
NSCODEC = "headcast.netcode.netsync._nscodec"
UNIX_FLAGS = {
    NSCODEC: [f for f in nsbuild.CFLAGS if f not in LINK_ONLY],
    Q3: [f for f in q3build.CFLAGS if f not in LINK_ONLY],
    FASTFRAME: [f for f in mockrt.CFLAGS if f not in LINK_ONLY] + list(_constant("xr/fastframe.py", "FLAGS")),
}
INSTEAD = {
    NSCODEC: "the pure-Python NetSync codec runs instead (the tests pin it to the same bytes)",
    Q3: "the pure-Python Quake 3 codecs run instead (the tests pin them to the same bytes)",
    FASTFRAME: "XR frames go through ctypes instead (the tests pin them to the same frames)",
}


def say(msg: str) -> None:
    print(f"[headcast build] {msg}", file=sys.stderr, flush=True)


class build_native(build_ext):
    """build_ext whose every part is optional, saying what it built and what it left out."""

    def run(self) -> None:
        start = time.monotonic()
        self.summary: list[str] = []
        super().run()
        self.build_mock_runtime()
        say(f"native parts ({time.monotonic() - start:.1f} s): " + "; ".join(self.summary))

    def _skip(self, ext: Extension) -> str | None:
        if ext.name == Q3 and sys.platform == "win32":
            return "it is POSIX-only (poll, pthreads, BSD sockets)"
        if ext.name == FASTFRAME and not mockrt.HEADERS.is_file():
            return f"the OpenXR headers ({mockrt.HEADERS}) are missing: {mockrt.install_hint('openxr')}"
        if self.compiler.compiler_type == "unix":
            cc = self.compiler.compiler_so[0]
            if shutil.which(cc) is None:
                return f"no C compiler ({cc} not found): {mockrt.install_hint('compiler', 'python')}"
        return None

    def build_extension(self, ext: Extension) -> None:
        why = self._skip(ext)
        if why is None:
            if self.compiler.compiler_type != "msvc":
                ext.extra_compile_args = list(UNIX_FLAGS[ext.name])
            if ext.name == FASTFRAME and mockrt.HEADERS.parent.parent != Path("/usr/include"):
                ext.include_dirs = [str(mockrt.HEADERS.parent.parent)]
            try:
                super().build_extension(ext)
            except Exception as exc:  # CompileError, LinkError, a compiler that is not there: all optional
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                why = f"the build failed ({first}; a missing Python.h: {mockrt.install_hint('python')})"
        if why is None:
            self.summary.append(f"{ext.name} built")
        else:
            # Not an older build left in build/ by an earlier run: the wheel would carry it.
            Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            say(f"{ext.name} not built: {why}; {INSTEAD[ext.name]}")
            self.summary.append(f"{ext.name} NOT built (pure-Python path)")

    def copy_extensions_to_source(self) -> None:
        """The editable install's in-place copy, swapped in atomically (a running headcast keeps a
        valid mapping of the old file), of the extensions that were built."""
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace, built = self._get_inplace_equivalent(build_py, ext)
            if not os.path.exists(built):
                continue
            fd, tmp = tempfile.mkstemp(prefix=".headcast-", suffix=".so", dir=os.path.dirname(inplace) or ".")
            os.close(fd)
            shutil.copy2(built, tmp)
            os.replace(tmp, inplace)
            say(f"{ext.name} -> {inplace}")

    def build_mock_runtime(self) -> None:
        unsupported = mockrt.mock_unsupported()
        if unsupported:
            self.summary.append("mock OpenXR runtime NOT built (Linux only)")
            return
        try:
            if self.editable_mode or self.inplace:
                # A checkout: where ensure_runtime() and scripts/setup.sh look (build/mockrt/).
                manifest = mockrt.build(say=say)
                self.summary.append(f"mock OpenXR runtime in {manifest.parent}")
                return
            out = Path(self.build_lib) / "headcast" / "xr" / "mockrt"
            mockrt.compile_library(out / mockrt.LIBRARY_NAME, say)
            shutil.copyfile(mockrt.MANIFEST_TEMPLATE, out / mockrt.MANIFEST_NAME)
            self.summary.append(f"mock OpenXR runtime built ({mockrt.LIBRARY_NAME} + {mockrt.MANIFEST_NAME})")
        except mockrt.RuntimeBuildError as exc:
            if not (self.editable_mode or self.inplace):
                (Path(self.build_lib) / "headcast" / "xr" / "mockrt" / mockrt.LIBRARY_NAME).unlink(missing_ok=True)
            say(f"mock OpenXR runtime not built: {exc}; `headcast run --mock` will say what to install")
            self.summary.append("mock OpenXR runtime NOT built")

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        library = Path(self.build_lib) / "headcast" / "xr" / "mockrt" / mockrt.LIBRARY_NAME
        if not (self.editable_mode or self.inplace) and library.is_file():
            outputs.append(str(library))
        return outputs


setup(
    ext_modules=[
        Extension(
            Q3,
            ["netcode/q3/_q3native.c"],
            depends=["netcode/q3/_q3snap.c", "netcode/q3/build_native.py"],
            optional=True,
        ),
        Extension(NSCODEC, ["netcode/netsync/_nscodec.c"], depends=["netcode/netsync/build_native.py"], optional=True),
        Extension(FASTFRAME, ["xr/_fastframe.c"], depends=["xr/fastframe.py", "xr/mockrt/build.py"], optional=True),
    ],
    cmdclass={"build_ext": build_native},
)
