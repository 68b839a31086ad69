"""Typed XR errors with messages a user can act on.

pyopenxr raises one exception class per XrResult; the app should not have to know them.
Everything the session lets escape is an `XRError` whose text is meant to be shown as is.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    import xr


def _pyopenxr() -> Any:
    """pyopenxr once something has imported it (the session does), else None. Not imported here:
    it is about a third of start-up, and a run's servers are contacted before the XR session
    opens; an error of its own can only come from it once it is imported. (Where pyopenxr has no
    OpenXR loader, macOS, its import fails in the session, which says so.)"""
    return sys.modules.get("xr")


NO_RUNTIME = (
    "no OpenXR runtime found: set XR_RUNTIME_JSON or install/start your headset's runtime "
    "(SteamVR, Monado, WMR); without a headset, `headcast run --mock look_around` plays a motion on "
    "headcast's own mock runtime (`headcast demo`: the whole pipeline with local servers)"
)


class XRError(Exception):
    """An XR failure, with a message fit for the user (no traceback needed).

    `call` and `result` name the OpenXR function that failed and its XrResult ("xrSyncActions",
    "XR_ERROR_RUNTIME_FAILURE"), when a runtime call failed; the message says both.
    """

    def __init__(self, message: str, *, call: str = "", result: str = "") -> None:
        super().__init__(message)
        self.call = call
        self.result = result


class NoRuntimeError(XRError):
    """The loader found no usable OpenXR runtime."""


class NoHeadsetError(XRError):
    """The runtime is there but no head-mounted display is connected or available."""


class GraphicsError(XRError):
    """No graphics context the runtime accepts (no headless extension and no usable GL)."""


class SessionEnded(XRError):
    """The session is over: the runtime asked it to exit, or it was lost.

    `lost` tells the two apart: an exit request is a normal end, a loss is not.
    """

    def __init__(self, message: str, *, lost: bool, call: str = "", result: str = "") -> None:
        super().__init__(message, call=call, result=result)
        self.lost = lost


def _describe(exc: xr.XrException) -> tuple[type[XRError], str]:
    xr = _pyopenxr()  # loaded: exc is one of its exceptions
    if isinstance(exc, xr.RuntimeUnavailableError):
        return NoRuntimeError, NO_RUNTIME
    if isinstance(exc, xr.FormFactorUnavailableError):
        return NoHeadsetError, "the OpenXR runtime sees no headset: connect and power on the headset, then retry"
    if isinstance(exc, xr.FormFactorUnsupportedError):
        return NoHeadsetError, "the OpenXR runtime does not support head-mounted displays"
    if isinstance(exc, xr.InstanceLostError):
        return SessionEnded, "the OpenXR runtime went away (instance lost): restart the runtime, then headcast"
    if isinstance(exc, xr.SessionLostError):
        return SessionEnded, "the XR session was lost (headset disconnected or runtime reset)"
    if isinstance(exc, xr.GraphicsDeviceInvalidError):
        return GraphicsError, "the OpenXR runtime rejected the OpenGL context (GPU or driver the headset is not on?)"
    if isinstance(exc, xr.RuntimeFailureError):
        return XRError, "the OpenXR runtime reported an internal failure: restart it and retry"
    return XRError, str(exc).strip() or type(exc).__name__


def result_name(exc: xr.XrException) -> str:
    """The XrResult's name as the spec spells it ("XR_ERROR_RUNTIME_FAILURE")."""
    try:
        return f"XR_{exc.get_result_enum().name}"
    except (AttributeError, ValueError):
        return type(exc).__name__


def translate(exc: xr.XrException, during: str, call: str = "") -> XRError:
    """The typed, readable error for a pyopenxr exception raised by `call` while doing `during`:
    "<during>: <call> returned <XrResult>: <what it means>"."""
    kind, text = _describe(exc)
    result = result_name(exc)
    if kind is NoRuntimeError:
        return NoRuntimeError(text, call=call, result=result)
    message = f"{during}: {call + ' returned ' if call else ''}{result}: {text}"
    if kind is SessionEnded:
        return SessionEnded(message, lost=True, call=call, result=result)
    return kind(message, call=call, result=result)


@contextmanager
def xr_errors(during: str, call: str = "") -> Iterator[None]:
    """Re-raise pyopenxr failures inside the block as typed `XRError`s naming `during` and the
    OpenXR function `call` (the block should make that one call)."""
    try:
        yield
    except Exception as exc:
        xr = _pyopenxr()
        if xr is None or not isinstance(exc, xr.XrException):
            raise
        raise translate(exc, during, call) from exc
