"""Package layout: `import xr` is pyopenxr from the repo root, and the headcast subpackages import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

PROBE = Path(__file__).with_name("xr_import_probe.py")
XR_REPORT = (
    "import json, xr; print(json.dumps({'file': xr.__file__, 'create_instance': hasattr(xr, 'create_instance')}))"
)


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _assert_pyopenxr(report: dict) -> None:
    path = Path(report["file"]).resolve()
    assert report["create_instance"], f"xr at {path} has no create_instance: not pyopenxr"
    assert "site-packages" in path.parts, f"xr imported from {path}, not an installed package"
    assert not path.is_relative_to(REPO / "xr"), f"the repo's xr/ folder shadows pyopenxr: {path}"


def test_xr_folder_has_no_init():
    assert (REPO / "xr").is_dir()
    assert not (REPO / "xr" / "__init__.py").exists(), "xr/__init__.py would shadow pyopenxr"


@pytest.mark.parametrize("where", ["repo root", "outside"])
def test_python_c_import_xr_is_pyopenxr(where, tmp_path):
    proc = _run(["-c", XR_REPORT], cwd=REPO if where == "repo root" else tmp_path)
    _assert_pyopenxr(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_pytest_collection_from_repo_root_imports_pyopenxr(tmp_path):
    out = tmp_path / "probe.json"
    proc = _run(
        ["-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(PROBE.relative_to(REPO))],
        cwd=REPO,
        env={"HEADCAST_XR_PROBE_OUT": str(out)},
    )
    assert "test_probe_placeholder" in proc.stdout
    assert out.exists(), f"the probe was not collected:\n{proc.stdout}"
    _assert_pyopenxr(json.loads(out.read_text()))


def test_headcast_subpackages_import_from_repo_root():
    code = (
        "import json, headcast.app, headcast.netcode, headcast.xr, headcast.netcode.pose;"
        "print(json.dumps({'xr': list(headcast.xr.__path__), 'netcode': headcast.netcode.__file__,"
        " 'app': headcast.app.__file__}))"
    )
    report = json.loads(_run(["-c", code], cwd=REPO).stdout.strip().splitlines()[-1])
    assert Path(report["netcode"]).resolve() == REPO / "netcode" / "__init__.py"
    assert Path(report["app"]).resolve() == REPO / "app" / "__init__.py"
    assert str(REPO / "xr") in report["xr"]


def test_wheel_ships_the_layout_and_assets(tmp_path):
    """A built wheel (not the editable install) holds headcast.{app,xr,netcode}, no headcast/xr/__init__.py,
    the console script, the assets as package data and the mock runtime's sources; and the shipped
    motions are found in that layout."""
    import zipfile

    src = tmp_path / "src"
    files = subprocess.run(
        ["git", "ls-files", "pyproject.toml", "README.md", "app", "xr", "netcode", "assets"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes((REPO / name).read_bytes())
    # a copy, so the build writes its build/ and egg-info there and not into the shared checkout
    _run(
        ["-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src)],
        cwd=src,
    )
    (wheel,) = (tmp_path / "dist").glob("headcast-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = next(z.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
        z.extractall(tmp_path / "site")
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("headcast/assets/motions/")}
    assert {"look_around.motion", "snap_turns.motion", "walk.motion", "fire.motion", "tracking_loss.motion"} <= shipped
    assert {
        "headcast/xr/mockrt/mockxr.c",
        "headcast/xr/mockrt/mockxr.json",
        "headcast/app/__main__.py",
        "headcast/netcode/pose.py",
        "headcast/netcode/q3/vrhead.py",
        "headcast/netcode/sauer/npos.py",
    } <= names
    assert "headcast/xr/__init__.py" not in names and not any(n.startswith("xr/") for n in names)
    assert "headcast = headcast.app.commands.cli:main" in entry_points
    # only the unpacked wheel on the path (-I -S: no site-packages, so no editable finder)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from headcast.xr import mockrt; "
        "print(mockrt.motion_path('walk')); print(','.join(mockrt.shipped_motions()))"
    )
    out = _run(["-I", "-S", "-c", code, str(tmp_path / "site")], cwd=tmp_path).stdout.splitlines()
    assert Path(out[0]) == (tmp_path / "site" / "headcast" / "assets" / "motions" / "walk.motion").resolve()
    assert out[1] == "fire,look_around,snap_turns,tracking_loss,walk"


def _imports(path: Path) -> set[str]:
    """Absolute module names a source file imports (relative imports stay inside their folder)."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    "folder, forbidden",
    [
        ("netcode", ("headcast.app", "headcast.xr", "xr")),  # sans-IO codecs: no XR runtime, no app
        ("xr", ("headcast.app", "headcast.netcode")),
    ],
)
def test_dependency_direction(folder, forbidden):
    bad = sorted(
        f"{path.relative_to(REPO)}: {name}"
        for path in (REPO / folder).rglob("*.py")
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    )
    assert bad == [], f"docs/architecture.md#layering: app -> xr, netcode only; {folder}/ must not import {forbidden}"
