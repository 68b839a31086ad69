"""The mock runtime as the real loader sees it: loading, exports, dispatch table, instance rules."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess

import pytest
import xr

from headcast.xr import mockrt

CORE_1_0 = """GetInstanceProcAddr EnumerateApiLayerProperties EnumerateInstanceExtensionProperties
CreateInstance DestroyInstance GetInstanceProperties PollEvent ResultToString StructureTypeToString
GetSystem GetSystemProperties EnumerateEnvironmentBlendModes CreateSession DestroySession
EnumerateReferenceSpaces CreateReferenceSpace GetReferenceSpaceBoundsRect CreateActionSpace LocateSpace
DestroySpace EnumerateViewConfigurations GetViewConfigurationProperties EnumerateViewConfigurationViews
EnumerateSwapchainFormats CreateSwapchain DestroySwapchain EnumerateSwapchainImages AcquireSwapchainImage
WaitSwapchainImage ReleaseSwapchainImage BeginSession EndSession RequestExitSession WaitFrame BeginFrame
EndFrame LocateViews StringToPath PathToString CreateActionSet DestroyActionSet CreateAction DestroyAction
SuggestInteractionProfileBindings AttachSessionActionSets GetCurrentInteractionProfile
GetActionStateBoolean GetActionStateFloat GetActionStateVector2f GetActionStatePose SyncActions
EnumerateBoundSourcesForAction GetInputSourceLocalizedName ApplyHapticFeedback StopHapticFeedback""".split()

GIPA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))


class LoaderInfo(ctypes.Structure):
    _fields_ = [
        ("structType", ctypes.c_int),
        ("structVersion", ctypes.c_uint32),
        ("structSize", ctypes.c_size_t),
        ("minInterfaceVersion", ctypes.c_uint32),
        ("maxInterfaceVersion", ctypes.c_uint32),
        ("minApiVersion", ctypes.c_uint64),
        ("maxApiVersion", ctypes.c_uint64),
    ]


class RuntimeRequest(ctypes.Structure):
    _fields_ = [
        ("structType", ctypes.c_int),
        ("structVersion", ctypes.c_uint32),
        ("structSize", ctypes.c_size_t),
        ("runtimeInterfaceVersion", ctypes.c_uint32),
        ("runtimeApiVersion", ctypes.c_uint64),
        ("getInstanceProcAddr", ctypes.c_void_p),
    ]


def version(major, minor, patch=0):
    return (major << 48) | (minor << 32) | patch


def negotiate(mock, **overrides):
    """Call the runtime's xrNegotiateLoaderRuntimeInterface as the loader does."""
    info = LoaderInfo(1, 1, ctypes.sizeof(LoaderInfo), 1, 1, version(1, 0), version(1, 1, 0xFFF))
    req = RuntimeRequest(3, 1, ctypes.sizeof(RuntimeRequest), 0, 0, None)
    for key, value in overrides.items():
        setattr(info, key, value)
    fn = ctypes.CDLL(str(mock.library)).xrNegotiateLoaderRuntimeInterface
    fn.argtypes = [ctypes.POINTER(LoaderInfo), ctypes.POINTER(RuntimeRequest)]
    fn.restype = ctypes.c_int
    return fn(ctypes.byref(info), ctypes.byref(req)), req


def test_the_loader_loads_it_through_xr_runtime_json(mock, session):
    names = {e.extension_name for e in xr.enumerate_instance_extension_properties()}
    assert {b"XR_MND_headless", b"XR_KHR_convert_timespec_time", b"XR_KHR_opengl_enable"} <= names
    with session(begin=False) as h:
        assert xr.get_instance_properties(h.inst).runtime_name == b"MockXR (headcast)"
        assert mock.instance_alive
    assert not mock.instance_alive


def test_only_the_negotiation_and_control_symbols_are_exported(mock):
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to list the library's symbols"
    out = subprocess.run(
        [nm, "-D", "--defined-only", str(mock.library)], capture_output=True, text=True, check=True
    ).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split()[1] in "TDB"}
    assert "xrNegotiateLoaderRuntimeInterface" in exported
    assert {s for s in exported if not s.startswith("mockxr_")} == {"xrNegotiateLoaderRuntimeInterface"}
    assert "mockxr_reset" in exported


def test_negotiation_checks_the_loader_structs(mock):
    rc, req = negotiate(mock)
    assert rc == 0 and req.runtimeInterfaceVersion == 1 and req.getInstanceProcAddr
    assert req.runtimeApiVersion == version(1, 1)
    rc, req = negotiate(mock, maxApiVersion=version(1, 0, 34))
    assert rc == 0 and req.runtimeApiVersion == version(1, 0)
    assert negotiate(mock, structType=2)[0] == xr.Result.ERROR_INITIALIZATION_FAILED
    assert negotiate(mock, structSize=8)[0] == xr.Result.ERROR_INITIALIZATION_FAILED
    assert negotiate(mock, minInterfaceVersion=2, maxInterfaceVersion=2)[0] == xr.Result.ERROR_INITIALIZATION_FAILED


def test_the_core_list_is_the_headers():
    """CORE_1_0 is every OpenXR 1.0 prototype (no vendor/KHR suffix) of the header the runtime is built with."""
    from headcast.xr.mockrt.build import HEADERS

    text = HEADERS.read_text()
    text = text.split("#define XR_VERSION_1_1 1")[0]  # a newer header: 1.0's section only
    protos = set(re.findall(r"XRAPI_ATTR XrResult XRAPI_CALL xr(\w+)\(", text))
    core = {name for name in protos if not re.search(r"[A-Z]{2,}X?$", name)}
    assert core == set(CORE_1_0) and len(core) == 55


def test_all_55_core_functions_resolve_in_the_runtime_table(mock, session):
    assert len(CORE_1_0) == 55
    gipa = GIPA(negotiate(mock)[1].getInstanceProcAddr)
    fn = ctypes.c_void_p()
    # before an instance: only the three global functions (and itself)
    for name in ("xrEnumerateInstanceExtensionProperties", "xrCreateInstance", "xrEnumerateApiLayerProperties"):
        assert gipa(None, name.encode(), ctypes.byref(fn)) == 0 and fn.value
    assert gipa(None, b"xrCreateSession", ctypes.byref(fn)) == xr.Result.ERROR_HANDLE_INVALID
    with session(begin=False) as h:
        handle = ctypes.cast(h.inst, ctypes.c_void_p)  # the loader hands out the runtime's own handle
        for name in CORE_1_0:
            fn.value = None
            assert gipa(handle, f"xr{name}".encode(), ctypes.byref(fn)) == 0, name
            assert fn.value, name
        fn.value = 1
        assert gipa(handle, b"xrNoSuchFunction", ctypes.byref(fn)) == xr.Result.ERROR_FUNCTION_UNSUPPORTED
        assert fn.value is None
        # extension functions only when their extension is enabled; xrLocateSpaces only for 1.1 apps
        assert gipa(handle, b"xrConvertTimespecTimeToTimeKHR", ctypes.byref(fn)) == 0
        assert (
            gipa(handle, b"xrGetOpenGLGraphicsRequirementsKHR", ctypes.byref(fn))
            == xr.Result.ERROR_FUNCTION_UNSUPPORTED
        )
        assert gipa(handle, b"xrLocateSpaces", ctypes.byref(fn)) == xr.Result.ERROR_FUNCTION_UNSUPPORTED


def test_one_instance_at_a_time(mock, session):
    with session(begin=False):
        with pytest.raises(xr.LimitReachedError):
            xr.create_instance(xr.InstanceCreateInfo(application_info=xr.ApplicationInfo(application_name="second")))
    with session(begin=False):  # the slot frees on destroy
        pass


def test_unknown_extension_and_api_version_are_refused(mock):
    with pytest.raises(xr.ExtensionNotPresentError):
        xr.create_instance(
            xr.InstanceCreateInfo(
                application_info=xr.ApplicationInfo(application_name="t"),
                enabled_extension_names=["XR_KHR_vulkan_enable"],
            )
        )
    assert not mock.instance_alive


def test_system_views_and_timespec(mock, session):
    with session(begin=False) as h:
        props = xr.get_system_properties(h.inst, h.system)
        assert props.tracking_properties.position_tracking
        views = xr.enumerate_view_configuration_views(h.inst, h.system, xr.ViewConfigurationType.PRIMARY_STEREO)
        assert len(views) == 2 and views[0].recommended_image_rect_width > 0
        assert list(
            xr.enumerate_environment_blend_modes(h.inst, h.system, xr.ViewConfigurationType.PRIMARY_STEREO)
        ) == [xr.EnvironmentBlendMode.OPAQUE]
        with pytest.raises(xr.FormFactorUnsupportedError):
            xr.get_system(h.inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HANDHELD_DISPLAY))
        mock.set_hmd_present(False)
        with pytest.raises(xr.FormFactorUnavailableError):
            xr.get_system(h.inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        # XrTime is CLOCK_MONOTONIC in nanoseconds
        import time

        convert = ctypes.cast(
            xr.get_instance_proc_addr(h.inst, "xrConvertTimespecTimeToTimeKHR"), xr.PFN_xrConvertTimespecTimeToTimeKHR
        )
        ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        ts = xr.timespec(ns // 1_000_000_000, ns % 1_000_000_000)
        out = xr.Time()
        assert convert(h.inst, ctypes.byref(ts), ctypes.byref(out)) == 0
        assert out.value == ns
        buf = ctypes.create_string_buffer(xr.MAX_RESULT_STRING_SIZE)
        xr.result_to_string(h.inst, xr.Result.ERROR_PATH_UNSUPPORTED, buf)
        assert buf.value == b"XR_ERROR_PATH_UNSUPPORTED"
        name = ctypes.create_string_buffer(xr.MAX_STRUCTURE_NAME_SIZE)
        xr.structure_type_to_string(h.inst, xr.StructureType.SPACE_LOCATION, name)
        assert name.value == b"XR_TYPE_SPACE_LOCATION"
        vc = xr.get_view_configuration_properties(h.inst, h.system, xr.ViewConfigurationType.PRIMARY_STEREO)
        assert vc.view_configuration_type == xr.ViewConfigurationType.PRIMARY_STEREO and not vc.fov_mutable
        with pytest.raises(xr.ViewConfigurationTypeUnsupportedError):
            xr.get_view_configuration_properties(h.inst, h.system, xr.ViewConfigurationType.PRIMARY_MONO)


def test_reference_spaces_and_stage_fallback(mock, session):
    with session(begin=False) as h:
        kinds = set(xr.enumerate_reference_spaces(h.session))
        assert {xr.ReferenceSpaceType.VIEW, xr.ReferenceSpaceType.LOCAL, xr.ReferenceSpaceType.STAGE} <= {
            xr.ReferenceSpaceType(k) for k in kinds
        }
        bounds = xr.get_reference_space_bounds_rect(h.session, xr.ReferenceSpaceType.STAGE)
        assert bounds.width > 0
    mock.set_stage_supported(False)  # a seated-only runtime: apps fall back to LOCAL
    with pytest.raises(xr.ReferenceSpaceUnsupportedError):
        with session(begin=False):
            pass
    with session(begin=False, base=xr.ReferenceSpaceType.LOCAL) as h:
        kinds = {xr.ReferenceSpaceType(k) for k in xr.enumerate_reference_spaces(h.session)}
        assert xr.ReferenceSpaceType.STAGE not in kinds and xr.ReferenceSpaceType.LOCAL in kinds
        assert h.locate(h.view).pose.position.y == pytest.approx(0.0)  # LOCAL sits at eye height


def test_openxr_1_1_apps_get_local_floor_and_locate_spaces(mock, session):
    mock.set_pose("/user/head", (0.1, 1.7, -0.2))
    with session(api_version=xr.Version(1, 1, 0)) as h:
        kinds = {xr.ReferenceSpaceType(k) for k in xr.enumerate_reference_spaces(h.session)}
        assert xr.ReferenceSpaceType.LOCAL_FLOOR in kinds
        local = xr.create_reference_space(
            h.session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.LOCAL)
        )
        t = h.now()
        spaces = (xr.Space * 2)(h.view, local)
        info = xr.SpacesLocateInfo(base_space=h.stage, time=t, spaces=spaces)
        data = (xr.SpaceLocationData * 2)()
        out = xr.SpaceLocations(locations=data)
        assert xr.raw_functions.xrLocateSpaces(h.session, ctypes.byref(info), ctypes.byref(out)) == 0
        assert (data[0].pose.position.x, data[0].pose.position.y) == pytest.approx((0.1, 1.7))
        assert data[1].pose.position.y == pytest.approx(1.6) and data[1]._location_flags == mockrt.TRACKED
    with session() as h:  # a 1.0 app sees neither
        kinds = {xr.ReferenceSpaceType(k) for k in xr.enumerate_reference_spaces(h.session)}
        assert xr.ReferenceSpaceType.LOCAL_FLOOR not in kinds
