"""The result codes the OpenXR registry (xr.xml) allows each function, and the mock's own.

`allowed()` reads xr_result_codes.json: for every OpenXR function the mock runtime implements,
the `successcodes` and `errorcodes` of its <command> in xr.xml. The file is generated from the
registry, which no Debian package ships (KhronosGroup/OpenXR-SDK, specification/registry/xr.xml):

    .venv/bin/python tests/mockrt/registry_codes.py path/to/xr.xml

`returned(source)` reads mockxr.c: per API function, every XrResult its return statements name,
its checking macros imply, and the static XrResult helpers it calls return.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE / "xr_result_codes.json"
MOCK_SOURCE = HERE.parent.parent / "xr" / "mockrt" / "mockxr.c"

# What the mock's checking macros return (INJECT is the test's own choice: not the mock's).
MACROS = {
    "CHECK_INSTANCE": {"XR_ERROR_HANDLE_INVALID"},
    "CHECK_SESSION": {"XR_ERROR_HANDLE_INVALID"},
    "CHECK_TYPE": {"XR_ERROR_VALIDATION_FAILURE"},
    "TWO_CALL": {"XR_ERROR_VALIDATION_FAILURE", "XR_SUCCESS", "XR_ERROR_SIZE_INSUFFICIENT"},
}
RESULT = re.compile(
    r"\bXR_(?:ERROR_[A-Z0-9_]+|SUCCESS|SESSION_LOSS_PENDING|SESSION_NOT_FOCUSED|FRAME_DISCARDED"
    r"|EVENT_UNAVAILABLE|SPACE_BOUNDS_UNAVAILABLE|TIMEOUT_EXPIRED)\b"
)
# (HOT_API and static HOT: the per-frame functions, placed together in .text.hot)
FUNCTION = re.compile(
    r"^(?:API|HOT_API|EXPORT XrResult|static (?:HOT )?XrResult) (\w+)\([^;{]*\)\s*\{(.*?)^\}", re.M | re.S
)


def allowed() -> dict[str, set[str]]:
    table = json.loads(TABLE.read_text())
    return {name: set(codes["success"]) | set(codes["error"]) for name, codes in table["commands"].items()}


def returned(source: str) -> dict[str, set[str]]:
    """XrResults each xr* function of the C source can return."""
    bodies = {m.group(1): m.group(2) for m in FUNCTION.finditer(source)}
    helpers = {name for name in bodies if not name.startswith("xr")}

    def codes(name: str, seen: frozenset = frozenset()) -> set[str]:
        body = bodies[name]
        out: set[str] = set()
        for stmt in re.findall(r"\breturn\b([^;]*);", body):
            out |= set(RESULT.findall(stmt))
        for macro, implied in MACROS.items():
            if re.search(rf"\b{macro}\(", body):
                out |= implied
        for helper in helpers - seen - {name}:
            if re.search(rf"\b{helper}\(", body):
                out |= codes(helper, seen | {name})
        return out

    return {name: codes(name) for name in bodies if name.startswith("xr")}


def violations(source: str) -> dict[str, set[str]]:
    """Per function, the codes the mock can return that the registry does not allow it."""
    table = allowed()
    out = {}
    for name, codes in returned(source).items():
        bad = codes - table.get(name, set())
        if bad:
            out[name] = bad
    return out


def generate(xml_path: Path) -> dict:
    root = ET.parse(xml_path).getroot()
    implemented = set(re.findall(r"^(?:API|HOT_API|EXPORT XrResult) (xr\w+)\(", MOCK_SOURCE.read_text(), re.M))
    commands = {}
    for block in root.findall("commands"):
        for cmd in block.findall("command"):
            proto = cmd.find("proto")
            if proto is None or proto.find("name").text not in implemented:
                continue
            commands[proto.find("name").text] = {
                "success": (cmd.get("successcodes") or "").split(","),
                "error": [c for c in (cmd.get("errorcodes") or "").split(",") if c],
            }
    version = root.find(".//type[name='XR_CURRENT_API_VERSION']")
    return {
        "source": "xr.xml, KhronosGroup/OpenXR-SDK specification/registry",
        "version": "".join(version.itertext()).split("XR_MAKE_VERSION")[-1].strip() if version is not None else "",
        "commands": dict(sorted(commands.items())),
    }


if __name__ == "__main__":
    data = generate(Path(sys.argv[1]))
    TABLE.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{TABLE}: {len(data['commands'])} functions, registry {data['version']}")
