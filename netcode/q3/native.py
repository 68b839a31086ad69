"""The optional C accelerator of the Quake 3 codecs (`_q3native`, built by build_native.py).

The per-tick and per-snapshot paths (Huffman writing, the server-message bit reader and its
netField walk, the client message with its usercmd deltas, the netchan XOR) each run as one C
call when the extension is built; the pure-Python implementations beside them (`PyBitReader`,
`py_huffman_bits`, ...) stay the reference, give the same bytes and errors, and are used when the
extension is missing or `HEADCAST_PURE_PYTHON=1` is set (read once, at import). The build backend
builds it (setup.py: an optional extension, in the wheel or in place for an editable install).
"""

from __future__ import annotations

import importlib
import os
import sys
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

    # A build from an older source may not match the Python reference any more. Only a checkout
    # can tell: an installed package's extension was built with it, and the install does not keep
    # the file times.
    checkout = build_native.EXT.in_checkout()
    if checkout and build_native.EXT.target().exists() and build_native.EXT.stale():
        return None, "built from an older _q3native.c; run netcode/q3/build_native.py"
    try:  # the extension module by its full name: no private name imported from a module
        native = importlib.import_module(f"{__package__}._q3native")
    except ImportError as exc:
        fix = (
            "run netcode/q3/build_native.py (scripts/setup.sh does)"
            if checkout
            else f"this install has none (the pure-Python codecs run, with the same bytes); to build it, "
            f"{build_native.EXT.install_hint('compiler', 'python')}"
            + (", then reinstall headcast from its sdist" if sys.platform.startswith("linux") else "")
        )
        return None, f"not built ({exc}); {fix}"
    init(native)
    return native, "in use"


def init(module: ModuleType) -> None:
    """Hand the extension what it shares with the Python code: the error type, the Huffman code
    and the netField tables' widths (so none of them is written twice)."""
    module.init(MsgError, STATIC_CODES, ENTITY_WIDTHS, PLAYER_WIDTHS)


NATIVE, NATIVE_STATUS = _load()
