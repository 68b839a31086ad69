"""The optional C accelerator of the Quake 3 codecs (`_q3native`, built by build_native.py).

The per-tick and per-snapshot paths (Huffman writing, the server-message bit reader and its
netField walk, the client message with its usercmd deltas, the netchan XOR) each run as one C
call when the extension is built; the pure-Python implementations beside them (`PyBitReader`,
`py_huffman_bits`, ...) stay the reference, give the same bytes and errors, and are used when the
extension is missing or `HEADCAST_PURE_PYTHON=1` is set (read once, at import).
"""
from __future__ import annotations

import os
from types import ModuleType

from .errors import MsgError
from .huffman import STATIC_CODES
from .netfields import ENTITY_WIDTHS, PLAYER_WIDTHS

__all__ = ["NATIVE", "NATIVE_STATUS", "PURE_ENV"]

PURE_ENV = "HEADCAST_PURE_PYTHON"


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None, f"disabled by {PURE_ENV}=1"
    from . import build_native
    if build_native.SOURCE.exists() and build_native.target().exists() and build_native.stale():
        # A build from an older source may not match the Python reference any more.
        return None, "built from an older _q3native.c; run netcode/q3/build_native.py"
    try:
        from . import _q3native
    except ImportError as exc:
        return None, f"not built ({exc}); run netcode/q3/build_native.py"
    init(_q3native)
    return _q3native, "in use"


def init(module: ModuleType) -> None:
    """Hand the extension what it shares with the Python code: the error type, the Huffman code
    and the netField tables' widths (so none of them is written twice)."""
    module.init(MsgError, STATIC_CODES, ENTITY_WIDTHS, PLAYER_WIDTHS)


NATIVE, NATIVE_STATUS = _load()
