"""app/run/stop.py and the frame loop's side of it, in this process: each phase's answer to a stop
signal, handlers restored, a recording that fails (disk full) ending the recording and not the
run. The real `headcast` processes under each signal: test_stop_live.py."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from headcast.app.run import stop
from headcast.app.run.loop import FrameLoop, SourceEnded
from headcast.app.run.rig import Rig
from headcast.app.run.synthetic import SyntheticSource

from support import REPO


class Finite:
    def __init__(self, n, on_frame=None):
        self.src, self.n, self.on_frame, self.closed, self.served = SyntheticSource(paced=False), n, on_frame, False, 0

    def next_frame(self):
        if self.n == 0:
            raise SourceEnded("no more frames")
        self.n -= 1
        self.served += 1
        if self.on_frame is not None:
            self.on_frame(self.served)
        return self.src.next_frame()

    def close(self):
        self.closed = True


class Sink:
    name, poll, observe = "s", None, None

    def __init__(self):
        self.sent, self.closed = 0, False

    def send(self, state, frame, now):
        self.sent += 1

    def close(self):
        self.closed = True


def test_a_signal_before_the_run_raises_interrupted_naming_it():
    with stop.handled():
        with pytest.raises(stop.Interrupted) as e:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises at once; never reached
    assert e.value.signum == signal.SIGTERM and e.value.exit_code == 143
    assert str(e.value) == "SIGTERM: stopped before the run started"
    assert isinstance(e.value, KeyboardInterrupt)  # every `except KeyboardInterrupt` cleanup applies
    assert stop.state.signum is None and not stop.state.installed


@pytest.mark.parametrize(
    "sig, reason",
    [
        (signal.SIGINT, "interrupted (Ctrl-C)"),
        (signal.SIGTERM, "stopped by SIGTERM"),
        (signal.SIGHUP, "stopped by SIGHUP (terminal closed)"),
    ],
)
def test_a_signal_while_running_ends_the_loop_at_the_next_frame(sig, reason, capfd):
    sink = Sink()
    src = Finite(1000, on_frame=lambda n: n == 5 and os.kill(os.getpid(), sig))
    with stop.handled():
        loop = FrameLoop(src, Rig(), [sink])
        assert loop.run() == reason
        assert stop.state.phase == "stopping"
    # the frame that was under way when the signal came was finished (sent), none after it
    assert src.served == 5 and sink.sent == 5 and sink.closed and src.closed
    assert f"headcast: {signal.Signals(sig).name}: stopping cleanly" in capfd.readouterr().err


def test_handlers_are_restored_and_an_ignored_sighup_stays_ignored():
    before = {s: signal.getsignal(s) for s in stop.SIGNALS}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with stop.handled():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: no stop
            assert stop.state.signum is None
        assert signal.getsignal(signal.SIGTERM) is before[signal.SIGTERM]
        assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
        assert signal.set_wakeup_fd(-1) == -1  # the wakeup fd was given back
    finally:
        signal.signal(signal.SIGHUP, before[signal.SIGHUP])


class FullDisk:
    """A TraceWriter whose disk fills after `room` frames (the real one: tests/xrsession)."""

    def __init__(self, room, fail_close=False):
        self.room, self.fail_close, self.count, self.closed = room, fail_close, 0, False
        self.path = "/data/run.trace"

    def write(self, frame):
        if self.count == self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.count += 1

    def close(self):
        self.closed = True
        if self.fail_close:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_ends_the_recording_not_the_run():
    notes = []
    rec, sink = FullDisk(room=10), Sink()
    loop = FrameLoop(Finite(50), Rig(), [sink], recorder=rec, notice=notes.append)
    assert loop.run() == "no more frames"
    assert sink.sent == 50 and loop.recorder is None and not rec.closed  # the writer closed itself
    assert notes == [
        "recording stopped at frame 10: No space left on device; /data/run.trace keeps the 10 "
        "frames written (replay plays them: the trace ends early); the run goes on without recording"
    ]
    assert loop.recording_failure == notes[0].split("; the run goes on")[0]


def test_an_end_record_that_does_not_fit_is_said_not_raised():
    notes = []
    sink = Sink()
    loop = FrameLoop(Finite(5), Rig(), [sink], recorder=FullDisk(room=100, fail_close=True), notice=notes.append)
    assert loop.run() == "no more frames" and sink.closed
    assert notes == [
        "the recording could not be finished: No space left on device; /data/run.trace keeps the 5 "
        "frames written (replay plays them: the trace ends early)"
    ]


# The main thread blocked where no Python handler runs (signals blocked in it, as in a C call
# that does not return): the watcher thread still exits at the second signal, SIGKILLing the
# registered process first.
BLOCKED = textwrap.dedent("""
    import signal, subprocess, sys, time
    from headcast.app.run import stop
    child = subprocess.Popen(["sleep", "60"])
    with stop.handled():
        stop.own_process(lambda: child.pid)
        signal.pthread_sigmask(signal.SIG_BLOCK, stop.SIGNALS)  # delivered to the watcher thread only
        print(child.pid, flush=True)
        time.sleep(30)
    print("not reached", flush=True)
""")


def test_a_second_signal_exits_at_once_even_with_the_main_thread_blocked():
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        child = int(proc.stdout.readline())
        # Two different signals (two of one kind may merge while pending); when both are pending
        # the kernel picks the order, so either may be "the second".
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (130, 143) and took < 3, (proc.returncode, took, err)
    second = signal.Signals(proc.returncode - 128).name
    assert "not reached" not in out
    assert err == (
        f"headcast: {second} again: exiting at once without cleanup — servers were not told we left, "
        f"a recording reads as cut short; killed the local servers headcast started (pid {child})\n"
    )
    # the child was SIGKILLed (then reaped by init as an orphan): gone, or a zombie on its way
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{child}") and _state(child) != "Z":
        assert time.monotonic() < deadline, f"pid {child} still running"
        time.sleep(0.02)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_second_sighup_never_cuts_the_cleanup_short():
    script = textwrap.dedent("""
        import os, signal, time
        from headcast.app.run import stop
        with stop.handled():
            stop.stopping()
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGHUP)   # a closing terminal can send it twice
            time.sleep(0.2)                       # the watcher has seen both by now
            print("cleanup finished", stop.state.signum, flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == f"cleanup finished {int(signal.SIGHUP)}\n", (r.stdout, r.stderr)
    assert "headcast: SIGHUP: already stopping" in r.stderr and "exiting at once" not in r.stderr
