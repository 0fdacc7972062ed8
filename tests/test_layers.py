"""The package layout shows the layers, and the arrows point inward,
all the way down: the core (`gitsleep/core/`) reaches nothing of git, the forge, processes,
the network, click, the config loader, the commands or harvest, not even through a module
it imports (or one that module imports inside a function); the git edge
(`gitsleep/git_forge/`) never reaches into the commands; and no gitsleep module imports
itself back through another."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gitsleep"

# The layers, lowest first: a module may import its own layer and those before it, never one
# after it (docs/development.md draws them). The top of the package is the `cli` layer alone.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("gitsleep.base",)),
    ("core", ("gitsleep.core",)),
    ("sandbox and backends", ("gitsleep.sandbox", "gitsleep.backends")),
    ("git_forge", ("gitsleep.git_forge",)),
    ("inputs", ("gitsleep.inputs",)),
    ("report", ("gitsleep.report",)),
    ("flows", ("gitsleep.flows",)),
    ("commands", ("gitsleep.commands",)),
    ("cli", ("gitsleep.cli", "gitsleep.__main__", "gitsleep")),
)
# Imports that still climb a layer, as `importer -> imported`. The list may only shrink: a
# climb not listed fails, and so does a listed one that no longer happens.
CLIMBS: frozenset[str] = frozenset()
_ABOVE_THE_BACKENDS = ("git", "github", "click", "gitsleep.git_forge", "gitsleep.inputs",
                       "gitsleep.report", "gitsleep.flows", "gitsleep.commands", "gitsleep.cli")
# What a layer may not reach, all the way down (outside libraries included).
FORBIDDEN = {
    "core": ("git", "github", "subprocess", "socket", "http", "urllib.request", "ssl",
             "openai", "httpx", "requests", "click",
             "gitsleep.sandbox", "gitsleep.backends", "gitsleep.inputs", "gitsleep.git_forge",
             "gitsleep.report", "gitsleep.flows", "gitsleep.commands", "gitsleep.cli"),
    "git_forge": ("click", "gitsleep.commands", "gitsleep.cli", "gitsleep.flows"),
    # the sandbox and the backends are handed their task trees: they never read git
    "sandbox": _ABOVE_THE_BACKENDS,
    "backends": _ABOVE_THE_BACKENDS,
}

Graph = dict[str, set[str]]  # module -> what it imports (gitsleep modules and outside ones)


def module_name(path: Path, root: Path) -> str:
    """`gitsleep/core/epoch.py` -> `gitsleep.core.epoch`; a package is its `__init__`."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, *, with_type_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at the top or inside a function or class; those under
    `if TYPE_CHECKING:` only when asked (they never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_only(node) and not with_type_only:
            yield from _import_nodes(ast.Module(body=node.orelse, type_ignores=[]),
                                     with_type_only=with_type_only)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _import_nodes(node, with_type_only=with_type_only)


def imports_of(path: Path, name: str, modules: set[str], *,
               with_type_only: bool = True) -> set[str]:
    """The modules a file imports: `from gitsleep import config` names the module
    `gitsleep.inputs.config`, a relative import is made absolute."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _import_nodes(tree, with_type_only=with_type_only):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        found.add(base)
        found |= {f"{base}.{alias.name}" for alias in node.names
                  if f"{base}.{alias.name}" in modules}
    return found


def import_graph(root: Path = PACKAGE, *, with_type_only: bool = True,
                 with_packages: bool = True) -> Graph:
    """Every module of the package and what it imports. `with_packages`: importing
    `a.b.c` also runs `a/__init__.py` and `a/b/__init__.py`, so those count as imported."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    modules = set(paths)
    graph: Graph = {}
    for name, path in paths.items():
        found = imports_of(path, name, modules, with_type_only=with_type_only)
        if with_packages:
            found |= {".".join(target.split(".")[:end]) for target in set(found)
                      if target in modules for end in range(1, target.count(".") + 1)}
        graph[name] = found - {name}
    return graph


def reachable(graph: Graph, start: str) -> dict[str, list[str]]:
    """Everything `start` imports, directly or through gitsleep modules, each with the
    path of imports that leads to it (for the failure message)."""
    paths: dict[str, list[str]] = {start: [start]}
    todo = [start]
    while todo:
        current = todo.pop()
        for target in sorted(graph.get(current, ())):
            if target not in paths:
                paths[target] = [*paths[current], target]
                if target in graph:
                    todo.append(target)
    return paths


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles among gitsleep modules: every strongly connected group of more
    than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def forbidden_reached(graph: Graph, layer: str) -> list[str]:
    """Each forbidden module a module of `layer` reaches, with the chain of imports."""
    found = []
    for name in sorted(graph):
        if not _under(name, f"gitsleep.{layer}"):
            continue
        for target, chain in reachable(graph, name).items():
            if any(_under(target, bad) for bad in FORBIDDEN[layer]):
                found.append(" -> ".join(chain))
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_reaches_nothing_outside_its_arrows(layer: str) -> None:
    assert forbidden_reached(import_graph(), layer) == []


def test_no_gitsleep_module_imports_itself_back() -> None:
    """What runs: imports under `if TYPE_CHECKING:` never do, and a package's `__init__`
    runs before its modules, so neither closes a cycle."""
    assert cycles(import_graph(with_type_only=False, with_packages=False)) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "gitsleep"
    for relative, text in {"__init__.py": "", **files}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def test_the_check_follows_imports_through_functions_and_modules(tmp_path: Path) -> None:
    """The scan itself: the core reaches subprocess through a module that imports it
    inside a function, and a `from gitsleep import config` names the module."""
    root = _tree(tmp_path, {
        "core/__init__.py": "",
        "core/replay.py": "from gitsleep import sandbox\n",
        "sandbox.py": "def run():\n    from .runner import go\n",
        "runner.py": "import subprocess\nfrom gitsleep import config\n",
        "config.py": "import click\n"})
    graph = import_graph(root)
    assert reachable(graph, "gitsleep.core.replay")["subprocess"] == [
        "gitsleep.core.replay", "gitsleep.sandbox", "gitsleep.runner", "subprocess"]
    assert "gitsleep.config" in graph["gitsleep.runner"]
    assert "click" in reachable(graph, "gitsleep.core.replay")
    assert any(chain.endswith("-> subprocess") for chain in forbidden_reached(graph, "core"))


def test_the_check_finds_a_cycle_but_not_a_type_only_one(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "a.py": "import gitsleep.b\n",
        "b.py": "def f():\n    from gitsleep import c\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gitsleep import b\n"
                "def g():\n    from gitsleep.a import x\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gitsleep.e\n",
        "e.py": "import gitsleep.d\n"})
    graph = import_graph(root, with_type_only=False, with_packages=False)
    assert cycles(graph) == [["gitsleep.a", "gitsleep.b", "gitsleep.c"]]


def test_the_layers_are_folders_with_their_modules() -> None:
    """The core and the git edge are packages of their own, not loose files at the top."""
    for layer, module in (("core", "epoch"), ("core", "gate"), ("git_forge", "gitops"),
                          ("git_forge", "forge")):
        assert (PACKAGE / layer / f"{module}.py").is_file()
        assert not (PACKAGE / f"{module}.py").exists()


def layer_of(module: str) -> int:
    """The index in LAYERS of the layer that holds `module` (the most specific prefix)."""
    best, found = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _under(module, prefix) and len(prefix) > best:
                best, found = len(prefix), index
    return found


def climbs(graph: Graph) -> set[str]:
    """Every direct import of a gitsleep module from a layer above the importer's."""
    return {f"{name} -> {target}" for name, targets in graph.items() for target in targets
            if target in graph and target != "gitsleep" and layer_of(target) > layer_of(name)}


def test_every_module_is_in_a_layer() -> None:
    assert [name for name in import_graph() if layer_of(name) < 0] == []


def test_only_the_cli_sits_at_the_top_of_the_package() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "cli.py"]


def test_no_import_climbs_a_layer() -> None:
    found = climbs(import_graph(with_packages=False))
    assert sorted(found - CLIMBS) == [], "new imports that climb a layer"
    assert sorted(CLIMBS - found) == [], "climbs that are gone: take them off CLIMBS"


def test_base_reaches_nothing_of_gitsleep_above_it() -> None:
    graph = import_graph()
    assert [f"{name} -> {target}" for name in graph if _under(name, "gitsleep.base")
            for target in graph[name] if target in graph and target != "gitsleep"
            and not _under(target, "gitsleep.base")] == []


def test_the_layer_check_finds_a_climb(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "core/__init__.py": "", "core/gate.py": "from gitsleep.inputs import config\n",
        "inputs/__init__.py": "", "inputs/config.py": "from gitsleep.core import gate\n"})
    graph = import_graph(root, with_packages=False)
    assert climbs(graph) == {"gitsleep.core.gate -> gitsleep.inputs",
                             "gitsleep.core.gate -> gitsleep.inputs.config"}
