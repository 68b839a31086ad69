"""The one action set headcast reads, and its suggested bindings per controller profile.

The binding table is data (see docs/protocols/openxr.md#bindings). Each profile is suggested in
its own call: a runtime that rejects one path (`XR_ERROR_PATH_UNSUPPORTED`) rejects the whole
call, and one unknown profile must not cost the others.
"""

from __future__ import annotations

from dataclasses import dataclass

try:
    import xr
except Exception:  # noqa: BLE001 - pyopenxr has no OpenXR loader for this system (macOS: NotImplementedError)
    xr = None  # the binding table stays readable (trace replay uses it); no session can open


LEFT = "/user/hand/left"
RIGHT = "/user/hand/right"
HANDS = (LEFT, RIGHT)


@dataclass(frozen=True, slots=True)
class ActionSpec:
    name: str
    localized: str
    type: xr.ActionType
    per_hand: bool  # declared with both hands as subaction paths (read per hand)


ACTIONS: tuple[ActionSpec, ...] = (
    ()
    if xr is None
    else (
        ActionSpec("aim_pose", "Aim pose", xr.ActionType.POSE_INPUT, True),
        ActionSpec("grip_pose", "Grip pose", xr.ActionType.POSE_INPUT, True),
        ActionSpec("trigger", "Trigger / fire", xr.ActionType.FLOAT_INPUT, True),
        ActionSpec("squeeze", "Squeeze", xr.ActionType.FLOAT_INPUT, True),
        ActionSpec("move", "Move stick", xr.ActionType.VECTOR2F_INPUT, False),
        ActionSpec("turn", "Turn stick", xr.ActionType.VECTOR2F_INPUT, False),
        ActionSpec("jump", "Jump", xr.ActionType.BOOLEAN_INPUT, False),
        ActionSpec("menu", "Menu", xr.ActionType.BOOLEAN_INPUT, False),
    )
)

_POSES = (("aim_pose", "input/aim/pose"), ("grip_pose", "input/grip/pose"))


def _both(action: str, component: str) -> tuple[tuple[str, str], ...]:
    return tuple((action, f"{hand}/{component}") for hand in HANDS)


def _profile(*rows: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    poses = tuple(row for action, comp in _POSES for row in _both(action, comp))
    return poses + tuple(row for group in rows for row in group)


# profile path -> ((action name, input path), ...). Fire is the float trigger everywhere
# (the runtime converts select/click to 0.0/1.0 on the simple controller); sticks are the left
# hand's for moving and the right hand's for turning; jump and menu as the profile allows.
BINDINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "/interaction_profiles/khr/simple_controller": _profile(
        _both("trigger", "input/select/click"),
        _both("menu", "input/menu/click"),
    ),
    "/interaction_profiles/oculus/touch_controller": _profile(
        _both("trigger", "input/trigger/value"),
        _both("squeeze", "input/squeeze/value"),
        (
            ("move", f"{LEFT}/input/thumbstick"),
            ("turn", f"{RIGHT}/input/thumbstick"),
            ("jump", f"{RIGHT}/input/a/click"),
            ("menu", f"{LEFT}/input/menu/click"),
        ),
    ),
    "/interaction_profiles/valve/index_controller": _profile(
        _both("trigger", "input/trigger/value"),
        _both("squeeze", "input/squeeze/value"),
        # Index has no menu button: the left B is the customary stand-in.
        (
            ("move", f"{LEFT}/input/thumbstick"),
            ("turn", f"{RIGHT}/input/thumbstick"),
            ("jump", f"{RIGHT}/input/a/click"),
            ("menu", f"{LEFT}/input/b/click"),
        ),
    ),
    "/interaction_profiles/htc/vive_controller": _profile(
        _both("trigger", "input/trigger/value"),
        _both("squeeze", "input/squeeze/click"),
        (
            ("move", f"{LEFT}/input/trackpad"),
            ("turn", f"{RIGHT}/input/trackpad"),
            ("jump", f"{RIGHT}/input/trackpad/click"),
        ),
        _both("menu", "input/menu/click"),
    ),
    "/interaction_profiles/microsoft/motion_controller": _profile(
        _both("trigger", "input/trigger/value"),
        _both("squeeze", "input/squeeze/click"),
        (
            ("move", f"{LEFT}/input/thumbstick"),
            ("turn", f"{RIGHT}/input/thumbstick"),
            ("jump", f"{RIGHT}/input/thumbstick/click"),
        ),
        _both("menu", "input/menu/click"),
    ),
}


class ActionSet:
    """The created action set and actions of one instance, plus the profiles the runtime took."""

    def __init__(self, instance: xr.Instance) -> None:
        """Raises pyopenxr's exceptions; the session turns them into XRErrors."""
        self.hand_paths = tuple(xr.string_to_path(instance, h) for h in HANDS)
        self.handle = xr.create_action_set(instance, xr.ActionSetCreateInfo("headcast", "headcast controls", 0))
        self.actions: dict[str, xr.Action] = {}
        for spec in ACTIONS:
            self.actions[spec.name] = xr.create_action(
                self.handle,
                xr.ActionCreateInfo(
                    action_name=spec.name,
                    localized_action_name=spec.localized,
                    action_type=spec.type,
                    subaction_paths=list(self.hand_paths) if spec.per_hand else None,
                ),
            )
        self.accepted: list[str] = []
        self.rejected: dict[str, str] = {}
        for profile, rows in BINDINGS.items():
            self._suggest(instance, profile, rows)

    def _suggest(self, instance: xr.Instance, profile: str, rows: tuple[tuple[str, str], ...]) -> None:
        try:
            bindings = [xr.ActionSuggestedBinding(self.actions[a], xr.string_to_path(instance, p)) for a, p in rows]
            xr.suggest_interaction_profile_bindings(
                instance,
                xr.InteractionProfileSuggestedBinding(
                    interaction_profile=xr.string_to_path(instance, profile),
                    suggested_bindings=bindings,
                ),
            )
        except (xr.PathUnsupportedError, xr.PathInvalidError) as exc:
            # A runtime without this profile (or with an older table) refuses it; the other
            # profiles still work, so record and go on.
            self.rejected[profile] = type(exc).__name__
        else:
            self.accepted.append(profile)

    def destroy(self) -> None:
        # Destroying the set destroys its actions.
        xr.destroy_action_set(self.handle)
