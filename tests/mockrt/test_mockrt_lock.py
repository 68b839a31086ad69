"""The mock runtime's one lock: taken inline (no libc call on the per-frame path), recursive, and
holding off the frame calls while a control call runs on another thread, as its pthread mutex did.

The runtime is the real library loaded by the real OpenXR loader; the other thread is the test's
own (the control API, as tests and `headcast.xr.mockrt.MockControl` call it beside an app's loop).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

from headcast.xr import mockrt


def test_the_lock_is_taken_without_a_libc_call(mock):
    """After the app's sleep the first pthread_mutex_lock was a cold page of libc code (~1 us of the
    poll); the lock is now an atomic exchange in the library itself, a futex only when contended."""
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to list the library's symbols"
    out = subprocess.run(
        [nm, "-D", "--undefined-only", str(mock.library)], capture_output=True, text=True, check=True
    ).stdout
    imported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert "clock_gettime" in imported  # (the listing is the imports)
    assert not {"pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock"} & imported


def test_control_calls_and_locates_take_turns(mock, session, tmp_path):
    """A thread moving the head (the control API) while the app locates it: every located pose is
    one the control call wrote whole (y = x + 1, z = x - 1, x a whole number), never parts of two;
    neither side starves. Then against a control call that holds the lock for milliseconds (loading
    a long motion file), so that the locates wait on the lock's futex and are woken."""
    done = threading.Event()
    written = [0]
    errors: list[BaseException] = []

    def mover() -> None:
        try:
            k = 0
            while not done.is_set() and k < 1_000_000:
                v = float(k % 1000)
                mock.set_pose("/user/head", (v, v + 1, v - 1))
                k += 1
            written[0] = k
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    with session(focus=True) as h:
        t = h.now()
        mock.set_pose("/user/head", (0.0, 1.0, -1.0))  # (the default head is not one of the thread's)
        thread = threading.Thread(target=mover)
        thread.start()
        seen = set()
        try:
            deadline = time.monotonic() + 20
            while len(seen) < 100 and time.monotonic() < deadline:
                p = h.locate(h.view, t).pose.position
                assert abs(p.y - (p.x + 1)) < 0.5 and abs(p.z - (p.x - 1)) < 0.5, (p.x, p.y, p.z)
                seen.add(p.x)
        finally:
            done.set()
            thread.join(30)
        assert not thread.is_alive() and not errors, errors
        assert len(seen) >= 100, f"the locates saw {len(seen)} head positions of {written[0]} written"

        # a long hold: each load parses 20,000 keyframes under the lock
        motion = tmp_path / "long.motion"
        motion.write_text(
            "timebase frames\n" + "".join(f"{i} /user/head pos 0 {1.5 + i * 1e-5:.5f} 0\n" for i in range(20_000))
        )
        loads = [0]
        done.clear()

        def loader() -> None:
            try:
                while not done.is_set() and loads[0] < 40:
                    mock.load_motion(motion)
                    loads[0] += 1
            except BaseException as e:
                errors.append(e)

        thread = threading.Thread(target=loader)
        thread.start()
        located = 0
        try:
            deadline = time.monotonic() + 30
            while (loads[0] < 3 or located < 20) and time.monotonic() < deadline and thread.is_alive():
                assert h.locate(h.view, t).location_flags == mockrt.TRACKED
                located += 1
        finally:
            done.set()
            thread.join(60)
        assert not thread.is_alive() and not errors, errors
        assert loads[0] >= 3 and located >= 20, (loads[0], located)  # both went on
