"""The README and the documentation site: short, first things first, and never stale.

`mkdocs build --strict` runs here, inside the README's test command, so a broken link between
pages, a link to a missing anchor or a page missing from the nav fails the tests and CI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec
from gitsleep.flows import consolidate as consolidate_flow
from gitsleep.flows import status as status_flow
from gitsleep.inputs.config import Config
from gitsleep.inputs.tasks import parse_task_file
from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git

pytestmark = pytest.mark.slow  # mkdocs build --strict and the documented commands

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DEMO_COMMAND = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/gitsleep demo"
TEST_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
                ".venv/bin/python -m pytest")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(config), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    done = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "install" / "index.html").is_file()
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True and config["theme"]["name"] == "material"


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The build above would catch one: the same site with a dead link does not build."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with (tmp_path / "docs" / "index.md").open("a") as handle:
        handle.write("\nSee [the missing page](no-such-page.md) and [x](install.md#no-anchor).\n")
    done = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stdout + done.stderr


def test_the_readme_is_short_and_its_two_commands_come_first() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    blocks = fenced(text)
    assert [body.strip() for _, body in blocks[:2]] == [DEMO_COMMAND, TEST_COMMAND]
    before_first_block = text[:text.index("```")]
    assert before_first_block.count("\n") <= 4  # the title and one sentence, nothing else


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in script.splitlines() if line and not line.startswith("#")]
    assert commands[-1] == TEST_COMMAND, commands[-1]
    # what else CI does before it is said beside the command
    readme = README.read_text(encoding="utf-8")
    said = readme[:readme.index(TEST_COMMAND)]
    assert "exactly what CI runs" not in said
    if "aider" in script:
        assert "installs aider in a venv of its own for the real-agent test" in \
            " ".join(said.split())


def test_the_first_screen_says_what_it_is_how_to_install_and_what_next() -> None:
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:45])
    assert "gitsleep makes the instructions an AI agent reads" in first_screen
    assert "pull request" in first_screen and "held-out" in first_screen
    assert "**Next:**" in first_screen and "gitsleep init" in first_screen
    text = README.read_text(encoding="utf-8")
    assert 'pip install "git+https://github.com/<owner>/gitsleep@<sha>"' in text


def test_every_readme_link_into_docs_names_a_page_of_the_site() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def pages(entries: list[object]) -> list[str]:
        found: list[str] = []
        for entry in entries:
            for value in (entry.values() if isinstance(entry, dict) else [entry]):
                found += pages(value) if isinstance(value, list) else [str(value)]
        return found

    listed = set(pages(nav))
    assert listed == {p.name for p in DOCS.glob("*.md")}
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text(encoding="utf-8"))
    assert len(links) >= 15
    for link in links:
        assert (ROOT / link).is_file(), link
        assert Path(link).name in listed, link


def test_no_pin_names_a_release_tag_that_does_not_exist() -> None:
    """gitsleep has no tags yet: README, docs and the shipped templates pin commit SHAs."""
    tags = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True,
                          check=False).stdout.split()
    shipped = [README, *DOCS.glob("*.md"), ROOT / "examples/workflows/gitsleep-nightly.yml",
               ROOT / "gitsleep/templates/gitsleep.yml"]
    pinned = re.compile(r"(?:@|rev: |/gitsleep/)(v\d+\.\d+\.\d+)\b")
    for path in shipped:
        for tag in pinned.findall(path.read_text(encoding="utf-8")):
            assert tag in tags, f"{path.name} pins {tag}, which is not a tag of this repository"


def test_the_configuration_reference_lists_every_key_with_its_real_default() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    language, body = fenced(text)[0]
    assert language == "yaml"
    documented = yaml.safe_load(body)
    assert set(documented) == set(Config.model_fields)
    for key, value in documented.items():
        if key == "skills":
            continue
        default = Config.model_fields[key].get_default(call_default_factory=True)
        default = default.model_dump() if hasattr(default, "model_dump") else default
        if isinstance(value, dict) and isinstance(default, dict):
            assert value.items() <= default.items(), key
        else:
            assert value == default, f"{key}: documented {value!r}, default {default!r}"


def test_the_example_task_line_is_a_valid_task(tmp_path: Path) -> None:
    readme = [body for lang, body in fenced(README.read_text(encoding="utf-8")) if lang == "json"]
    page = [body for lang, body in fenced((DOCS / "tasks.md").read_text()) if lang == "json"]
    assert readme and readme[0] == page[0]
    task = json.loads(readme[0])
    assert {"id", "split", "prompt", "judge"} <= set(task)
    (tmp_path / "tasks.jsonl").write_text(readme[0])
    loaded, problems = parse_task_file(tmp_path / "tasks.jsonl", "tasks.jsonl")
    assert problems == []
    assert [(t.id, t.split) for t in loaded] == [("brief-07", "val")]


def test_the_demo_output_the_readme_quotes_is_what_the_demo_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    quoted = [body for lang, body in fenced(README.read_text(encoding="utf-8"))
              if lang == "text"][0]
    isolate_git(monkeypatch, tmp_path)
    result = run_cli(capsys, "demo")
    assert result.code == 0, result.err
    printed = [line.rstrip() for line in result.out.splitlines()]
    shown = [line.rstrip() for line in quoted.strip().splitlines()]
    # "It starts like this": the demo's first lines, in order, none left out
    assert printed[:len(shown)] == shown


COMMON_FLAGS = {"--help", "-v", "--verbose", "-q", "--quiet"}  # the group's, said once


def documented_flags(commands_md: str) -> dict[str, set[str]]:
    """Per command, the flags its entry in the command list at the top of commands.md
    names (the entry's first line and the lines indented under it)."""
    block = fenced(commands_md)[0][1]
    entries: dict[str, list[str]] = {}
    current = None
    for line in block.splitlines():
        head = re.match(r"  ([a-z]+)\s{2,}", line)
        if head:
            current = head.group(1)
            entries[current] = [line[head.end():]]
        elif current and line.startswith(" " * 16):
            entries[current].append(line)
    return {name: set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", " ".join(lines)))
            for name, lines in entries.items()}


def test_every_commands_help_flags_are_the_ones_commands_md_lists() -> None:
    """Each command's flags (as `--help` lists them) and the flags its entry in
    docs/commands.md names are the same set: none undocumented, none that does not exist."""
    from gitsleep.cli import COMMANDS, cli

    documented = documented_flags((DOCS / "commands.md").read_text(encoding="utf-8"))
    assert set(documented) == set(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(click_context(), name)
        assert command is not None
        flags = {opt for param in command.params
                 for opt in (*param.opts, *param.secondary_opts) if opt.startswith("--")}
        assert flags - COMMON_FLAGS == documented[name], name


def click_context() -> click.Context:
    from gitsleep.cli import cli

    return click.Context(cli)


def test_messages_the_docs_quote_are_the_ones_the_code_prints() -> None:
    """The docs and what the commands print agree (status words, the line a
    simulated night prints, the agent's not-found line)."""
    commands = " ".join((DOCS / "commands.md").read_text(encoding="utf-8").split())
    merged = status_flow.freshness({"merged": True, "up_to_date": False})
    stale = status_flow.freshness({"merged": False, "up_to_date": False})
    assert f"`{merged.replace('`', '')}`" in commands
    assert f"`{stale.split(';')[0]}; ...`" in commands
    assert f"`{status_flow.freshness({'up_to_date': True})}`" in commands
    git_md = " ".join((DOCS / "git.md").read_text(encoding="utf-8").split())
    assert f"`kept local: {consolidate_flow.SIMULATED_LOCAL.split(': pass')[0]}: ...`" in git_md
    agent = AgentCliBackend(AgentSpec(command=("./tools/agent.py",)), env={})
    said = str(agent._spawn_error(FileNotFoundError()))
    clis = " ".join((DOCS / "agent-clis.md").read_text(encoding="utf-8").split())
    assert f"`{said.split(' so a relative path')[0]} ...`" in clis, said
