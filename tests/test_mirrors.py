"""Tests mirror modules: `gitsleep/x/y.py` is tested in `tests/x/test_y.py`, so a newcomer
finds a module's tests without searching. A module without logic of its own is exempt, by
name and with its reason; the modules still waiting for their mirrored test are listed
apart, and that list may only shrink."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gitsleep"

# Modules with no logic to test on their own, and why.
EXEMPT: dict[str, str] = {
    "gitsleep/__main__.py": "two lines: runs cli.main",
    "gitsleep/base/bundled.py": "the paths of the bundled files, nothing computed",
    "gitsleep/core/labels.py": "regular-expression pieces, tested through their users",
    "gitsleep/base/errors.py": "the error family and its exit codes: names and numbers",
}
# Modules with logic whose tests still live elsewhere (an end-to-end run, a neighbour's
# file): each one leaves this list when its mirrored test lands.
NOT_YET: frozenset[str] = frozenset({
    "gitsleep/base/deadline.py",
    "gitsleep/commands/init_cmd.py",
    "gitsleep/commands/validate_cmd.py",
    "gitsleep/core/honesty.py",
    "gitsleep/core/scoring.py",
    "gitsleep/core/worked.py",
    "gitsleep/flows/harvest/branch.py",
})


def mirrored_test(module: Path, root: Path = ROOT) -> Path:
    """`gitsleep/x/y.py` -> `tests/x/test_y.py` (a top-level module: `tests/test_y.py`)."""
    relative = module.relative_to(root / "gitsleep")
    return root / "tests" / relative.parent / f"test_{relative.name}"


def modules(root: Path = ROOT) -> list[str]:
    """Every module of the package but the `__init__` files (they only gather names)."""
    return sorted(path.relative_to(root).as_posix() for path in (root / "gitsleep").rglob("*.py")
                  if path.name != "__init__.py")


def untested(root: Path = ROOT) -> set[str]:
    return {name for name in modules(root) if not mirrored_test(root / name, root).is_file()}


def test_every_module_with_logic_has_its_mirrored_test() -> None:
    missing = untested() - set(EXEMPT)
    assert sorted(missing - NOT_YET) == [], "modules without a test at the mirrored path"
    assert sorted(NOT_YET - missing) == [], "tested now: take them off NOT_YET"
    assert not set(EXEMPT) & NOT_YET
    with_logic = [name for name in modules() if name not in EXEMPT]
    assert (len(with_logic) - len(missing)) / len(with_logic) >= 0.9


def test_the_lists_name_real_modules() -> None:
    names = set(modules())
    assert sorted((set(EXEMPT) | NOT_YET) - names) == []


def test_the_mirror_of_a_module(tmp_path: Path) -> None:
    (tmp_path / "gitsleep" / "core").mkdir(parents=True)
    (tmp_path / "tests" / "core").mkdir(parents=True)
    for name in ("gitsleep/cli.py", "gitsleep/core/gate.py", "gitsleep/core/search.py",
                 "gitsleep/core/__init__.py", "tests/core/test_gate.py"):
        (tmp_path / name).write_text("")
    assert mirrored_test(tmp_path / "gitsleep/core/gate.py", tmp_path) == (
        tmp_path / "tests/core/test_gate.py")
    assert mirrored_test(tmp_path / "gitsleep/cli.py", tmp_path) == tmp_path / "tests/test_cli.py"
    assert untested(tmp_path) == {"gitsleep/cli.py", "gitsleep/core/search.py"}
