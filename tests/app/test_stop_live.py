"""Every way a real `headcast` process is stopped, against live local servers: SIGINT, SIGTERM
and SIGHUP stop a run cleanly (the Q3 server sees the disconnect at once, the summary is printed,
the recording is complete and the only file); `kill -9` leaves a trace readable to its last frame
that `headcast replay` plays, saying where it ends; `headcast demo` under SIGTERM leaves none of
its servers behind, and a second signal during its cleanup exits at once, killing them by PID."""

from __future__ import annotations

import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from headcast.xr.trace import is_complete, read_trace

from support import REPO, cli_env


class Headcast:
    """A `headcast` subprocess whose stdout and stderr lines are read as they come (threads), so a
    test waits for a line with a bound instead of blocking on a pipe."""

    def __init__(self, *args: str, extra_env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "headcast.app", *args],
            cwd=REPO,
            env=cli_env(**(extra_env or {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._lines: queue.Queue[tuple[str, str]] = queue.Queue()
        self._readers = [
            threading.Thread(target=self._read, args=(s, n, b), daemon=True)
            for s, n, b in ((self.proc.stdout, "out", self.out), (self.proc.stderr, "err", self.err))
        ]
        for t in self._readers:
            t.start()

    def _read(self, stream, name: str, into: list[str]) -> None:
        for line in stream:
            into.append(line)
            self._lines.put((name, line))

    def wait_line(self, pattern, timeout: float, stream: str = "out"):
        """The first line (of stdout or stderr) matching `pattern`, a regex (its match) or a
        predicate; waits for it at most `timeout` s."""
        match = pattern if callable(pattern) else re.compile(pattern).search
        for line in self.out if stream == "out" else self.err:
            if m := match(line):
                return m
        deadline = time.monotonic() + timeout
        while True:
            try:
                name, line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(
                    f"no {stream} line matching {pattern!r} within {timeout} s; stderr:\n{''.join(self.err)[-3000:]}"
                )
            if name == stream and (m := match(line)):
                return m

    def wait_status(self, sink: str, state: str, timeout: float) -> None:
        """Until a JSON status line says `sink` is in `state` (our own side knows, not just the server)."""

        def says(line: str) -> bool:
            try:
                msg = json.loads(line)
            except ValueError:
                return False
            return msg.get("type") == "status" and any(
                s.get("name") == sink and s.get("state") == state for s in msg.get("sinks", [])
            )

        self.wait_line(says, timeout)

    def finish(self, timeout: float) -> float:
        """Wait for the exit (bounded); the seconds it took."""
        t0 = time.monotonic()
        self.proc.wait(timeout=timeout)
        for t in self._readers:
            t.join(timeout=5)
        return time.monotonic() - t0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def json_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.out if line.startswith("{")]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent's wait() counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def wait_gone(pids, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while left := [p for p in pids if alive(p)]:
        assert time.monotonic() < deadline, f"still running after {timeout} s: {left}"
        time.sleep(0.02)


def netsync_address(server) -> str:
    a = server.address
    return f"{a.host}:{a.dealer_port}:{a.pub_port}"


REASONS = {
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGTERM: "stopped by SIGTERM",
    signal.SIGHUP: "stopped by SIGHUP (terminal closed)",
}


@pytest.mark.live
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_each_signal_stops_a_live_run_cleanly(q3_server, netsync_server, tmp_path, sig):
    name = f"stop{sig.name[3:].lower()}"
    trace = tmp_path / "run.trace"
    host, port = q3_server.address
    mark = q3_server.log_offset()
    run = Headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--json",
        "--q3",
        f"{host}:{port}",
        "--name",
        name,
        "--netsync",
        netsync_address(netsync_server),
        "--room",
        name,
        "--record",
        str(trace),
    )
    try:
        num = q3_server.wait_for_log(rf"^ClientUserinfoChanged: (\d+) n\\{name}\\", 20, mark).group(1)
        q3_server.wait_for_log(rf"^ClientBegin: {num}$", 20, mark)
        # ... and our side knows it (a run stopped before any server let it in is a failure)
        run.wait_status("q3", "in game", 10)
        run.wait_status("netsync", "connected", 10)
        run.proc.send_signal(sig)
        took = run.finish(timeout=20)
    finally:
        run.kill()
    err = "".join(run.err)
    assert run.proc.returncode == 0, err[-3000:]
    assert f"headcast: {sig.name}: stopping cleanly — disconnecting, then the summary" in err
    assert "Traceback" not in err
    # The server saw a disconnect, not a timeout (sv_timeout: 200 s of a ghost at ping 999).
    q3_server.wait_for_log(rf"^ClientDisconnect: {num}$", 3, mark)
    summary = run.json_lines()[-1]
    assert summary["type"] == "summary" and summary["stopped"] == REASONS[sig]
    assert {s["name"] for s in summary["sinks"]} >= {"q3", "netsync"}
    # The recording: complete (end record), every frame of the run, and the only file.
    assert is_complete(trace) and [p.name for p in tmp_path.iterdir()] == ["run.trace"]
    frames = read_trace(trace).frames
    assert len(frames) == summary["frames"] > 0
    assert took < 5, f"{took:.1f} s from the signal to the exit"


@pytest.mark.display
def test_sigterm_closes_the_mirror_window_and_still_summarises(xvfb_display):
    run = Headcast(
        "run",
        "--mock",
        "look_around",
        "--mirror",
        "--json",
        extra_env={"DISPLAY": xvfb_display, "PYGLFW_LIBRARY_VARIANT": "x11"},
    )
    try:
        run.wait_line(r'"type": ?"status"', 30)  # the window is open and drawing
        run.proc.send_signal(signal.SIGTERM)
        took = run.finish(timeout=20)
    finally:
        run.kill()
    err = "".join(run.err)
    assert run.proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert run.json_lines()[-1]["stopped"] == "stopped by SIGTERM" and took < 5


@pytest.mark.live
def test_kill_9_leaves_a_trace_replay_plays_to_its_last_frame(q3_server, tmp_path):
    trace = tmp_path / "killed.trace"
    host, port = q3_server.address
    mark = q3_server.log_offset()
    run = Headcast(
        "run",
        "--mock",
        "look_around",
        "--no-mirror",
        "--json",
        "--q3",
        f"{host}:{port}",
        "--name",
        "stopkill",
        "--record",
        str(trace),
    )
    try:
        q3_server.wait_for_log(r"^ClientUserinfoChanged: \d+ n\\stopkill\\", 20, mark)
        deadline = time.monotonic() + 20
        while not (trace.exists() and trace.read_bytes().count(b"\n") > 100):  # header + 100 frames
            assert time.monotonic() < deadline and run.proc.poll() is None, "no 100 frames recorded in 20 s"
            time.sleep(0.02)
        run.proc.kill()
        run.finish(timeout=10)
    finally:
        run.kill()
    assert run.proc.returncode == -signal.SIGKILL
    back = read_trace(trace, partial=True)
    n = len(back.frames)
    assert n >= 100 and back.ends_early.frames == n and not is_complete(trace)
    assert [p.name for p in tmp_path.iterdir()] == ["killed.trace"]

    replay = Headcast("replay", str(trace), "--no-mirror", "--json")
    try:
        replay.finish(timeout=60)
    finally:
        replay.kill()
    assert replay.proc.returncode == 0, "".join(replay.err)[-3000:]
    lines = replay.json_lines()
    progress = " | ".join(m["message"] for m in lines if m["type"] == "progress")
    assert f"{trace} has no end record (the recording was cut short): playing the frames it holds" in progress
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["frames"] == n
    assert summary["stopped"] == (
        f"replay finished: {trace}: trace ends early at frame {n} (no end record: the "
        f"recording was cut short); played the {n} frames it holds"
    )


def _demo_servers(demo: Headcast) -> dict[str, int]:
    pids = {
        "netsync": int(demo.wait_line(r"NetSync server ready .*\(pid (\d+)\)", 60).group(1)),
        "q3": int(demo.wait_line(r"Quake 3 server ready .*\(pid (\d+)\)", 30).group(1)),
    }
    demo.wait_line(r'"type": ?"status"', 30)  # the loop runs
    assert all(alive(p) for p in pids.values())
    return pids


@pytest.mark.live
def test_demo_under_sigterm_leaves_none_of_its_servers_behind():
    demo = Headcast("demo", "--no-mirror", "--json", "--duration", "60")
    try:
        pids = _demo_servers(demo)
        ours = descendants(demo.proc.pid)
        assert set(pids.values()) <= ours
        demo.proc.send_signal(signal.SIGTERM)
        took = demo.finish(timeout=30)
    finally:
        demo.kill()
    err = "".join(demo.err)
    assert "headcast: SIGTERM: stopping cleanly" in err and "Traceback" not in err
    assert any(m["type"] == "summary" and m["stopped"] == "stopped by SIGTERM" for m in demo.json_lines())
    wait_gone(ours, 5)  # every process it started: ioq3ded, the NetSync server (and anything under them)
    assert took < 15, f"{took:.1f} s to stop"


@pytest.mark.live
def test_a_signal_while_the_demo_starts_its_servers_stops_them():
    demo = Headcast("demo", "--no-mirror", "--json", "--duration", "60")
    try:
        demo.wait_line(r"starting a local NetSync server", 60)
        deadline = time.monotonic() + 30
        while not (ours := descendants(demo.proc.pid)):  # its server process exists
            assert time.monotonic() < deadline and demo.proc.poll() is None, "no server process in 30 s"
            time.sleep(0.01)
        demo.proc.send_signal(signal.SIGTERM)
        demo.finish(timeout=30)
    finally:
        demo.kill()
    err = "".join(demo.err)
    assert demo.proc.returncode == 143, err[-3000:]
    assert err.endswith(
        "headcast: SIGTERM: stopping before the run started, closing what was opened (a second "
        "SIGTERM or Ctrl-C exits at once)\nheadcast: SIGTERM: stopped before the run started\n"
    ), err
    wait_gone(ours, 5)


@pytest.mark.live
def test_a_second_signal_during_the_demos_cleanup_exits_at_once_killing_its_servers():
    """The NetSync server is frozen (SIGSTOP), so stopping it would take the whole 10 s bound:
    the second signal must not wait for that."""
    demo = Headcast("demo", "--no-mirror", "--json", "--duration", "60")
    try:
        pids = _demo_servers(demo)
        os.kill(pids["netsync"], signal.SIGSTOP)
        demo.proc.send_signal(signal.SIGTERM)
        demo.wait_line(r"SIGTERM: stopping cleanly", 10, stream="err")
        demo.proc.send_signal(signal.SIGINT)
        took = demo.finish(timeout=10)
    finally:
        demo.kill()
        for pid in pids.values():  # never leave a frozen server behind, whatever failed
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    err = "".join(demo.err)
    assert demo.proc.returncode == 130 and took < 3, (demo.proc.returncode, took, err[-2000:])
    assert "headcast: SIGINT again: exiting at once without cleanup" in err
    assert re.search(rf"killed the local servers headcast started \(pid [\d, ]*\b{pids['netsync']}\b", err), err
    wait_gone(pids.values(), 5)


@pytest.mark.live
def test_a_full_disk_ends_the_recording_not_the_run(q3_server, tmp_path):
    """--record onto a 64 kB tmpfs (about 180 frames): one line says so, the run goes on to its end,
    the trace holds every whole frame written and is the only file; the summary says how many
    frames it kept of how many and the run exits 1 (issue 25 item 5)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (not root?); tests/app/test_stop.py covers the loop's side")
    try:
        trace = mnt / "run.trace"
        host, port = q3_server.address
        run = Headcast(
            "run",
            "--mock",
            "look_around",
            "--no-mirror",
            "--json",
            "--duration",
            "4",
            "--q3",
            f"{host}:{port}",
            "--name",
            "stopfull",
            "--record",
            str(trace),
        )
        try:
            run.finish(timeout=30)
        finally:
            run.kill()
        err = "".join(run.err)
        assert run.proc.returncode == 1 and "Traceback" not in err, err[-3000:]
        m = re.fullmatch(
            rf"headcast: recording stopped at frame (\d+): No space left on device; {trace} keeps the "
            rf"\1 frames written \(replay plays them: the trace ends early\); the run goes on without "
            rf"recording\nheadcast: error: recording ended early: \1 of \d+ frames kept, No space left "
            rf"on device \({trace} plays up to there: the trace ends early at frame \1\)\n",
            err,
        )
        assert m, err
        n = int(m.group(1))
        summary = run.json_lines()[-1]
        assert summary["type"] == "summary" and summary["frames"] > n > 100 and summary["exit_code"] == 1
        assert summary["recording"] == {
            "path": str(trace),
            "frames_kept": n,
            "frames_run": summary["frames"],
            "ended_early": "No space left on device",
        }
        back = read_trace(trace, partial=True)
        assert len(back.frames) == n and back.ends_early.why.startswith("no end record")
        assert [p.name for p in mnt.iterdir()] == ["run.trace"]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_record_naming_a_folder_is_refused_before_anything_opens(tmp_path):
    run = Headcast("run", "--mock", "look_around", "--no-mirror", "--record", str(tmp_path))
    try:
        run.finish(timeout=30)
    finally:
        run.kill()
    assert run.proc.returncode == 2
    assert "".join(run.err) == (
        f"headcast: error: --record {tmp_path}: is a folder; name a file in it, e.g. {tmp_path / 'headcast.trace'}\n"
    )
    assert run.out == [] and list(tmp_path.iterdir()) == []  # no headset session was opened


@pytest.mark.live
def test_a_closed_terminal_stops_the_run_cleanly(q3_server, tmp_path):
    """The real SIGHUP: the run's terminal (a pty) is closed under it. The server sees the
    disconnect, the recording is complete, and stdout failing (EIO: no terminal any more) is no
    failure: exit 0, no traceback."""
    import pty

    trace, errfile = tmp_path / "hup.trace", tmp_path / "stderr.txt"
    host, port = q3_server.address
    mark = q3_server.log_offset()
    pid, fd = pty.fork()
    if pid == 0:  # the child: its own session on the pty (stderr to a file, to be read after)
        try:
            os.chdir(REPO)
            err = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(err, 2)
            os.execve(
                sys.executable,
                [
                    sys.executable,
                    "-m",
                    "headcast.app",
                    "run",
                    "--mock",
                    "look_around",
                    "--no-mirror",
                    "--q3",
                    f"{host}:{port}",
                    "--name",
                    "stophangup",
                    "--record",
                    str(trace),
                ],
                cli_env(),
            )
        finally:
            os._exit(127)
    try:
        # Read the terminal as it goes (a full pty would block the run), until our side says in game.
        shown = b""
        deadline = time.monotonic() + 30
        while b"in game" not in shown:
            assert time.monotonic() < deadline, shown[-2000:]
            if select.select([fd], [], [], 0.1)[0]:
                shown += os.read(fd, 65536)
        num = q3_server.wait_for_log(r"^ClientUserinfoChanged: (\d+) n\\stophangup\\", 5, mark).group(1)
    finally:
        os.close(fd)  # the terminal goes away: the kernel hangs up the child's session
    t0 = time.monotonic()
    deadline = t0 + 20
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the run did not end within 20 s of its terminal closing")
        time.sleep(0.02)
    took = time.monotonic() - t0
    err = errfile.read_text()
    assert os.waitstatus_to_exitcode(done[1]) == 0 and "Traceback" not in err, err[-3000:]
    assert "headcast: SIGHUP: stopping cleanly" in err and took < 5
    q3_server.wait_for_log(rf"^ClientDisconnect: {num}$", 3, mark)
    assert is_complete(trace) and len(read_trace(trace).frames) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hup.trace", "stderr.txt"]
