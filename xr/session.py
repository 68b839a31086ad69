"""The pyopenxr session: one instance, one session, one action set, one TrackingFrame per frame.

    with XRSession() as xs:            # headless when the runtime offers it, else OpenGL
        while True:
            try:
                frame = xs.next_frame()  # paced by xrWaitFrame, or by our own clock when headless
            except SessionEnded:
                break

A headless session (XR_MND_headless) follows that extension's text: no xrWaitFrame, xrBeginFrame
or xrEndFrame (Monado's headless xrWaitFrame returns at once without a predicted time and its
xrBeginFrame then refuses with XR_ERROR_CALL_ORDER_INVALID). It paces itself (xr/pacing.py), locates
at the runtime's now (XR_KHR_convert_timespec_time on CLOCK_MONOTONIC, or the time its state events
carry plus the monotonic clock since), is begun at READY and never waits for FOCUSED (Monado leaves
it in READY: actions then read inactive, the head is tracked). A runtime that refuses a headless
session (no extension, or an error creating or beginning it) gets an OpenGL session instead, and
SessionInfo.fallback says why in one line.

Runs unchanged on a PC VR runtime and on the mock runtime (`headcast.xr.mockrt`). The
per-frame path calls the runtime's own entry points (xrGetInstanceProcAddr: no loader
trampoline and its handle lookup per call) on structs built once, and unpacks the five
locations and the eight action states in one struct call each: the convenience wrappers
allocate every output struct, build an enum per result and raise an exception object for each
qualified success (SESSION_NOT_FOCUSED) — see bench_xr_poll.py. The frame path runs once per
11 ms, after a sleep, with cold caches: every call left out of it counts several times its
warm cost. So when the native frame helper (`headcast.xr.fastframe`, built by setup) is there,
the whole sequence of ~18 runtime calls and the TrackingFrame's construction are one call into
it; otherwise the same calls are made one by one through ctypes and the frame is built here,
with equal frames and the same errors.
"""

from __future__ import annotations

import ctypes
import dataclasses
import struct
import sys
import time
import warnings
import weakref
from dataclasses import dataclass
from itertools import starmap
from typing import Any, Callable

import xr

from . import fastframe
from .actions import ActionSet
from .errors import GraphicsError, NoHeadsetError, NoRuntimeError, SessionEnded, XRError, translate, xr_errors
from .frame import IDENTITY, INVALID_POSE, ORIGIN, Controls, Pose, TrackingFrame
from .pacing import CLOCK_NS, DEFAULT_RATE_HZ, Pacer, native_pacer

_ORI_VALID = int(xr.SPACE_LOCATION_ORIENTATION_VALID_BIT)
_POS_VALID = int(xr.SPACE_LOCATION_POSITION_VALID_BIT)
_ORI_TRACKED = int(xr.SPACE_LOCATION_ORIENTATION_TRACKED_BIT)
_POS_TRACKED = int(xr.SPACE_LOCATION_POSITION_TRACKED_BIT)
_ALL_BITS = _ORI_VALID | _POS_VALID | _ORI_TRACKED | _POS_TRACKED

_EVENT_UNAVAILABLE = int(xr.Result.EVENT_UNAVAILABLE)
_EV_STATE = int(xr.StructureType.EVENT_DATA_SESSION_STATE_CHANGED)
_EV_PROFILE = int(xr.StructureType.EVENT_DATA_INTERACTION_PROFILE_CHANGED)
_EV_INSTANCE_LOSS = int(xr.StructureType.EVENT_DATA_INSTANCE_LOSS_PENDING)
_EV_REFRESH = int(xr.StructureType.EVENT_DATA_DISPLAY_REFRESH_RATE_CHANGED_FB)
_EVENT_BUFFER_TYPE = int(xr.StructureType.EVENT_DATA_BUFFER)


_P = ctypes.c_void_p
# Per-frame entry points: handles and struct pointers as plain ints, an int result.
_SIGNATURES = {
    "xrPollEvent": (_P, _P),
    "xrWaitFrame": (_P, _P, _P),
    "xrBeginFrame": (_P, _P),
    "xrEndFrame": (_P, _P),
    "xrSyncActions": (_P, _P),
    "xrLocateSpace": (_P, _P, ctypes.c_int64, _P),
    "xrGetActionStateFloat": (_P, _P, _P),
    "xrGetActionStateVector2f": (_P, _P, _P),
    "xrGetActionStateBoolean": (_P, _P, _P),
}


def _entry(instance: xr.Instance, name: str) -> int:
    """The address of the runtime's (or the top API layer's) own entry point for `name`."""
    address = ctypes.cast(xr.get_instance_proc_addr(instance, name), _P).value
    if not address:
        raise XRError(f"the OpenXR runtime has no {name}")
    return address


# Each per-frame call: what it was doing (the user's words) and the OpenXR function.
_WAIT = ("waiting for a frame", "xrWaitFrame")
_BEGIN = ("beginning a frame", "xrBeginFrame")
_END = ("ending a frame", "xrEndFrame")
_SYNC = ("reading the controllers", "xrSyncActions")
_LOCATE = ("locating the tracked devices", "xrLocateSpace")
_STATE = ("reading the controllers", "xrGetActionState*")
_EVENTS = ("reading runtime events", "xrPollEvent")
_TIME = ("reading the runtime's clock", "xrConvertTimespecTimeToTimeKHR")
_TIME_WIN32 = ("reading the runtime's clock", "xrConvertWin32PerformanceCounterToTimeKHR")
# What a failing step of the native helper was doing: the ctypes path's words for the same call.
_DURING = {
    fastframe.FF_WAIT: _WAIT,
    fastframe.FF_BEGIN: _BEGIN,
    fastframe.FF_SYNC: _SYNC,
    fastframe.FF_LOCATE: _LOCATE,
    fastframe.FF_STATES: _STATE,
    fastframe.FF_END: _END,
    fastframe.FF_EVENT: _EVENTS,
    fastframe.FF_TIME: _TIME,
}


def _frame_calls(helper: Any, context: fastframe.FrameContext) -> Any:
    """The native helper's FrameCalls on `context` (copied), building this module's frame types."""
    types = (Pose, Controls, TrackingFrame)
    return helper.FrameCalls(
        ctypes.addressof(context),
        ctypes.sizeof(context),
        types,
        tuple(tuple(t.__dict__[f.name] for f in dataclasses.fields(t)) for t in types),  # slot descriptors
        (INVALID_POSE, IDENTITY, ORIGIN),
    )


def _address(obj: Any) -> int:
    """A handle (a ctypes pointer in pyopenxr) or a struct as the integer the C call takes."""
    if isinstance(obj, ctypes.Structure):
        return ctypes.addressof(obj)
    return ctypes.cast(obj, _P).value or 0


_STATE_FIELDS: list[tuple[str, Any]] = [
    ("trigger_left", xr.ActionStateFloat),
    ("trigger_right", xr.ActionStateFloat),
    ("squeeze_left", xr.ActionStateFloat),
    ("squeeze_right", xr.ActionStateFloat),
    ("move", xr.ActionStateVector2f),
    ("turn", xr.ActionStateVector2f),
    ("jump", xr.ActionStateBoolean),
    ("menu", xr.ActionStateBoolean),
]


class _ActionStates(ctypes.Structure):
    """The eight action-state outputs side by side, unpacked in one struct call per frame."""

    _fields_ = _STATE_FIELDS


def _states_format() -> struct.Struct:
    # (current_state..., is_active) per state: float f, Vector2f ff, Bool32 I; padding skipped.
    picks = []
    for name, kind in _STATE_FIELDS:
        base = getattr(_ActionStates, name).offset
        code = {xr.ActionStateFloat: "f", xr.ActionStateVector2f: "2f", xr.ActionStateBoolean: "I"}[kind]
        picks += [
            (base + kind.current_state.offset, code, kind.current_state.size),
            (base + kind.is_active.offset, "I", 4),
        ]
    fmt, at = "<", 0
    for offset, code, size in picks:
        fmt += f"{offset - at}x{code}"
        at = offset + size
    return struct.Struct(fmt + f"{ctypes.sizeof(_ActionStates) - at}x")


_STATES = _states_format()

# One XrSpaceLocation as (flags, qx, qy, qz, qw, px, py, pz): XrPosef is orientation, then position.
_LOC_FLAGS_AT = xr.SpaceLocation.pose.offset - ctypes.sizeof(ctypes.c_uint64)  # locationFlags (XrFlags64), then pose
_LOC_FMT = (
    f"{_LOC_FLAGS_AT}xQ"
    f"{xr.SpaceLocation.pose.offset - _LOC_FLAGS_AT - 8}x7f"
    f"{ctypes.sizeof(xr.SpaceLocation) - xr.SpaceLocation.pose.offset - 28}x"
)
_LOCATION = struct.Struct("<" + _LOC_FMT)  # iter_unpack over the five: one tuple per space

# A unit quaternion off by more than this is not a rotation the runtime meant.
_NORM_TOLERANCE = 1e-3
# While the session is not running, next_frame() waits this long for events before it
# returns an idle frame, so an app loop does not spin.
_IDLE_WAIT_S = 1 / 90
# close(): how long to let a running session walk STOPPING -> IDLE -> EXITING.
_CLOSE_WAIT_S = 1.0
# A headless session is begun while it is opened (a runtime that refuses the begin gets an OpenGL
# session instead): how long to wait for its READY. Runtimes send it at once; if it has not come
# by then, next_frame() begins the session when it does.
_READY_WAIT_S = 1.0

_TIMESPEC_EXT = xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME
_REFRESH_EXT = xr.FB_DISPLAY_REFRESH_RATE_EXTENSION_NAME
# pyopenxr 1.1.6501 has no constant for it (its Windows-only functions are left out on Linux).
_WIN32_TIME_EXT = "XR_KHR_win32_convert_performance_counter_time"
# Every runtime extension headcast enables or checks (tests/xrsession/test_runtime_extensions.py
# fails when one is not offered by any of the mock runtime's profiles).
RUNTIME_EXTENSIONS = (
    xr.MND_HEADLESS_EXTENSION_NAME,
    xr.KHR_OPENGL_ENABLE_EXTENSION_NAME,
    _TIMESPEC_EXT,
    _WIN32_TIME_EXT,
    _REFRESH_EXT,
)
TIME_SOURCES = {
    "frame": "xrWaitFrame's predicted display time",
    "timespec": "the runtime's now: XR_KHR_convert_timespec_time on CLOCK_MONOTONIC",
    "win32": "the runtime's now: XR_KHR_win32_convert_performance_counter_time on the performance counter "
    "(QueryPerformanceCounter, time.perf_counter_ns)",
    "events": "the runtime's now, estimated: its session events' XrTime plus the monotonic clock since "
    "(the runtime offers no XR_KHR_convert_timespec_time)",
}


class _ConvertTimespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_int64), ("tv_nsec", ctypes.c_long)]  # struct timespec on LP64 Linux


def _counter_frequency() -> int:
    """Ticks per second of the counter XR_KHR_win32_convert_performance_counter_time converts: on
    Windows QueryPerformanceFrequency (10 MHz on current Windows), elsewhere (the mock runtime, whose
    counter is CLOCK_MONOTONIC in ns) 1 GHz."""
    windll = getattr(ctypes, "windll", None) if sys.platform == "win32" else None
    if windll is not None:
        freq = ctypes.c_int64()
        if windll.kernel32.QueryPerformanceFrequency(ctypes.byref(freq)) and freq.value > 0:
            return freq.value
    return 1_000_000_000


def _performance_counter(frequency: int) -> int:
    """QueryPerformanceCounter's value (a LARGE_INTEGER) from time.perf_counter_ns, which reads it on
    Windows (ns = ticks * 1e9 // frequency: exact back for a 10 MHz counter); CLOCK_MONOTONIC in ns
    elsewhere."""
    ns = time.perf_counter_ns()
    return ns if frequency == 1_000_000_000 else ns * frequency // 1_000_000_000


MODES = ("auto", "headless", "gl")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the runtime gave us, for the app's status line and `headcast doctor`."""

    runtime: str  # runtime name and version
    system: str  # the HMD system's name
    headless: bool  # XR_MND_headless session (no graphics binding, no frame calls)
    base_space: str  # "STAGE", or "LOCAL" when the runtime has no STAGE
    extensions: tuple[str, ...]  # extensions enabled on the instance
    profiles: tuple[str, ...]  # interaction profiles whose bindings the runtime took
    rejected_profiles: tuple[str, ...]
    reference_spaces: tuple[str, ...] = ()  # the reference space types the runtime offers
    time_source: str = "frame"  # a TIME_SOURCES key: the XrTime frames are located at
    rate_hz: float = 0.0  # a headless session's own pacing; 0: the runtime's xrWaitFrame paces
    fallback: str = ""  # why an "auto" session is not headless (one line), "" when it is

    @property
    def time_text(self) -> str:
        return TIME_SOURCES[self.time_source]


class _GLContext:
    """The GL context an OpenGL session binds to: the caller's window, or a hidden one of ours."""

    def __init__(self, window: Any | None) -> None:
        import glfw

        self._glfw = glfw
        self.own_window = None
        no_display = (
            "the OpenXR runtime needs an OpenGL session and no display is available "
            "for a GL context (set DISPLAY, or use a runtime with XR_MND_headless)"
        )
        try:  # glfw reports failures by return value or by GLFWError, per glfw.ERROR_REPORTING
            with warnings.catch_warnings():  # "warn" mode: its warning would be a second, rawer line of ours
                warnings.simplefilter("ignore", glfw.GLFWError)
                if window is None:
                    if not glfw.init():
                        raise GraphicsError(no_display)
                    glfw.window_hint(glfw.VISIBLE, glfw.FALSE)
                    window = glfw.create_window(64, 64, "headcast XR context", None, None)
                    if not window:
                        raise GraphicsError("could not create a hidden OpenGL window for the XR session")
                    self.own_window = window
                self.window = window
                glfw.make_context_current(window)
        except glfw.GLFWError as exc:
            raise GraphicsError(
                f"could not create an OpenGL context for the XR session ({exc}); "
                "check DISPLAY and the GL driver, or use a runtime with XR_MND_headless"
            ) from None
        self.binding = self._binding()

    @staticmethod
    def _binding() -> ctypes.Structure:
        if sys.platform == "win32":
            from OpenGL import WGL

            return xr.GraphicsBindingOpenGLWin32KHR(h_dc=WGL.wglGetCurrentDC(), h_glrc=WGL.wglGetCurrentContext())
        from OpenGL import GLX

        return xr.GraphicsBindingOpenGLXlibKHR(
            x_display=GLX.glXGetCurrentDisplay(),
            glx_drawable=GLX.glXGetCurrentDrawable(),
            glx_context=GLX.glXGetCurrentContext(),
        )

    def close(self) -> None:
        # Only our own window goes: the caller's window (the mirror) is the caller's. glfw is
        # left initialised, since the app may have windows of its own.
        if self.own_window is not None:
            self._glfw.destroy_window(self.own_window)
            self.own_window = None


def _failure_hook(session: Callable[[], XRSession | None]) -> Callable[[int, int], None]:
    """The native poll's on_failure: raises the session's typed error for the failed call."""

    def failed(step: int, result: int) -> None:
        xs = session()
        if xs is not None:
            xs._poll_failed(step, result)

    return failed


class _FrameState:
    """The frame state the session's frames carry, without the native helper (its FrameCalls has
    the same attributes and keeps them in C, so that its calls need no Python around them)."""

    __slots__ = ("seq", "last_time", "focused", "profiles")

    def __init__(self) -> None:
        self.seq = self.last_time = 0
        self.focused = False
        self.profiles = ("", "")


class XRSession:
    """One OpenXR session producing immutable TrackingFrames.

    mode: "auto" (headless when the runtime offers XR_MND_headless, else OpenGL), "headless"
    or "gl". window: a glfw window whose GL context the OpenGL session binds to (the app's
    mirror window); without one an OpenGL session makes a hidden window of its own.
    native: make each frame's runtime calls in one call into the native frame helper when it
    is built (False: always through ctypes, one call each; the results are the same).
    Raises XRError subclasses (NoRuntimeError, NoHeadsetError, GraphicsError, ...) whose
    text is meant for the user.
    """

    def __init__(
        self,
        mode: str = "auto",
        *,
        window: Any | None = None,
        app_name: str = "headcast",
        native: bool = True,
        rate_hz: float = 0.0,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if not (rate_hz == 0 or 0 < rate_hz <= 1000):
            raise ValueError(f"rate_hz must be 0 (auto) or in (0, 1000], not {rate_hz!r}")
        self._st: Any = _FrameState()  # seq, last_time, focused, profiles: the native helper's own once in use
        self._reset()
        try:
            with xr_errors("looking for an OpenXR runtime", "xrEnumerateInstanceExtensionProperties"):
                offered = {e.extension_name.decode() for e in xr.enumerate_instance_extension_properties()}
            headless = mode != "gl" and xr.MND_HEADLESS_EXTENSION_NAME in offered
            fallback = ""
            if mode == "headless" and not headless:
                raise GraphicsError("the OpenXR runtime does not offer XR_MND_headless (a headless session)")
            if mode == "auto" and not headless:
                fallback = "the OpenXR runtime offers no headless session (XR_MND_headless): using an OpenGL session"
            if headless:
                try:
                    self._open(True, offered, window, app_name, native, rate_hz, "")
                    return
                except (NoRuntimeError, NoHeadsetError):
                    raise  # an OpenGL session would fail the same way
                except XRError as refused:
                    if mode == "headless" or (
                        refused.call == "xrCreateInstance" and refused.result != "XR_ERROR_EXTENSION_NOT_PRESENT"
                    ):
                        raise  # no instance at all (Monado without its service): an OpenGL one fails alike
                    self.close()
                    self._reset()
                    fallback = f"the OpenXR runtime refused a headless session ({refused}): using an OpenGL session"
            try:
                self._open(False, offered, window, app_name, native, rate_hz, fallback)
            except XRError as exc:
                if fallback and xr.MND_HEADLESS_EXTENSION_NAME in offered:  # say why not headless either
                    exc.args = (f"{exc} (after {fallback.split(': using')[0]})",)
                raise
        except BaseException:
            self.close()
            raise

    def _reset(self) -> None:
        """The state of a session not yet opened (again, after a refused headless one)."""
        self._instance: xr.Instance | None = None
        self._session: xr.Session | None = None
        self._actions: ActionSet | None = None
        self._spaces: list[xr.Space] = []
        self._gl: _GLContext | None = None
        self._running = False
        self._st.focused = False
        self._ended: SessionEnded | None = None
        self._st.profiles = ("", "")
        self.__dict__.pop("poll", None)  # the native helper's poll, when in use
        self._ff_frame = self._ff_poll = self._ff_step = self._ff_now = None  # the native helper's, when in use
        self._ff_paced = None  # its pacer's wait and headless step in one call
        self._pacer: Pacer | None = None  # a headless session's clock
        self._convert: Any = None  # xrConvertTimespecTimeToTimeKHR or xrConvertWin32..., when enabled
        self._counter_hz = 0  # the win32 performance counter's frequency, when that converts
        self._rate_from_display = False  # a headless session paces at the display's rate (follows its changes)
        self._time_offset: int | None = None  # XrTime - CLOCK_MONOTONIC, learnt from state events
        self.state = xr.SessionState.UNKNOWN

    # -- setup ---------------------------------------------------------------------------

    def _open(
        self,
        headless: bool,
        offered: set[str],
        window: Any | None,
        app_name: str,
        native: bool,
        rate_hz: float,
        fallback: str,
    ) -> None:
        gl_ext = xr.KHR_OPENGL_ENABLE_EXTENSION_NAME
        if not headless and gl_ext not in offered:
            raise GraphicsError(
                "the OpenXR runtime offers neither XR_MND_headless nor "
                "XR_KHR_opengl_enable: headcast cannot open a session on it"
            )
        extensions = [xr.MND_HEADLESS_EXTENSION_NAME if headless else gl_ext]
        if headless:  # the clock a headless session locates at, and the display's rate to pace at
            clocks = (_WIN32_TIME_EXT, _TIMESPEC_EXT) if sys.platform == "win32" else (_TIMESPEC_EXT, _WIN32_TIME_EXT)
            extensions += [ext for ext in clocks if ext in offered][:1]
            extensions += [ext for ext in (_REFRESH_EXT,) if ext in offered]

        with xr_errors("starting OpenXR", "xrCreateInstance"):
            self._instance = xr.create_instance(
                xr.InstanceCreateInfo(
                    application_info=xr.ApplicationInfo(application_name=app_name, engine_name="headcast"),
                    enabled_extension_names=extensions,
                )
            )
        inst = self._instance
        with xr_errors("starting OpenXR", "xrGetInstanceProperties"):
            props = xr.get_instance_properties(inst)
        with xr_errors("finding the headset", "xrGetSystem"):
            self._system = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        with xr_errors("finding the headset", "xrGetSystemProperties"):
            sysprops = xr.get_system_properties(inst, self._system)
        stereo = xr.ViewConfigurationType.PRIMARY_STEREO
        self._view_config = stereo  # what a headless session's begin ignores
        blend_modes = []
        if not headless:
            with xr_errors("reading the headset's view configurations", "xrEnumerateViewConfigurations"):
                view_configs = list(xr.enumerate_view_configurations(inst, self._system))
            if not view_configs:
                raise XRError("the OpenXR runtime reports no view configuration for the headset")
            if stereo not in view_configs:
                self._view_config = view_configs[0]
            with xr_errors("reading the headset's view configurations", "xrEnumerateEnvironmentBlendModes"):
                blend_modes = list(xr.enumerate_environment_blend_modes(inst, self._system, self._view_config))

        create_info = xr.SessionCreateInfo(system_id=self._system)
        if not headless:
            with xr_errors("reading the runtime's OpenGL requirements", "xrGetOpenGLGraphicsRequirementsKHR"):
                # The spec requires this call before xrCreateSession for a GL session.
                xr.get_opengl_graphics_requirements_khr(inst, self._system)
            self._gl = _GLContext(window)
            create_info.next = ctypes.cast(ctypes.pointer(self._gl.binding), ctypes.c_void_p)
        with xr_errors("creating the XR session", "xrCreateSession"):
            self._session = xr.create_session(inst, create_info)

        with xr_errors("setting up the controllers", "xrCreateActionSet"):
            self._actions = ActionSet(inst)
        with xr_errors("setting up the controllers", "xrAttachSessionActionSets"):
            xr.attach_session_action_sets(
                self._session, xr.SessionActionSetsAttachInfo(action_sets=[self._actions.handle])
            )
        with xr_errors("creating the tracking spaces", "xrEnumerateReferenceSpaces"):
            offered_spaces = list(xr.enumerate_reference_spaces(self._session))
        with xr_errors("creating the tracking spaces", "xrCreateReferenceSpace"):
            base_type = xr.ReferenceSpaceType.STAGE
            if base_type not in offered_spaces:
                base_type = xr.ReferenceSpaceType.LOCAL
            self._base = self._reference_space(base_type)
            self._view = self._reference_space(xr.ReferenceSpaceType.VIEW)
        with xr_errors("creating the tracking spaces", "xrCreateActionSpace"):
            self._hand_spaces = [
                self._action_space(self._actions.actions[name], hand)
                for hand in self._actions.hand_paths
                for name in ("aim_pose", "grip_pose")
            ]  # left aim, left grip, right aim, right grip

        time_source, rate = "frame", 0.0
        if headless:
            time_source = (
                "timespec" if _TIMESPEC_EXT in extensions else "win32" if _WIN32_TIME_EXT in extensions else "events"
            )
            self._rate_from_display = not rate_hz
            rate = rate_hz or self._display_rate(extensions) or DEFAULT_RATE_HZ
            self._pacer = Pacer(rate)
        self.info = SessionInfo(
            runtime=f"{props.runtime_name.decode()} {xr.Version(props.runtime_version)}",
            system=sysprops.system_name.decode(),
            headless=headless,
            base_space=base_type.name,
            extensions=tuple(extensions),
            profiles=tuple(self._actions.accepted),
            rejected_profiles=tuple(self._actions.rejected),
            reference_spaces=tuple(xr.ReferenceSpaceType(t).name for t in offered_spaces),
            time_source=time_source,
            rate_hz=rate,
            fallback=fallback,
        )
        self._prepare_per_frame(blend_modes[0] if blend_modes else xr.EnvironmentBlendMode.OPAQUE, native)
        if headless:
            self._start_headless()

    def _display_rate(self, extensions: list[str]) -> float:
        """The display's refresh rate when the runtime says it (XR_FB_display_refresh_rate), else 0."""
        if _REFRESH_EXT not in extensions:
            return 0.0
        try:
            # pyopenxr returns the runtime's float as a ctypes.c_float (float() of it raises)
            rate = _c_float(xr.get_display_refresh_rate_fb(self._session))
        except xr.XrException:
            return 0.0  # a headless session may have no display to ask: pace at the default
        return _usable_rate(rate)

    def _start_headless(self) -> None:
        """Begin the headless session at READY, here, so that a runtime refusing it (an error from
        xrBeginSession, no clock to locate at) is known before the app runs: the caller then opens
        an OpenGL session instead. Waits for READY up to _READY_WAIT_S."""
        deadline = time.monotonic() + _READY_WAIT_S
        while not self._running and self._ended is None:
            self._pump_events()
            if self._running or time.monotonic() >= deadline:
                break
            time.sleep(0.002)
        if self._ended is not None:
            raise self._ended
        if self._running and self._convert is None and self._time_offset is None:
            raise XRError(
                "the OpenXR runtime offers no clock for a headless session (no "
                "XR_KHR_convert_timespec_time, and its session events carry no time)"
            )

    def _reference_space(self, kind: xr.ReferenceSpaceType) -> xr.Space:
        space = xr.create_reference_space(
            self._session, xr.ReferenceSpaceCreateInfo(reference_space_type=kind, pose_in_reference_space=xr.Posef())
        )
        self._spaces.append(space)
        return space

    def _action_space(self, action: xr.Action, hand: int) -> xr.Space:
        space = xr.create_action_space(
            self._session, xr.ActionSpaceCreateInfo(action=action, subaction_path=hand, pose_in_action_space=xr.Posef())
        )
        self._spaces.append(space)
        return space

    def _prepare_per_frame(self, blend_mode: xr.EnvironmentBlendMode, native: bool) -> None:
        """Every struct the frame loop passes to the runtime, built once."""
        inst = self._instance
        actions = self._actions
        assert actions is not None  # made with the session, before its frame structs
        acts = actions.actions
        left, right = actions.hand_paths
        entry = {name: _entry(inst, name) for name in _SIGNATURES}
        fn = {name: ctypes.CFUNCTYPE(ctypes.c_int, *_SIGNATURES[name])(entry[name]) for name in _SIGNATURES}
        self._xrPollEvent, self._xrWaitFrame = fn["xrPollEvent"], fn["xrWaitFrame"]
        self._xrBeginFrame, self._xrEndFrame = fn["xrBeginFrame"], fn["xrEndFrame"]
        self._xrSyncActions, self._xrLocateSpace = fn["xrSyncActions"], fn["xrLocateSpace"]
        self._instance_h, self._session_h = _address(inst), _address(self._session)
        self._active_sets = (xr.ActiveActionSet * 1)(xr.ActiveActionSet(actions.handle, xr.NULL_PATH))
        self._sync_info = xr.ActionsSyncInfo(active_action_sets=self._active_sets)
        self._locations = (xr.SpaceLocation * 5)(*(xr.SpaceLocation() for _ in range(5)))
        base = _address(self._base)
        self._locate_args = [
            (_address(space), base, ctypes.addressof(loc))
            for space, loc in zip([self._view, *self._hand_spaces], self._locations)
        ]
        states = self._states = _ActionStates()
        reads = (
            ("trigger", left, "trigger_left", "Float"),
            ("trigger", right, "trigger_right", "Float"),
            ("squeeze", left, "squeeze_left", "Float"),
            ("squeeze", right, "squeeze_right", "Float"),
            ("move", xr.NULL_PATH, "move", "Vector2f"),
            ("turn", xr.NULL_PATH, "turn", "Vector2f"),
            ("jump", xr.NULL_PATH, "jump", "Boolean"),
            ("menu", xr.NULL_PATH, "menu", "Boolean"),
        )
        self._get_infos = [xr.ActionStateGetInfo(acts[action], sub) for action, sub, _, _ in reads]
        self._state_reads = []  # (entry point, info address, output address) of each state read
        state_entries = []
        for info, (_, _, field, kind) in zip(self._get_infos, reads):
            out = getattr(states, field)
            setattr(states, field, type(out)())  # a copy in place: sets the structure type
            self._state_reads.append((fn[f"xrGetActionState{kind}"], ctypes.addressof(info), ctypes.addressof(out)))
            state_entries.append(entry[f"xrGetActionState{kind}"])
        self._last_states: tuple = ()
        self._controls = Controls()
        self._frame_state = xr.FrameState()
        self._wait_info = xr.FrameWaitInfo()
        self._begin_info = xr.FrameBeginInfo()
        self._end_info = xr.FrameEndInfo(display_time=0, environment_blend_mode=blend_mode, layers=[])
        self._event = xr.EventDataBuffer()
        self._wait_p, self._frame_state_p, self._begin_p, self._end_p, self._sync_p, self._event_p = (
            ctypes.addressof(x)
            for x in (
                self._wait_info,
                self._frame_state,
                self._begin_info,
                self._end_info,
                self._sync_info,
                self._event,
            )
        )
        self._timespec, self._xrtime = _ConvertTimespec(), ctypes.c_int64()
        if _TIMESPEC_EXT in self.info.extensions:
            self._convert = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P, _P)(_entry(inst, "xrConvertTimespecTimeToTimeKHR"))
        elif _WIN32_TIME_EXT in self.info.extensions:
            # (XrInstance, const LARGE_INTEGER*, XrTime*): LARGE_INTEGER is an int64
            self._convert = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P, _P)(
                _entry(inst, "xrConvertWin32PerformanceCounterToTimeKHR")
            )
            self._counter_hz = _counter_frequency()
            self._counter = ctypes.c_int64()
        helper = fastframe.load() if native else None
        if helper is not None:
            ctx = fastframe.FrameContext(
                entry["xrPollEvent"],
                entry["xrWaitFrame"],
                entry["xrBeginFrame"],
                entry["xrEndFrame"],
                entry["xrSyncActions"],
                entry["xrLocateSpace"],
                (_P * fastframe.NSTATE)(*state_entries),
                self._instance_h,
                self._session_h,
                self._wait_p,
                self._frame_state_p,
                self._begin_p,
                self._end_p,
                self._sync_p,
                self._event_p,
            )
            for i, (space, base, out) in enumerate(self._locate_args):
                ctx.space[i], ctx.location[i] = space, out
            ctx.base = base
            for i, (_, info, out) in enumerate(self._state_reads):
                ctx.state_info[i], ctx.state[i] = info, out
            if self._convert is not None and not self._counter_hz:
                ctx.convert_time = _entry(inst, "xrConvertTimespecTimeToTimeKHR")
            calls = _frame_calls(helper, ctx)
            st = self._st  # the helper keeps the frame state from now on: its calls count the frames
            calls.seq, calls.last_time, calls.focused, calls.profiles = st.seq, st.last_time, st.focused, st.profiles
            calls.on_failure = _failure_hook(weakref.ref(self))  # weak: the helper is no GC object
            self._st = calls
            # poll() is the C method itself: no Python call around it (cold, one costs ~8 us)
            self.poll = calls.poll  # type: ignore[method-assign]
            self._ff_frame, self._ff_run, self._ff_poll, self._ff_stop = calls.frame, calls.run, calls.poll, helper.Step
            self._ff_step, self._ff_now, self._ff_paced = calls.step, calls.now, calls.paced
            if self.info.headless:
                self._ff_frame = None  # a headless session makes no frame calls: step() instead
            if self._counter_hz:  # the helper converts only timespecs: the win32 clock is read here, then poll()
                self._ff_step = self._ff_now = self._ff_paced = None
            elif self._pacer is not None:  # the pacer in C: its wait and the step are one C call (paced)
                self._pacer = native_pacer(helper, self._pacer.rate_hz) or self._pacer

    # -- public --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Between xrBeginSession and xrEndSession: frames carry live poses."""
        return self._running

    @property
    def focused(self) -> bool:
        return self._st.focused

    @property
    def native(self) -> bool:
        """Frames run through the native frame helper (one call each), not call by call through ctypes."""
        return self._ff_poll is not None

    def native_timing(self, on: bool = True) -> Callable[[], tuple[int, int, int, int, int]] | None:
        """For benchmarks: the native helper notes where each call's time goes (on), or stops (off).
        Returns the reader of the last call's figures, in ns — the runtime's own calls (other: a
        headless step's clock conversion and event poll, or a frame's event poll, begin and end;
        sync; the five locates; the eight state reads) and the whole C call — or None without the
        helper. Off by default: then no clock is read."""
        if self._ff_poll is None:
            return None
        calls = self._ff_poll.__self__
        calls.set_timing(on)
        timings: Callable[[], tuple[int, int, int, int, int]] = calls.timings  # the C method
        return timings

    @property
    def profiles(self) -> tuple[str, str]:
        """Active interaction profile paths (left, right); "" when none."""
        return self._st.profiles

    def next_frame(self) -> TrackingFrame:
        """Run one frame and return what was tracked: in an OpenGL session a frame's wait/begin/end,
        at its predicted display time; in a headless session our own pacing (info.rate_hz), at the
        runtime's now.

        While the session is not running (not yet READY, or stopped) it waits up to a frame
        for events and returns an idle frame (no valid pose). Raises SessionEnded once the
        runtime ends the session, XRError on a runtime failure.
        """
        if self._instance is None:
            raise XRError("the XR session is closed")
        if self._ended is not None:
            raise self._ended
        if not self._running:
            self._pump_events()
        if not self._running:
            deadline = time.monotonic() + _IDLE_WAIT_S
            while not self._running and time.monotonic() < deadline:
                time.sleep(0.002)
                self._pump_events()
            if not self._running:
                return self._idle_frame()
        pacer = self._pacer
        if pacer is not None:  # a headless frame: our own pacing and the step in one C call (no Python
            paced = self._ff_paced  # call between: right after the sleep each one costs microseconds)
            if paced is None:
                pacer.wait()
                return self._headless_step()
            try:
                return paced(pacer, self._time_offset or 0)  # the helper counts the frame (seq, last_time)
            except self._ff_stop as stopped:
                return self._headless_stopped(*stopped.args)
        run = self._ff_frame
        if run is None:
            return self._frame_by_calls()
        try:
            return run()  # counted by the helper
        except self._ff_stop as stopped:
            step_, result, frame = stopped.args
        return self._native_stopped(step_, result, frame)

    def _headless_step(self) -> TrackingFrame:
        """A headless frame without the native helper (the pacer waited): the runtime's events, then
        sync and locate at its now."""
        now = self._now()  # first, as xrWaitFrame reads the clock before the frame's events
        self._pump_events()
        return self._headless_polled(now)

    def _headless_stopped(self, step: int, result: int, now: int) -> TrackingFrame:
        """The native headless step stopped: an event to handle (then poll at that now), or a failure."""
        if step != fastframe.FF_EVENT:
            raise self._failure(result, *_DURING[step])
        self._on_event(result)  # the event is in the buffer
        self._pump_events()
        return self._headless_polled(now)

    def _headless_polled(self, now: int) -> TrackingFrame:
        """A headless frame once its events are handled: polled at `now` while the session runs."""
        if self._ended is not None:
            raise self._ended
        if not self._running:
            return self._idle_frame()
        return self.poll(now)

    def _now(self) -> int:
        """The runtime's now as an XrTime (a headless session locates at it)."""
        if self._ff_now is not None:
            try:
                return self._ff_now(self._time_offset or 0)
            except self._ff_stop as stopped:
                raise self._failure(stopped.args[1], *_TIME) from None
        if self._convert is None:
            return CLOCK_NS() + (self._time_offset or 0)  # CLOCK_MONOTONIC on Linux
        if self._counter_hz:
            counter = self._counter
            counter.value = _performance_counter(self._counter_hz)
            r = self._convert(self._instance_h, ctypes.addressof(counter), ctypes.addressof(self._xrtime))
            if r < 0:
                raise self._failure(r, *_TIME_WIN32)
            return self._xrtime.value
        ts = self._timespec
        ts.tv_sec, ts.tv_nsec = divmod(time.monotonic_ns(), 1_000_000_000)
        r = self._convert(self._instance_h, ctypes.addressof(ts), ctypes.addressof(self._xrtime))
        if r < 0:
            raise self._failure(r, *_TIME)
        return self._xrtime.value

    def _native_stopped(self, step: int, result: int, frame: TrackingFrame | None) -> TrackingFrame:
        """next_frame() once the native frame stopped: events to handle first, or a failed call."""
        if step == fastframe.FF_EVENT:  # the wait went through; the event is in the buffer
            self._on_event(result)
            self._pump_events()
            if self._ended is not None:
                raise self._ended
            if not self._running:
                return self._idle_frame()
            try:
                return self._ff_run()  # counted by the helper
            except self._ff_stop as stopped:
                step, result, frame = stopped.args
        if frame is not None:  # xrEndFrame failed after the frame was read: it counts, as in the ctypes path
            self._counted(frame)
        raise self._failure(result, *_DURING[step])

    def _poll_failed(self, step: int, result: int) -> None:
        """The native poll's on_failure: raises the typed error for its failed call."""
        raise self._failure(result, *_DURING[step])

    def _counted(self, frame: TrackingFrame) -> TrackingFrame:
        self._st.seq += 1
        self._st.last_time = frame.time_ns
        return frame

    def _frame_by_calls(self) -> TrackingFrame:
        """next_frame() without the native helper: the same runtime calls, one ctypes call each."""
        session = self._session_h
        r = self._xrWaitFrame(session, self._wait_p, self._frame_state_p)
        if r < 0:
            raise self._failure(r, *_WAIT)
        # Events once per running frame, after xrWaitFrame: it blocks for most of a frame, and
        # focus or stop changes that arrived meanwhile must describe this frame, not the next.
        self._pump_events()
        if self._ended is not None:
            raise self._ended
        if not self._running:
            return self._idle_frame()
        # FRAME_DISCARDED (a qualified success) only says the previous frame was dropped.
        r = self._xrBeginFrame(session, self._begin_p)
        if r < 0:
            raise self._failure(r, *_BEGIN)
        t = self._frame_state.predicted_display_time
        frame = self.poll(t)
        self._end_info.display_time = t
        r = self._xrEndFrame(session, self._end_p)
        if r < 0:
            raise self._failure(r, *_END)
        return frame

    def poll(self, time_ns: int) -> TrackingFrame:
        """Sync actions and locate everything at `time_ns`; next_frame() does this inside a frame."""
        native = self._ff_poll
        if native is not None:
            try:
                frame = native(self._st.seq, time_ns, self._st.profiles, self._st.focused)
            except self._ff_stop as stopped:
                step, result, _ = stopped.args
                raise self._failure(result, *_DURING[step]) from None
            self._st.seq += 1  # _counted(), inline: cold, each Python call costs microseconds
            self._st.last_time = time_ns
            return frame
        session = self._session_h
        # SESSION_NOT_FOCUSED is a qualified success (> 0): the states then read inactive.
        r = self._xrSyncActions(session, self._sync_p)
        if r < 0:
            raise self._failure(r, *_SYNC)
        locate = self._xrLocateSpace
        for space, base, out in self._locate_args:
            r = locate(space, base, time_ns, out)
            if r < 0:
                raise self._failure(r, *_LOCATE)
        for get, info, out in self._state_reads:
            r = get(session, info, out)
            if r < 0:
                raise self._failure(r, *_STATE)
        return self._frame(time_ns)

    def _frame(self, time_ns: int) -> TrackingFrame:
        """The TrackingFrame from the located spaces and the read states; counts the frame."""
        states = _STATES.unpack_from(self._states)
        if states != self._last_states:  # controls mostly rest between frames: keep the object
            self._last_states = states
            self._controls = _controls(*states)
        head, left_aim, left_grip, right_aim, right_grip = starmap(_pose, _LOCATION.iter_unpack(self._locations))
        frame = TrackingFrame(  # positional, in field order: keywords cost a third more
            self._st.seq,
            time_ns,
            head,
            left_aim,
            left_grip,
            right_aim,
            right_grip,
            self._controls,
            self._st.profiles[0],
            self._st.profiles[1],
            self._st.focused,
        )
        self._st.seq += 1
        self._st.last_time = time_ns
        return frame

    def request_exit(self) -> None:
        """Ask the runtime to end the session; next_frame() raises SessionEnded when it has."""
        if self._running:
            self._call(
                "asking the runtime to end the session", "xrRequestExitSession", xr.request_exit_session, self._session
            )

    def close(self) -> None:
        """End the session politely when it runs, then destroy every handle. Idempotent."""
        if self._session is not None and self._running and self._ended is None:
            try:
                self.request_exit()
                deadline = time.monotonic() + _CLOSE_WAIT_S
                while self._running and self._ended is None and time.monotonic() < deadline:
                    self._pump_events()
                    time.sleep(0.002)
            except XRError:
                pass  # the handles go below either way
        for space in self._spaces:
            _quietly(xr.destroy_space, space)
        self._spaces = []
        if self._actions is not None:
            _quietly(self._actions.destroy)
            self._actions = None
        if self._session is not None:
            _quietly(xr.destroy_session, self._session)
            self._session = None
        if self._instance is not None:
            _quietly(xr.destroy_instance, self._instance)
            self._instance = None
        if self._gl is not None:
            self._gl.close()
            self._gl = None
        self._running = False

    def __enter__(self) -> XRSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------

    def _failure(self, result: int, during: str, call: str) -> XRError:
        """The typed error for a failed runtime call; a lost session ends here."""
        try:
            code = xr.Result(result)
        except ValueError:  # a result code this pyopenxr does not know
            return XRError(
                f"{during}: {call} returned {result}, an XrResult this OpenXR binding does not know",
                call=call,
                result=str(result),
            )
        err = translate(xr.check_result(code), during, call)
        if isinstance(err, SessionEnded):
            self._end(err)
        return err

    def _end(self, err: SessionEnded) -> None:
        self._ended = err
        self._running = False
        self._st.focused = False

    def _pump_events(self) -> None:
        ev = self._event
        while self._ended is None:
            ev._type = _EVENT_BUFFER_TYPE  # the runtime overwrites the header: reset it each poll
            ev._next = None
            result = self._xrPollEvent(self._instance_h, self._event_p)
            if result == _EVENT_UNAVAILABLE:
                return
            self._on_event(result)

    def _on_event(self, result: int) -> None:
        """Act on the event xrPollEvent put in the buffer (or raise its failure)."""
        if result < 0:
            raise self._failure(result, *_EVENTS)
        ev = self._event
        kind = ev._type
        if kind == _EV_STATE:
            changed = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataSessionStateChanged)).contents
            if changed.time > 0 and self._convert is None:  # (the native helper's clock is CLOCK_MONOTONIC: Linux)
                # The XrTime the state changed at, just now: the clock a headless session without
                # XR_KHR_convert_timespec_time locates by (late by the event's delivery).
                self._time_offset = changed.time - CLOCK_NS()
            self._on_state(xr.SessionState(changed.state))
        elif kind == _EV_PROFILE:
            self._read_profiles()
        elif kind == _EV_REFRESH:
            changed = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataDisplayRefreshRateChangedFB)).contents
            self._on_refresh_rate(float(changed.to_display_refresh_rate))  # a struct's float field: a Python float
        elif kind == _EV_INSTANCE_LOSS:
            self._end(
                SessionEnded(
                    "the OpenXR runtime is shutting down: xrPollEvent reported "
                    "XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING; restart the runtime, then headcast",
                    lost=True,
                    call="xrPollEvent",
                    result="XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING",
                )
            )

    def _on_refresh_rate(self, rate: float) -> None:
        """The display changed its refresh rate: a headless session paced at the display's rate follows."""
        rate = _usable_rate(rate)
        if self._pacer is None or not self._rate_from_display or not rate or rate == self._pacer.rate_hz:
            return
        self._pacer.set_rate(rate)
        self.info = dataclasses.replace(self.info, rate_hz=rate)

    def _on_state(self, state: xr.SessionState) -> None:
        self.state = state
        self._st.focused = state == xr.SessionState.FOCUSED
        S = xr.SessionState
        if state == S.READY and not self._running:
            self._call(
                "starting the XR session",
                "xrBeginSession",
                xr.begin_session,
                self._session,
                xr.SessionBeginInfo(self._view_config),
            )
            self._running = True
        elif state == S.STOPPING:
            self._running = False
            self._call("stopping the XR session", "xrEndSession", xr.end_session, self._session)
        elif state == S.EXITING:
            self._end(SessionEnded("the OpenXR runtime ended the session", lost=False))
        elif state == S.LOSS_PENDING:
            self._end(
                SessionEnded(
                    "the XR session was lost: xrPollEvent reported XR_SESSION_STATE_LOSS_PENDING "
                    "(headset disconnected or runtime reset)",
                    lost=True,
                    call="xrPollEvent",
                    result="XR_SESSION_STATE_LOSS_PENDING",
                )
            )

    def _read_profiles(self) -> None:
        names = []
        actions = self._actions
        assert actions is not None  # read while the session runs
        for hand in actions.hand_paths:
            during = "reading the active controller profile"
            state = self._call(
                during, "xrGetCurrentInteractionProfile", xr.get_current_interaction_profile, self._session, hand
            )
            path = state.interaction_profile if state is not None else 0
            name = self._call(during, "xrPathToString", xr.path_to_string, self._instance, path) if path else ""
            names.append(name or "")
        self._st.profiles = (names[0], names[1])

    def _call(self, during: str, call: str, fn: Any, *args: Any) -> Any:
        """A pyopenxr call off the per-frame path; None when the session is about to be lost."""
        try:
            return fn(*args)
        except xr.SessionLossPending:
            return None  # a qualified success: the LOSS_PENDING state event follows and ends us
        except xr.XrException as exc:
            err = translate(exc, during, call)
            if isinstance(err, SessionEnded):
                self._end(err)
            raise err from exc

    def _idle_frame(self) -> TrackingFrame:
        frame = TrackingFrame(
            seq=self._st.seq,
            time_ns=self._st.last_time,
            profile_left=self._st.profiles[0],
            profile_right=self._st.profiles[1],
        )
        self._st.seq += 1
        return frame


def _pose(flags: int, qx: float, qy: float, qz: float, qw: float, px: float, py: float, pz: float) -> Pose:
    """A located pose with its flags; invalid parts are zeroed, garbage is never valid."""
    if (
        flags & _ALL_BITS == _ALL_BITS
        and abs(qx * qx + qy * qy + qz * qz + qw * qw - 1.0) <= _NORM_TOLERANCE
        and abs(px + py + pz) < _INF
    ):  # the usual case first: tracked, sane
        return Pose((px, py, pz), (qx, qy, qz, qw), True, True, True, True)
    if not flags & (_ORI_VALID | _POS_VALID):
        return INVALID_POSE
    ori_valid = bool(flags & _ORI_VALID)
    pos_valid = bool(flags & _POS_VALID)
    orientation = IDENTITY
    position = ORIGIN
    if ori_valid:
        if abs(qx * qx + qy * qy + qz * qz + qw * qw - 1.0) <= _NORM_TOLERANCE:  # false for NaN too
            orientation = (qx, qy, qz, qw)
        else:
            ori_valid = False
    if pos_valid:
        if abs(px + py + pz) < _INF:  # false for NaN and infinities
            position = (px, py, pz)
        else:
            pos_valid = False
    return Pose(
        position,
        orientation,
        pos_valid,
        ori_valid,
        pos_valid and bool(flags & _POS_TRACKED),
        ori_valid and bool(flags & _ORI_TRACKED),
    )


def _controls(
    tl: float,
    tl_on: int,
    tr: float,
    tr_on: int,
    sl: float,
    sl_on: int,
    sr: float,
    sr_on: int,
    mx: float,
    my: float,
    move_on: int,
    tx: float,
    ty: float,
    turn_on: int,
    jump: int,
    jump_on: int,
    menu: int,
    menu_on: int,
) -> Controls:
    """Controls from the unpacked states (current_state..., is_active); inactive reads as rest."""
    return Controls(
        move=(_value(mx), _value(my)) if move_on else (0.0, 0.0),
        turn=(_value(tx), _value(ty)) if turn_on else (0.0, 0.0),
        trigger_left=_value(tl) if tl_on else 0.0,
        trigger_right=_value(tr) if tr_on else 0.0,
        squeeze_left=_value(sl) if sl_on else 0.0,
        squeeze_right=_value(sr) if sr_on else 0.0,
        jump=bool(jump) and bool(jump_on),
        menu=bool(menu) and bool(menu_on),
    )


def _value(x: float) -> float:
    # A non-finite analog value from a misbehaving runtime reads as rest.
    return x if -_INF < x < _INF else 0.0


_INF = float("inf")


# What pyopenxr 1.1.6501 returns for each call headcast reads back (issue 23's audit): structs
# (get_instance_properties, get_system_properties, get_current_interaction_profile,
# get_opengl_graphics_requirements_khr), whose fields read as Python values; ctypes arrays of c_int
# (enumerate_view_configurations, enumerate_environment_blend_modes, enumerate_reference_spaces),
# whose items read as ints (compared with the IntEnums); an array of ExtensionProperties
# (enumerate_instance_extension_properties; names are bytes); a str (path_to_string); ctypes
# handles/atoms passed back unread (get_system's SystemId, string_to_path's Path); and one bare
# ctypes scalar: get_display_refresh_rate_fb's c_float, read by _c_float.
def _c_float(value: ctypes.c_float) -> float:
    """A float the runtime wrote, as pyopenxr returns it (a ctypes.c_float), as a Python float."""
    return float(value.value if isinstance(value, ctypes.c_float) else value)  # a later binding's plain float too


def _usable_rate(rate: float) -> float:
    """A display refresh rate to pace at, or 0.0 when the runtime's is none (Monado's headless 0.0, NaN)."""
    return rate if 1 <= rate <= 1000 else 0.0


def _quietly(fn: Any, *args: Any) -> None:
    # Teardown must get through every handle even when the runtime is already gone.
    try:
        fn(*args)
    except xr.XrException:
        pass


__all__ = ["XRSession", "SessionInfo", "MODES", "XRError", "NoRuntimeError", "SessionEnded"]
