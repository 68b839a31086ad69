"""Start-up imports only what the command uses (issue 26 item 6).

`headcast run --no-mirror` against a real Quake 3 server (ioq3ded on 127.0.0.1, the suite's
q3_server fixture), the mock runtime playing a motion, run as a user runs it with
`python -X importtime`: the interpreter's own list of every module the process imported. Neither
the swarm (its options are built only for `headcast swarm`) nor the mirror and its GUI stack
(imgui_bundle, glfw, OpenGL's mirror side) may be among them, nor what only other sinks' links use
(ZeroMQ and the NetSync transport, the Sauerbraten client: the run joins Quake 3 only) or only
`demo` (the NetSync release table); the run itself must have streamed.
"""

from __future__ import annotations

import re
import subprocess
import sys

from support import REPO, cli_env

FORBIDDEN = (
    "headcast.app.swarm",
    "headcast.app.mirror",
    "headcast.app.sinks.farside",
    "headcast.app.mirror.scene",
    "imgui_bundle",
    "zmq",
    "headcast.netcode.netsync.transport",
    "headcast.netcode.netsync.releases",
    "headcast.netcode.sauer.client",
)


def imported(stderr: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$", stderr, re.M)}


def test_run_no_mirror_imports_neither_swarm_nor_mirror(q3_server):
    host, port = q3_server.address
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "headcast.app",
            "run",
            "--mock",
            "look_around",
            "--q3",
            f"{host}:{port}",
            "--no-vr",
            "--no-mirror",
            "--duration",
            "3",
        ],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    modules = imported(proc.stderr)
    assert "headcast.app.commands.run" in modules and "headcast.app.sinks.q3.link" in modules, proc.stderr[-2000:]
    assert proc.returncode == 0, (
        proc.stdout[-2000:],
        [ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:")],
    )
    bad = sorted(m for m in modules if m.startswith(FORBIDDEN))
    assert not bad, f"`headcast run --no-mirror` imported {bad}"


def test_swarm_still_gets_its_options():
    """The other side of building swarm's options lazily: `headcast swarm --help` has them all."""
    proc = subprocess.run(
        [sys.executable, "-m", "headcast.app", "swarm", "--help"],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for option in ("--q3", "--netsync", "--rooms"):
        assert option in proc.stdout, proc.stdout
