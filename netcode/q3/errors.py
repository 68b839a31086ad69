"""Typed errors of the Quake 3 codecs: what was wrong with the peer's bytes."""

from __future__ import annotations


class MsgError(ValueError):
    """A message cannot be decoded: overread, garbage Huffman code, bad count or length."""
