"""The mock's XR_FB_display_refresh_rate and XR_KHR_win32_convert_performance_counter_time at the
OpenXR level (pyopenxr through the real loader), as an app other than headcast uses them."""

from __future__ import annotations

import ctypes
import time

import pytest
import xr

REFRESH = xr.FB_DISPLAY_REFRESH_RATE_EXTENSION_NAME
WIN32 = "XR_KHR_win32_convert_performance_counter_time"


def create_instance(extensions=(xr.MND_HEADLESS_EXTENSION_NAME,)):
    return xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="mockrt-ext"), enabled_extension_names=list(extensions)
        )
    )


def _session(inst):
    sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
    return xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))


def _refresh_events(inst) -> list[tuple[float, float]]:
    out = []
    while True:
        try:
            ev = xr.poll_event(inst)
        except xr.EventUnavailable:
            return out
        if ev.type == xr.StructureType.EVENT_DATA_DISPLAY_REFRESH_RATE_CHANGED_FB:
            changed = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataDisplayRefreshRateChangedFB)).contents
            out.append((changed.from_display_refresh_rate, changed.to_display_refresh_rate))


def test_refresh_rate_requests_and_changes_are_events_with_from_and_to(mock):
    mock.set_runtime_profile("steamvr-windows")
    inst = create_instance(extensions=[xr.MND_HEADLESS_EXTENSION_NAME, REFRESH])
    try:
        s = _session(inst)
        assert list(xr.enumerate_display_refresh_rates_fb(s)) == [60.0, 72.0, 90.0, 120.0]
        got = xr.get_display_refresh_rate_fb(s)
        assert isinstance(got, ctypes.c_float) and got.value == 90.0  # what pyopenxr returns: a c_float
        xr.request_display_refresh_rate_fb(s, 120.0)
        xr.request_display_refresh_rate_fb(s, 120.0)  # no change: no event
        mock.set_refresh_rate(72)  # the display changes by itself
        xr.request_display_refresh_rate_fb(s, 0.0)  # no preference: the default
        assert _refresh_events(inst) == [(90.0, 120.0), (120.0, 72.0), (72.0, 90.0)]
        with pytest.raises(xr.DisplayRefreshRateUnsupportedFBError):
            xr.request_display_refresh_rate_fb(s, 59.94)
        assert xr.get_display_refresh_rate_fb(s).value == 90.0
    finally:
        xr.destroy_instance(inst)


def test_monado_profiles_report_no_display_rate_in_a_headless_session(mock):
    """As Monado 25 measured: a headless session's xrGetDisplayRefreshRateFB is 0.0."""
    for profile in ("monado", "monado25", "strict"):
        mock.set_runtime_profile(profile)
        inst = create_instance(extensions=[xr.MND_HEADLESS_EXTENSION_NAME, REFRESH])
        try:
            assert xr.get_display_refresh_rate_fb(_session(inst)).value == 0.0, profile
        finally:
            xr.destroy_instance(inst)


def test_the_refresh_rate_functions_need_the_extension_enabled(mock):
    inst = create_instance()
    try:
        with pytest.raises(xr.FunctionUnsupportedError):
            xr.get_instance_proc_addr(inst, "xrGetDisplayRefreshRateFB")
        with pytest.raises(xr.FunctionUnsupportedError):
            xr.get_instance_proc_addr(inst, "xrConvertWin32PerformanceCounterToTimeKHR")
    finally:
        xr.destroy_instance(inst)


def test_win32_counter_converts_on_the_runtime_clock_both_ways(mock):
    """The mock's counter is CLOCK_MONOTONIC in ns; a stopped runtime clock moves the answer as it
    moves the timespec conversion's."""
    mock.set_runtime_profile("steamvr-windows")
    inst = create_instance(extensions=[xr.MND_HEADLESS_EXTENSION_NAME, WIN32])
    try:
        proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        to_time = proto(
            ctypes.cast(
                xr.get_instance_proc_addr(inst, "xrConvertWin32PerformanceCounterToTimeKHR"), ctypes.c_void_p
            ).value
        )
        back = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)(
            ctypes.cast(
                xr.get_instance_proc_addr(inst, "xrConvertTimeToWin32PerformanceCounterKHR"), ctypes.c_void_p
            ).value
        )
        handle = ctypes.cast(inst, ctypes.c_void_p).value
        counter, t, again = ctypes.c_int64(time.perf_counter_ns()), ctypes.c_int64(), ctypes.c_int64()
        assert to_time(handle, ctypes.addressof(counter), ctypes.addressof(t)) == 0
        assert t.value == counter.value
        assert back(handle, t.value, ctypes.addressof(again)) == 0 and again.value == counter.value
        mock.set_clock(10**15)
        counter.value = time.perf_counter_ns()
        assert to_time(handle, ctypes.addressof(counter), ctypes.addressof(t)) == 0
        assert abs(t.value - 10**15) < 50_000_000
        counter.value = 0
        assert to_time(handle, ctypes.addressof(counter), ctypes.addressof(t)) == int(xr.Result.ERROR_TIME_INVALID)
    finally:
        xr.destroy_instance(inst)
