"""Building the runtime: idempotent, rebuilt when stale, clear errors naming the Debian packages."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest

from headcast.xr.mockrt import RuntimeBuildError

from support import REPO

build_module = importlib.import_module("headcast.xr.mockrt.build")  # the package re-exports build()


def test_build_is_idempotent_and_rebuilds_when_stale(tmp_path):
    said: list[str] = []
    manifest = build_module.build(tmp_path, say=said.append)
    library = tmp_path / "libmockxr.so"
    assert manifest == tmp_path / "mockxr.json" and library.is_file()
    assert json.loads(manifest.read_text())["runtime"]["library_path"] == "./libmockxr.so"
    assert any(m.startswith("compiling") for m in said)
    said.clear()
    build_module.build(tmp_path, say=said.append)
    assert said == [f"{library} is up to date"]
    os.utime(library, (0, 0))  # older than mockxr.c
    said.clear()
    build_module.build(tmp_path, say=said.append)
    assert any(m.startswith("compiling") for m in said)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left


def test_missing_compiler_names_the_packages(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-gcc"))
    with pytest.raises(RuntimeBuildError, match="gcc libc6-dev"):
        build_module.build(tmp_path, force=True)


def test_missing_headers_name_the_package(tmp_path, monkeypatch):
    monkeypatch.setattr(build_module, "HEADERS", tmp_path / "openxr.h")
    with pytest.raises(RuntimeBuildError, match="libopenxr-dev"):
        build_module.build(tmp_path, force=True)


def test_build_script_runs_standalone():
    proc = subprocess.run([sys.executable, "xr/mockrt/build.py"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"runtime manifest: {REPO / 'build' / 'mockrt' / 'mockxr.json'}" in proc.stdout
