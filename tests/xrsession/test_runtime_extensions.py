"""Every runtime extension headcast enables or checks, against the mock runtime's behaviour profiles,
each of which offers the extension list of the real runtime it imitates (xr/mockrt/README.md):
Monado 25 as measured (tests/monado checks the mock's list against the real service), SteamVR 2.19
for Linux and Windows and Meta's PC runtime as the Khronos OpenXR runtime inventory lists them.

So every branch headcast has for a runtime's extension runs here: the display's refresh rate
(XR_FB_display_refresh_rate; Monado's headless 0.0, a display's rate, a rate that changes), the
timespec clock, the Windows performance-counter clock (SteamVR on Windows offers XR_MND_headless
with XR_KHR_win32_convert_performance_counter_time and no timespec), a runtime without
XR_MND_headless (an OpenGL session), and one that focuses a headless session (Monado 25).
"""

from __future__ import annotations

import ctypes
import inspect
import re
import time

import pytest
import xr

from headcast.xr import session
from headcast.xr.mockrt import RUNTIME_PROFILES
from headcast.xr.session import XRSession

from support import REPO

GL = "XR_KHR_opengl_enable"
HEADLESS = "XR_MND_headless"
TIMESPEC = "XR_KHR_convert_timespec_time"
WIN32 = "XR_KHR_win32_convert_performance_counter_time"
REFRESH = "XR_FB_display_refresh_rate"

# Each profile's list, restricted to the extensions headcast uses or checks (the sources: README.md
# beside mockxr.c; Monado 25's is checked against the real service by tests/monado).
EXPECTED = {
    "monado": {GL, HEADLESS, TIMESPEC, REFRESH},  # Monado 25.0.0, measured (21: the same branch crashed)
    "monado25": {GL, HEADLESS, TIMESPEC, REFRESH},
    "strict": {GL, HEADLESS, TIMESPEC, REFRESH},
    "steamvr": {GL, TIMESPEC, REFRESH},  # SteamVR 2.19 Linux (inventory) without XR_MND_headless
    "steamvr-windows": {GL, HEADLESS, WIN32, REFRESH},  # SteamVR 2.19 Windows (inventory)
    "meta-pc": {GL, TIMESPEC, WIN32, REFRESH},  # Meta PC / Quest Link (inventory)
}

both_paths = pytest.mark.usefixtures("frame_path")  # native helper and ctypes path alike


def _sources() -> list[tuple[str, str]]:
    return [(str(p.relative_to(REPO)), p.read_text()) for d in ("xr", "app") for p in sorted((REPO / d).rglob("*.py"))]


def _extensions_headcast_names() -> dict[str, str]:
    """Every OpenXR extension named in headcast's code (a string or a pyopenxr constant): where."""
    found = {}
    for where, text in _sources():
        for name in re.findall(r"\bXR_[A-Z]+_[a-z0-9][A-Za-z0-9_]*", text):
            found.setdefault(name, where)
        for const in re.findall(r"\bxr\.([A-Z0-9_]+_EXTENSION_NAME)\b", text):
            found.setdefault(getattr(xr, const), where)
    return found


# An extension's entry points headcast calls: through pyopenxr (xr.<name>_<vendor>) or by name
# (xrGetInstanceProcAddr).
_VENDOR = r"(?:khr|ext|fb|mnd|mndx|meta|htc|msft|valve|varjo|oculus)"


def _extension_functions() -> dict[str, str]:
    found = {}
    for where, text in _sources():
        for name in re.findall(rf"\bxr\.([a-z0-9_]+_{_VENDOR})\(", text):
            # the C name the pyopenxr wrapper looks up
            found.setdefault(re.search(r'"(xr[A-Za-z0-9]+)"', inspect.getsource(getattr(xr, name))).group(1), where)
        for name in re.findall(r'"(xr[A-Z][A-Za-z0-9]*(?:KHR|EXT|FB|MND|MNDX|META|HTC|MSFT|VALVE))"', text):
            found.setdefault(name, where)
    return found


def test_each_profile_offers_the_list_of_the_runtime_it_imitates(ctl):
    assert set(RUNTIME_PROFILES) == set(EXPECTED)
    for profile, expected in EXPECTED.items():
        assert set(ctl.profile_extensions(profile)) == expected, profile
        ctl.set_runtime_profile(profile)
        offered = {e.extension_name.decode() for e in xr.enumerate_instance_extension_properties()}
        assert offered - {"XR_EXT_debug_utils"} == expected, profile  # the loader's own extension


def test_every_extension_headcast_uses_is_offered_by_a_mock_profile(ctl):
    """Fails when headcast names an extension (or calls an extension's function) that no profile
    offers: its branch would first run on a user's machine. Add the extension to the profile of a
    real runtime that offers it (xr/mockrt/mockxr.c, RT_EXTENSIONS) and a test of the branch."""
    offered = set().union(*(ctl.profile_extensions(p) for p in RUNTIME_PROFILES))
    named = _extensions_headcast_names()
    assert set(session.RUNTIME_EXTENSIONS) <= set(named)
    assert {name: where for name, where in named.items() if name not in offered} == {}
    functions = _extension_functions()
    assert {
        "xrConvertTimespecTimeToTimeKHR",
        "xrConvertWin32PerformanceCounterToTimeKHR",
        "xrGetDisplayRefreshRateFB",
        "xrGetOpenGLGraphicsRequirementsKHR",
    } <= set(functions)
    missing = dict(functions)
    for profile in RUNTIME_PROFILES:  # each function resolves on an instance of a profile that offers it
        ctl.set_runtime_profile(profile)
        inst = xr.create_instance(
            xr.InstanceCreateInfo(
                application_info=xr.ApplicationInfo(application_name="ext-check"),
                enabled_extension_names=list(ctl.profile_extensions(profile)),
            )
        )
        try:
            for name in list(missing):
                try:
                    if ctypes.cast(xr.get_instance_proc_addr(inst, name), ctypes.c_void_p).value:
                        del missing[name]
                except xr.FunctionUnsupportedError:
                    pass
        finally:
            xr.destroy_instance(inst)
    assert missing == {}


@both_paths
def test_monado_headless_says_refresh_rate_zero_and_the_default_paces(ctl):
    """Monado answers xrGetDisplayRefreshRateFB with 0.0 in a headless session (pyopenxr returns a
    ctypes.c_float: float() of it raised, issue 23): no display rate, the default pacing."""
    with XRSession() as xs:
        assert xs.info.headless and xs.info.time_source == "timespec"
        assert xs.info.extensions == (HEADLESS, TIMESPEC, REFRESH)
        assert xs.info.rate_hz == session.DEFAULT_RATE_HZ  # the ctl fixture's 1000 Hz
        frames = [xs.next_frame() for _ in range(3)]
        assert xs.state.name == "READY"  # the monado profile is Monado 21's behaviour
    assert all(f.head.valid for f in frames)


@pytest.mark.parametrize("rate", [72.0, 120.0])
def test_a_headless_session_paces_at_the_display_rate_the_runtime_reports(ctl, rate):
    """SteamVR reports its display's rate in a headless session: headcast paces at it (a value read
    back wrongly — float() of a c_float, an int, 0 — fails here)."""
    ctl.set_runtime_profile("steamvr-windows")
    ctl.set_refresh_rate(rate)
    with XRSession() as xs:
        assert xs.info.rate_hz == rate and type(xs.info.rate_hz) is float
        frames = [xs.next_frame() for _ in range(round(rate / 2))]
    assert achieved(frames) == pytest.approx(rate, rel=0.1)


def achieved(frames) -> float:
    """Frames a second over the run: the pacer keeps its grid (a late frame is caught up), so this
    holds on a loaded machine where single gaps do not."""
    return (len(frames) - 1) / ((frames[-1].time_ns - frames[0].time_ns) / 1e9)


@both_paths
def test_the_pacing_follows_the_display_when_its_refresh_rate_changes(ctl):
    """XrEventDataDisplayRefreshRateChangedFB: a session paced at the display's rate follows it; one
    paced at a rate the user chose (--headless-rate) does not."""
    ctl.set_runtime_profile("steamvr-windows")
    with XRSession() as xs:
        assert xs.info.rate_hz == 90.0
        [xs.next_frame() for _ in range(3)]
        ctl.set_refresh_rate(60)
        [xs.next_frame() for _ in range(2)]
        assert xs.info.rate_hz == 60.0
        frames = [xs.next_frame() for _ in range(30)]
    assert achieved(frames) == pytest.approx(60, rel=0.1)
    ctl.set_refresh_rate(90)
    with XRSession(rate_hz=200) as xs:
        xs.next_frame()
        ctl.set_refresh_rate(120)
        [xs.next_frame() for _ in range(3)]
        assert xs.info.rate_hz == 200


def test_the_display_refresh_rate_changes_on_request_through_pyopenxr(ctl):
    """The mock's XR_FB_display_refresh_rate as an app uses it: enumerate, request, the event, get."""
    ctl.set_runtime_profile("steamvr-windows")
    with XRSession() as xs:
        s = xs._session
        assert list(xr.enumerate_display_refresh_rates_fb(s)) == [60.0, 72.0, 90.0, 120.0]
        xr.request_display_refresh_rate_fb(s, 72.0)
        assert xr.get_display_refresh_rate_fb(s).value == 72.0
        xs.next_frame()  # the event: the pacing follows
        assert xs.info.rate_hz == 72.0
        with pytest.raises(xr.DisplayRefreshRateUnsupportedFBError):
            xr.request_display_refresh_rate_fb(s, 50.0)
    assert ctl.refresh_rate == 72.0


@both_paths
def test_windows_steamvr_headless_locates_at_the_runtimes_now_by_the_performance_counter(ctl):
    """XR_MND_headless with XR_KHR_win32_convert_performance_counter_time and no timespec (SteamVR
    2.19 on Windows): each frame at xrConvertWin32PerformanceCounterToTimeKHR of the counter
    (time.perf_counter_ns; the mock's counter is CLOCK_MONOTONIC in ns, its XrTime the same clock)."""
    ctl.set_runtime_profile("steamvr-windows")
    with XRSession() as xs:
        assert xs.info.headless and xs.info.time_source == "win32"
        assert xs.info.extensions == (HEADLESS, WIN32, REFRESH)
        assert "performance counter" in xs.info.time_text
        got = []
        for _ in range(20):
            before = time.monotonic_ns()
            frame = xs.next_frame()
            got.append((before, frame, time.monotonic_ns()))
        assert xs.focused  # SteamVR focuses it (as Monado 25)
        ctl.set_clock(10**15)  # the runtime's clock, not ours: frames follow it
        moved = xs.next_frame()
    assert all(f.head.valid for _, f, _ in got)
    assert all(before - 1_000_000 <= f.time_ns <= after for before, f, after in got)
    assert abs(moved.time_ns - 10**15) < 50_000_000  # (the counter is read just before the clock)


@both_paths
def test_a_failing_performance_counter_conversion_is_a_clear_error(ctl, monkeypatch):
    ctl.set_runtime_profile("steamvr-windows")
    monkeypatch.setattr(session, "_performance_counter", lambda frequency: 0)  # the runtime refuses time 0
    with XRSession() as xs:
        with pytest.raises(
            session.XRError,
            match="reading the runtime's clock: "
            "xrConvertWin32PerformanceCounterToTimeKHR returned XR_ERROR_TIME_INVALID",
        ):
            for _ in range(3):
                xs.next_frame()


def test_monado_25_focuses_a_headless_session(ctl):
    ctl.set_runtime_profile("monado25")
    ctl.set_float("/user/hand/right/input/trigger/value", 1.0)
    with XRSession() as xs:
        frames = [xs.next_frame() for _ in range(3)]
        assert xs.state.name == "FOCUSED"
    assert all(f.focused and f.controls.trigger_right == 1.0 and f.right_aim.valid for f in frames)


GL_FALLBACK = r"""
from headcast.xr.session import XRSession
with XRSession() as xs:
    frames = [xs.next_frame() for _ in range(30)]
    print(xs.info.headless, xs.info.time_source, xs.info.extensions, repr(xs.info.fallback))
    print(sum(f.head.valid for f in frames))
"""


@pytest.mark.display
@pytest.mark.parametrize("profile", ["steamvr", "meta-pc"])
def test_runtimes_without_headless_get_an_opengl_session(run_script, xvfb_display, profile):
    proc = run_script(
        GL_FALLBACK,
        {"DISPLAY": xvfb_display, "PYGLFW_LIBRARY_VARIANT": "x11", "HEADCAST_MOCK_PROFILE_RUNTIME": profile},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, valid = proc.stdout.splitlines()[-2:]
    assert first == (
        "False frame ('XR_KHR_opengl_enable',) 'the OpenXR runtime offers no headless session "
        "(XR_MND_headless): using an OpenGL session'"
    )
    assert int(valid) >= 25


@pytest.mark.parametrize("profile", ["steamvr-windows", "monado25"])
def test_headcast_run_on_each_headless_profile_under_the_debian_validation_layer(run_script, tmp_path, profile):
    """The extensions' calls (the win32 clock, the refresh rate) under Khronos' core validation layer."""
    from xrsession.test_gl_and_validation import RUN_CLI, assert_debian_layer_loaded, layer_env, validation_complaints

    proc = run_script(
        RUN_CLI,
        layer_env(tmp_path, HEADCAST_MOCK_PROFILE_RUNTIME=profile),
        args=["run", "--mock", "tour", "--no-mirror", "--duration", "3"],
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "headless session" in proc.stdout and "stopped: ran for 3 s" in proc.stdout
    assert validation_complaints(output) == []
    assert_debian_layer_loaded(tmp_path / "ld")


def test_the_performance_counter_is_read_back_exactly_in_ticks(monkeypatch):
    """Windows' time.perf_counter_ns is QueryPerformanceCounter's ticks × 1e9 // frequency; headcast
    turns it back into the LARGE_INTEGER the conversion takes (exact for the usual 10 MHz counter)."""
    ticks = 1_234_567_891
    monkeypatch.setattr(time, "perf_counter_ns", lambda: ticks * 1_000_000_000 // 10_000_000)
    assert session._performance_counter(10_000_000) == ticks
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 987_654_321)
    assert session._performance_counter(1_000_000_000) == 987_654_321  # the mock's 1 GHz counter
    assert session._counter_frequency() == 1_000_000_000  # not Windows: CLOCK_MONOTONIC in ns


def test_without_the_refresh_rate_extension_or_its_answer_the_default_paces(ctl, monkeypatch):
    """A runtime without XR_FB_display_refresh_rate (none of the imitated ones lacks it: removed here),
    and one whose xrGetDisplayRefreshRateFB fails: headcast's default rate."""
    ctl.set_runtime_profile("steamvr-windows")  # would report 90 Hz
    ctl.set_refresh_rate(120)
    monkeypatch.setattr(session, "_REFRESH_EXT", "XR_headcast_not_offered")
    with XRSession() as xs:
        assert REFRESH not in xs.info.extensions and xs.info.rate_hz == session.DEFAULT_RATE_HZ
    monkeypatch.setattr(session, "_REFRESH_EXT", REFRESH)
    monkeypatch.setattr(session, "DEFAULT_RATE_HZ", 75.0)

    def refuses(s):
        raise xr.RuntimeFailureError()

    monkeypatch.setattr(xr, "get_display_refresh_rate_fb", refuses)
    with XRSession() as xs:
        assert REFRESH in xs.info.extensions and xs.info.rate_hz == 75.0
