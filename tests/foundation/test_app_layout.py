"""The code's layout as docs/architecture.md draws it, checked on the source (no import runs):

- app/ by protocol and by role: commands/, run/, sinks/<protocol>/, mirror/, swarm/; each protocol's
  folder holds its mapping, link, sink and far-side model, and imports no other protocol's folder;
- the roles depend one way: sinks and the run loop never reach up into the commands, the mirror or
  the swarm; the mirror never into the commands or the swarm;
- no import cycle between modules, counting the imports inside functions (a cycle hidden by a
  local import is still a cycle) and leaving out only `if TYPE_CHECKING:` blocks;
- no module reaches into another's private names: no `x._name` where x is not self/cls and
  `_name` is defined nowhere in the same module, and no `from m import _name`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import REPO

PACKAGES = {"app": "headcast.app", "netcode": "headcast.netcode", "xr": "headcast.xr"}
PROTOCOLS = ("q3", "netsync", "sauer")
# Names with a leading underscore that are their library's documented API: NamedTuple's methods,
# ctypes' field table, os._exit.
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make", "_fields_", "_exit"}
APP_TOP = {"__init__.py", "__main__.py", "assets.py", "errors.py"}  # the only flat modules app/ keeps


def _modules() -> dict[str, Path]:
    mods = {}
    for folder, pkg in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = path
    return mods


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _imports(module: str, path: Path) -> set[str]:
    """The project modules `module` imports anywhere in its body (functions included), by their
    absolute names; `if TYPE_CHECKING:` blocks left out."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _type_checking_nodes(tree)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module and not module.startswith(target + "."):
                out.add(target)
    return out


def test_app_is_grouped_by_role_and_protocol():
    app = REPO / "app"
    flat = sorted(p.name for p in app.glob("*.py"))
    assert set(flat) == APP_TOP, f"flat modules in app/ other than {sorted(APP_TOP)}: {set(flat) - APP_TOP}"
    for role in ("commands", "run", "sinks", "mirror", "swarm"):
        assert (app / role / "__init__.py").is_file(), role
    for proto in PROTOCOLS:
        have = {p.name for p in (app / "sinks" / proto).glob("*.py")}
        assert {"mapping.py", "link.py", "sink.py", "farside.py"} <= have, (proto, sorted(have))


@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("root", ["headcast.app.sinks", "headcast.netcode", "headcast.app.swarm.players"])
def test_a_protocol_imports_no_other_protocol(root, proto):
    others = [f"{base}.{p}" for p in PROTOCOLS if p != proto for base in ("headcast.app.sinks", "headcast.netcode")]
    mine = f"{root}.{proto}"
    bad = sorted(
        f"{m} imports {t}"
        for m, path in MODULES.items()
        if m == mine or m.startswith(mine + ".")
        for t in _imports(m, path)
        if any(t == o or t.startswith(o + ".") for o in others)
    )
    assert bad == []


@pytest.mark.parametrize(
    "role, forbidden",
    [
        ("headcast.app.sinks", ("headcast.app.commands", "headcast.app.mirror", "headcast.app.swarm")),
        ("headcast.app.run", ("headcast.app.commands", "headcast.app.mirror", "headcast.app.swarm")),
        ("headcast.app.mirror", ("headcast.app.commands", "headcast.app.swarm")),
    ],
)
def test_roles_depend_one_way(role, forbidden):
    bad = sorted(
        f"{m} imports {t}"
        for m, path in MODULES.items()
        if m.startswith(role + ".")
        for t in _imports(m, path)
        if any(t == f or t.startswith(f + ".") for f in forbidden)
    )
    assert bad == [], f"docs/architecture.md#layering: {role} must not import {forbidden}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycles_even_through_local_imports():
    graph = {m: _imports(m, path) for m, path in MODULES.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function():
    """The check above can fail: a two-module cycle, one side imported inside a function."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert _cycles(graph) == [["a", "b"]]


def _private_reaches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not name.startswith("_") or name.startswith("__") or name in defined:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if name in PUBLIC_UNDERSCORED:
                continue
            bad.append(f"{where}:{node.lineno}: .{name}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    if node.level == 1 and node.module is None and any(path.parent.glob(alias.name + ".*")):
                        continue  # `from . import _ext`: a package's own compiled extension
                    bad.append(f"{where}:{node.lineno}: from {node.module} import {alias.name}")
    return bad


def test_no_module_reaches_into_another_modules_private_names():
    bad = [hit for path in MODULES.values() for hit in _private_reaches(path)]
    assert bad == []


def test_the_private_check_catches_a_reach(tmp_path):
    """The check above can fail: a reach into a core's private timer is found, self's is not."""
    probe = tmp_path / "probe.py"
    probe.write_text("from m import _hidden\n\n\ndef f(core, self):\n    return core._timer, self._x\n")
    assert [h.split(": ", 1)[1] for h in _private_reaches(probe)] == ["from m import _hidden", "._timer"]
