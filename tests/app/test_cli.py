"""The `headcast` command as a user runs it (a subprocess): help, errors, exit codes, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from headcast.netcode.netsync.client import PROTOCOL_RELEASES

from support import REPO, cli_env, free_port, headcast, wait_for


def assert_clean_error(r: subprocess.CompletedProcess, code: int, *needles: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


@pytest.mark.parametrize(
    "args, needle",
    [
        ((), "headcast demo"),
        (("run",), "--q3 HOST[:PORT]"),
        (("demo",), "verification summary"),
        (("replay",), "--record FILE"),
        (("probe",), "KIND"),
        (("probe", "q3"), "vr_support"),
        (("probe", "q3"), "no answer exits 3"),
        (("probe", "netsync"), "device-id"),
        (("probe", "netsync"), "room to look into"),
        (("probe", "netsync"), "detects the server's NetSync protocol"),
        (("run",), "--netsync-protocol auto|3..8"),
        (("run",), "3 styly-netsync-server 0.9.0-0.10.x"),
        (("run",), "8 0.16.0 and later, the current release"),
        (("run",), "4 a NetSync server speaks another protocol"),
        (("run",), "--netsync-transform-port PORT"),
        (("demo",), "--netsync-server VERSION"),
        (("demo",), "0.17.5, protocol 8"),
        (("doctor",), "each problem with its fix"),
    ],
)
def test_every_help_teaches(args, needle):
    r = headcast(*args, "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: headcast")
    assert needle in " ".join(r.stdout.split())  # argparse wraps lines


@pytest.mark.parametrize(
    "args, needle",
    [
        (("run", "--bogus"), "unrecognized arguments: --bogus"),
        (("run", "--turn", "spin"), "invalid choice: 'spin'"),
        (("demo", "--duration", "soon"), "invalid float value: 'soon'"),
        (("probe",), "required: KIND"),
        ((), "required: COMMAND"),
    ],
)
def test_bad_flags_are_usage_errors(args, needle):
    r = headcast(*args)
    assert_clean_error(r, 2, "--help` lists the options", needle)
    assert r.stderr.count("\n") == 1, r.stderr  # one line: the usage block is --help's


def test_bad_values_and_config_are_named():
    assert_clean_error(headcast("run", "--mock", "nope", "--no-mirror"), 2, "no such motion", "look_around")
    assert_clean_error(headcast("run", "--q3", "host:port"), 2, "--q3 'host:port': the port must be a number")
    assert_clean_error(headcast("run", "--netsync", "h:1:2:3:4"), 2, "--netsync 'h:1:2:3:4'")
    protocols = "expected auto or a NetSync protocol 3..8 (3 = styly-netsync-server 0.9-0.10"
    assert_clean_error(headcast("run", "--netsync-protocol", "9"), 2, f"--netsync-protocol '9': {protocols}")
    assert_clean_error(
        headcast("run", HEADCAST_NETSYNC_PROTOCOL="latest"),
        2,
        f"$HEADCAST_NETSYNC_PROTOCOL: netsync.protocol = 'latest': {protocols}",
    )
    assert_clean_error(
        headcast("run", "--netsync", "127.0.0.1:5555:5556:5557", "--netsync-transform-port", "6000"),
        2,
        "the transform port is given twice: 5557 in --netsync and 6000 from --netsync-transform-port",
    )
    assert_clean_error(headcast("run", "--netsync-transform-port", "70000"), 2, "netsync.transform_port = 70000")
    assert_clean_error(headcast("demo", "--netsync-server", "0.9.9"), 2, "invalid choice: '0.9.9'", "0.10.4")
    assert_clean_error(headcast("run", "--netsync", "127.0.0.1", "--send-rate", "100"), 2, "0.5..60 Hz")
    assert_clean_error(headcast("run", HEADCAST_RIG_MOVE_SPEED="fast"), 2, "$HEADCAST_RIG_MOVE_SPEED", "number")
    assert_clean_error(headcast("run", "--config", "/nonexistent.toml"), 2, "cannot read config file")
    assert_clean_error(headcast("replay", "/nonexistent.trace"), 2, "does not exist")


def test_garbage_input_and_unknown_hosts_are_one_line_errors(tmp_path):
    garbage = tmp_path / "garbage.trace"
    garbage.write_bytes(bytes(range(256)) * 4)
    assert_clean_error(headcast("replay", str(garbage), "--no-mirror"), 2, str(garbage), "not a headcast trace")
    assert_clean_error(headcast("replay", str(tmp_path), "--no-mirror"), 2, "is not a file")
    bad = tmp_path / "bad.toml"
    bad.write_text("this is [not toml\n")
    assert_clean_error(headcast("run", "--config", str(bad), "--print-config"), 2, str(bad), "not valid TOML")
    assert_clean_error(headcast("probe", "q3", "nosuchhost.invalid", "--timeout", "1"), 2, "cannot resolve host")
    # Refused before the headset session or any server is opened, not after the connect timeout.
    assert_clean_error(
        headcast("run", "--mock", "look_around", "--no-mirror", "--netsync", "nosuchhost.invalid"),
        2,
        "--netsync nosuchhost.invalid: cannot resolve host",
    )
    assert_clean_error(
        headcast("run", "--mock", "look_around", "--no-mirror", "--q3", "nosuchhost.invalid"),
        2,
        "--q3 nosuchhost.invalid",
    )
    assert_clean_error(headcast("run", "--snap-angle", "-5", "--no-mirror"), 2, "rig.snap_angle = -5")
    assert_clean_error(headcast("run", "--move-speed", "nan", "--no-mirror"), 2, "rig.move_speed = nan")
    r = headcast("demo", "--motion", "nosuch", "--no-mirror")
    assert_clean_error(r, 2, "--motion nosuch: no such motion", "look_around")
    assert "starting" not in r.stdout  # no server was started for a typo
    motion = tmp_path / "bad.motion"
    motion.write_text("rate 90\n0 /user/head bogus 1 2\n")
    # The runtime's parser names file and line; not "internal failure" from xrCreateInstance.
    assert_clean_error(
        headcast("run", "--mock", str(motion), "--no-mirror", "--duration", "1"), 2, f"{motion}:2: unknown pose channel"
    )


def test_text_summary_without_sends():
    r = headcast("run", "--mock", "look_around", "--no-mirror", "--duration", "0.5")
    assert r.returncode == 0, r.stderr
    assert "stopped: ran for 0.5 s" in r.stdout
    # nothing went on a wire: no "None ms"; plain words first, the precise term after
    assert "tracked pose to network - typically, - in the slowest 1 % (motion-to-wire median, p99)" in r.stdout


def test_print_config_shows_layers(tmp_path):
    user = tmp_path / "c.toml"
    user.write_text('[netsync]\nroom = "file"\nsend_rate = 30\n')
    r = headcast("run", "--config", str(user), "--room", "flag", "--print-config", HEADCAST_RIG_TURN="smooth")
    assert r.returncode == 0, r.stderr
    assert 'room = "flag"  # --room' in r.stdout
    assert f"send_rate = 30.0  # {user}" in r.stdout
    assert 'turn = "smooth"  # $HEADCAST_RIG_TURN' in r.stdout
    r = headcast("run", "--print-config", "--json")
    assert json.loads(r.stdout)["rig"]["snap_angle"] == 45.0


def test_no_runtime_is_a_clear_error(tmp_path):
    r = headcast("run", "--no-mirror", XR_RUNTIME_JSON=str(tmp_path / "missing.json"))
    assert_clean_error(r, 1, "OpenXR")


def test_unreachable_servers_fail_clearly(tmp_path):
    udp = free_port(socket.SOCK_DGRAM)
    r = headcast(
        "run", "--mock", "look_around", "--no-mirror", "--q3", f"127.0.0.1:{udp}", HEADCAST_RUN_CONNECT_TIMEOUT="1.5"
    )
    # nothing listens (ICMP port unreachable): said as soon as that is certain, not after the 1.5 s
    assert_clean_error(r, 3, f"no answer from 127.0.0.1:{udp} within ", "ICMP port unreachable")
    tcp = free_port()
    r = headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--netsync",
        f"127.0.0.1:{tcp}:{tcp + 1}",
        HEADCAST_RUN_CONNECT_TIMEOUT="1.5",
    )
    assert_clean_error(r, 3, "netsync: no answer from")
    assert_clean_error(
        headcast("probe", "q3", f"127.0.0.1:{udp}", "--timeout", "1"), 3, "no answer from the Quake 3 server"
    )
    assert_clean_error(
        headcast("probe", "netsync", f"127.0.0.1:{tcp}", "--timeout", "1"), 3, "no answer from the NetSync server"
    )


def test_record_then_replay(tmp_path):
    trace = tmp_path / "look.trace"
    r = headcast("run", "--mock", "look_around", "--no-mirror", "--duration", "1.5", "--record", str(trace), "--json")
    assert r.returncode == 0, r.stderr
    recorded = json.loads(r.stdout.splitlines()[-1])["frames"]
    assert trace.is_file() and recorded > 100
    r = headcast("replay", str(trace), "--no-mirror", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["frames"] == recorded and summary["stopped"].startswith("replay finished")


@pytest.mark.live
def test_probe_answers_and_ctrl_c_disconnects(q3_server, netsync_server):
    host, port = q3_server.address
    r = headcast("probe", "q3", f"{host}:{port}", "--json")
    info = json.loads(r.stdout)
    assert r.returncode == 0 and info["map"] == "oa_dm1" and info["vr_support"] is False
    a = netsync_server.address
    r = headcast("probe", "netsync", f"{a.host}:{a.dealer_port}:{a.pub_port}", "--json")
    info = json.loads(r.stdout)
    assert r.returncode == 0 and info["room"] == "default_room"
    assert (info["protocol"], info["server_version"]) == (8, a.version) == (8, "0.17.5")

    def players() -> list[str]:
        return [p.name for p in q3_server.getstatus().players]

    # ioq3 answers 10 getinfo/getstatus/getchallenge per source address, then one a second, and
    # every query from this machine shares that bucket with the run's own getchallenge: polling
    # getstatus while the run joins (as this test once did, 3 a second) starves it whenever the
    # join is slow (a loaded machine, after the other app tests). The server's own log says when
    # our player is in game and when it left, at no cost; getstatus confirms each once.
    mark = q3_server.log_offset()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--q3",
            f"{host}:{port}",
            "--name",
            "ctrlc",
            "--netsync",
            f"{a.host}:{a.dealer_port}:{a.pub_port}",
        ],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        num = q3_server.wait_for_log(r"^ClientUserinfoChanged: (\d+) n\\ctrlc\\", 20, mark).group(1)
        q3_server.wait_for_log(rf"^ClientBegin: {num}$", 20, mark)
        assert "ctrlc" in players()
        # ... and our side knows it (the server's first snapshot with us in game came back): a run
        # stopped before any server let it in is a failure, exit 3
        for line in proc.stdout:
            msg = json.loads(line)
            if msg["type"] == "status" and msg["sinks"][0]["state"] == "in game":
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["stopped"] == "interrupted (Ctrl-C)"
    # The server saw a disconnect, not a timeout (that takes sv_timeout, 200 s): gone at once.
    q3_server.wait_for_log(rf"^ClientDisconnect: {num}$", 3, mark)
    assert "ctrlc" not in players()


def _netsync_address(server) -> str:
    a = server.address
    return f"{a.host}:{a.dealer_port}:{a.pub_port}"  # the transform port: control + 2 by default


@pytest.mark.live
def test_run_detects_each_servers_protocol_and_joins(netsync_release):
    """`--netsync HOST` with the default protocol (auto) joins the current release (8) and 0.10.4 (3)."""
    a = netsync_release.address
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headcast.app",
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--duration",
            "30",
            "--netsync",
            _netsync_address(netsync_release),
            "--room",
            "cli-auto",
        ],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    joined = None
    try:
        deadline = time.monotonic() + 20
        for line in proc.stdout:  # a status line every 0.5 s; --duration ends the run regardless
            msg = json.loads(line)
            if msg["type"] == "status":
                ns = next(s for s in msg["sinks"] if s["name"] == "netsync")
                # connected and sending: the frame loop sends before it reads the sockets, so the
                # status line can say "connected" before the first pose has gone out
                if ns["state"] == "connected" and ns["send_hz"] > 0:
                    joined = ns
                    break
            assert time.monotonic() < deadline, "not connected and sending within 20 s"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert joined is not None, err[-2000:]
    assert f"protocol {a.protocol}, server {a.version}" in joined["detail"], joined
    assert proc.returncode == 0, err[-2000:]
    ns = next(s for s in json.loads(out.splitlines()[-1])["sinks"] if s["name"] == "netsync")
    # the summary comes after the disconnect: it says so, and when we joined and what we sent
    assert ns["state"] == "disconnected" and ns["drops"] == {}
    assert ns["joined_at"] is not None and ns["sent"] > 0 and ns["outcome"].startswith("joined at ")
    assert ns["packed"].startswith(f"body {44 if a.protocol == 3 else 46} B")


@pytest.mark.live
def test_a_forced_wrong_protocol_ends_the_run_naming_the_servers(netsync_release):
    """--netsync-protocol 3 against the current release (8), and 8 against 0.10.4: exit 4 with
    the server's protocol and version, at once — never "no answer … firewall?"."""
    a = netsync_release.address
    wrong = 3 if a.protocol == 8 else 8
    t0 = time.monotonic()
    r = headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--netsync",
        _netsync_address(netsync_release),
        "--room",
        "cli-wrong",
        "--netsync-protocol",
        str(wrong),
        HEADCAST_RUN_CONNECT_TIMEOUT="40",
    )
    took = time.monotonic() - t0
    assert_clean_error(r, 4)
    # The server is named by its version when its device-ID mapping came first, else by the
    # releases that speak its protocol (its room broadcast came first): the client core's choice.
    server = f"(styly-netsync-server {a.version}|styly-netsync-server {PROTOCOL_RELEASES[a.protocol]})"
    sentence = (
        rf"server \({server}\) speaks NetSync protocol {a.protocol}; headcast spoke {wrong}: "
        rf"use --netsync-protocol auto \(or {a.protocol}\)"
    )
    assert re.fullmatch(rf"headcast: error: netsync: {sentence}\n", r.stderr), r.stderr
    assert "no answer" not in r.stderr and "firewall" not in r.stderr
    assert took < 20, took  # named when known, not after the 40 s connect timeout
    # the console said so as the state changed, before the error line
    assert re.search(rf"netsync: protocol mismatch — {sentence}", r.stdout), r.stdout


@pytest.mark.live
def test_probe_netsync_reports_protocol_version_and_members(netsync_release):
    """The probe joins as a stealth client detecting the protocol; members as the room broadcasts them."""
    from headcast.netcode.netsync.model import PoseFrame, Transform
    from headcast.netcode.netsync.transport import NetSyncClient

    a = netsync_release.address
    room = "cli-probe"
    poser = NetSyncClient(a.host, a.dealer_port, a.pub_port, room, "cli-poser", protocol=a.protocol)
    lurker = NetSyncClient(a.host, a.dealer_port, a.pub_port, room, "cli-lurker", protocol=a.protocol, stealth=True)
    pose = PoseFrame.build(Transform((0.0, 1.6, 0.0)))

    def pump() -> bool:
        now = time.monotonic()
        for c in (poser, lurker):
            c.send_pose(now, pose)
            c.poll(now)
        return poser.client_no is not None and lurker.client_no is not None

    def probe(*extra: str) -> subprocess.CompletedProcess:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headcast.app",
                "probe",
                "netsync",
                _netsync_address(netsync_release),
                "--room",
                room,
                *extra,
            ],
            cwd=REPO,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # both members stay alive while the probe looks (its own --timeout bounds it)
            wait_for(lambda: not pump() or proc.poll() is not None, 30, "the probe to finish")
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    try:
        wait_for(pump, 15, "both members to be mapped")
        r = probe("--json")
        text = probe()
    finally:
        poser.close()
        lurker.close()
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["protocol"], info["server_version"], info["room"]) == (a.protocol, a.version, room)
    members = {m["device_id"]: m for m in info["members"]}
    assert set(members) == {"cli-poser", "cli-lurker"}, info
    assert members["cli-poser"]["stealth"] is False and members["cli-poser"]["pose"] is True
    assert members["cli-lurker"]["stealth"] is True and members["cli-lurker"]["pose"] is False
    assert info["broadcasting"] == [poser.client_no]
    assert text.returncode == 0, text.stderr
    # each probe learns the protocol from whichever answer comes first (broadcast or mapping)
    assert re.search(
        rf"NetSync protocol {a.protocol} \(from the (room broadcast|device-ID mapping)\), "
        rf"styly-netsync-server {re.escape(a.version)}; room '{room}': 2 other member\(s\), "
        r"1 broadcasting a pose",
        text.stdout,
    ), text.stdout
    assert f"#{poser.client_no} cli-poser — pose broadcast" in text.stdout
    assert f"#{lurker.client_no} cli-lurker stealth — no pose" in text.stdout


@pytest.mark.live
def test_demo_runs_an_older_netsync_release_when_asked():
    r = headcast(
        "demo", "--netsync-server", "0.10.4", "--no-q3", "--duration", "6", "--json", "--no-mirror", timeout=120
    )
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    progress = " | ".join(line["message"] for line in lines if line["type"] == "progress")
    assert "starting a local NetSync server (styly-netsync-server 0.10.4, protocol 3)" in progress
    verification = lines[-1]
    assert verification["ok"] is True, verification
    checks = {c["name"]: c for c in verification["checks"]}
    assert {"netsync protocol", "netsync relay", "netsync head", "netsync physical"} <= checks.keys()
    assert checks["netsync protocol"]["text"].startswith(
        "spoke protocol 3 (auto-detected), the local styly-netsync-server 0.10.4 speaks 3"
    )
    assert "0 differ from our bytes decoded in protocol 3" in checks["netsync relay"]["text"]


@pytest.mark.live
def test_demo_runs_everything_and_verifies():
    """The README's main job, bounded: its own servers, the mock runtime, the verification."""
    r = headcast("demo", "--duration", "16", "--json", "--no-mirror", timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert {"progress", "status", "summary", "verification"} <= {line["type"] for line in lines}
    verification = lines[-1]
    assert verification["ok"] is True
    checks = {c["name"]: c for c in verification["checks"]}
    assert {
        "q3 server view",
        "netsync relay",
        "netsync head",
        "netsync physical",
        "q3 tracking loss",
        "netsync tracking loss",
    } <= checks.keys()
    assert "45°, 90°" in checks["netsync physical"]["text"]  # the tour's snap turns came back
    # The demo's Quake 3 server is vanilla: head bits are said to be not sent — neither a pass nor a failure
    head = checks["q3 head bits"]
    assert head["ok"] is None and head["status"] == "NOT SENT" and "vr_support" in head["text"], head
    assert "MODEL" in checks["q3 head quantisation"]["text"]
    sources = {f["view"]: f["source"] for f in verification["far_sides"]}
    assert sources == {"q3": "relayed", "q3.head": "model", "netsync": "relayed", "sauer": "relayed"}
    # the current release by default, its protocol detected
    progress = " | ".join(line["message"] for line in lines if line["type"] == "progress")
    assert "starting a local NetSync server (styly-netsync-server 0.17.5, protocol 8)" in progress
    assert "Quake 3 head bits are NOT SENT in this demo: its server is vanilla ioq3ded" in progress
    assert checks["netsync protocol"]["text"].startswith(
        "spoke protocol 8 (auto-detected), the local styly-netsync-server 0.17.5 speaks 8"
    )


def test_demo_without_runtime_or_servers_still_shows_the_protocols():
    r = headcast(
        "demo", "--synthetic", "--no-q3", "--no-netsync", "--no-sauer", "--duration", "2", "--json", timeout=60
    )
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    summary = next(line for line in lines if line["type"] == "summary")
    assert summary["frames"] >= 150
    packed = {s["name"]: s["packed"] for s in summary["sinks"]}
    # offline, the far side is modelled in the latest protocol (8: the Δ carries dy, 46-byte body)
    assert packed["q3"].startswith("buttons 0x") and packed["netsync"].startswith("body 46 B")
    assert packed["sauer"].startswith("N_POS ")
    assert lines[-1]["type"] == "verification" and lines[-1]["ok"] is True


@pytest.mark.live
def test_pure_server_needs_pk3_and_joins_with_them():
    """OpenArena's own server runs sv_pure 1: without --pk3 a clear error, with them in game."""
    from headcast.netcode.q3.localserver import LocalQ3Server, pk3_files

    with LocalQ3Server(kind="openarena") as server:
        host, port = server.address
        r = headcast("run", "--mock", "look_around", "--no-mirror", "--q3", f"{host}:{port}")
        assert_clean_error(r, 1, "pure server (sv_pure 1)", "--pk3")
        r = headcast(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--duration",
            "3",
            "--json",
            "--q3",
            f"{host}:{port}",
            "--pk3",
            *map(str, pk3_files()),
        )
        assert r.returncode == 0, r.stderr[-2000:]
        states = [s["sinks"][0]["state"] for s in map(json.loads, r.stdout.splitlines()) if s["type"] == "status"]
        assert "in game" in states


def test_doctor_names_each_problem_with_its_fix(tmp_path):
    r = headcast("doctor", XR_RUNTIME_JSON=str(tmp_path / "missing.json"))
    assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout
    assert f"[!!] openxr   XR_RUNTIME_JSON points at {tmp_path / 'missing.json'}" in r.stdout
    assert "fix: " in r.stdout.split("[!!] openxr", 1)[1].splitlines()[1]
    # no display is no problem (a headless session needs none): only the mirror is off
    assert "[ok] display  no display (DISPLAY is not set): no mirror window" in r.stdout
    assert "1 problem(s)" in r.stdout


@pytest.mark.display
def test_doctor_all_good_with_the_mock_runtime_and_a_display(mock_manifest, xvfb_display):
    r = headcast(
        "doctor", "--json", XR_RUNTIME_JSON=str(mock_manifest), DISPLAY=xvfb_display, PYGLFW_LIBRARY_VARIANT="x11"
    )
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["ok"] is True, report
    found = {f["area"]: f["what"] for f in report["findings"]}
    assert "MockXR" in " ".join(f["what"] for f in report["findings"] if f["area"] == "openxr")
    assert found["display"].startswith("OpenGL")
    native = [f["what"] for f in report["findings"] if f["area"] == "native"]
    assert native == [
        "XR frame helper (xr/_fastframe.c): in use",
        "Quake 3 codec extension (netcode/q3/_q3native.c): in use",
    ], native


def test_doctor_says_when_a_native_helper_is_switched_off_or_missing(tmp_path):
    from headcast.xr import fastframe

    r = headcast("doctor", "--json", HEADCAST_PURE_PYTHON="1")
    native = [f for f in json.loads(r.stdout)["findings"] if f["area"] == "native"]
    assert native[1]["ok"] and "disabled by HEADCAST_PURE_PYTHON=1" in native[1]["what"], native
    # A helper built from an older source is not loaded, and doctor says how to rebuild it.
    library = fastframe.library_path()
    built = library.stat().st_mtime
    try:
        os.utime(library, (built - 3600 * 24 * 365, built - 3600 * 24 * 365))
        r = headcast("doctor", "--json")
        native = [f for f in json.loads(r.stdout)["findings"] if f["area"] == "native"]
        assert not native[0]["ok"] and "older than its source" in native[0]["what"], native
        assert "scripts/setup.sh" in native[0]["fix"] and r.returncode == 1
    finally:
        os.utime(library, (built, built))
