"""headcast's mocked OpenXR runtime: build it, point the loader at it, drive it from tests.

`ensure_runtime()` returns the runtime's loader manifest: the one a Linux wheel carries, or (in a
checkout, or an install without it) `libmockxr.so` built with gcc when missing or stale; set
`XR_RUNTIME_JSON` to that path (see `runtime_env`) before the first OpenXR call.
`MockControl` opens the same library with ctypes. Because glibc hands back the handle the
loader already holds, its calls act on the live runtime; and because that handle keeps the
library loaded after `xrDestroyInstance`, control state persists: call `reset()` between tests.
The runtime imitates Monado by default (HEADCAST_MOCK_PROFILE_RUNTIME: RUNTIME_PROFILES);
xr/mockrt/README.md lists each profile's behaviour and the real runtime it follows.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .build import LIBRARY_NAME, RuntimeBuildError, build, default_build_dir

__all__ = [
    "ensure_runtime",
    "library_path",
    "motion_path",
    "shipped_motions",
    "check_motion",
    "runtime_env",
    "MockControl",
    "MockControlError",
    "RUNTIME_PROFILES",
    "FRAME_PERIOD_NS",
    "slot_time",
    "HapticRecord",
    "CapturedImage",
    "RuntimeBuildError",
    "default_build_dir",
    "PROFILES",
    "ORIENTATION_VALID",
    "POSITION_VALID",
    "ORIENTATION_TRACKED",
    "POSITION_TRACKED",
    "TRACKED",
]

# XrSpaceLocationFlags bits, as the runtime reports them for a device
ORIENTATION_VALID = 0x1
POSITION_VALID = 0x2
ORIENTATION_TRACKED = 0x4
POSITION_TRACKED = 0x8
TRACKED = 0xF

PROFILES = (
    "/interaction_profiles/khr/simple_controller",
    "/interaction_profiles/oculus/touch_controller",
    "/interaction_profiles/valve/index_controller",
    "/interaction_profiles/htc/vive_controller",
    "/interaction_profiles/microsoft/motion_controller",
)

# HEADCAST_MOCK_PROFILE_RUNTIME values: the real runtime the mock imitates (xr/mockrt/README.md)
RUNTIME_PROFILES = ("monado", "steamvr", "strict", "monado25", "steamvr-windows", "meta-pc")
FRAME_PERIOD_NS = 11_111_111  # the predicted display period at 90 Hz


def slot_time(begin: int, k: float) -> int:
    """XrTime of frame slot k of a session begun at `begin`: k periods of 1/90 s, whole ns, as
    the runtime computes it (a time within 1 ns of a motion frame's instant reads that frame)."""
    return begin + round(k * 1e9 / 90)


def ensure_runtime(build_dir: Path | None = None) -> Path:
    """The runtime's manifest path (absolute), compiling the library first if needed.

    An installed wheel's own runtime (headcast/xr/mockrt/libmockxr.so, built with the package) is
    used as it is. Otherwise builds into build/mockrt/ of a repository checkout, else into the user
    cache directory. Raises RuntimeBuildError saying what to install on this platform when gcc or
    the OpenXR headers are missing, or that the mock runtime is Linux-only.
    """
    return build(build_dir)


def library_path(manifest: Path | None = None) -> Path:
    """Absolute path of libmockxr.so next to `manifest` (default: the built runtime)."""
    manifest = manifest or ensure_runtime()
    return (Path(manifest).parent / LIBRARY_NAME).resolve()


def _motion_dirs() -> list[Path]:
    """Every installed assets/motions folder. `headcast.assets` is a namespace package: in an
    editable install its __path__ also holds an import-hook entry that is no directory (which is
    why importlib.resources.files() raises NotADirectoryError there), so walk __path__ instead."""
    import headcast.assets

    return [Path(entry) / "motions" for entry in headcast.assets.__path__ if (Path(entry) / "motions").is_dir()]


def shipped_motions() -> list[str]:
    """Names of the shipped motion files ("fire", "look_around", ...)."""
    return sorted({p.stem for folder in _motion_dirs() for p in folder.glob("*.motion")})


def motion_path(name: str) -> Path:
    """A shipped motion file by name ("look_around") or file name ("look_around.motion").

    Raises FileNotFoundError naming the shipped motions when there is no such file.
    """
    file = name if name.endswith(".motion") else f"{name}.motion"
    for folder in _motion_dirs():
        if (folder / file).is_file():
            return (folder / file).resolve()
    shipped = ", ".join(shipped_motions()) or "none"
    raise FileNotFoundError(f"no motion file {file!r} in assets/motions (shipped: {shipped})")


def runtime_env(
    motion: str | Path | None = None,
    *,
    throttle: bool = True,
    profile: str | None = None,
    script: str | Path | None = None,
    log: str | Path | None = None,
    runtime: str | None = None,
    clock: str | None = None,
    headless_focus: bool = False,
) -> dict[str, str]:
    """Environment variables selecting the mock runtime (merge into os.environ or a subprocess env).

    `motion` is a motion file path or the name of a shipped one ("walk"); paths are made absolute
    so that a subprocess with another working directory finds them. `runtime` is one of
    RUNTIME_PROFILES (default monado); `clock="step"` selects the step clock; `headless_focus`
    focuses a headless session at begin (its actions sync; real runtimes leave it READY). The files' contents are
    not checked here (call `check_motion` first for a clear error): a bad one makes
    xrCreateInstance fail with XR_ERROR_RUNTIME_FAILURE, the reason (file:line) on stderr.
    """
    env = {"XR_RUNTIME_JSON": str(ensure_runtime())}
    if motion is not None:
        file = Path(motion)
        if not file.exists() and len(file.parts) > 1:  # a path, not the name of a shipped motion
            raise FileNotFoundError(f"no motion file {str(file)!r}")
        env["HEADCAST_MOCK_MOTION"] = str(file.resolve() if file.exists() else motion_path(str(motion)))
    if not throttle:
        env["HEADCAST_MOCK_THROTTLE"] = "0"
    if profile is not None:
        env["HEADCAST_MOCK_PROFILE"] = profile
    if script is not None:
        env["HEADCAST_MOCK_SCRIPT"] = str(Path(script).resolve())
    if log is not None:
        env["HEADCAST_MOCK_LOG"] = str(Path(log).resolve())
    if runtime is not None:
        if runtime not in RUNTIME_PROFILES:
            raise ValueError(f"runtime profile {runtime!r} is not one of {', '.join(RUNTIME_PROFILES)}")
        env["HEADCAST_MOCK_PROFILE_RUNTIME"] = runtime
    if clock is not None:
        if clock not in ("real", "step"):
            raise ValueError(f"clock {clock!r} is not real or step")
        env["HEADCAST_MOCK_CLOCK"] = clock
    if headless_focus:
        env["HEADCAST_MOCK_HEADLESS_FOCUS"] = "1"
    return env


def check_motion(path: str | Path, manifest: Path | None = None) -> None:
    """Parse a motion file with the runtime's own parser, without playing it.

    Raises MockControlError "motion file: <path>:<line>: <why>" for a bad or unreadable file.
    """
    MockControl(manifest).check_motion(path)


class MockControlError(ValueError):
    """The runtime rejected a control call (unknown path, bad motion file, ...)."""


@dataclass(frozen=True, slots=True)
class HapticRecord:
    count: int  # xrApplyHapticFeedback calls that reached this hand
    amplitude: float  # of the last one
    duration_ns: int
    frequency: float
    stops: int  # xrStopHapticFeedback calls


@dataclass(frozen=True, slots=True)
class CapturedImage:
    frame: int  # motion frame index of the xrEndFrame that submitted it
    width: int
    height: int
    rgba: bytes  # width*height*4, rows bottom-up (glReadPixels order)


_c = ctypes
_SIGNATURES: dict[str, tuple[list, object]] = {
    "mockxr_last_error": ([], _c.c_char_p),
    "mockxr_reset": ([], None),
    "mockxr_load_motion": ([_c.c_char_p], _c.c_int),
    "mockxr_load_script": ([_c.c_char_p], _c.c_int),
    "mockxr_check_motion": ([_c.c_char_p], _c.c_int),
    "mockxr_clear_motion": ([], None),
    "mockxr_set_pose": ([_c.c_char_p] + [_c.c_float] * 7, _c.c_int),
    "mockxr_get_pose": ([_c.c_char_p, _c.POINTER(_c.c_float)], _c.c_int),
    "mockxr_set_float": ([_c.c_char_p, _c.c_float], _c.c_int),
    "mockxr_set_bool": ([_c.c_char_p, _c.c_int], _c.c_int),
    "mockxr_set_vec2": ([_c.c_char_p, _c.c_float, _c.c_float], _c.c_int),
    "mockxr_set_tracking": ([_c.c_char_p, _c.c_uint64], _c.c_int),
    "mockxr_command": ([_c.c_char_p], _c.c_int),
    "mockxr_fail": ([_c.c_char_p, _c.c_int, _c.c_int64, _c.c_int64], _c.c_int),
    "mockxr_set_profile": ([_c.c_char_p], _c.c_int),
    "mockxr_set_throttle": ([_c.c_int], None),
    "mockxr_set_runtime_profile": ([_c.c_char_p], _c.c_int),
    "mockxr_runtime_profile": ([], _c.c_char_p),
    "mockxr_set_clock": ([_c.c_int64], None),
    "mockxr_step_clock": ([], None),
    "mockxr_advance_clock": ([_c.c_int64], _c.c_int),
    "mockxr_now": ([], _c.c_int64),
    "mockxr_begin_time": ([], _c.c_int64),
    "mockxr_set_stage_supported": ([_c.c_int], None),
    "mockxr_set_hmd_present": ([_c.c_int], None),
    "mockxr_get_haptics": (
        [
            _c.c_char_p,
            _c.POINTER(_c.c_int64),
            _c.POINTER(_c.c_float),
            _c.POINTER(_c.c_int64),
            _c.POINTER(_c.c_float),
            _c.POINTER(_c.c_int64),
        ],
        _c.c_int,
    ),
    "mockxr_capture_next_frame": ([], None),
    "mockxr_get_capture": ([_c.c_int, _c.c_char_p, _c.c_int64, _c.POINTER(_c.c_int), _c.POINTER(_c.c_int)], _c.c_int64),
    "mockxr_frames_ended": ([], _c.c_int64),
    "mockxr_frames_waited": ([], _c.c_int64),
    "mockxr_frame_index": ([], _c.c_int64),
    "mockxr_session_state": ([], _c.c_int),
    "mockxr_instance_alive": ([], _c.c_int),
    "mockxr_profile_extensions": ([_c.c_char_p], _c.c_char_p),
    "mockxr_set_refresh_rate": ([_c.c_float], _c.c_int),
    "mockxr_refresh_rate": ([], _c.c_float),
}


class MockControl:
    """ctypes control of the live mock runtime (same dlopen handle as the OpenXR loader's).

    Paths are OpenXR paths: poses "/user/head", "/user/hand/left/input/aim/pose",
    ".../grip/pose"; inputs "/user/hand/right/input/trigger/value", ".../thumbstick",
    ".../a/click" (assets/motions/README.md lists them); tracking "/user/head", "/user/hand/left".
    """

    def __init__(self, manifest: Path | None = None) -> None:
        self.library = library_path(manifest)
        self._lib = ctypes.CDLL(str(self.library))
        for name, (argtypes, restype) in _SIGNATURES.items():
            fn = getattr(self._lib, name)
            fn.argtypes, fn.restype = argtypes, restype

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise MockControlError(f"{what}: {self._lib.mockxr_last_error().decode('utf-8', 'replace')}")

    def reset(self) -> None:
        """Defaults everywhere: no motion, default poses, all tracked, the real clock; throttle,
        controller and runtime profile from the environment again."""
        self._lib.mockxr_reset()

    def load_motion(self, path: str | Path) -> None:
        """Play a motion file from session begin: xrLocateSpace reads it at the XrTime asked for
        (time 0 = xrBeginSession), xrSyncActions at the runtime clock."""
        self._check(self._lib.mockxr_load_motion(str(path).encode()), "load_motion")

    def load_script(self, path: str | Path) -> None:
        """A second motion file applied on top of the first (same format)."""
        self._check(self._lib.mockxr_load_script(str(path).encode()), "load_script")

    def check_motion(self, path: str | Path) -> None:
        """Parse a motion file without playing it; MockControlError ("file:line: why") if it is bad."""
        self._check(self._lib.mockxr_check_motion(str(path).encode()), "motion file")

    def clear_motion(self) -> None:
        self._lib.mockxr_clear_motion()

    def set_pose(self, path: str, position: Sequence[float], orientation: Sequence[float] = (0, 0, 0, 1)) -> None:
        """Position (x, y, z) metres and orientation (x, y, z, w) in STAGE."""
        self._check(self._lib.mockxr_set_pose(path.encode(), *position, *orientation), f"set_pose {path}")

    def get_pose(self, path: str) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
        """The pose at the runtime clock's now (the motion on top of set_pose)."""
        out = (ctypes.c_float * 7)()
        self._check(self._lib.mockxr_get_pose(path.encode(), out), f"get_pose {path}")
        return (out[0], out[1], out[2]), (out[3], out[4], out[5], out[6])

    def set_float(self, path: str, value: float) -> None:
        self._check(self._lib.mockxr_set_float(path.encode(), value), f"set_float {path}")

    def set_bool(self, path: str, value: bool) -> None:
        self._check(self._lib.mockxr_set_bool(path.encode(), int(bool(value))), f"set_bool {path}")

    def set_vec2(self, path: str, x: float, y: float) -> None:
        self._check(self._lib.mockxr_set_vec2(path.encode(), x, y), f"set_vec2 {path}")

    def set_tracking(self, path: str, flags: int) -> None:
        """XrSpaceLocationFlags for "/user/head", "/user/hand/left" or "/user/hand/right"."""
        self._check(self._lib.mockxr_set_tracking(path.encode(), flags), f"set_tracking {path}")

    def command(self, name: str) -> None:
        """Session event: "exit", "unfocus", "focus" or "loss"."""
        self._check(self._lib.mockxr_command(name.encode()), f"command {name}")

    def fail(self, function: str, result: int, after: int = 0, times: int = 0) -> None:
        """Make `function` (xrSyncActions, xrLocateSpace, xrWaitFrame, xrBeginFrame, xrEndFrame,
        xrPollEvent, xrCreateSession, xrBeginSession) return `result` (a negative XrResult) once
        `after` calls went through, `times` times (0: from then on); "" clears. The variable
        HEADCAST_MOCK_FAIL=<function>:<result>[:<after>[:<times>]] does the same for a subprocess."""
        self._check(self._lib.mockxr_fail(function.encode(), result, after, times), "fail")

    def request_exit(self) -> None:
        self.command("exit")

    def unfocus(self) -> None:
        self.command("unfocus")

    def focus(self) -> None:
        self.command("focus")

    def lose_session(self) -> None:
        self.command("loss")

    def set_profile(self, profile: str) -> None:
        """The emulated controller's interaction profile (one of PROFILES)."""
        self._check(self._lib.mockxr_set_profile(profile.encode()), "set_profile")

    def set_throttle(self, on: bool) -> None:
        """Pace xrWaitFrame at 90 Hz (True) or return at once (False)."""
        self._lib.mockxr_set_throttle(int(on))

    def set_runtime_profile(self, name: str) -> None:
        """Imitate one of RUNTIME_PROFILES (xr/mockrt/README.md) from the next call on."""
        self._check(self._lib.mockxr_set_runtime_profile(name.encode()), "set_runtime_profile")

    @property
    def runtime_profile(self) -> str:
        return self._lib.mockxr_runtime_profile().decode()

    def profile_extensions(self, name: str) -> tuple[str, ...]:
        """The extensions runtime profile `name` offers (its imitated runtime's, xr/mockrt/README.md)."""
        out = self._lib.mockxr_profile_extensions(name.encode())
        if out is None:
            self._check(-1, "profile_extensions")
        return tuple(out.decode().split())

    def set_refresh_rate(self, rate: float) -> None:
        """The display changes its refresh rate by itself (60, 72, 90 or 120 Hz): a running session
        with XR_FB_display_refresh_rate gets XrEventDataDisplayRefreshRateChangedFB."""
        self._check(self._lib.mockxr_set_refresh_rate(rate), "set_refresh_rate")

    @property
    def refresh_rate(self) -> float:
        return self._lib.mockxr_refresh_rate()

    def set_clock(self, t: int) -> None:
        """Stop the runtime clock at XrTime `t` (> 0) until moved; 0 returns to CLOCK_MONOTONIC."""
        self._lib.mockxr_set_clock(t)

    def step_clock(self) -> None:
        """The step clock: it stands still between the app's time queries (xrWaitFrame, the
        timespec conversion); the n-th query after begin reads frame slot n (slot_time)."""
        self._lib.mockxr_step_clock()

    def advance_clock(self, dt_ns: int) -> None:
        """Move a stopped or stepped clock on by dt_ns."""
        self._check(self._lib.mockxr_advance_clock(dt_ns), "advance_clock")

    @property
    def now(self) -> int:
        """The runtime clock (XrTime, ns)."""
        return self._lib.mockxr_now()

    @property
    def begin_time(self) -> int:
        """XrTime of the running session's xrBeginSession (motion time 0), -1 when none runs."""
        return self._lib.mockxr_begin_time()

    def at(self, frame: float) -> int:
        """XrTime of motion frame `frame` (90 Hz) of the running session."""
        begin = self.begin_time
        if begin < 0:
            raise MockControlError("at: no session is running")
        return slot_time(begin, frame)

    def set_stage_supported(self, on: bool) -> None:
        """Offer the STAGE reference space (True by default); False mimics a seated-only runtime."""
        self._lib.mockxr_set_stage_supported(int(on))

    def set_hmd_present(self, on: bool) -> None:
        """False makes xrGetSystem fail with XR_ERROR_FORM_FACTOR_UNAVAILABLE (headset unplugged)."""
        self._lib.mockxr_set_hmd_present(int(on))

    def haptics(self, hand: str) -> HapticRecord:
        """What the app sent to "/user/hand/left" or "/user/hand/right"."""
        count, dur, stops = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        amp, freq = ctypes.c_float(), ctypes.c_float()
        self._check(
            self._lib.mockxr_get_haptics(
                hand.encode(),
                ctypes.byref(count),
                ctypes.byref(amp),
                ctypes.byref(dur),
                ctypes.byref(freq),
                ctypes.byref(stops),
            ),
            f"haptics {hand}",
        )
        return HapticRecord(count.value, amp.value, dur.value, freq.value, stops.value)

    def capture_next_frame(self) -> None:
        """Read back both eye images of the next projection layer submitted (colour swapchains)."""
        self._lib.mockxr_capture_next_frame()

    def captured(self, eye: int) -> CapturedImage | None:
        """The captured image of eye 0 (left) or 1 (right), None until a frame was captured."""
        w, h = ctypes.c_int(), ctypes.c_int()
        if self._lib.mockxr_get_capture(eye, None, 0, ctypes.byref(w), ctypes.byref(h)) < 0:
            return None
        buf = ctypes.create_string_buffer(w.value * h.value * 4)
        frame = self._lib.mockxr_get_capture(eye, buf, len(buf), ctypes.byref(w), ctypes.byref(h))
        return CapturedImage(frame, w.value, h.value, buf.raw)

    @property
    def frames_ended(self) -> int:
        """xrEndFrame calls that succeeded since the last reset."""
        return self._lib.mockxr_frames_ended()

    @property
    def frames_waited(self) -> int:
        """xrWaitFrame calls that waited for a frame (a headless one under monado does not)."""
        return self._lib.mockxr_frames_waited()

    @property
    def frame_index(self) -> int:
        """xrWaitFrame calls of the running session that waited, minus one (-1 before the first)."""
        return self._lib.mockxr_frame_index()

    @property
    def session_state(self) -> int:
        """XrSessionState value of the live session (0 when there is none)."""
        return self._lib.mockxr_session_state()

    @property
    def instance_alive(self) -> bool:
        return bool(self._lib.mockxr_instance_alive())
