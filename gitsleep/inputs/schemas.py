"""JSON Schemas for `.gitsleep.yml` and task files, so editors check them as people type.

The config schema comes from the pydantic model gitsleep loads the config with. Task files
are parsed by hand in `gitsleep.inputs.tasks` (to keep its messages and line numbers); the task
schema comes from the small pydantic models below, used only to write the schema, with a
tagged union on `judge.kind`. `python -m gitsleep.inputs.schemas [DIR]` writes both into DIR
(default `schemas/`); a test checks the shipped files equal what this module generates.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from gitsleep.core.check_ops import CheckOp
from gitsleep.core.models import Split
from gitsleep.inputs.config import Config
from gitsleep.inputs.tool_settings import ToolConfig

DRAFT = "https://json-schema.org/draft/2020-12/schema"
CONFIG_FILE = "gitsleep-config.schema.json"
TASKS_FILE = "gitsleep-tasks.schema.json"


class _Open(BaseModel):
    # gitsleep ignores (and warns about) unknown task keys, so the schema allows them
    model_config = ConfigDict(extra="allow")


class FileText(BaseModel):
    """`file_contains`: a workspace file and the text (case-insensitive) or regex it holds."""

    model_config = ConfigDict(extra="forbid")
    path: Annotated[str, Field(min_length=1)]
    text: Annotated[str, Field(min_length=1)] | None = None
    regex: Annotated[str, Field(min_length=1)] | None = None


class RuleCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: CheckOp
    arg: str | int | Annotated[list[str], Field(min_length=1)] | FileText | None = Field(
        None, description="The op's argument; none for no_refusal; an argv list for "
        "command (never a shell string); {path, text} or {path, regex} for file_contains; "
        "a bare tool name for tool_called and tool_not_called; two tool names in order for "
        "tool_called_before; a whole number for max_tool_calls.")
    args_regex: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="tool_called / tool_not_called: a regular expression the call's "
        "arguments (canonical JSON) must match.")


class RuleJudge(BaseModel):
    """hard = 1 when every check passes; soft = the share that pass."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["rule"]
    checks: Annotated[list[RuleCheck], Field(min_length=1)]


class ExactJudge(BaseModel):
    """Whole words, case and whitespace normalised."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["exact"]
    answer: Annotated[str, Field(min_length=1)]


class RubricJudge(BaseModel):
    """The judge model scores the answer 0..1 against the rubric."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["rubric"]
    rubric: Annotated[str, Field(min_length=1)]


JudgeSchema = Annotated[RuleJudge | ExactJudge | RubricJudge, Field(discriminator="kind")]


class TaskRecord(_Open):
    """One task in gitsleep's own format."""

    id: Annotated[str, Field(min_length=1)] | int
    prompt: Annotated[str, Field(min_length=1)]
    split: Split | None = None
    judge: JudgeSchema
    system: str | None = None
    tags: list[str] = Field(default_factory=list)
    workspace: str | None = Field(
        None, description="A folder of the repository, read at the base commit, that the "
        "agent works in; its checks judge the folder after the agent ran.")
    tools: Annotated[list[ToolConfig], Field(min_length=1)] | None = Field(
        None, description="The tools the agent may call (replacing its skill's): search "
        "and read_file over a repository folder, command in the sandbox.")


class TriggerRecord(_Open):
    """A trigger task: is this skill picked (from the catalog of the repository's skills)
    for the user's query? See docs/triggers.md."""

    id: Annotated[str, Field(min_length=1)] | int
    query: Annotated[str, Field(min_length=1)]
    should_trigger: bool
    expect: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="A query that should not trigger this skill: the sibling skill "
        "it belongs to.")
    split: Split | None = None
    tags: list[str] = Field(default_factory=list)


class TaskList(_Open):
    tasks: list[TaskRecord | TriggerRecord]


class TaskFile(RootModel[list[TaskRecord | TriggerRecord] | TaskList]):
    """A YAML or JSON task file: a list of tasks, or `{tasks: [...]}`."""


def _finish(schema: dict[str, Any], title: str) -> dict[str, Any]:
    return {"$schema": DRAFT, **schema, "title": title}


def config_schema() -> dict[str, Any]:
    """The schema of `.gitsleep.yml`, from the config model gitsleep validates with."""
    schema = Config.model_json_schema()
    # `tasks: [evals/a.jsonl]` is short for `tasks: [{path: evals/a.jsonl}]`
    tasks = schema["$defs"]["SkillConfig"]["properties"]["tasks"]
    tasks["items"] = {"anyOf": [{"type": "string"}, tasks["items"]]}
    return _finish(schema, "gitsleep configuration (.gitsleep.yml)")


def tasks_schema() -> dict[str, Any]:
    """The schema of a task file in gitsleep's own format (YAML or JSON)."""
    return _finish(TaskFile.model_json_schema(), "gitsleep task file")


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in ((CONFIG_FILE, config_schema()), (TASKS_FILE, tasks_schema())):
        (folder / name).write_text(dumps(schema), encoding="utf-8")
        written.append(folder / name)
    return written


if __name__ == "__main__":  # pragma: no cover - `python -m gitsleep.inputs.schemas`
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")):
        print(path)
