"""Build the optional C accelerator of the NetSync codec (_nscodec.c) into this folder.

The build backend builds the same extension (setup.py, with CFLAGS from here) into a wheel, or in
place for the editable install scripts/setup.sh makes; this script rebuilds it when missing or
stale (older than _nscodec.c or this file), standard library only, and swaps the new file in
atomically. Without it codec.py runs its pure-Python paths, which stay the reference (same bytes,
same floats: tests/netsync/test_codec_native.py). `HEADCAST_PURE_PYTHON=1` leaves it unused.

    python netcode/netsync/build_native.py [--force]
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_nscodec.c"
# -ffp-contract=off: no fused multiply-add, every + and * rounds as Python's (the same floats)
CFLAGS = [
    "-shared",
    "-fPIC",
    "-O2",
    "-std=c99",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
]

# How to build is netcode/cbuild.py's (run by path: see there why); what, this file's.
EXT: Any = runpy.run_path(str(HERE.parent / "cbuild.py"))["Extension"](
    SOURCE, CFLAGS, libs=["-lm"], script=__file__, doc=__doc__
)

if __name__ == "__main__":
    sys.exit(EXT.main(sys.argv[1:]))
