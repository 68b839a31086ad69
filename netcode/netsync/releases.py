"""The styly-netsync-server releases headcast runs and reads, one per NetSync protocol.

Every release is a pure-Python wheel with the same dependencies (pyzmq, fastapi, uvicorn,
msgpack, psutil, loguru). The current one is installed in the project venv and provides those
dependencies; every release, the current one included, is also installed on its own with

    pip install --no-deps --target build/netsync/<version> styly-netsync-server==<version>

and run with the venv's interpreter and ``PYTHONPATH=build/netsync/<version>``: PYTHONPATH comes
before site-packages, so that release's ``styly_netsync`` package and its dist-info win.
``scripts/setup.sh`` installs them all (``python -m headcast.netcode.netsync.releases``);
``ensure_release`` installs one on demand the same way.

``load_serializer(version)`` loads a release's own ``binary_serializer.py`` (stdlib only) as an
isolated module, so the official serializers of several protocols can be used side by side in one
process as byte-exact oracles.

Standard library only; imports nothing from headcast.app or headcast.xr.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

from .errors import ReleaseInstallError as ReleaseInstallError

DIST = "styly-netsync-server"

# version -> NetSync protocol (binary_serializer.PROTOCOL_VERSION), one release per protocol.
RELEASES: dict[str, int] = {
    "0.10.4": 3,
    "0.11.0": 4,
    "0.12.0": 5,
    "0.14.0": 6,
    "0.15.0": 7,  # first with separate control (ROUTER) and transform (ROUTER) sockets
    "0.16.0": 8,
    "0.17.5": 8,  # the current release (also the one in the project venv)
}
CURRENT = "0.17.5"

# Every PyPI release's protocol, by range (checked against the upstream tags v0.8.0–v0.16.3 and
# the installed 0.17.5): (first version, protocol), ascending; a range ends where the next begins.
_RANGES: tuple[tuple[tuple[int, int, int], int | None], ...] = (
    ((0, 9, 0), 3),  # 0.9.0 – 0.10.x
    ((0, 11, 0), 4),  # 0.11.x
    ((0, 12, 0), 5),  # 0.12.x – 0.13.x
    ((0, 14, 0), 6),  # 0.14.x
    ((0, 15, 0), 7),  # 0.15.x (control/transform split)
    ((0, 16, 0), 8),  # 0.16.x – 0.17.x (control messages carry the deviceId)
    ((0, 18, 0), None),  # not released when this table was written: unknown
)

# A temporary install folder older than this was left by a killed install (pip takes seconds).
STALE_TMP_SECONDS = 3600

# First release with the control/transform split (config keys control_port, transform_port).
SPLIT_SOCKETS = (0, 15, 0)


def parse_version(v: Sequence[Any] | str) -> tuple[int, int, int] | None:
    """`"0.17.5"` / `(0, 17, 5)` / `"0.10.4.post1"` -> (major, minor, patch); None if unparsable."""
    if isinstance(v, str):
        m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", v)
        if not m:
            return None
        return int(m[1]), int(m[2]), int(m[3] or 0)
    try:
        parts = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        return None
    if not 2 <= len(parts) <= 3 or any(p < 0 for p in parts):
        return None
    major, minor, *patch = parts
    return major, minor, patch[0] if patch else 0


def protocol_of_version(v: Sequence[Any] | str) -> int | None:
    """The NetSync protocol a styly-netsync-server version speaks (e.g. a device-ID mapping's
    major/minor/patch): 0.9.0–0.10.x → 3, 0.11.x → 4, 0.12–0.13 → 5, 0.14 → 6, 0.15 → 7,
    0.16.0–0.17.x → 8. Older (protocol 2 and before), later than 0.17.x, or unparsable → None."""
    t = parse_version(v)
    if t is None:
        return None
    protocol = None
    for first, p in _RANGES:
        if t >= first:
            protocol = p
    return protocol


def has_split_sockets(v: Sequence[Any] | str) -> bool:
    """True from 0.15.0 on: a control ROUTER (`control_port`) and a transform ROUTER (`transform_port`)."""
    t = parse_version(v)
    return t is not None and t >= SPLIT_SOCKETS


def _default_root() -> Path:
    """The checkout's root when headcast runs from one (the editable install), else a cache dir."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "netcode" / "netsync").is_dir():
        return root
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "headcast"


def release_dir(version: str, repo_root: str | os.PathLike[str] | None = None) -> Path:
    """build/netsync/<version> under the repository root (installed or not)."""
    root = Path(repo_root) if repo_root is not None else _default_root()
    return root / "build" / "netsync" / version


def _dist_info(folder: Path, version: str) -> Path:
    return folder / f"{DIST.replace('-', '_')}-{version}.dist-info"


def is_installed(version: str, repo_root: str | os.PathLike[str] | None = None) -> bool:
    return _dist_info(release_dir(version, repo_root), version).is_dir()


def pip_command(
    version: str, target: str | os.PathLike[str], python: str | os.PathLike[str] = sys.executable
) -> list[str]:
    return [
        str(python),
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--disable-pip-version-check",
        "--no-input",
        "--target",
        str(target),
        f"{DIST}=={version}",
    ]


_PROBE = (
    "import importlib.metadata as m, json, styly_netsync, styly_netsync.binary_serializer as b; "
    f"print(json.dumps([m.version({DIST!r}), b.PROTOCOL_VERSION, styly_netsync.__file__]))"
)


def probe(
    folder: str | os.PathLike[str], python: str | os.PathLike[str] = sys.executable, timeout: float = 60.0
) -> tuple[str, int, Path]:
    """Run `python` with PYTHONPATH=folder: (installed version, PROTOCOL_VERSION, styly_netsync's file)."""
    import json

    env = dict(os.environ, PYTHONPATH=str(folder))
    out = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True, env=env, timeout=timeout)
    if out.returncode != 0:
        raise ReleaseInstallError(f"{folder}: cannot import styly_netsync: {out.stderr.strip()[-500:]}")
    version, protocol, init = json.loads(out.stdout.strip().splitlines()[-1])
    return version, protocol, Path(init)


def verify_release(
    version: str, folder: str | os.PathLike[str] | None = None, python: str | os.PathLike[str] = sys.executable
) -> int:
    """Check that `folder` (default: release_dir(version)) runs `version` itself; returns its protocol."""
    folder = Path(folder) if folder is not None else release_dir(version)
    got, protocol, init = probe(folder, python)
    expected = RELEASES.get(version, protocol_of_version(version))
    problems = []
    if got != version:
        problems.append(f"importlib.metadata says {got}")
    if expected is not None and protocol != expected:
        problems.append(f"PROTOCOL_VERSION is {protocol}, expected {expected}")
    if Path(folder).resolve() not in init.resolve().parents:
        problems.append(f"styly_netsync imported from {init}")
    if problems:
        raise ReleaseInstallError(f"{folder} is not styly-netsync-server {version}: " + "; ".join(problems))
    return protocol


def ensure_release(
    version: str,
    repo_root: str | os.PathLike[str] | None = None,
    *,
    python: str | os.PathLike[str] = sys.executable,
    verify: bool = True,
) -> Path:
    """release_dir(version), installing it first if its dist-info is missing.

    pip installs into a temporary folder next to it, which is checked (its version and protocol
    under PYTHONPATH) and then renamed into place, so a failed or interrupted install never leaves
    a half-written release folder. Raises ReleaseInstallError naming the pip command on failure.
    """
    dest = release_dir(version, repo_root)
    if _dist_info(dest, version).is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob(f".{version}.tmp-*"):  # left by an install that was killed
        try:
            if time.time() - stale.stat().st_mtime > STALE_TMP_SECONDS:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}.tmp-", dir=dest.parent))
    try:
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide the release from other users
        cmd = pip_command(version, tmp, python)
        what = (
            f"installing {DIST} {version} failed; command: {shlex.join(pip_command(version, dest, python))} "
            f"(run into the temporary folder {tmp.name}, renamed when complete)"
        )
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ReleaseInstallError(f"{what}: {e}") from e
        if out.returncode != 0 or not _dist_info(tmp, version).is_dir():
            tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-15:])
            raise ReleaseInstallError(f"{what}: exit {out.returncode}\n{tail}")
        if verify:
            verify_release(version, tmp, python)
        if dest.exists() and not _dist_info(dest, version).is_dir():
            shutil.rmtree(dest)  # not a release (ours only ever appear complete, by rename)
        try:
            os.rename(tmp, dest)
        except OSError:
            if not _dist_info(dest, version).is_dir():  # else another process installed it meanwhile
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


@functools.cache
def load_serializer(version: str) -> ModuleType:
    """That release's styly_netsync/binary_serializer.py as an isolated module (stdlib imports only).

    Loaded under a unique module name, so serializers of different protocols coexist with each
    other and with any `styly_netsync` package imported normally. Installs the release if needed.
    """
    path = ensure_release(version) / "styly_netsync" / "binary_serializer.py"
    name = "_headcast_styly_netsync_" + re.sub(r"\W", "_", version) + "_binary_serializer"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def main(argv: list[str] | None = None) -> int:
    """`python -m headcast.netcode.netsync.releases [--verify] [VERSION ...]`: install (default: all)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m headcast.netcode.netsync.releases", description=main.__doc__)
    ap.add_argument("versions", nargs="*", help=f"default: {' '.join(RELEASES)}")
    ap.add_argument("--verify", action="store_true", help="also check already-installed folders (slower)")
    ap.add_argument("--root", help="repository root (default: this checkout)")
    args = ap.parse_args(argv)
    for v in args.versions or list(RELEASES):
        folder = release_dir(v, args.root)
        line = f"[setup] {DIST} {v} in {folder}: "
        try:
            if is_installed(v, args.root):
                protocol = verify_release(v, folder) if args.verify else RELEASES.get(v, protocol_of_version(v))
                line += "verified" if args.verify else "present"
            else:
                print(line + "installing … ", end="", file=sys.stderr, flush=True)
                line = ""
                ensure_release(v, args.root)  # checks version and protocol before renaming into place
                protocol = RELEASES.get(v, protocol_of_version(v))
                line += "installed and verified"
        except ReleaseInstallError as e:
            print(line + f"FAILED\n[setup] {e}", file=sys.stderr)
            return 1
        print(f"{line} (protocol {protocol})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
