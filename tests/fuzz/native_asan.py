"""The C extension (netcode/q3/_q3native.c) under AddressSanitizer and UBSan, fuzzed against its
pure-Python reference (the fuzz campaign's native part; scripts/fuzz.sh runs it).

    .venv/bin/python tests/fuzz/native_asan.py [--inputs 20000] [--seed 0]

Builds the extension with -fsanitize=address,undefined,float-cast-overflow (no recovery) into
build/fuzz/asan/, then re-runs itself with the ASan runtime preloaded (gcc -print-file-name) and
PYTHONMALLOC=malloc, headcast itself on its pure-Python codecs (HEADCAST_PURE_PYTHON=1), and feeds
mutated real server messages (tests/data/fuzz/q3_serverparse, q3_netchan, q3_delta, native) to
both sides: the server-message parser over the C BitReader and over PyBitReader, the entity and
playerState delta readers, read_longs and legacy_unscramble. A sanitizer report aborts the run
(the input is kept as tests/data/fuzz/native/crash-asan-<sha1>.bin); a disagreement is saved as
crash-differ-<sha1>.bin. Exit 0: no report, no disagreement.

    .venv/bin/python tests/fuzz/native_asan.py --pytest tests/q3/test_pump.py ...

runs those tests (pytest's own arguments) against the sanitized extension instead: the pump, the
snapshot decoder and the send path (Pump.step/run/send_input/send_pose, snap_*) are driven by the
tests that compare them with the Python core, over real sockets. headcast runs with the extension
there (not its pure-Python codecs); servers the tests start do not inherit the ASan runtime.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = REPO / "build" / "fuzz" / "asan"
SOURCE = REPO / "netcode" / "q3" / "_q3native.c"
INCLUDED = (REPO / "netcode" / "q3" / "_q3snap.c",)  # #included by SOURCE: a newer one rebuilds too
SAN = ["-fsanitize=address,undefined,float-cast-overflow", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
CHILD = "HEADCAST_ASAN_CHILD"


def build() -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"_q3native{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    if target.exists() and target.stat().st_mtime >= max(p.stat().st_mtime for p in (SOURCE, *INCLUDED)):
        return target
    gcc = shutil.which(os.environ.get("CC", "gcc"))
    if gcc is None:
        sys.exit("native_asan: gcc not found (scripts/setup.sh installs it)")
    cmd = [
        gcc,
        "-shared",
        "-fPIC",
        "-O1",
        "-g",
        "-std=c99",
        *SAN,
        f"-I{sysconfig.get_paths()['include']}",
        "-o",
        str(target),
        str(SOURCE),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"native_asan: build failed:\n{r.stderr}")
    return target


def runtime(name: str) -> str:
    path = subprocess.run(
        [os.environ.get("CC", "gcc"), f"-print-file-name={name}"], capture_output=True, text=True
    ).stdout.strip()
    if not Path(path).is_file():
        sys.exit(f"native_asan: {name} not found (Debian: gcc ships it with libasan8/libubsan1)")
    return path


def parent(args) -> int:
    target = build()
    pure = {} if args.pytest is not None else {"HEADCAST_PURE_PYTHON": "1"}
    if b"__asan_report" not in target.read_bytes() or b"__ubsan_handle" not in target.read_bytes():
        sys.exit(f"native_asan: {target} is not instrumented (remove it to rebuild)")
    env = dict(
        os.environ,
        LD_PRELOAD=f"{runtime('libasan.so')} {runtime('libubsan.so')}",
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
        PYTHONMALLOC="malloc",
        **pure,
        **{CHILD: str(target)},
    )
    if not pure:
        env.pop("HEADCAST_PURE_PYTHON", None)
    current = _current_file()
    env["HEADCAST_ASAN_CURRENT"] = str(current)
    r = subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env)
    if r.returncode not in (0, 1) and current.exists():
        data = current.read_bytes()
        dest = REPO / "tests" / "data" / "fuzz" / "native" / f"crash-asan-{hashlib.sha1(data).hexdigest()[:16]}.bin"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        print(
            f"native_asan: the sanitizer stopped the run (exit {r.returncode}); input kept as {dest}", file=sys.stderr
        )
    current.unlink(missing_ok=True)
    return r.returncode


def _current_file() -> Path:
    """Where the child keeps the input in hand (read back if a sanitizer aborts it): tmpfs when
    there is one, so a full disk elsewhere does not stop the run."""
    shm = Path("/dev/shm")
    folder = shm if shm.is_dir() and os.access(shm, os.W_OK) else OUT
    return folder / f"headcast-asan-current-{os.getpid()}.bin"


def run_tests(args) -> int:
    """pytest on args.pytest with headcast's extension the sanitized build (registered under the
    extension's full name before headcast imports it)."""
    for name in ("LD_PRELOAD", "PYTHONMALLOC"):  # not for the servers and tools the tests start
        os.environ.pop(name, None)
    spec = importlib.util.spec_from_file_location("headcast.netcode.q3._q3native", os.environ[CHILD])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    import pytest

    from headcast.netcode.q3 import native

    if native.NATIVE is not mod:
        sys.exit(f"native_asan: headcast did not take the sanitized extension ({native.NATIVE_STATUS})")
    print(f"native_asan: pytest {' '.join(args.pytest)} on {os.environ[CHILD]}", flush=True)
    return int(pytest.main(["-p", "no:cacheprovider", *args.pytest]))


def child(args) -> int:
    if args.pytest is not None:
        return run_tests(args)
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    spec = importlib.util.spec_from_file_location("_q3native", os.environ[CHILD])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from headcast.netcode.q3 import delta, native, netchan, serverparse
    from headcast.netcode.q3.errors import MsgError
    from headcast.netcode.q3.msg import PyBitReader, py_huffman_bits

    assert native.NATIVE is None, "headcast must run its pure-Python codecs here"
    native.init(mod)
    import fuzzlib

    seeds = []
    for name in ("q3_serverparse", "q3_netchan", "q3_delta", "native"):
        seeds += fuzzlib.corpus(name)
    rng = random.Random(f"asan:{args.seed}")
    ring = [f"cmd {i} {'x' * i}" for i in range(64)]
    current = Path(os.environ.get("HEADCAST_ASAN_CURRENT", OUT / "current.bin"))
    differ = 0
    t0 = last = time.monotonic()

    def outcome(fn):
        try:
            return ("ok", repr(fn()))
        except MsgError as e:
            return ("MsgError", str(e))
        except serverparse.ServerParseError as e:
            return ("ServerParseError", str(e))
        except (ValueError, OverflowError, TypeError) as e:  # an argument refused: both must refuse it
            return (type(e).__name__, str(e))

    def parse_with(reader_type, data):
        saved = serverparse.BitReader
        serverparse.BitReader = reader_type
        try:
            return outcome(lambda: serverparse.parse_server_message(data, 100, lambda n: None, {}))
        finally:
            serverparse.BitReader = saved

    for i in range(args.inputs):
        data = seeds[i] if i < len(seeds) else fuzzlib.mutate(rng, rng.choice(seeds), seeds, 4096)
        with open(current, "wb") as f:
            f.write(data)
        n = data[0] if data else 0
        fields = []
        for j in range(0, min(len(data), 48) - 1, 2):
            w = data[j] % 65
            fields += [int.from_bytes(data[j + 1 : j + 9], "little") & ((1 << w) - 1), w]
        checks = {
            "serverparse": (lambda: parse_with(mod.BitReader, data), lambda: parse_with(PyBitReader, data)),
            "entity": (
                lambda: outcome(lambda: delta.read_delta_entity(mod.BitReader(data[1:]), delta.NULL_ENTITY, n)),
                lambda: outcome(lambda: delta.read_delta_entity(PyBitReader(data[1:]), delta.NULL_ENTITY, n)),
            ),
            "playerstate": (
                lambda: outcome(lambda: delta.read_delta_playerstate(mod.BitReader(data[1:]), None)),
                lambda: outcome(lambda: delta.read_delta_playerstate(PyBitReader(data[1:]), None)),
            ),
            "read_longs": (
                lambda: outcome(lambda: mod.read_longs(data, n % 8, 3)),
                lambda: outcome(lambda: netchan._ioq3_read_longs(data, n % 8, 3)),
            ),
            "unscramble": (
                lambda: outcome(lambda: mod.legacy_unscramble(data, 0x5EED ^ i, ring)),
                lambda: outcome(
                    lambda: netchan._xor(
                        bytes(data),
                        netchan._SV_ENCODE_START,
                        0x5EED ^ i,
                        netchan._ring_text(ring, netchan._ioq3_read_longs(data, 0, 1)[0]),
                        {},
                    )
                ),
            ),
            # pairs (value, width 0..64): the writer's contract (callers pass constant widths)
            "huffman_bits": (
                lambda: outcome(lambda: mod.huffman_bits(fields)),
                lambda: outcome(lambda: py_huffman_bits(fields)),
            ),
        }
        for what, (c_side, py_side) in checks.items():
            a, b = c_side(), py_side()
            if a != b:
                differ += 1
                dest = (
                    REPO
                    / "tests"
                    / "data"
                    / "fuzz"
                    / "native"
                    / f"crash-differ-{hashlib.sha1(data).hexdigest()[:16]}.bin"
                )
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
                print(
                    f"native_asan: {what}: C {a[0]} {a[1][:160]!r} != Python {b[0]} {b[1][:160]!r} ({dest.name})",
                    file=sys.stderr,
                    flush=True,
                )
        now = time.monotonic()
        if now - last >= 30:
            last = now
            print(
                f"native_asan: {i + 1:,} inputs, {(i + 1) / (now - t0):,.0f}/s, {differ} disagreements",
                file=sys.stderr,
                flush=True,
            )
    current.unlink(missing_ok=True)
    print(
        f"native_asan: {args.inputs:,} inputs x {len(checks)} checks under ASan+UBSan in "
        f"{time.monotonic() - t0:,.0f} s: no sanitizer report, {differ} disagreements"
    )
    return 1 if differ else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--pytest",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="run pytest with these arguments against the sanitized extension instead of fuzzing",
    )
    args = ap.parse_args(argv)
    return child(args) if os.environ.get(CHILD) else parent(args)


if __name__ == "__main__":
    sys.exit(main())
