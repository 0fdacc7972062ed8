"""How a skill (in `.gitsleep.yml`) or a task declares the tools its agent may call.

```yaml
tools:
  - {tool: search, folder: brain/topics}          # full-text search over the folder
  - {tool: read_file, folder: brain/topics}       # one file of it by path
  - {tool: command, name: run_tests, argv: [python, -m, pytest, -q], folder: fixture}
```

`name` is what the agent calls the tool (default: the tool itself) and what trajectory
checks name. Folders are read from git at the base commit, like workspaces; a folder
must be a relative path below the repository root.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gitsleep.core.sandbox import folder_problem, normal_folder
from gitsleep.core.tools import TOOL_NAME_RE, ToolSpec
from gitsleep.sandbox.check_program import argv_problem


class ToolConfig(BaseModel):
    """One tool the agent may call."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tool: Literal["search", "read_file", "command"]
    name: str | None = None
    folder: str | None = None
    description: Annotated[str, Field(max_length=500)] | None = None
    argv: list[str] | None = None
    timeout: Annotated[float, Field(gt=0, le=600)] = 30.0

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str | None) -> str | None:
        if value is not None and not TOOL_NAME_RE.match(value):
            raise ValueError(f"{value!r} is not a tool name: use letters, digits, '_' or '-', "
                             "starting with a letter (e.g. search_notes)")
        return value

    @field_validator("folder")
    @classmethod
    def _check_folder(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = folder_problem(value)
        if problem:
            raise ValueError(f"{problem.replace('evals/changelog/fixture', 'brain/topics')} "
                             f"(got {value!r})")
        return normal_folder(value)

    @model_validator(mode="after")
    def _complete(self) -> ToolConfig:
        if self.tool in ("search", "read_file") and self.folder is None:
            raise ValueError(f"a {self.tool} tool needs `folder:` (the repository folder it "
                             "reads, e.g. brain/topics)")
        if self.tool == "command":
            problem = argv_problem(self.argv)
            if problem:
                raise ValueError(f"a command tool needs `argv:` {problem} (got {self.argv!r})")
        elif self.argv is not None:
            raise ValueError(f"`argv:` is for command tools; a {self.tool} tool reads its folder")
        return self

    @property
    def called(self) -> str:
        """The name the agent calls it by."""
        return self.name or self.tool

    def spec(self) -> ToolSpec:
        """The core's view of the declaration (its folder not read yet)."""
        return ToolSpec(name=self.called, kind=self.tool, folder=self.folder,
                        description=self.description or "", argv=tuple(self.argv or ()),
                        timeout=self.timeout)


def unique_names(tools: list[ToolConfig] | None) -> list[ToolConfig] | None:
    """Each tool's name once: the agent could not tell two of one name apart."""
    seen: set[str] = set()
    for tool in tools or []:
        if tool.called in seen:
            raise ValueError(f"two tools are named {tool.called!r}: give one a `name:`")
        seen.add(tool.called)
    return tools
