"""XR_KHR_locate_spaces (xrLocateSpacesKHR; xrLocateSpaces in OpenXR 1.1) in the mock runtime, against
the spec: offered by the profiles of runtimes that offer it (Monado 25 as measured, SteamVR 2.19 as the
Khronos inventory lists it) and by no other; the function only on an instance that enabled it; each
space located as xrLocateSpace locates it (flags and pose); a chained XrSpaceVelocities filled; the
spec's XR_ERROR_VALIDATION_FAILURE, XR_ERROR_HANDLE_INVALID and XR_ERROR_TIME_INVALID."""

from __future__ import annotations

import ctypes

import pytest
import xr

from headcast.xr import mockrt

EXT = "XR_KHR_locate_spaces"
HEADLESS_EXTS = [xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME]
OFFERING = {"monado", "monado25", "strict", "steamvr", "steamvr-windows"}


def _locate_spaces(inst):
    fn = xr.get_instance_proc_addr(inst, "xrLocateSpacesKHR")
    return ctypes.cast(fn, xr.PFN_xrLocateSpacesKHR)


def _call(fn, h, spaces, time, count=None, velocities=None, base=None):
    arr = (xr.Space * max(len(spaces), 1))(*spaces)
    info = xr.SpacesLocateInfo(base_space=base or h.stage, time=time)
    info.space_count, info._spaces = len(spaces), ctypes.cast(arr, ctypes.POINTER(xr.Space))
    data = (xr.SpaceLocationData * max(count if count is not None else len(spaces), 1))()
    out = xr.SpaceLocations(locations=data)
    out.location_count = count if count is not None else len(spaces)
    if velocities is not None:
        out.next = ctypes.cast(ctypes.pointer(velocities), ctypes.c_void_p)
    return fn(h.session, ctypes.byref(info), ctypes.byref(out)), data


def test_offered_by_the_profiles_of_runtimes_that_offer_it(mock):
    for profile in mockrt.RUNTIME_PROFILES:
        mock.set_runtime_profile(profile)
        offered = {e.extension_name.decode() for e in xr.enumerate_instance_extension_properties()}
        assert (EXT in offered) == (profile in OFFERING), profile
        assert (EXT in mock.profile_extensions(profile)) == (profile in OFFERING), profile
    mock.set_runtime_profile("meta-pc")  # Meta's PC runtime does not offer it: enabling it fails
    with pytest.raises(xr.ExtensionNotPresentError):
        xr.create_instance(
            xr.InstanceCreateInfo(
                application_info=xr.ApplicationInfo(application_name="t"), enabled_extension_names=[EXT]
            )
        )


def test_the_function_only_on_an_instance_that_enabled_it(mock, session):
    with session(begin=False) as h:  # a 1.0 app without the extension
        with pytest.raises(xr.FunctionUnsupportedError):
            xr.get_instance_proc_addr(h.inst, "xrLocateSpacesKHR")
    with session(begin=False, extensions=[*HEADLESS_EXTS, EXT]) as h:
        assert ctypes.cast(xr.get_instance_proc_addr(h.inst, "xrLocateSpacesKHR"), ctypes.c_void_p).value
        with pytest.raises(xr.FunctionUnsupportedError):  # the 1.1 core name is for 1.1 apps
            xr.get_instance_proc_addr(h.inst, "xrLocateSpaces")


def test_each_space_is_located_as_xrLocateSpace_locates_it(mock, session):
    mock.set_pose("/user/head", (0.1, 1.7, -0.2), (0.0, 0.3826834, 0.0, 0.9238795))
    with session(focus=True, extensions=[*HEADLESS_EXTS, EXT]) as h:
        local = xr.create_reference_space(
            h.session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.LOCAL)
        )
        t = h.now()
        mock.set_clock(t)
        spaces = [h.view, local, h.stage]
        rc, data = _call(_locate_spaces(h.inst), h, spaces, t)
        assert rc == 0
        for got, space in zip(data, spaces):
            one = xr.locate_space(space, h.stage, t)
            assert got._location_flags == one.location_flags
            assert bytes(got.pose) == bytes(one.pose)  # bit for bit
        assert data[0].pose.position.y == pytest.approx(1.7) and data[0]._location_flags == mockrt.TRACKED
        # in LOCAL: the same call with another base
        rc, data = _call(_locate_spaces(h.inst), h, [h.view], t, base=local)
        assert rc == 0 and bytes(data[0].pose) == bytes(xr.locate_space(h.view, local, t).pose)
        # a head known by orientation only: the same flags, the position cleared, as xrLocateSpace does
        mock.set_tracking("/user/head", mockrt.ORIENTATION_VALID | mockrt.ORIENTATION_TRACKED)
        rc, data = _call(_locate_spaces(h.inst), h, [h.view, local], t)
        one = xr.locate_space(h.view, h.stage, t)
        assert rc == 0 and data[0]._location_flags == one.location_flags == 0x5
        assert bytes(data[0].pose) == bytes(one.pose) and data[0].pose.position.y == 0.0
        assert data[1]._location_flags == mockrt.TRACKED


def test_a_chained_space_velocities_is_filled(mock, session):
    with session(extensions=[*HEADLESS_EXTS, EXT]) as h:
        vdata = (xr.SpaceVelocityData * 2)()
        for v in vdata:
            v.velocity_flags = 0xFF
            v.linear_velocity = xr.Vector3f(9, 9, 9)
        vel = xr.SpaceVelocities()
        vel.velocity_count, vel.velocities = 2, ctypes.cast(vdata, ctypes.POINTER(xr.SpaceVelocityData))
        rc, data = _call(_locate_spaces(h.inst), h, [h.view, h.stage], h.now(), velocities=vel)
        assert rc == 0 and data[0]._location_flags == mockrt.TRACKED
        assert [(v.velocity_flags, v.linear_velocity.x) for v in vdata] == [(0, 0.0), (0, 0.0)]  # none tracked
        vel.velocity_count = 1  # not spaceCount: the spec's validation failure
        rc, _ = _call(_locate_spaces(h.inst), h, [h.view, h.stage], h.now(), velocities=vel)
        assert rc == xr.Result.ERROR_VALIDATION_FAILURE


def test_the_spec_errors(mock, session):
    with session(extensions=[*HEADLESS_EXTS, EXT]) as h:
        fn, t = _locate_spaces(h.inst), h.now()
        assert _call(fn, h, [], t)[0] == xr.Result.ERROR_VALIDATION_FAILURE  # spaceCount 0
        assert _call(fn, h, [h.view, h.stage], t, count=1)[0] == xr.Result.ERROR_VALIDATION_FAILURE
        assert _call(fn, h, [h.view], 0)[0] == xr.Result.ERROR_TIME_INVALID
        assert _call(fn, h, [h.view], -5)[0] == xr.Result.ERROR_TIME_INVALID
        gone = xr.create_reference_space(
            h.session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.LOCAL)
        )
        xr.destroy_space(gone)
        assert _call(fn, h, [h.view, gone], t)[0] == xr.Result.ERROR_HANDLE_INVALID
        assert _call(fn, h, [h.view], t, base=gone)[0] == xr.Result.ERROR_HANDLE_INVALID
        info = xr.SpacesLocateInfo(base_space=h.stage, time=t)
        arr = (xr.Space * 1)(h.view)
        info.space_count, info._spaces = 1, ctypes.cast(arr, ctypes.POINTER(xr.Space))
        out = xr.SpaceLocations(locations=(xr.SpaceLocationData * 1)())
        out.type = xr.StructureType.SPACE_LOCATION  # the wrong structure type
        assert fn(h.session, ctypes.byref(info), ctypes.byref(out)) == xr.Result.ERROR_VALIDATION_FAILURE


def test_a_lost_session_still_locates_and_says_loss_pending(mock, session):
    with session(extensions=[*HEADLESS_EXTS, EXT]) as h:
        mock.lose_session()
        rc, data = _call(_locate_spaces(h.inst), h, [h.view], h.now())
        assert rc == xr.Result.SESSION_LOSS_PENDING and data[0]._location_flags == mockrt.TRACKED


@pytest.mark.parametrize("profile", ["monado", "monado25", "strict"])
def test_an_inactive_action_space_in_the_batch_locates_none_on_monado(mock, profile):
    """Monado 25, measured (tests/monado): when an action space of the batch is inactive (an unfocused
    session's), xrLocateSpacesKHR locates none of the batch, the head included, where xrLocateSpace
    locates the head; the monado profiles do the same, strict (the spec's minimum) does not. Once
    focused (the actions active), every space is located."""
    from headcast.xr.session import XRSession

    mock.set_runtime_profile(profile)
    with XRSession() as xs:
        xs.next_frame()
        if xs.focused:
            mock.unfocus()
            xs.next_frame()
        assert not xs.focused
        t = xs.next_frame().time_ns
        data = xs._space_data
        xs._spaces_info.time = t  # the session's own batch structs (the ctypes path's), at the frame's time
        assert xs._xrLocateSpaces(xs._session_h, xs._spaces_info_p, xs._spaces_out_p) >= 0
        flags = [d._location_flags for d in data]
        head_alone = xr.locate_space(xs._view, xs._base, t).location_flags
        assert head_alone == mockrt.TRACKED
        assert flags == ([0] * 5 if profile != "strict" else [mockrt.TRACKED, 0, 0, 0, 0]), flags
        mock.focus()
        while not xs.focused:
            xs.next_frame()
        assert xs._xrLocateSpaces(xs._session_h, xs._spaces_info_p, xs._spaces_out_p) >= 0
        assert [d._location_flags for d in data] == [mockrt.TRACKED] * 5
