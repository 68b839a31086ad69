"""sv_pure support: pk3 pure checksums and the `cp` client command (docs/protocols/quake3.md#pure).

A pk3's checksum is MD4 over the little-endian CRC32s of its non-empty zip entries (central
directory order), folded to one int32 by XOR of the digest's four LE words (ioq3 files.c
`FS_LoadZipFile`, md4.c `Com_BlockChecksum`). The *pure* checksum prepends the server's
`checksumFeed` to those CRCs. MD4 is implemented here (hashlib's MD4 depends on OpenSSL's legacy
provider, which Debian 12 does not load).
"""

from __future__ import annotations

import stat
import struct
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .errors import PureError as PureError  # re-exported: raised here

_MASK = 0xFFFFFFFF


def _rotl(x: int, n: int) -> int:
    x &= _MASK
    return ((x << n) | (x >> (32 - n))) & _MASK


def md4(data: bytes) -> bytes:
    """RFC 1320 MD4 digest (16 bytes)."""
    msg = bytearray(data)
    bit_len = (8 * len(data)) & 0xFFFFFFFFFFFFFFFF
    msg.append(0x80)
    msg.extend(b"\x00" * ((56 - len(msg) % 64) % 64))
    msg.extend(struct.pack("<Q", bit_len))
    a, b, c, d = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476
    for off in range(0, len(msg), 64):
        x = struct.unpack_from("<16I", msg, off)
        aa, bb, cc, dd = a, b, c, d
        for i in (0, 4, 8, 12):  # round 1: F(b,c,d) = (b & c) | (~b & d)
            a = _rotl(a + ((b & c) | (~b & d)) + x[i], 3)
            d = _rotl(d + ((a & b) | (~a & c)) + x[i + 1], 7)
            c = _rotl(c + ((d & a) | (~d & b)) + x[i + 2], 11)
            b = _rotl(b + ((c & d) | (~c & a)) + x[i + 3], 19)
        for i in (0, 1, 2, 3):  # round 2: G = majority, constant 0x5A827999
            a = _rotl(a + ((b & c) | (b & d) | (c & d)) + x[i] + 0x5A827999, 3)
            d = _rotl(d + ((a & b) | (a & c) | (b & c)) + x[i + 4] + 0x5A827999, 5)
            c = _rotl(c + ((d & a) | (d & b) | (a & b)) + x[i + 8] + 0x5A827999, 9)
            b = _rotl(b + ((c & d) | (c & a) | (d & a)) + x[i + 12] + 0x5A827999, 13)
        for i in (0, 2, 1, 3):  # round 3: H = parity, constant 0x6ED9EBA1
            a = _rotl(a + (b ^ c ^ d) + x[i] + 0x6ED9EBA1, 3)
            d = _rotl(d + (a ^ b ^ c) + x[i + 8] + 0x6ED9EBA1, 9)
            c = _rotl(c + (d ^ a ^ b) + x[i + 4] + 0x6ED9EBA1, 11)
            b = _rotl(b + (c ^ d ^ a) + x[i + 12] + 0x6ED9EBA1, 15)
        a, b, c, d = (a + aa) & _MASK, (b + bb) & _MASK, (c + cc) & _MASK, (d + dd) & _MASK
    return struct.pack("<4I", a, b, c, d)


def block_checksum(data: bytes) -> int:
    """ioq3 `Com_BlockChecksum`: XOR of MD4's four LE words, as a signed int32."""
    w = struct.unpack("<4I", md4(data))
    v: int = w[0] ^ w[1] ^ w[2] ^ w[3]
    return v - (1 << 32) if v & 0x80000000 else v


@dataclass(frozen=True)
class Pak:
    """What a pure check needs from one pk3: its name, entry CRCs and file names."""

    path: Path
    crcs: tuple[int, ...]  # CRC32 of each non-empty entry, central-directory order
    names: frozenset[str]  # lower-cased member names

    @property
    def basename(self) -> str:
        return self.path.stem

    def checksum(self) -> int:
        """The plain checksum (what `sv_paks` lists)."""
        return block_checksum(struct.pack(f"<{len(self.crcs)}I", *self.crcs))

    def pure_checksum(self, feed: int) -> int:
        return block_checksum(struct.pack(f"<i{len(self.crcs)}I", _s32(feed), *self.crcs))


def _s32(v: int) -> int:
    v &= _MASK
    return v - (1 << 32) if v & 0x80000000 else v


@lru_cache(maxsize=64)
def _load(path: str, mtime_ns: int, size: int) -> Pak:
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()  # central-directory order, as unzGoToNextFile walks it
    except (OSError, zipfile.BadZipFile, ValueError, NotImplementedError, EOFError, struct.error) as exc:
        # ValueError: a name flagged UTF-8 that is not (UnicodeDecodeError); NotImplementedError: a
        # "zip file version 8.4" the reader does not handle; struct.error/EOFError: a cut record
        raise PureError(f"{path}: not a readable pk3 ({type(exc).__name__}: {exc})") from None
    return Pak(Path(path), tuple(i.CRC for i in infos if i.file_size > 0), frozenset(i.filename.lower() for i in infos))


def load_pak(path: str | Path) -> Pak:
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise PureError(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        # a device or a pipe (/dev/zero) would be read without end by the zip reader
        raise PureError(f"{path}: not a regular file (a pk3 is a zip file)")
    return _load(str(path), st.st_mtime_ns, st.st_size)


def pak_files(paths: list[str | Path] | tuple[str | Path, ...]) -> list[Path]:
    """The pk3 files `paths` name: each a pk3 file, or a folder whose *.pk3 files are taken.
    PureError names a path that is missing, not a readable pk3, or a folder without any."""
    files: list[Path] = []
    for p in map(Path, paths):
        try:
            found = sorted(p.glob("*.pk3")) if p.is_dir() else None
        except OSError as exc:  # a name too long, a folder we may not list
            raise PureError(f"{p}: {exc.strerror or exc}") from None
        if found is None:
            files.append(p)
        elif not found:
            raise PureError(f"{p}: a folder without .pk3 files")
        else:
            files += found
    for f in files:
        load_pak(f)
    return files


def search_order(paths: Sequence[str | Path]) -> list[Pak]:
    """pk3s of one game directory in ioq3's search order: later names (sorted) are searched first."""
    paks = [load_pak(p) for p in paths]
    return sorted(paks, key=lambda p: p.path.name.lower(), reverse=True)


def first_with(paks: list[Pak], member: str) -> Pak:
    for pak in paks:
        if member in pak.names:
            return pak
    raise PureError(f"none of the {len(paks)} pk3s holds {member} (point `pure` at the server's pk3s)")


def cp_command(server_id: int, checksum_feed: int, paks: list[Pak]) -> str:
    """The minimal `cp` an ioq3 pure server accepts (sv_client.c `SV_VerifyPaks_f`):
    ``cp <serverId> <pure(cgame pk3)> <pure(ui pk3)> @ <feed ^ 0>`` — no general references,
    so the encoded count is the feed itself. `paks` must be in search order."""
    cgame = first_with(paks, "vm/cgame.qvm").pure_checksum(checksum_feed)
    ui = first_with(paks, "vm/ui.qvm").pure_checksum(checksum_feed)
    return f"cp {server_id} {cgame} {ui} @ {_s32(checksum_feed)}"
