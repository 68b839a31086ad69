"""Build the optional C accelerator of the Quake 3 codecs (_q3native.c) into this folder.

The build backend builds the same extension (setup.py, with CFLAGS from here): into a wheel, or in
place into this folder for the editable install scripts/setup.sh makes. This script rebuilds it
when stale: runnable as a script (scripts/setup.sh: `.venv/bin/python netcode/q3/build_native.py`),
standard library only. Idempotent: compiles only when the extension is missing or older than
_q3native.c (or this file), and swaps the new file in atomically so a running process keeps a valid
mapping (netcode/cbuild.py does that for both extensions). The extension lands next to the
package's modules (`from . import _q3native` finds it); without it the package runs its
pure-Python codecs, which stay the reference (see native.py).
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_q3native.c"
CFLAGS = [
    "-shared",
    "-fPIC",
    "-O2",
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Wno-missing-field-initializers",
    "-Wno-unused-parameter",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
    # Pump.send_pose computes the Q3 sink's angles as pose.quake_angles does, bit for bit: no fused
    # multiply-adds (GCC contracts by default outside ISO C, clang even inside it; aarch64 has FMA).
    "-ffp-contract=off",
]

# How to build is netcode/cbuild.py's (run by path: see there why); what, this file's.
EXT: Any = runpy.run_path(str(HERE.parent / "cbuild.py"))["Extension"](SOURCE, CFLAGS, script=__file__, doc=__doc__)
# _q3snap.c (the snapshot decoder) is #included by _q3native.c: a newer one rebuilds too.
EXT.inputs = (*EXT.inputs, HERE / "_q3snap.c")

if __name__ == "__main__":
    sys.exit(EXT.main(sys.argv[1:]))
