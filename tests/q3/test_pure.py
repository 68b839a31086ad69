"""Pure checksums: our MD4 against RFC 1320, pk3 checksums against a real server's `sv_paks`."""

from __future__ import annotations

import zipfile

import pytest

from headcast.netcode.q3 import pure
from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files

RFC1320 = {
    b"": "31d6cfe0d16ae931b73c59d7e0c089c0",
    b"a": "bde52cb31de33e46245e05fbdbd6fb24",
    b"abc": "a448017aaf21d8525fc10ae87aa6729d",
    b"message digest": "d9130a8164549fe818874806e1c7014b",
    b"abcdefghijklmnopqrstuvwxyz": "d79e1c308aa5bbcdeea8ed63df412da9",
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789": "043f8582f241db351ce627e153e7f0e4",
    b"1234567890" * 8: "e33b4ddc9c38f2199c3e7b164fcc0536",
}


@pytest.mark.parametrize("data,digest", RFC1320.items())
def test_md4_rfc1320_vectors(data, digest):
    assert pure.md4(data).hex() == digest


def test_pure_checksum_prepends_the_feed(tmp_path):
    path = tmp_path / "z.pk3"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("vm/cgame.qvm", b"x" * 10)
        z.writestr("empty.txt", b"")  # empty entries are not part of the checksum
        z.writestr("vm/ui.qvm", b"y")
    pak = pure.load_pak(path)
    assert len(pak.crcs) == 2
    import struct

    assert pak.pure_checksum(77) == pure.block_checksum(struct.pack("<iII", 77, *pak.crcs))
    assert pak.checksum() == pure.block_checksum(struct.pack("<II", *pak.crcs))
    assert pure.cp_command(9, 77, [pak]) == f"cp 9 {pak.pure_checksum(77)} {pak.pure_checksum(77)} @ 77"
    with pytest.raises(pure.PureError):
        pure.first_with([pak], "vm/qagame.qvm")


@pytest.mark.live
def test_pk3_checksums_equal_the_servers_sv_paks():
    with LocalQ3Server(kind="openarena") as server:
        text = server.rcon("sv_paks")
    listed = [int(t) for t in text.split('"')[3].split() if t.lstrip("-").isdigit()]
    ours = [p.checksum() for p in pure.search_order(pk3_files())]
    assert listed and ours == listed
