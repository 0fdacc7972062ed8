"""The catalog an agent sees before it reads any skill: every skill of the repository the
harness would load, by the `name` and `description` its frontmatter gives.

That is the skills `.gitsleep.yml` lists and every `SKILL.md` one folder under
`.claude/skills/` (Claude Code) and `.agents/skills/` (other agents), each file once. A
document with no readable description is not listed (a harness cannot show it); a
description longer than a harness shows is cut where the harness cuts it. The catalog is
handed to the core as text (`gitsleep.core.triggers.Listing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitsleep.base.errors import UsageError
from gitsleep.base.problems import FileProblem, read_text
from gitsleep.core import description as desc
from gitsleep.core.models import Judge, Task, Trigger
from gitsleep.core.triggers import Listing
from gitsleep.inputs import repo_paths
from gitsleep.inputs.config import Config, SkillConfig
from gitsleep.inputs.tasks import load_trigger_tasks

SKILL_FOLDERS = (".claude/skills", ".agents/skills")
SHOWN_CHARS = desc.MAX_CHARS  # what a harness shows of a description


@dataclass(frozen=True)
class Entry:
    """One skill in the catalog, and the file it was read from (repository-relative)."""

    name: str
    description: str
    path: str

    def listing(self) -> Listing:
        return Listing(self.name, self.description[:SHOWN_CHARS])


def _frontmatter(root: Path, rel: str, fallback: str) -> Entry | None:
    """The entry a harness lists for the file at `rel` (None: it lists none)."""
    try:
        data = desc.fields(read_text(root / rel))
    except (FileProblem, desc.DescriptionError):
        return None
    value, name = data.get("description"), data.get("name")
    if not isinstance(value, str) or not value.strip():
        return None
    return Entry(name if isinstance(name, str) and name else fallback, " ".join(value.split()),
                 rel)


def skill_files(root: Path, config: Config) -> list[tuple[str, str]]:
    """(repository-relative SKILL.md, the name to fall back on), each file once: the
    config's skills first, then the harness folders in name order."""
    out: list[tuple[str, str]] = []
    seen: set[Path] = set()

    def add(rel: str, fallback: str) -> None:
        path = root / rel
        try:
            real = repo_paths.real_path(path)
        except repo_paths.SymlinkLoop:
            return
        if real in seen or not real.is_file() or not real.is_relative_to(root.resolve()):
            return
        seen.add(real)
        out.append((rel, fallback))

    for skill in config.skills:
        add(skill.skill, skill.name)
    for folder in SKILL_FOLDERS:
        base = root / folder
        if base.is_dir():
            for child in sorted(base.iterdir()):
                add(f"{folder}/{child.name}/SKILL.md", child.name)
    return out


def build(root: Path, config: Config) -> list[Entry]:
    """Every skill the harness would list, each name once (the first file that gives it)."""
    entries: list[Entry] = []
    for rel, fallback in skill_files(root, config):
        entry = _frontmatter(root, rel, fallback)
        if entry is not None and all(e.name != entry.name for e in entries):
            entries.append(entry)
    return entries


def name_of(entries: list[Entry], skill: SkillConfig) -> str:
    """The name the catalog lists `skill` under (its frontmatter's), or UsageError."""
    for entry in entries:
        if entry.path == skill.skill:
            return entry.name
    raise UsageError(f"{skill.skill}: the skill has no readable `description:` in its "
                     "frontmatter, so no harness lists it; add one to tune when it is picked")


def trigger_tasks(root: Path, config: Config, skill: SkillConfig, entries: list[Entry],
                  own: list[Task] | None = None) -> list[Task]:
    """`skill`'s trigger tasks (`own`, when the caller has read them already) and every
    sibling's should-trigger queries, the latter as near misses that expect the sibling
    (ids `<sibling>/<id>`): what the gate reads."""
    tasks = list(load_trigger_tasks(root, skill) if own is None else own)
    names = {e.path: e.name for e in entries}
    for other in config.skills:
        if other.name == skill.name or other.skill not in names:
            continue
        for task in load_trigger_tasks(root, other):
            if task.trigger and task.trigger.should_trigger:
                sibling = names[other.skill]
                tasks.append(Task(id=f"{sibling}/{task.id}", prompt=task.prompt,
                                  split=task.split, judge=Judge("trigger"), source=task.source,
                                  line=task.line, trigger=Trigger(False, sibling)))
    return tasks
