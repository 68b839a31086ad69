"""Test-side models of Quake 3 rules, written from docs/protocols/quake3.md, never from our code."""

from __future__ import annotations


def xor_from_spec(body: bytes, start: int, key: int, text: bytes | str) -> bytes:
    """The legacy netchan scrambling (docs/protocols/quake3.md#netchan, ioq3 CL_Netchan_Encode), byte by byte:
    c = text[idx] (wrap at the end or a NUL; empty → 0); '.' for c > 127 or '%';
    key ^= c << (i & 1); byte ^= key & 0xFF."""
    raw = text.encode("latin-1") if isinstance(text, str) else text
    raw = raw.split(b"\0", 1)[0]
    out = bytearray(body)
    idx = 0
    for i in range(start, len(out)):
        if idx >= len(raw):
            idx = 0
        c = raw[idx] if raw else 0
        if c > 127 or c == ord("%"):
            c = ord(".")
        key ^= c << (i & 1)
        out[i] ^= key & 0xFF
        idx += 1
    return bytes(out)
