"""Start-up: process start → the first Quake 3 datagram on the wire, for `headcast run`.

A real server (ioq3ded from Debian's openarena-server on 127.0.0.1, not pure, as the tests' q3_server) and, in front
of it, a UDP relay in this process that notes when the first datagram from headcast arrives (its
getchallenge) and then passes everything both ways, so the join goes on as it would. Per run:
`headcast run --mock look_around --q3 RELAY --no-mirror --duration 1` is started (the clock starts
just before the process is spawned) and the time to that first datagram is taken; runs alternate
with a bare `python -c pass` (the interpreter's own start on this machine, in the same window) so
the figure can be read against the floor it stands on. Goal (issue 26 item 6): < 0.4 s, the
median over runs (each run printed; the load beside them). Beside it, the CPU time the process had
used when its first datagram arrived (all threads, /proc/PID/task/*/schedstat): on a shared machine
the wall time grows with the load, the CPU time much less — roughly what an idle machine shows.

Also prints, once, `python -X importtime`'s biggest imports of that run, for finding what else
a command imports that it does not use.

    .venv/bin/python tests/benchmarks/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _report

from _report import load_now, report  # noqa: E402

from headcast.netcode.q3.localserver import LocalQ3Server  # noqa: E402

GOAL_S = 0.4
ROOT = HERE.parents[1]
# Bytecode is compiled once (the warm-up run) and kept, as `pip install` compiles an installed
# package's: without it every start would compile every module it imports from source.
PYCACHE = os.environ.get("PYTHONPYCACHEPREFIX") or str(ROOT / "build" / "pycache")
HEADCAST = [sys.executable, "-c", "import sys; from headcast.app.commands.cli import main; sys.exit(main())"]


def cpu_so_far(pid: int) -> float | None:
    """CPU seconds the process has run so far, all its threads (Linux: /proc/PID/task/*/schedstat)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError):
        return None
    return total / 1e9


def first_datagram(server: tuple[str, int], extra: list[str], timeout: float = 30.0) -> tuple[float, float | None, str]:
    """Seconds from spawning `headcast run` to its first datagram at the relay, the CPU seconds the
    process had used by then (what the wall time would be on an idle machine, roughly); its stderr."""
    relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    relay.bind(("127.0.0.1", 0))
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.connect(server)
    port = relay.getsockname()[1]
    cmd = [
        *HEADCAST[:1],
        *extra,
        *HEADCAST[1:],
        "run",
        "--mock",
        "look_around",
        "--q3",
        f"127.0.0.1:{port}",
        "--no-vr",
        "--no-mirror",
        "--duration",
        "1",
    ]
    env = dict(os.environ, HEADCAST_MOCK_THROTTLE="1", PYTHONPYCACHEPREFIX=PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode kept, as an installed package has its .pyc
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    first = cpu = None
    client = None
    deadline = t0 + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([relay, up], [], [], 0.2)
            for s in ready:
                if s is relay:
                    data, client = relay.recvfrom(65536)
                    if first is None:
                        first = time.monotonic() - t0
                        cpu = cpu_so_far(proc.pid)
                    up.send(data)
                elif client is not None:
                    relay.sendto(up.recv(65536), client)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        relay.close()
        up.close()
    if first is None:
        raise SystemExit(f"no datagram from headcast within {timeout:g} s; its stderr:\n{err.decode(errors='replace')}")
    return first, cpu, err.decode(errors="replace")


def bare_python() -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True, cwd=ROOT)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    load0 = load_now()
    times, floors, cpus = [], [], []
    with LocalQ3Server(kind="ioq3", pure=False) as server:  # joinable without --pk3: the run goes on
        first_datagram(server.address, [])  # warm the page cache and __pycache__ first
        for i in range(args.runs):
            floors.append(bare_python())
            t, cpu, _ = first_datagram(server.address, [])
            times.append(t)
            cpus.append(cpu if cpu is not None else float("nan"))
            print(
                f"run {i + 1}: first Q3 datagram after {t * 1e3:6.0f} ms, {cpus[-1] * 1e3:5.0f} ms of CPU by then "
                f"(bare `python -c pass`: {floors[-1] * 1e3:4.0f} ms; load {load_now()})",
                flush=True,
            )
        _, _, err = first_datagram(server.address, ["-X", "importtime"])
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line[len("import time:") :].split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.rstrip()))
    top = [r for r in rows if not r[1].startswith("   ")]  # top-level imports only
    print("\nbiggest top-level imports of that run (python -X importtime, cumulative ms, with its own overhead):")
    for us, name in sorted(top, reverse=True)[:15]:
        print(f"  {us / 1e3:8.1f} ms  {name.strip()}")
    med = statistics.median(times)
    print(
        f"\nprocess start → first Q3 datagram: median {med * 1e3:.0f} ms, min–max {min(times) * 1e3:.0f}–"
        f"{max(times) * 1e3:.0f} ms over {len(times)} runs (the interpreter alone: median "
        f"{statistics.median(floors) * 1e3:.0f} ms); goal < {GOAL_S * 1e3:.0f} ms; the process's CPU time by "
        f"its first datagram: median {statistics.median(cpus) * 1e3:.0f} ms (what a machine with nothing else "
        f"to run would take, roughly)"
    )
    report(
        "startup",
        "process start → first Q3 datagram (median)",
        "<",
        GOAL_S,
        round(med, 3),
        " s",
        [round(t, 3) for t in times],
        (load0, load_now()),
        f"verdict on the median of the runs; bare interpreter median {statistics.median(floors):.3f} s in the "
        f"same window; CPU time by the first "
        f"datagram median {statistics.median(cpus):.3f} s",
    )


if __name__ == "__main__":
    main()
