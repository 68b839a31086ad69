"""Suite-wide fixtures; plain helpers live in tests/support.py."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest
from tiers import ALONE, HEAVY, LIVE, SERIAL

import support
from support import ARTIFACTS

# A suite started under nohup, or in the background by a non-interactive shell (`cmd &` ignores
# SIGINT there), passes the ignored signal on to every headcast it runs, which then keeps it
# ignored by design (docs/guide/run.md#run: "under nohup, SIGHUP stays ignored"), and the tests of Ctrl-C and of a
# closed terminal would test that instead. The suite runs as from a terminal; the nohup behaviour
# has its own test, which ignores SIGHUP itself.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The local servers of netcode/*/localserver.py choose their ports (when not given one) with the
# suite's own chooser: per pytest-xdist worker, below the ephemeral range (support.free_port).
# Only the choice changes; the servers start, bind and answer as they do for a user.
def _patch_port_choice() -> None:
    from headcast.netcode.netsync import localserver as netsync_ls
    from headcast.netcode.q3 import localserver as q3_ls
    from headcast.netcode.sauer import localserver as sauer_ls

    netsync_ls.free_port = lambda: support.free_port()
    # the control port with control + 2 (the default transform port) free as well
    netsync_ls.free_control_port = lambda tries=100: support.free_port(span=netsync_ls.TRANSFORM_PORT_OFFSET + 1)
    q3_ls.free_udp_port = lambda: support.free_port(socket.SOCK_DGRAM)
    sauer_ls.free_port_pair = lambda: support.free_port(socket.SOCK_DGRAM, span=2)  # game port, info port


_patch_port_choice()


def _fast_tier_guard() -> None:
    """In the fast tier a test that starts a local server fails saying how to mark it, so the tier
    stays free of live servers as tests are added."""
    from headcast.netcode.netsync import localserver as netsync_ls
    from headcast.netcode.q3 import localserver as q3_ls
    from headcast.netcode.sauer import localserver as sauer_ls

    def refuse(self, *args, **kwargs):
        pytest.fail(
            f"{type(self).__name__}.start() in the fast tier (--tier fast): this test "
            "starts a live server; mark it live (or list it in LIVE in tests/conftest.py)",
            pytrace=False,
        )

    for cls in (netsync_ls.LocalNetSyncServer, q3_ls.LocalQ3Server, sauer_ls.LocalSauerServer):
        cls.start = refuse


# --- selection: the tiers and phases of scripts/test.sh ---------------------------------------
#
# --phase parallel runs every test but the `serial` ones, --phase serial those but the ALONE ones
# of tests/tiers.py, --phase alone those (test.sh runs the three in turn). --tier fast runs only
# what needs no live server, no display, no real-time measurement and no long run (the markers
# in FAST_EXCLUDES). By default (plain pytest) everything runs, one test at a time.
FAST_EXCLUDES = ("live", "slow", "display", "fuzz", "monado", "platform_sim", "heavy", "serial")


def pytest_addoption(parser) -> None:
    group = parser.getgroup("headcast", "headcast's tiers and phases (scripts/test.sh --help)")
    group.addoption(
        "--phase",
        choices=("all", "parallel", "serial", "alone"),
        default="all",
        help="parallel: all but the `serial` tests; serial: those but the `alone` ones; alone: "
        "those (tests/tiers.py; default: all)",
    )
    group.addoption(
        "--tier",
        choices=("all", "fast"),
        default="all",
        help="fast: leave out the tests marked " + ", ".join(FAST_EXCLUDES) + " (default: all)",
    )


def pytest_configure(config) -> None:
    if config.getoption("tier") == "fast":
        _fast_tier_guard()


# Fixtures that start a real server, a runtime or a display: a test using one is `live`/`display`.
LIVE_FIXTURES = {
    "q3_server",
    "oa_server",
    "ioq3_server",
    "netsync_server",
    "netsync_release",
    "netsync_edge",
    "sauer_server",
    "monado",
    "monado_main",
}
DISPLAY_FIXTURES = {"xvfb_display"}


def _matches(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & LIVE_FIXTURES or _matches(item.nodeid, LIVE):
            item.add_marker(pytest.mark.live)
        if names & DISPLAY_FIXTURES:
            item.add_marker(pytest.mark.display)
        if _matches(item.nodeid, SERIAL) or _matches(item.nodeid, ALONE):
            item.add_marker(pytest.mark.serial)
        if _matches(item.nodeid, HEAVY):
            item.add_marker(pytest.mark.heavy)
    phase, tier = config.getoption("phase"), config.getoption("tier")

    def keep(item) -> bool:
        serial = item.get_closest_marker("serial") is not None
        alone = _matches(item.nodeid, ALONE)
        if {"parallel": serial, "serial": not serial or alone, "alone": not alone}.get(phase, False):
            return False
        return not (tier == "fast" and any(item.get_closest_marker(m) for m in FAST_EXCLUDES))

    kept = [item for item in items if keep(item)]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if not keep(item)])
        items[:] = kept
    if phase == "parallel":
        # The files with the most long tests first (pytest-xdist --dist loadscope hands out whole
        # files in this order), so that no long file starts last and runs on alone.
        weight: dict[str, int] = {}
        for item in items:
            long = any(item.get_closest_marker(m) for m in ("heavy", "live", "slow", "display", "platform_sim"))
            weight[item.nodeid.split("::")[0]] = weight.get(item.nodeid.split("::")[0], 0) + long
        items.sort(key=lambda item: -weight[item.nodeid.split("::")[0]])


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def q3_server():
    """A real ioquake3 dedicated server (Debian's openarena-server) on 127.0.0.1, not pure."""
    from headcast.netcode.q3.localserver import LocalQ3Server

    with LocalQ3Server(kind="ioq3", pure=False) as server:
        yield server


@pytest.fixture(scope="session")
def xvfb_display():
    """Start a private Xvfb on a free display number; yields the DISPLAY string (":N").

    The suite never uses an existing display, so it behaves the same on a desktop and in CI.
    """
    import shutil
    import subprocess

    from support import wait_for

    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/setup.sh (apt package xvfb)")
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        line = proc.stdout.readline().decode().strip()  # Xvfb writes the display number when ready
        if not line.isdigit():
            pytest.fail(f"Xvfb did not start (said {line!r})")
        display = f":{line}"
        wait_for(lambda: os.path.exists(f"/tmp/.X11-unix/X{line}"), 10, "the Xvfb socket")
        yield display
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
