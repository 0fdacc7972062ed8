"""The package layout shows the layers (issue 28), and the arrows point inward: the core
(`gitsleep/core/`) imports nothing of git, the forge, click, the config loader, the commands
or harvest, and the git edge (`gitsleep/git_forge/`) never reaches into the commands."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gitsleep"
# what each layer may not import: the module itself or anything below it
FORBIDDEN = {
    "core": ("git", "github", "click", "gitsleep.git_forge", "gitsleep.commands",
             "gitsleep.cli", "gitsleep.config", "gitsleep.harvest", "gitsleep.prepare",
             "gitsleep.run", "gitsleep.report", "gitsleep.backends.openai_compat",
             "gitsleep.backends.command", "gitsleep.backends.select"),
    "git_forge": ("click", "gitsleep.commands", "gitsleep.cli", "gitsleep.harvest"),
}


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, top level or inside a function, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "gitsleep":  # `from gitsleep import config` names a module
                found += [(node.lineno, f"gitsleep.{alias.name}") for alias in node.names]
    return found


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_outside_its_arrows(layer: str) -> None:
    found = [f"{path.relative_to(PACKAGE)}:{line}: imports {name}"
             for path in sorted((PACKAGE / layer).glob("*.py"))
             for line, name in imports_of(path)
             if any(_under(name, bad) for bad in FORBIDDEN[layer])]
    assert found == []


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The scan itself: a function-level `from gitsleep import config` is found."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from gitsleep import config\n    import click\n")
    names = [name for _, name in imports_of(module)]
    assert "gitsleep.config" in names and "click" in names


def test_the_layers_are_folders_with_their_modules() -> None:
    """The core and the git edge are packages of their own, not loose files at the top."""
    for layer, module in (("core", "epoch"), ("core", "gate"), ("git_forge", "gitops"),
                          ("git_forge", "forge")):
        assert (PACKAGE / layer / f"{module}.py").is_file()
        assert not (PACKAGE / f"{module}.py").exists()
