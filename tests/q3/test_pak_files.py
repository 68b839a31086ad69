"""The pk3 files for a pure server are checked up front: a missing or unreadable one is named."""

from __future__ import annotations

import zipfile

import pytest

from headcast.netcode.q3 import pure


def _pk3(path, member="maps/x.bsp"):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(member, b"data")
    return path


def test_files_and_folders_of_pk3s(tmp_path):
    a = _pk3(tmp_path / "pak0.pk3")
    folder = tmp_path / "baseoa"
    folder.mkdir()
    b = _pk3(folder / "pak1.pk3")
    assert pure.pak_files([a, folder]) == [a, b]


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda d: d / "missing.pk3", "missing.pk3: No such file or directory"),
        (lambda d: (d / "text.pk3").write_text("not a zip") and d / "text.pk3", "text.pk3: not a readable pk3"),
        (lambda d: (d / "empty").mkdir() or d / "empty", "empty: a folder without .pk3 files"),
    ],
)
def test_what_cannot_serve_is_refused_naming_the_path(tmp_path, make, words):
    with pytest.raises(pure.PureError, match=words):
        pure.pak_files([make(tmp_path)])


def test_a_device_is_refused_before_the_zip_reader_reads_it_without_end():
    """/dev/zero as a pk3 made the zip reader read without end (24 GB before the OOM killer; found
    by tests/app/test_cli_fuzz.py): only regular files are opened."""
    import pytest as _pytest

    from headcast.netcode.q3.pure import PureError, pak_files

    with _pytest.raises(PureError, match="not a regular file"):
        pak_files(["/dev/zero"])
