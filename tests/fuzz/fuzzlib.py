"""The fuzz campaign's engine: one harness per decoder that reads a peer's bytes or a user's file,
a mutational fuzzer seeded from the corpus in tests/data/fuzz/<target>/ (real traffic captured by
tests/fuzz/capture.py from the real servers, plus every crash found: crash-*.bin), and the rule
every harness checks: the decoder returns, or raises its own typed error — nothing else, and
never hangs (HANG_SECONDS per input).

Used by the bounded run in the suite (tests/fuzz/test_fuzz.py, marker `fuzz`) and the long run
(`bash scripts/fuzz.sh`, tests/fuzz/run.py). Standard library and headcast only.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import struct
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "fuzz"
HANG_SECONDS = 5.0


class Hang(BaseException):
    """An input ran longer than HANG_SECONDS (raised by the SIGALRM timer)."""


@dataclass
class Target:
    name: str
    make: Callable[[], Callable[[bytes], object]]  # builds the harness (state, temp files) once per run
    allowed: Callable[[], tuple[type[BaseException], ...]]  # the decoder's own typed errors
    what: str
    max_len: int = 4096


@dataclass
class Report:
    target: str
    inputs: int = 0
    crashes: dict[str, str] = field(default_factory=dict)  # signature -> saved file
    seconds: float = 0.0
    seeds: int = 0

    @property
    def rate(self) -> float:
        return self.inputs / self.seconds if self.seconds else 0.0


# --- the harnesses --------------------------------------------------------------------------


def _q3():
    from headcast.netcode.q3 import errors, huffman, oob, serverparse, status

    return errors, huffman, oob, serverparse, status


def _tmpfile(suffix: str) -> Path:
    folder = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    fd, name = tempfile.mkstemp(prefix="headcast-fuzz-", suffix=suffix, dir=folder)
    os.close(fd)
    return Path(name)


def _file_harness(suffix: str, read: Callable[[Path], object]) -> Callable[[bytes], object]:
    path = _tmpfile(suffix)

    def run(data: bytes) -> object:
        path.write_bytes(data)
        return read(path)

    run.path = path  # type: ignore[attr-defined]
    return run


def _q3_core():
    """A Q3ClientCore in game with the scripted server of tests/q3/test_client_core.py: each input
    is a server message body, sent with a valid netchan header (the decoders behind it run)."""
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    from q3.test_client_core import make, run as run_timers

    state: dict = {}

    def fresh():
        core, server = make(vr=True, vr_support=True)
        server.handshake(0.0)
        server.read(0.0)
        server.gamestate(0.01)
        run_timers(core, 0.01, 0.05)
        state.update(core=core, server=server, n=0, now=0.05)

    fresh()

    def run(data: bytes) -> None:
        if state["n"] >= 500 or state["core"].state.value in ("closed", "waiting"):
            fresh()
        state["n"] += 1
        state["now"] += 0.001
        core, server = state["core"], state["server"]
        server.send(data, state["now"])
        core.datagrams_to_send(state["now"])
        while core.next_event() is not None:
            pass

    return run


def _ns_core():
    from headcast.netcode.netsync.client import LANE_CONTROL, LANE_ROOM, Incoming, NetSyncClientCore

    state: dict = {}

    def run(data: bytes) -> None:
        if not state or state["n"] >= 1000:
            state.update(core=NetSyncClientCore("default_room", "fuzz", protocol=None), n=0)
        state["n"] += 1
        core = state["core"]
        frames = data[1:].split(b"\x00", 2)
        core.receive_datagram(Incoming(LANE_CONTROL if data[:1] == b"U" else LANE_ROOM, frames), 1.0)
        while core.next_event() is not None:
            pass

    return run


def _sauer_core():
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    from sauer.test_client_core import connected, feed, step

    from headcast.netcode.sauer.client import SauerClientCore

    state: dict = {}

    def run(data: bytes) -> None:
        if not state or state["n"] >= 1000 or state["core"].state.value in ("closed", "waiting"):
            core = SauerClientCore("fuzz")
            connected(core)
            state.update(core=core, n=0)
        state["n"] += 1
        core = state["core"]
        feed(core, data[0] % 3 if data else 1, data[1:], 1.0)
        step(core, 1.0)
        while core.next_event() is not None:
            pass

    return run


def _netchan():
    from headcast.netcode.q3.netchan import Netchan, NetchanMode

    ring = [f"cmd {i}" for i in range(64)]

    def run(data: bytes) -> None:
        for mode in (NetchanMode.NEW71, NetchanMode.LEGACY):
            Netchan(mode, 1592594996, 31337).process(data, ring)

    return run


def _delta():
    from headcast.netcode.q3 import delta
    from headcast.netcode.q3.msg import BitReader

    def run(data: bytes) -> None:
        n = data[0] if data else 0
        body = data[1:]
        try:
            delta.read_delta_entity(BitReader(body), delta.NULL_ENTITY, n)
        finally:
            delta.read_delta_playerstate(BitReader(body), None)

    return run


def _motion():
    from headcast.xr import mockrt

    ctl = mockrt.MockControl(mockrt.ensure_runtime())
    return _file_harness(".motion", ctl.check_motion)


def _config():
    from headcast.app.run import config

    return _file_harness(".toml", lambda p: config.load(user_file=p, env={}, warn=None))


def _pk3():
    from headcast.netcode.q3 import pure

    return _file_harness(".pk3", lambda p: pure._load.__wrapped__(str(p), 0, 0))


def _trace():
    from headcast.xr.trace import read_trace

    return _file_harness(".trace", read_trace)


def _targets() -> list[Target]:
    T = Target
    q3e = lambda: (_q3()[0].MsgError,)  # noqa: E731
    out = [
        T("q3_oob", lambda: _q3()[2].parse_oob, lambda: (_q3()[2].OobError,), "Quake 3 connectionless replies"),
        T(
            "q3_status",
            lambda: (
                lambda d: (
                    _try(_q3()[4].parse_info_response, d, _q3()[4].StatusError),
                    _q3()[4].parse_status_response(d),
                )
            ),
            lambda: (_q3()[4].StatusError,),
            "getinfo/getstatus answers",
        ),
        T("q3_huffman", lambda: _q3()[1].decompress, q3e, "Huffman (connect packets)"),
        T("q3_netchan", _netchan, q3e, "netchan (checksummed and legacy 71)"),
        T(
            "q3_serverparse",
            lambda: lambda d: _q3()[3].parse_server_message(d, 100, lambda n: None, {}),
            lambda: (_q3()[3].ServerParseError, _q3()[0].MsgError),
            "server messages (gamestate, snapshots)",
        ),
        T("q3_delta", _delta, q3e, "entity and playerState deltas"),
        T("q3_client", _q3_core, lambda: (), "Q3ClientCore in game: any server message body"),
        T(
            "ns_mapping",
            lambda: __import__("headcast.netcode.netsync.codec", fromlist=["x"]).decode_device_id_mapping,
            _ns_err,
            "NetSync device-ID mapping",
        ),
        T("ns_core", _ns_core, lambda: (), "NetSyncClientCore detecting: unicast and broadcast frames"),
        T("sauer_messages", lambda: _sauer("messages").parse_messages, lambda: (), "Sauerbraten channel 1"),
        T("sauer_positions", lambda: _sauer("messages").parse_positions, lambda: (), "Sauerbraten channel 0"),
        T(
            "sauer_info",
            lambda: _sauer("info").parse_info_reply,
            lambda: (_sauer("info").InfoError,),
            "Sauerbraten extinfo replies",
        ),
        T("sauer_core", _sauer_core, lambda: (), "SauerClientCore in game: any channel"),
        T("trace", _trace, _trace_err, "trace files (replay)", 65536),
        T("motion", _motion, _motion_err, "motion files (the mock runtime's parser)", 65536),
        T("config", _config, _config_err, "config files (TOML)", 65536),
        T("pk3", _pk3, _pk3_err, "pk3 files (zip directory)", 65536),
    ]
    for p in range(3, 9):
        out.append(
            T(
                f"ns_room_p{p}",
                (lambda p=p: lambda d: _ns().decode_room_pose(d, p)),
                _ns_err,
                f"NetSync room broadcast, protocol {p}",
            )
        )
        out.append(
            T(
                f"ns_body_p{p}",
                (lambda p=p: lambda d: _ns().decode_body(d, 0, p)),
                _ns_err,
                f"NetSync pose body, protocol {p}",
            )
        )
    return out


def _try(fn, data, err):
    try:
        return fn(data)
    except err:
        return None


def _ns():
    from headcast.netcode.netsync import codec

    return codec


def _ns_err():
    return (_ns().NetSyncDecodeError,)


def _sauer(mod: str):
    import importlib

    return importlib.import_module(f"headcast.netcode.sauer.{mod}")


def _trace_err():
    from headcast.xr.trace import TraceError

    return (TraceError,)


def _motion_err():
    from headcast.xr.mockrt import MockControlError

    return (MockControlError,)


def _config_err():
    from headcast.app.run.config import ConfigError

    return (ConfigError,)


def _pk3_err():
    from headcast.netcode.q3.pure import PureError

    return (PureError,)


TARGETS = {t.name: t for t in _targets()}


# --- the mutator ----------------------------------------------------------------------------

_INTERESTING = [
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    b"\xff\xff",
    b"\x00\x80",
    b"\xff\xff\xff\x7f",
    b"\x00\x00\x00\x80",
    b"\xff\xff\xff\xff",
    struct.pack("<d", float("nan")),
    struct.pack("<f", float("inf")),
    b"9" * 401,
    b"-" + b"9" * 30,
    b"1e400",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\\",
    b'"',
    b"\n",
    b"[",
    b"{",
    b"=",
    b"nan",
    b"-0",
    b"\x00" * 8,
]


def mutate(rng: random.Random, data: bytes, seeds: list[bytes], max_len: int) -> bytes:
    b = bytearray(data)
    for _ in range(1 + int(rng.expovariate(0.7))):
        op = rng.randrange(11)
        n = len(b)
        if op == 0 and n:
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            b[rng.randrange(n)] = rng.randrange(256)
        elif op == 2:
            i = rng.randrange(n + 1)
            b[i:i] = rng.randbytes(rng.choice((1, 2, 4, rng.randrange(1, 64))))
        elif op == 3 and n:
            i = rng.randrange(n)
            del b[i : i + rng.randrange(1, min(n - i, 64) + 1)]
        elif op == 4 and n:
            i = rng.randrange(n)
            chunk = b[i : i + rng.randrange(1, 32)]
            j = rng.randrange(n + 1)
            b[j:j] = chunk * rng.choice((1, 2, 8, 64))
        elif op == 5:
            v = rng.choice(_INTERESTING)
            i = rng.randrange(n + 1)
            if rng.random() < 0.5:
                b[i : i + len(v)] = v
            else:
                b[i:i] = v
        elif op == 6 and seeds:
            other = rng.choice(seeds)
            if other:
                i, j = rng.randrange(n + 1), rng.randrange(len(other))
                b = b[:i] + other[j : j + rng.randrange(1, len(other) - j + 1)]
        elif op == 7 and n:
            del b[rng.randrange(n) :]
        elif op == 8 and n >= 2:
            i = rng.randrange(n - 1)
            w = rng.choice((1, 2, 4))
            v = rng.choice(
                (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 1 << 31, rng.randrange(1 << 32))
            )
            b[i : i + w] = (v & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
        elif op == 9:
            i = rng.randrange(n + 1)
            b[i:i] = str(rng.choice((0, -1, 10 ** rng.randrange(1, 30), rng.randrange(-(10**6), 10**6)))).encode()
        elif op == 10 and n:
            i = rng.randrange(n)
            b[i] = (b[i] + rng.choice((1, -1, 16, -16))) & 0xFF
    return bytes(b[:max_len])


# --- running --------------------------------------------------------------------------------


def corpus(name: str) -> list[bytes]:
    folder = CORPUS / name
    return [p.read_bytes() for p in sorted(folder.glob("*.bin"))] if folder.is_dir() else []


def _signature(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = tb[-1] if tb else None
    at = f"{Path(where.filename).name}:{where.lineno}" if where else "?"
    return f"{type(e).__name__} at {at}"


def _alarm(signum, frame):
    raise Hang(f"input ran over {HANG_SECONDS:g} s")


def fuzz(
    name: str,
    inputs: int,
    seed: int = 0,
    save: bool = True,
    progress: Callable[[Report], None] | None = None,
    progress_every: float = 5.0,
    stop_on_crash: bool = False,
) -> Report:
    """Run `inputs` mutated inputs through target `name`; every crash (an exception the decoder
    does not own, or a hang) is saved as tests/data/fuzz/<name>/crash-<sha1>.bin (when `save`)."""
    t = TARGETS[name]
    harness = t.make()
    allowed = t.allowed()
    seeds = corpus(name) or [b""]
    rng = random.Random(f"{name}:{seed}")
    rep = Report(name, seeds=len(seeds))
    old = signal.signal(signal.SIGALRM, _alarm) if hasattr(signal, "SIGALRM") else None
    t0 = last = time.perf_counter()
    try:
        for i in range(inputs):
            data = seeds[i] if i < len(seeds) else mutate(rng, rng.choice(seeds), seeds, t.max_len)
            if old is not None:
                signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
            try:
                harness(data)
            except allowed:
                pass
            except (Exception, Hang, RecursionError) as e:  # noqa: BLE001 - any other is a crash
                sig = _signature(e)
                if sig not in rep.crashes:
                    path = CORPUS / name / f"crash-{hashlib.sha1(data).hexdigest()[:16]}.bin"
                    if save:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_bytes(data)
                    rep.crashes[sig] = f"{path.name}: {type(e).__name__}: {str(e)[:200]}"
                    if stop_on_crash:
                        rep.inputs = i + 1
                        break
            finally:
                if old is not None:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            rep.inputs = i + 1
            if progress is not None and (i & 255) == 0:
                now = time.perf_counter()
                if now - last >= progress_every:
                    last = now
                    rep.seconds = now - t0
                    progress(rep)
    finally:
        if old is not None:
            signal.signal(signal.SIGALRM, old)
        p = getattr(harness, "path", None)
        if p is not None:
            Path(p).unlink(missing_ok=True)
    rep.seconds = time.perf_counter() - t0
    return rep
