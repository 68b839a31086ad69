"""Every XrResult the mock runtime can return from a function is one the OpenXR registry (xr.xml)
allows that function: the C source's return statements, checking macros and XrResult helpers,
per function, against xr_result_codes.json (generated from xr.xml by registry_codes.py)."""

from __future__ import annotations

import re

from mockrt.registry_codes import MOCK_SOURCE, allowed, returned, violations


def test_every_return_code_is_one_the_registry_allows():
    assert violations(MOCK_SOURCE.read_text()) == {}


def test_the_check_covers_every_function_the_runtime_dispatches():
    source = MOCK_SOURCE.read_text()
    found = returned(source)
    dispatched = set(re.findall(r"\bFN\((xr\w+)\)", source))
    assert len(dispatched) == 55 and dispatched <= set(found)  # the core table the loader fills its own from
    assert {
        "xrLocateSpaces",
        "xrGetOpenGLGraphicsRequirementsKHR",
        "xrConvertTimespecTimeToTimeKHR",
        "xrConvertTimeToTimespecTimeKHR",
        "xrNegotiateLoaderRuntimeInterface",
    } <= set(found)
    assert set(found) <= set(allowed())  # every one of them is in the table
    assert all(found[name] for name in found)  # and each returns something the parser saw


def test_the_check_finds_a_code_the_registry_does_not_allow():
    """The defect hello_xr found, put back: xrCreateActionSpace refusing an unattached action set."""
    source = MOCK_SOURCE.read_text()
    planted = re.sub(
        r"(API xrCreateActionSpace\([^{]*\{)",
        r"\1\n    if (!info) return XR_ERROR_ACTIONSET_NOT_ATTACHED;",
        source,
        count=1,
    )
    assert violations(planted) == {"xrCreateActionSpace": {"XR_ERROR_ACTIONSET_NOT_ATTACHED"}}
    # a helper's code counts for the functions that call it
    planted = source.replace(
        "if (!obj_live(info->action, OBJ_ACTION)) return XR_ERROR_HANDLE_INVALID;\n    if (info->action->type != type)",
        "if (!obj_live(info->action, OBJ_ACTION)) return XR_ERROR_TIME_INVALID;\n    if (info->action->type != type)",
        1,
    )
    assert planted != source
    assert set(violations(planted)) == {
        "xrGetActionStateBoolean",
        "xrGetActionStateFloat",
        "xrGetActionStateVector2f",
        "xrGetActionStatePose",
    }
