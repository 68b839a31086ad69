"""A whole app session against the mock runtime, run in a subprocess by test_mockrt_subprocess.py.

`python scenario.py headless|gl|frames|probe` prints one JSON object with what it observed. A subprocess keeps
glfw/GLX state, DISPLAY and the API-layer environment out of the test process. XR_RUNTIME_JSON and
the HEADCAST_MOCK_* variables come from the parent.
"""

from __future__ import annotations

import ctypes
import json
import sys

import xr

from headcast.xr import mockrt

L, R = "/user/hand/left", "/user/hand/right"


def drain(inst) -> list[str]:
    out = []
    while True:
        try:
            ev = xr.poll_event(inst)
        except xr.EventUnavailable:
            return out
        if xr.StructureType(ev.type) == xr.StructureType.EVENT_DATA_SESSION_STATE_CHANGED:
            sc = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(xr.EventDataSessionStateChanged)).contents
            out.append(xr.SessionState(sc.state).name)
        else:
            out.append(xr.StructureType(ev.type).name)


def actions(inst, session):
    hands = [xr.string_to_path(inst, L), xr.string_to_path(inst, R)]
    aset = xr.create_action_set(inst, xr.ActionSetCreateInfo("gameplay", "Gameplay", 0))

    def mk(name, kind):
        return xr.create_action(
            aset,
            xr.ActionCreateInfo(
                action_type=kind, action_name=name, localized_action_name=name.title(), subaction_paths=hands
            ),
        )

    aim, trig, move, jump, buzz = (
        mk("aim", xr.ActionType.POSE_INPUT),
        mk("trigger", xr.ActionType.FLOAT_INPUT),
        mk("move", xr.ActionType.VECTOR2F_INPUT),
        mk("jump", xr.ActionType.BOOLEAN_INPUT),
        mk("haptic", xr.ActionType.VIBRATION_OUTPUT),
    )
    p = lambda s: xr.string_to_path(inst, s)  # noqa: E731
    xr.suggest_interaction_profile_bindings(
        inst,
        xr.InteractionProfileSuggestedBinding(
            interaction_profile=p("/interaction_profiles/oculus/touch_controller"),
            suggested_bindings=[
                xr.ActionSuggestedBinding(aim, p(f"{L}/input/aim/pose")),
                xr.ActionSuggestedBinding(aim, p(f"{R}/input/aim/pose")),
                xr.ActionSuggestedBinding(trig, p(f"{R}/input/trigger/value")),
                xr.ActionSuggestedBinding(move, p(f"{L}/input/thumbstick")),
                xr.ActionSuggestedBinding(jump, p(f"{R}/input/a/click")),
                xr.ActionSuggestedBinding(buzz, p(f"{R}/output/haptic")),
            ],
        ),
    )
    xr.attach_session_action_sets(session, xr.SessionActionSetsAttachInfo(action_sets=[aset]))
    space = xr.create_action_space(session, xr.ActionSpaceCreateInfo(action=aim, subaction_path=hands[1]))
    return aset, aim, trig, move, jump, buzz, space, hands


def now(inst) -> int:
    """The runtime's XrTime for CLOCK_MONOTONIC now (XR_KHR_convert_timespec_time)."""
    import time

    convert = ctypes.cast(
        xr.get_instance_proc_addr(inst, "xrConvertTimespecTimeToTimeKHR"), xr.PFN_xrConvertTimespecTimeToTimeKHR
    )
    ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    out = xr.Time()
    rc = convert(inst, ctypes.byref(xr.timespec(ns // 1_000_000_000, ns % 1_000_000_000)), ctypes.byref(out))
    if rc != 0:
        raise SystemExit(f"xrConvertTimespecTimeToTimeKHR: {rc}")
    return out.value


class GL:
    """A hidden glfw window whose GLX context the session renders into."""

    def __init__(self):
        import glfw
        from OpenGL import GLX

        if not glfw.init():
            raise SystemExit("glfw.init failed (no X display?)")
        glfw.window_hint(glfw.VISIBLE, glfw.FALSE)
        glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
        glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
        glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
        self.glfw = glfw
        self.window = glfw.create_window(64, 64, "mockrt", None, None)
        glfw.make_context_current(self.window)
        self.binding = xr.GraphicsBindingOpenGLXlibKHR(
            x_display=GLX.glXGetCurrentDisplay(),
            glx_drawable=GLX.glXGetCurrentDrawable(),
            glx_context=GLX.glXGetCurrentContext(),
        )

    def close(self):
        self.glfw.destroy_window(self.window)
        self.glfw.terminate()


def probe() -> dict:
    """One invalid call (an unknown reference space type) that the validation layer must report."""
    inst = xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="mockrt-probe"),
            enabled_extension_names=[xr.MND_HEADLESS_EXTENSION_NAME],
        )
    )
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        session = xr.create_session(inst, xr.SessionCreateInfo(system_id=sid))
        info = xr.ReferenceSpaceCreateInfo()
        ctypes.c_int.from_buffer(info, xr.ReferenceSpaceCreateInfo._reference_space_type.offset).value = 12345
        try:
            xr.create_reference_space(session, info)
        except xr.ReferenceSpaceUnsupportedError:
            return {"mode": "probe", "refused": True}
        return {"mode": "probe", "refused": False}
    finally:
        xr.destroy_instance(inst)


def refused(fn, *args) -> str | None:
    """The name of the exception pyopenxr raises for the call's result (None: XR_SUCCESS)."""
    try:
        fn(*args)
    except xr.exception.XrException as exc:
        return type(exc).__name__
    return None


def frames() -> dict:
    """The frame loop's rules in a GL session without layers: call order, a discarded frame, the
    blend mode, display times, strict's display-time check, and paced frames (wake and display
    times, for the test's load-proof bounds)."""
    import time

    report: dict = {"mode": "frames"}
    ctl = mockrt.MockControl()
    inst = xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="mockrt-frames"),
            enabled_extension_names=[xr.KHR_OPENGL_ENABLE_EXTENSION_NAME],
        )
    )
    context = GL()
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        get_req = ctypes.cast(
            xr.get_instance_proc_addr(inst, "xrGetOpenGLGraphicsRequirementsKHR"),
            xr.PFN_xrGetOpenGLGraphicsRequirementsKHR,
        )
        get_req(inst, sid, ctypes.byref(xr.GraphicsRequirementsOpenGLKHR()))
        info = xr.SessionCreateInfo(system_id=sid, next=ctypes.cast(ctypes.pointer(context.binding), ctypes.c_void_p))
        session = xr.create_session(inst, info)
        xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))

        def end(t: int, mode=xr.EnvironmentBlendMode.OPAQUE) -> None:
            xr.end_frame(session, xr.FrameEndInfo(display_time=t, environment_blend_mode=mode, layers=[]))

        def frame() -> int:
            fs = xr.wait_frame(session)
            xr.begin_frame(session)
            end(fs.predicted_display_time)
            return fs.predicted_display_time

        report["begin_before_wait"] = refused(xr.begin_frame, session)
        fs = xr.wait_frame(session)
        report["end_before_begin"] = refused(end, fs.predicted_display_time)
        xr.begin_frame(session)
        fs = xr.wait_frame(session)
        report["begin_again"] = refused(xr.begin_frame, session)  # the first frame is dropped
        report["additive"] = refused(end, fs.predicted_display_time, xr.EnvironmentBlendMode.ADDITIVE)
        report["ended"] = [ctl.frames_ended]
        end(fs.predicted_display_time)
        report["ended"].append(ctl.frames_ended)
        report["frame_index"] = ctl.frame_index
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        report["display"] = [frame() for _ in range(5)]
        report["clock"] = [before, time.clock_gettime_ns(time.CLOCK_MONOTONIC)]
        ctl.set_runtime_profile("strict")
        fs = xr.wait_frame(session)
        xr.begin_frame(session)
        report["strict_other_time"] = refused(end, fs.predicted_display_time + 1)
        report["strict_predicted_time"] = refused(end, fs.predicted_display_time)
        ctl.set_runtime_profile("monado")
        ctl.set_throttle(True)
        paced = []
        for _ in range(19):
            fs = xr.wait_frame(session)
            paced.append(
                [time.clock_gettime_ns(time.CLOCK_MONOTONIC), fs.predicted_display_time, fs.predicted_display_period]
            )
            xr.begin_frame(session)
            end(fs.predicted_display_time)
        report["paced"] = paced
        report["begin_time"] = ctl.begin_time
        xr.request_exit_session(session)
        xr.end_session(session)
        report["states"] = drain(inst)
        xr.destroy_session(session)
    finally:
        xr.destroy_instance(inst)
        context.close()
    return report


def run(mode: str) -> dict:
    from OpenGL import GL as gl

    report: dict = {"mode": mode}
    ctl = mockrt.MockControl()
    exts = [xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME]
    exts.append(xr.KHR_OPENGL_ENABLE_EXTENSION_NAME if mode == "gl" else xr.MND_HEADLESS_EXTENSION_NAME)
    inst = xr.create_instance(
        xr.InstanceCreateInfo(
            application_info=xr.ApplicationInfo(application_name="mockrt-scenario"), enabled_extension_names=exts
        )
    )
    context = GL() if mode == "gl" else None
    try:
        sid = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        info = xr.SessionCreateInfo(system_id=sid)
        if context:
            info.next = ctypes.cast(ctypes.pointer(context.binding), ctypes.c_void_p)
            try:
                xr.create_session(inst, info)
            except xr.GraphicsRequirementsCallMissingError:
                report["requirements_enforced"] = True
            get_req = ctypes.cast(
                xr.get_instance_proc_addr(inst, "xrGetOpenGLGraphicsRequirementsKHR"),
                xr.PFN_xrGetOpenGLGraphicsRequirementsKHR,
            )
            req = xr.GraphicsRequirementsOpenGLKHR()
            report["requirements_rc"] = get_req(inst, sid, ctypes.byref(req))
        session = xr.create_session(inst, info)
        stage = xr.create_reference_space(
            session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.STAGE)
        )
        view = xr.create_reference_space(
            session, xr.ReferenceSpaceCreateInfo(reference_space_type=xr.ReferenceSpaceType.VIEW)
        )
        aset, aim, trig, move, jump, buzz, aim_space, hands = actions(inst, session)
        states = drain(inst)
        xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
        if not context:
            ctl.focus()  # a headless session stays READY unless the runtime focuses it
        states += drain(inst)
        swapchain = None
        if context:
            formats = list(xr.enumerate_swapchain_formats(session))
            report["formats"] = [int(f) for f in formats]
            vcv = xr.enumerate_view_configuration_views(inst, sid, xr.ViewConfigurationType.PRIMARY_STEREO)
            w, h = 128, 96
            swapchain = xr.create_swapchain(
                session,
                xr.SwapchainCreateInfo(
                    usage_flags=xr.SwapchainUsageFlags.COLOR_ATTACHMENT_BIT | xr.SwapchainUsageFlags.SAMPLED_BIT,
                    format=gl.GL_RGBA8,
                    sample_count=1,
                    width=2 * w,
                    height=h,
                    face_count=1,
                    array_size=1,
                    mip_count=1,
                ),
            )
            images = xr.enumerate_swapchain_images(swapchain, xr.SwapchainImageOpenGLKHR)
            names = [img.image for img in images]
            report["textures"] = [bool(gl.glIsTexture(n)) for n in names]
            gl.glBindTexture(gl.GL_TEXTURE_2D, names[0])
            report["texture_size"] = [
                int(gl.glGetTexLevelParameteriv(gl.GL_TEXTURE_2D, 0, gl.GL_TEXTURE_WIDTH)),
                int(gl.glGetTexLevelParameteriv(gl.GL_TEXTURE_2D, 0, gl.GL_TEXTURE_HEIGHT)),
            ]
            fbo = gl.glGenFramebuffers(1)
            report["recommended_width"] = vcv[0].recommended_image_rect_width
        pixels = []
        ctl.set_float(f"{R}/input/trigger/value", 0.5)
        ctl.set_vec2(f"{L}/input/thumbstick", 0.0, 1.0)
        ctl.set_bool(f"{R}/input/a/click", True)
        for frame in range(4):
            if not context:  # headless by the spec: no frame calls, the time from the runtime
                display_time = now(inst)
                states += drain(inst)
                continue
            if frame == 2:
                ctl.capture_next_frame()
            fs = xr.wait_frame(session)
            display_time = fs.predicted_display_time
            xr.begin_frame(session)
            layers = []
            if swapchain is not None and fs.should_render:
                _, views = xr.locate_views(
                    session,
                    xr.ViewLocateInfo(xr.ViewConfigurationType.PRIMARY_STEREO, fs.predicted_display_time, stage),
                )
                index = xr.acquire_swapchain_image(swapchain, xr.SwapchainImageAcquireInfo())
                xr.wait_swapchain_image(swapchain, xr.SwapchainImageWaitInfo(timeout=xr.INFINITE_DURATION))
                gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, fbo)
                gl.glFramebufferTexture2D(gl.GL_FRAMEBUFFER, gl.GL_COLOR_ATTACHMENT0, gl.GL_TEXTURE_2D, names[index], 0)
                report["fbo_complete"] = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER) == gl.GL_FRAMEBUFFER_COMPLETE
                gl.glEnable(gl.GL_SCISSOR_TEST)
                for eye, colour in enumerate(((1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0))):  # left red, right blue
                    gl.glScissor(eye * w, 0, w, h)
                    gl.glClearColor(*colour)
                    gl.glClear(gl.GL_COLOR_BUFFER_BIT)
                gl.glDisable(gl.GL_SCISSOR_TEST)
                pixels.append(list(bytes(gl.glReadPixels(w, h // 2, 1, 1, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE))))
                gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
                xr.release_swapchain_image(swapchain, xr.SwapchainImageReleaseInfo())
                # elements built one by one: a ctypes array alone leaves each view's `type` at 0
                pviews = (xr.CompositionLayerProjectionView * 2)(
                    *(
                        xr.CompositionLayerProjectionView(
                            pose=views[i].pose,
                            fov=views[i].fov,
                            sub_image=xr.SwapchainSubImage(
                                swapchain=swapchain, image_rect=xr.Rect2Di(xr.Offset2Di(i * w, 0), xr.Extent2Di(w, h))
                            ),
                        )
                        for i in range(2)
                    )
                )
                layer = xr.CompositionLayerProjection(space=stage, views=pviews)
                layers = [ctypes.byref(layer)]
            xr.end_frame(
                session,
                xr.FrameEndInfo(
                    display_time=fs.predicted_display_time,
                    environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE,
                    layers=layers,
                ),
            )
            states += drain(inst)
            if frame == 0:
                report["focused_after_first_frame"] = ctl.session_state == xr.SessionState.FOCUSED.value
        xr.sync_actions(session, xr.ActionsSyncInfo(active_action_sets=[xr.ActiveActionSet(aset, xr.NULL_PATH)]))
        get = lambda fn, a, h: fn(session, xr.ActionStateGetInfo(a, h)).current_state  # noqa: E731
        stick = get(xr.get_action_state_vector2f, move, hands[0])
        report["controls"] = [
            get(xr.get_action_state_float, trig, hands[1]),
            [stick.x, stick.y],
            bool(get(xr.get_action_state_boolean, jump, hands[1])),
        ]
        report["aim_flags"] = int(xr.locate_space(aim_space, stage, display_time).location_flags)
        report["head_y"] = xr.locate_space(view, stage, display_time).pose.position.y
        xr.apply_haptic_feedback(
            session,
            xr.HapticActionInfo(buzz, hands[1]),
            xr.HapticVibration(amplitude=0.5, duration=10_000_000, frequency=xr.FREQUENCY_UNSPECIFIED),
        )
        report["haptic_count"] = ctl.haptics(R).count
        report["pixels"] = pixels
        shots = [ctl.captured(eye) for eye in (0, 1)]
        report["captures"] = [
            None
            if c is None
            else [c.frame, c.width, c.height, sorted(set(tuple(c.rgba[i : i + 4]) for i in range(0, len(c.rgba), 4)))]
            for c in shots
        ]
        xr.request_exit_session(session)
        states += drain(inst)
        xr.end_session(session)
        states += drain(inst)
        report["states"] = states
        report["frames_ended"] = ctl.frames_ended
        if swapchain is not None:
            gl.glDeleteFramebuffers(1, [fbo])
            xr.destroy_swapchain(swapchain)
        xr.destroy_space(aim_space)
        xr.destroy_session(session)
    finally:
        xr.destroy_instance(inst)
        if context:
            context.close()
    return report


if __name__ == "__main__":
    print(json.dumps({"probe": probe, "frames": frames}.get(sys.argv[1], lambda: run(sys.argv[1]))()))
