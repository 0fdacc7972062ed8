"""`.gitsleep.yml`: the repository's configuration, validated strictly.

Every key is declared below with its default. A typo, a wrong type or a bad value
stops the command with one line that names the file, the line, the key path and the
fix, because a silently ignored key in a tool that spends money overnight is a bug.
Paths in the file are relative to the repository root.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gitsleep.backends.agent_cli import AgentSpec
from gitsleep.backends.presets import PRESETS, preset_command, write_command
from gitsleep.base.errors import UsageError
from gitsleep.base.problems import FileProblem, compose_yaml, construct_yaml, read_text
from gitsleep.base.redact import FORGE_TOKEN_RE
from gitsleep.core.models import SKILL_NAME_RE, AgentRef, EpochSettings, GateSettings
from gitsleep.core.sandbox import folder_problem, normal_folder
from gitsleep.inputs import agent_settings
from gitsleep.inputs.agent_settings import ENV_NAME_RE, env_names, env_reference
from gitsleep.inputs.tool_settings import ToolConfig, unique_names
from gitsleep.sandbox import check_program as command_check

CONFIG_NAME = ".gitsleep.yml"
# GitHub Models takes the workflow's GITHUB_TOKEN: there the token goes back to GitHub.
GITHUB_MODELS_HOSTS = ("models.github.ai", "models.inference.ai.azure.com")
ENV_OVERRIDES = {
    "backend": "GITSLEEP_BACKEND",
    "model": "GITSLEEP_MODEL",
    "base_url": "GITSLEEP_BASE_URL",
}


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def _repo_path(value: str) -> str:
    """A path inside the repository, normalised to forward slashes."""
    if not value.strip():
        raise ValueError("must be a non-empty path relative to the repository root")
    if _CONTROL_CHARS.search(value):
        # a NUL cannot reach the OS; a newline would split every one-line message in two
        raise ValueError(f"must not contain control characters (got {value!r})")
    if PurePosixPath(value).is_absolute() or PureWindowsPath(value).drive:
        raise ValueError(
            f"must be relative to the repository root, not absolute ({value!r})"
        )
    path = PurePosixPath(value.replace("\\", "/"))
    if ".." in path.parts:
        raise ValueError(f"must stay inside the repository: remove '..' from {value!r}")
    return path.as_posix()


def _http_url(value: str | None) -> str | None:
    if value is not None and not re.match(r"^https?://[^\s/]+", value):
        raise ValueError("must be an http:// or https:// URL")
    return value


class _Section(BaseModel):
    """Base for every section: unknown keys are errors, and no silent type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TaskFileConfig(_Section):
    path: str
    # auto: keep per-task labels, assign unlabelled tasks to train/val by a stable hash.
    # train | val | test: every task in the file goes to that split.
    split: Literal["auto", "train", "val", "test"] = "auto"

    _check_path = field_validator("path")(_repo_path)


class SkillConfig(_Section):
    name: Annotated[str, Field(min_length=1, max_length=64)]
    skill: str
    memory: str | None = None
    # a folder (scripts/, references/, templates/) installed beside the skill document in
    # every agent workspace; read from git at the commit, never edited
    package: str | None = None
    tasks: Annotated[list[TaskFileConfig], Field(min_length=1)]
    # several agents: replaces the top-level `agents:` list for this skill
    agents: Annotated[list[AgentEntryConfig], Field(min_length=1)] | None = None
    # the tools an API agent may call (search, read_file, command), for every task of the
    # skill that declares none of its own
    tools: list[ToolConfig] | None = None
    # the frontmatter `description:` may be tuned on the skill's trigger tasks (it is
    # hand-written text: off unless a person allows it)
    tune_description: bool = False

    _unique_agents = field_validator("agents")(lambda v: _unique_agent_names(v))
    _unique_tools = field_validator("tools")(lambda v: unique_names(v))

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not SKILL_NAME_RE.match(value):
            raise ValueError(
                f"{value!r} is not a valid skill name: use lowercase letters, digits and "
                "single hyphens (e.g. brief-writer)"
            )
        return value

    _check_skill = field_validator("skill")(_repo_path)

    @field_validator("memory")
    @classmethod
    def _check_memory(cls, value: str | None) -> str | None:
        return None if value is None else _repo_path(value)

    @field_validator("package")
    @classmethod
    def _check_package(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = folder_problem(value)
        if problem:
            shown = problem.replace("(e.g. evals/changelog/fixture)", "(e.g. skills/notes)")
            raise ValueError(f"{shown} (got {value!r})")
        return normal_folder(value)

    @field_validator("tasks", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """`tasks: [evals/a.jsonl]` is short for `tasks: [{path: evals/a.jsonl}]`."""
        if isinstance(value, list):
            return [{"path": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _distinct_files(self) -> SkillConfig:
        """Each file has one role: gitsleep writes the documents and must never write a
        task file, and one file as both skill and memory would lose one side's rules."""
        if self.memory is not None and self.memory == self.skill:
            raise ValueError(f"memory and skill are the same file ({self.skill!r}): "
                             "use a separate memory document or remove `memory`")
        for entry in self.tasks:
            if entry.path in (self.skill, self.memory):
                raise ValueError(f"{entry.path!r} is both a document and a task file: "
                                 "gitsleep writes documents, so keep tasks in their own file")
            if self.package and entry.path.startswith(self.package + "/"):
                raise ValueError(f"package {self.package!r} holds the task file {entry.path}: "
                                 "the agent would read its checks; keep task files outside "
                                 "the package folder")
        return self

    def documents(self) -> dict[str, str]:
        """target -> repo-relative path of each document this skill may change."""
        docs = {"skill": self.skill}
        if self.memory:
            docs["memory"] = self.memory
        return docs


class GateConfig(_Section):
    # the defaults are the core's own (models.GateSettings), so they live in one place
    metric: Literal["hard", "soft", "mixed"] = GateSettings.metric  # type: ignore[assignment]
    mixed_weight: Annotated[float, Field(ge=0.0, le=1.0)] = GateSettings.mixed_weight
    min_delta: Annotated[float, Field(ge=0.0, le=1.0)] = GateSettings.min_delta
    no_regression: bool = GateSettings.no_regression
    repeats: Annotated[int, Field(ge=1, le=20)] = GateSettings.repeats
    # several agents: the aggregate of their scores the gate compares
    agents: Literal["mean", "min"] = GateSettings.agents  # type: ignore[assignment]


class BudgetConfig(_Section):
    max_calls: Annotated[int, Field(ge=1)] = EpochSettings.max_calls
    max_tokens: Annotated[int, Field(ge=1)] = EpochSettings.max_tokens
    # in the user's own units: wall minutes spent in model or agent calls, and
    # US dollars at `prices`; both checked before each call, like max_calls
    max_agent_minutes: Annotated[float, Field(gt=0.0)] | None = EpochSettings.max_agent_minutes
    max_cost: Annotated[float, Field(gt=0.0)] | None = EpochSettings.max_cost


class PrConfig(_Section):
    base: str | None = None
    labels: list[str] = Field(default_factory=lambda: ["gitsleep"])
    draft: bool = False


class AzureConfig(_Section):
    api_version: str | None = None
    deployment: str | None = None
    endpoint: str | None = None

    _check_endpoint = field_validator("endpoint")(_http_url)


class PriceConfig(_Section):
    """US dollars per million tokens, for the cost line in reports."""

    prompt: Annotated[float, Field(ge=0.0)]
    completion: Annotated[float, Field(ge=0.0)]


class LearnedBlockConfig(_Section):
    max_lines: Annotated[int, Field(ge=1)] = EpochSettings.block_max_lines
    max_chars: Annotated[int, Field(ge=1)] = EpochSettings.block_max_chars


class TriggersConfig(_Section):
    """`triggers:`: how a pick is asked of an agent CLI (Claude Code): the seconds one run
    may take before it is stopped and counted as a failed call."""

    timeout: Annotated[float, Field(gt=0.0, le=3600.0)] = 300.0


class ChecksConfig(_Section):
    """`checks:`: how `command` checks run. A check gets a minimal environment (no model
    key, no cloud or forge tokens); `pass_env` names the variables it needs beyond it."""

    pass_env: list[str] = Field(default_factory=list)

    _check_pass_env = field_validator("pass_env")(env_names)


class AgentConfig(_Section):
    """`agent:`: how the agent CLI runs when a backend is `command`.

    A preset fills every key left unset; see gitsleep/backends/presets.py and the README.
    """

    preset: Literal["codex", "claude", "gemini", "opencode", "llm", "aider"] | None = None
    command: list[str] | None = None
    # stdin | arg (the task after `--`) | option:--NAME (the task as `--NAME=<task>`)
    prompt: str | None = Field(default=None, json_schema_extra={
        "pattern": r"^(stdin|arg|option:--[A-Za-z0-9][A-Za-z0-9_-]*)$"})
    install: str | None = None
    memory_install: str | None = None
    answer: str | None = None
    timeout: Annotated[float, Field(gt=0.0, le=86400.0)] = 300.0
    retries: Annotated[int, Field(ge=0, le=5)] = 2
    env: dict[str, str] = Field(default_factory=dict)
    # Forge tokens (GITHUB_TOKEN, GH_TOKEN, GITLAB_TOKEN, CI job tokens) are taken out of
    # the agent's environment, since task prompts drive it; name one here to hand it over.
    pass_env: list[str] = Field(default_factory=list)
    fatal_patterns: list[str] = Field(default_factory=list)
    # the machine output that says what the agent called: claude (stream-json) | codex
    # (exec --json) | none; a preset sets its own
    trace: Literal["claude", "codex", "none"] | None = None
    # the CLI's own tool names -> the names trajectory checks use (e.g. {Grep: search});
    # laid over the preset's
    tool_names: dict[str, str] = Field(default_factory=dict)

    _check_command = field_validator("command")(agent_settings.command)
    _check_prompt = field_validator("prompt")(agent_settings.prompt_mode)
    _check_install = field_validator("install", "memory_install")(agent_settings.install_path)
    _check_answer = field_validator("answer")(agent_settings.answer_source)
    _check_env = field_validator("env")(agent_settings.env_values)
    _check_pass_env = field_validator("pass_env")(env_names)
    _check_patterns = field_validator("fatal_patterns")(agent_settings.fatal_patterns)

    @model_validator(mode="after")
    def _complete(self) -> AgentConfig:
        agent_settings.complete(self.filled())
        return self

    def filled(self, model: str | None = None) -> dict[str, Any]:
        """The keys with the preset's values where this section left them unset."""
        base: dict[str, Any] = {"prompt": "stdin", "install": "AGENTS.md",
                                "memory_install": None, "answer": "stdout", "trace": "",
                                "tool_names": {}}
        if self.preset:
            base.update({k: v for k, v in PRESETS[self.preset].items()
                         if k in ("prompt", "install", "memory_install", "answer", "trace",
                                  "tool_names")})
            base["command"] = preset_command(self.preset, model)
            if self.command is None:  # the preset's own argv: its write mode
                base["workspace_command"] = write_command(self.preset, base["command"])
        for key in ("command", "prompt", "install", "memory_install", "answer"):
            if getattr(self, key) is not None:
                base[key] = getattr(self, key)
        if self.trace is not None:
            base["trace"] = "" if self.trace == "none" else self.trace
        base["tool_names"] = {**base["tool_names"], **self.tool_names}
        return base

    def label(self) -> str:
        command = self.filled().get("command") or ["agent"]
        return self.preset or PurePosixPath(command[0]).name


AGENT_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*\Z")


class AgentEntryConfig(_Section):
    """One of several agents (`agents:`): a model on a backend, or an agent-CLI preset.

    Its name goes into trailer keys and task ids (`<task>@<name>`), hence its shape."""

    name: Annotated[str, Field(min_length=1, max_length=32)]
    backend: Literal["openai", "offline", "command"] | None = None  # default: top-level
    model: str | None = None
    agent: AgentConfig | None = None  # command only
    base_url: str | None = None  # openai only

    _check_base_url = field_validator("base_url")(_http_url)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not AGENT_NAME_RE.match(value):
            raise ValueError(f"{value!r} is not a valid agent name: use lowercase letters, "
                             "digits and hyphens, starting with a letter or digit (e.g. small)")
        return value

    @field_validator("model")
    @classmethod
    def _non_empty_model(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a model name or null, not an empty string")
        return value

    @field_validator("agent", mode="before")
    @classmethod
    def _agent_shorthand(cls, value: Any) -> Any:
        return {"preset": value} if isinstance(value, str) else value

    def backend_in(self, config: Config) -> str:
        return self.backend or config.backend

    def problem(self, config: Config) -> str | None:
        """Why this entry cannot run under `config` (its top-level defaults), or None."""
        backend = self.backend_in(config)
        if self.agent is not None and backend != "command":
            return (f"`agent:` is for a command agent, but this one's backend is {backend}: "
                    "remove `agent:` or set `backend: command`")
        if self.base_url is not None and backend != "openai":
            return (f"`base_url:` is for an openai agent, but this one's backend is "
                    f"{backend}: remove it or set `backend: openai`")
        if backend == "command" and self.agent is None and config.agent is None:
            return ("a command agent needs `agent:` (a preset, e.g. `agent: codex`, or a "
                    "mapping): add it to this entry or a top-level `agent:` section")
        if backend == "openai" and not self.model:
            return "an openai agent needs `model:`: add the model it answers with"
        return None

    def ref(self, config: Config) -> AgentRef:
        """The agent as the core knows it: its name, the model its calls name, its backend."""
        backend = self.backend_in(config)
        if backend == "offline":  # the simulator, or one of its named variants
            model = self.model if self.model and self.model.startswith("offline") else "offline"
        elif backend == "command":
            agent = self.agent or config.agent
            model = self.model or (agent.label() if agent else "agent")
        else:
            model = self.model or ""
        return AgentRef(self.name, model, backend)


def _unique_agent_names(agents: list[AgentEntryConfig] | None
                        ) -> list[AgentEntryConfig] | None:
    first: dict[str, int] = {}
    for index, agent in enumerate(agents or []):
        if agent.name in first:
            raise ValueError(f"agent name {agent.name!r} is used twice (agents[{first[agent.name]}]"
                             f" and agents[{index}]): names must be unique, they name the "
                             "trailers and task ids")
        first[agent.name] = index
    return agents


SkillConfig.model_rebuild()


class Config(_Section):
    # The file it was read from, so an error found after loading names `file:line` too.
    _source: Path | None = PrivateAttr(default=None)
    version: Literal[1] = 1
    backend: Literal["openai", "offline", "command"] = "openai"
    # Who answers `propose` and `judge` calls; default: openai when the agent is a
    # command, else the same as `backend`. judge_backend defaults to optimizer_backend.
    optimizer_backend: Literal["openai", "offline", "command"] | None = None
    judge_backend: Literal["openai", "offline", "command"] | None = None
    agent: AgentConfig | None = None
    # several agents: each answers every task; a skill's own list replaces it
    agents: Annotated[list[AgentEntryConfig], Field(min_length=1)] | None = None
    checks: ChecksConfig = Field(default_factory=ChecksConfig)
    model: str | None = None
    optimizer_model: str | None = None
    judge_model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    skills: Annotated[list[SkillConfig], Field(min_length=1)]
    gate: GateConfig = Field(default_factory=GateConfig)
    # numbers the core reads default to the core's own (models.EpochSettings)
    edit_budget: Annotated[int, Field(ge=1, le=50)] = EpochSettings.edit_budget
    rounds: Annotated[int, Field(ge=1, le=20)] = EpochSettings.rounds
    proposals: Annotated[int, Field(ge=1, le=20)] = EpochSettings.proposals
    workers: Annotated[int, Field(ge=1, le=64)] = EpochSettings.workers
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    branch_prefix: str = "gitsleep/"
    pr: PrConfig = Field(default_factory=PrConfig)
    # Keys beyond the interface's example, all optional:
    max_error_rate: Annotated[float, Field(ge=0.0, le=1.0)] = EpochSettings.max_error_rate
    cache: bool = True
    timeout: Annotated[float, Field(gt=0.0, le=3600.0)] = 60.0
    max_retries: Annotated[int, Field(ge=0, le=20)] = 4
    # Completion-token caps (null: none): agent answers; optimizer and rubric-judge replies.
    max_answer_tokens: Annotated[int, Field(ge=16, le=1_000_000)] | None = (
        EpochSettings.max_answer_tokens)
    max_reflect_tokens: Annotated[int, Field(ge=16, le=1_000_000)] | None = (
        EpochSettings.max_reflect_tokens)
    azure: AzureConfig | None = None
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    learned_block: LearnedBlockConfig = Field(default_factory=LearnedBlockConfig)
    rollouts: Annotated[int, Field(ge=1, le=10)] = EpochSettings.rollouts  # per train task
    # thorough: every proposal is gated on val; thrifty: screened on train first
    search: Literal["thorough", "thrifty"] = "thorough"
    triggers: TriggersConfig = Field(default_factory=TriggersConfig)

    _check_base_url = field_validator("base_url")(_http_url)

    @field_validator("agent", mode="before")
    @classmethod
    def _agent_shorthand(cls, value: Any) -> Any:
        """`agent: codex` is short for `agent: {preset: codex}`."""
        return {"preset": value} if isinstance(value, str) else value

    _unique_agents = field_validator("agents")(lambda v: _unique_agent_names(v))

    @model_validator(mode="after")
    def _agent_when_needed(self) -> Config:
        if "command" in self.backends()[1:] and self.agent is None or (
                self.backend == "command" and self.agent is None
                and any(not agents for agents in self._agent_lists().values())):
            answer, propose, _ = self.backends()
            key = ("backend" if answer == "command" else
                   "optimizer_backend" if propose == "command" else "judge_backend")
            raise ValueError(f"{key}: `command` runs an agent CLI, and there is no `agent:` "
                             "section saying which: add `agent: codex` (a preset) or "
                             "`agent: {command: [...]}`")
        return self

    @model_validator(mode="after")
    def _cost_cap_needs_tokens(self) -> Config:
        """An agent CLI reports no tokens: a money cap on its answers could not hold."""
        if self.budget.max_cost is not None and "command" in self.answer_backends():
            raise ValueError("budget.max_cost: an agent CLI (backend: command) reports no "
                             "tokens, so its cost cannot be kept; cap it with "
                             "budget.max_agent_minutes instead")
        return self

    @field_validator("model", "optimizer_model", "judge_model")
    @classmethod
    def _non_empty_model(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a model name or null, not an empty string")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _check_api_key_env(cls, value: str) -> str:
        # Never echo the value: people paste the key itself here.
        if not ENV_NAME_RE.match(value) or value.startswith(("sk-", "ghp_", "github_pat_")):
            raise ValueError(
                "must be the NAME of the environment variable holding the key "
                "(e.g. OPENAI_API_KEY), never the key itself"
            )
        return value

    @field_validator("api_key_env")
    @classmethod
    def _not_a_forge_token(cls, value: str, info: ValidationInfo) -> str:
        """A forge token as the model key would be sent to whatever `base_url` names."""
        if not FORGE_TOKEN_RE.match(value.upper()):
            return value
        base_url = info.data.get("base_url") or ""
        host = re.match(r"^https://([^/:?#]+)(?:[/?#]|$)", base_url)
        if value.upper() in ("GITHUB_TOKEN", "GH_TOKEN") and host \
                and host.group(1).lower() in GITHUB_MODELS_HOSTS:
            return value
        raise ValueError(
            f"{value} is a forge token, not a model key: gitsleep sends the key to the model "
            "server (base_url), so the token would leave with every call; name the model "
            "provider's key instead (e.g. OPENAI_API_KEY)"
        )

    @model_validator(mode="after")
    def _forge_token_not_to_an_agents_server(self) -> Config:
        """The GitHub Models exception holds for the top-level base_url only: an agent's
        own `base_url` would receive the token too."""
        if not FORGE_TOKEN_RE.match(self.api_key_env.upper()):
            return self
        for agents in [self.agents, *(s.agents for s in self.skills)]:
            for entry in agents or []:
                if entry.base_url is not None:
                    raise ValueError(
                        f"agents: {entry.name}: base_url would receive {self.api_key_env}, a "
                        "forge token, with every call: name the model provider's key in "
                        "api_key_env instead, or remove the agent's base_url")
        return self

    @model_validator(mode="after")
    def _forge_token_not_to_azure(self) -> Config:
        """The GitHub Models exception holds for base_url only: `azure` sends elsewhere."""
        if self.azure is not None and FORGE_TOKEN_RE.match(self.api_key_env.upper()):
            raise ValueError(f"api_key_env: {self.api_key_env} is a forge token, not a model "
                             "key: name the Azure OpenAI key instead (e.g. AZURE_OPENAI_API_KEY)")
        return self

    @field_validator("branch_prefix")
    @classmethod
    def _check_branch_prefix(cls, value: str) -> str:
        # git check-ref-format, for every name `<prefix><skill>` can make: the prefix's
        # last component is completed by a skill name ([a-z0-9-]+), the others stand alone.
        *whole, last = value.split("/")
        bad = (
            not re.fullmatch(r"[A-Za-z0-9._/-]+", value)
            or value.startswith(("/", "-", "."))
            or ".." in value
            or "//" in value
            or value.endswith(".lock")
            or any(part.startswith(".") or part.endswith(".lock") for part in whole)
            or last.startswith(".")
        )
        if bad:
            raise ValueError(
                f"{value!r} cannot start a git branch name: use letters, digits, '-', '_', "
                "'.' and '/' (e.g. gitsleep/)"
            )
        return value

    @field_validator("skills")
    @classmethod
    def _unique_names(cls, skills: list[SkillConfig]) -> list[SkillConfig]:
        first: dict[str, int] = {}
        for index, skill in enumerate(skills):
            if skill.name in first:
                raise ValueError(
                    f"skill name {skill.name!r} is used twice (skills[{first[skill.name]}] "
                    f"and skills[{index}]): names must be unique, they name the branches"
                )
            first[skill.name] = index
        return skills

    # --- what the rest of gitsleep asks of a config --------------------------------

    def skill(self, name: str) -> SkillConfig:
        """The skill called `name`, or a usage error listing the configured ones."""
        for skill in self.skills:
            if skill.name == name:
                return skill
        known = ", ".join(s.name for s in self.skills)
        raise UsageError(f"unknown skill {name!r}: the config defines {known}")

    def _agent_lists(self) -> dict[tuple[Any, ...], list[AgentEntryConfig] | None]:
        """Key path -> the `agents:` list there (None: the skill uses the top-level one)."""
        return {("skills", i, "agents"): s.agents or self.agents
                for i, s in enumerate(self.skills)}

    def agent_problem(self) -> tuple[tuple[Any, ...], str] | None:
        """(key path, why) for the first agent entry that cannot run with the top-level
        defaults it falls back on (its backend, `agent:`), or None."""
        lists = [(("agents",), self.agents)] + [
            (("skills", i, "agents"), s.agents) for i, s in enumerate(self.skills)]
        for loc, agents in lists:
            for index, entry in enumerate(agents or []):
                problem = entry.problem(self)
                if problem:
                    return (*loc, index), problem
        return None

    def agent_entries(self, skill: str | None = None) -> list[AgentEntryConfig]:
        """The agents of `skill` (its own list, else the top-level one); [] for the single
        `model` / `agent` form, a night of one agent as before."""
        own = self.skill(skill).agents if skill is not None else None
        return list(own or self.agents or [])

    def agent_refs(self, skill: str | None = None) -> tuple[AgentRef, ...]:
        return tuple(entry.ref(self) for entry in self.agent_entries(skill))

    def answer_backends(self) -> set[str]:
        """Every backend an answer call may go to, over every skill."""
        found: set[str] = set()
        if any(not a for a in self._agent_lists().values()):
            found.add(self.backend)
        for agents in self._agent_lists().values():
            found |= {entry.backend_in(self) for entry in agents or []}
        return found

    def backends(self) -> tuple[str, str, str]:
        """(answer, propose, judge): the backend each kind of call goes to."""
        optimizer = self.optimizer_backend or (
            "openai" if self.backend == "command" else self.backend)
        return self.backend, optimizer, self.judge_backend or optimizer

    def agent_model(self) -> str:
        """The model that answers tasks; never a built-in default for a real backend."""
        if self.backend == "offline":
            return "offline"  # the simulator names itself everywhere (trailers, reports)
        if self.model:
            return self.model
        if self.backend == "command" and self.agent is not None:
            return self.agent.label()  # the agent CLI picks its own model
        raise UsageError(
            f"no model set for backend {self.backend!r}: set `model:` in {CONFIG_NAME}, "
            "pass --model, or set GITSLEEP_MODEL"
        )

    def models(self, roles: tuple[str, ...] = ("optimizer", "judge"),
               skill: str | None = None) -> tuple[str, str, str]:
        """(agent, optimizer, judge): optimizer defaults to agent, judge to optimizer.

        `roles` are the models the command will call: `eval` proposes no edit, so it
        never asks for an optimizer model, and asks for a judge one only for rubrics.
        With several agents (`agents:`) the agent part is their models joined by ", ", and
        the optimizer defaults to the top-level model, else the first agent's if it is an
        openai model.
        """
        refs = self.agent_refs(skill)
        if refs:
            return self._models_of_agents(refs, roles)
        agent = self.agent_model()
        if self.backend == "offline":
            return agent, agent, agent
        _, optimizer_backend, judge_backend = self.backends()
        if self.backend == "command" and not self.model:  # the agent's model has no name
            for role, used, chosen in (
                ("optimizer", optimizer_backend, self.optimizer_model),
                ("judge", judge_backend, self.judge_model or self.optimizer_model),
            ):
                if role in roles and used == "openai" and not chosen:
                    raise UsageError(
                        f"no {role} model: with `backend: command` the {used} {role} needs "
                        f"`{role}_model:` in {CONFIG_NAME} (or `{role}_backend: command`)")
        # the simulator is named as itself in any role it plays, never after the agent
        optimizer = self.optimizer_model or agent
        judge = "offline" if judge_backend == "offline" else self.judge_model or optimizer
        if optimizer_backend == "offline":
            optimizer = "offline"
        return agent, optimizer, judge

    def _models_of_agents(self, refs: tuple[AgentRef, ...],
                          roles: tuple[str, ...]) -> tuple[str, str, str]:
        _, optimizer_backend, judge_backend = self.backends()
        fallback = self.model or (refs[0].model if refs[0].backend == "openai" else None)
        for role, used, chosen in (
            ("optimizer", optimizer_backend, self.optimizer_model),
            ("judge", judge_backend, self.judge_model or self.optimizer_model),
        ):
            if role in roles and used == "openai" and not (chosen or fallback):
                raise UsageError(
                    f"no {role} model: the first of `agents:` is no openai model, so the "
                    f"{role} needs `{role}_model:` (or a top-level `model:`) in {CONFIG_NAME}")
        optimizer = self.optimizer_model or fallback or "offline"
        if optimizer_backend == "offline":
            optimizer = "offline"
        judge = "offline" if judge_backend == "offline" else self.judge_model or optimizer
        return ", ".join(r.model for r in refs), optimizer, judge

    def agent_env_refs(self) -> list[str]:
        """Variables `agent.env` reads (`$NAME`), every agent's: masked like keys."""
        sections = [self.agent] + [e.agent for agents in [self.agents, *(
            s.agents for s in self.skills)] for e in agents or []]
        return [ref for section in sections if section is not None
                for v in section.env.values() if (ref := env_reference(v))]

    def agent_spec(self, skill: str, entry: AgentEntryConfig | None = None) -> AgentSpec:
        """How to run the agent CLI for `skill` (env values not yet resolved): the
        top-level `agent:`, or the one of an `agents:` entry (its own, else the top's)."""
        agent = (entry.agent if entry is not None else None) or self.agent
        if agent is None:
            raise UsageError(f"no `agent:` section in {self._source or CONFIG_NAME}: add "
                             "`agent: codex` (a preset) or `agent: {command: [...]}`")
        filled = agent.filled(entry.model if entry is not None else self.model)
        return AgentSpec(
            command=tuple(filled["command"]),
            workspace_command=(tuple(filled["workspace_command"])
                               if filled.get("workspace_command") else None),
            prompt=filled["prompt"],
            install=filled["install"].replace("{skill}", skill),
            memory_install=(filled["memory_install"] or "").replace("{skill}", skill) or None,
            answer=filled["answer"],
            timeout=agent.timeout,
            retries=agent.retries,
            fatal_patterns=tuple(agent.fatal_patterns),
            label=agent.label(),
            pass_env=tuple(agent.pass_env),
            trace=filled["trace"],
            tool_names=tuple(sorted(filled["tool_names"].items())),
        )

    def epoch_settings(self, roles: tuple[str, ...] = ("optimizer", "judge"),
                       skill: str | None = None) -> EpochSettings:
        """What the pure core needs, with nothing about files, git or the backend;
        `roles` as in `models`; `skill` picks its own `agents:` list (none: the top-level
        one). With agents, `model` is the first agent's."""
        agent, optimizer, judge = self.models(roles, skill)
        refs = self.agent_refs(skill)
        answering = [r.model for r in refs] or [agent]
        return EpochSettings(
            model=answering[0],
            agents=refs,
            optimizer_model=optimizer,
            judge_model=judge,
            gate=GateSettings(
                metric=self.gate.metric,
                mixed_weight=self.gate.mixed_weight,
                min_delta=self.gate.min_delta,
                no_regression=self.gate.no_regression,
                repeats=self.gate.repeats,
                agents=self.gate.agents,
            ),
            edit_budget=self.edit_budget,
            rounds=self.rounds,
            proposals=self.proposals,
            workers=self.workers,
            max_calls=self.budget.max_calls,
            max_tokens=self.budget.max_tokens,
            max_error_rate=self.max_error_rate,
            max_answer_tokens=self.max_answer_tokens,
            max_reflect_tokens=self.max_reflect_tokens,
            block_max_lines=self.learned_block.max_lines,
            block_max_chars=self.learned_block.max_chars,
            rollouts=self.rollouts,
            check_pass_env=tuple(self.checks.pass_env),
            check_program=command_check.check_answer,
            **self._thrifty_settings(*answering, optimizer, judge),
        )

    def _where(self, loc: tuple[str, ...]) -> str:
        """`file:line: ` of a key in the file this config was read from ('' when built
        in code), for an error found after loading."""
        if self._source is None:
            return ""
        line = field_lines(self._source)(loc)
        return f"{self._source}:{line}: " if line else f"{self._source}: "

    def price_problem(self, models: tuple[str, ...]) -> str | None:
        """Why `budget.max_cost` cannot be kept: a model that may be called has no price."""
        unpriced = sorted({m for m in models if m not in self.prices})
        if self.budget.max_cost is None or not unpriced:
            return None
        return (f"budget.max_cost: no price for model {unpriced[0]!r}: add it under `prices:` "
                f"({unpriced[0]}: {{prompt: USD per 1M tokens, completion: ...}}) or remove "
                "budget.max_cost")

    def _thrifty_settings(self, *models: str) -> dict[str, Any]:
        """The search and the budgets in minutes and money, only when set; a
        cost cap needs a price for every model that may be called."""
        out: dict[str, Any] = {}
        if self.search != EpochSettings.search:
            out["search"] = self.search
        if self.budget.max_agent_minutes is not None:
            out["max_agent_minutes"] = self.budget.max_agent_minutes
        if self.budget.max_cost is not None:
            problem = self.price_problem(models)
            if problem:
                raise UsageError(f"{self._where(KEY_MAX_COST)}{problem}")
            out["max_cost"] = self.budget.max_cost
            out["prices"] = {m: p.model_dump() for m, p in self.prices.items()}
        return out


KEY_MAX_COST = ("budget", "max_cost")


# --- loading ---------------------------------------------------------------------------


def config_path(repo: str | Path, config: str | None = None) -> Path:
    """The config file: `--config` as given (relative to the cwd), else `<repo>/.gitsleep.yml`.

    A `--repo` folder that does not exist is named as such (UsageError), not as a
    missing `.gitsleep.yml` inside it."""
    if not config and not Path(repo).is_dir():
        what = "is a file, not a folder" if Path(repo).exists() else "no such folder"
        raise UsageError(f"--repo {repo}: {what}: pass the folder of your git repository")
    return Path(config) if config else Path(repo) / CONFIG_NAME


class ConfigError(UsageError):
    """A config file gitsleep cannot use (exit 2): one line naming the file, the line when
    known, the field and the fix; `validate --json` reports it as its one problem."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")
        self.path = path
        self.line = line
        self.message = message


def load_config(path: Path) -> Config:
    """Read and validate a config file; any problem is one ConfigError line (exit 2)."""
    label = str(path)
    try:
        text = read_text(path)
        node = compose_yaml(text)
        data = construct_yaml(node) if node is not None else None
    except FileProblem as problem:
        missing = problem.code == "GS100" and problem.message.startswith("not found")
        hint = " (run `gitsleep init` to create one)" if missing else ""
        raise ConfigError(label, problem.line, f"{problem.message}{hint}") from None
    if data is None:
        raise ConfigError(label, None, "is empty: add `version: 1` and a `skills:` list "
                          "(or run `gitsleep init`)")
    if not isinstance(data, dict):
        raise ConfigError(label, 1, "must be a mapping of keys (version, backend, model, "
                          f"skills, ...), not a {type(data).__name__}")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(label, *_describe(exc, node)) from None
    config._source = path
    entry = config.agent_problem()
    if entry is not None:
        loc, why = entry
        raise ConfigError(label, _line_of(node, loc), f"{key_path(loc)}: {why}")
    return config


def apply_overrides(
    config: Config,
    env: Mapping[str, str],
    *,
    backend: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
) -> Config:
    """Command-line flags win over GITSLEEP_* variables, which win over the file.

    Empty values count as unset, so a workflow can pass an empty input straight through.
    """
    flags = {"backend": backend, "model": model, "base_url": base_url}
    updates: dict[str, str] = {}
    sources: dict[str, str] = {}
    for key, env_name in ENV_OVERRIDES.items():
        flag_value = (flags[key] or "").strip()
        env_value = (env.get(env_name) or "").strip()
        if flag_value:
            updates[key], sources[key] = flag_value, f"--{key.replace('_', '-')}"
        elif env_value:
            updates[key], sources[key] = env_value, env_name
    if not updates:
        return config
    data = config.model_dump()
    data.update(updates)
    try:
        overridden = Config.model_validate(data)
        overridden._source = config._source
        entry = overridden.agent_problem()
        if entry is not None:
            loc, why = entry
            raise UsageError(f"{overridden._where(loc)}{key_path(loc)}: {why}")
        return overridden
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else "?"
        source = sources.get(key, key)
        raise UsageError(f"{source}: {_explain(err)}") from None


# --- turning pydantic errors into one line ---------------------------------------------

_ALL_KEYS = sorted(
    {
        name
        for model in (
            Config,
            SkillConfig,
            TaskFileConfig,
            GateConfig,
            BudgetConfig,
            PrConfig,
            AzureConfig,
            PriceConfig,
            LearnedBlockConfig,
            AgentConfig,
            AgentEntryConfig,
        )
        for name in model.model_fields
    }
)
_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping of keys",
    "model_attributes_type": "a mapping of keys",
}
_SECRET_KEYS = {"api_key_env", "base_url", "endpoint"}


def key_path(loc: tuple[Any, ...]) -> str:
    """('skills', 0, 'tasks', 1, 'split') -> 'skills[0].tasks[1].split'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _explain(err: Mapping[str, Any]) -> str:
    """The reason and the fix for one pydantic error, without echoing secrets."""
    kind = err["type"]
    loc = tuple(err.get("loc", ()))
    last = str(loc[-1]) if loc else ""
    value = err.get("input")
    got = "" if last in _SECRET_KEYS else f" (got {_shown(value)})"
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(last, _ALL_KEYS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"unknown key: {hint}remove it or fix the spelling"
    if kind == "missing":
        return "required key is missing: add it"
    if kind == "literal_error":
        expected = str(err.get("ctx", {}).get("expected", ""))
        if " or " not in expected:  # one value allowed: say it as the fix
            return f"must be {expected}{got}: set `{last}: {expected}`"
        return f"must be {expected}{got}: use one of those values"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}{got}: change the value"
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if kind in ("too_short", "too_long") and isinstance(value, (list, str)):
        return _length(kind, last, value, err.get("ctx", {}))
    message = str(err["msg"]).replace("Input should be", "must be")
    return f"{message}{got}: change the value"


_ADD = {"skills": "add a skill (its name, skill and tasks), or run `gitsleep init` in an "
                  "empty folder to see one"}


def _length(kind: str, key: str, value: list[Any] | str, ctx: Mapping[str, Any]) -> str:
    """A list or text of the wrong length, said as counts and a fix."""
    unit = "item" if isinstance(value, list) else "character"
    if kind == "too_short":
        least = ctx.get("min_length", 1)
        fix = _ADD.get(key, f"add {'one' if unit == 'item' else 'text'}")
        return (f"must have at least {least} {unit}{'s' if least != 1 else ''}, it has "
                f"{len(value)}: {fix}")
    most = ctx.get("max_length", 0)
    return (f"must have at most {most} {unit}{'s' if most != 1 else ''}, it has {len(value)}: "
            "remove some")


_KEY_FIRST = re.compile(r"([a-z_]+(?:\.[a-z_]+)*): (.+)", re.DOTALL)


def _describe(exc: ValidationError, node: yaml.Node | None) -> tuple[int | None, str]:
    """(line, `key.path: reason and fix (+N more)`) for the first error. A check across
    keys (no key path of its own) that names its key first is placed on that key's line."""
    errors = exc.errors()
    err = errors[0]
    loc = tuple(err["loc"])
    explained = _explain(err)
    named = _KEY_FIRST.fullmatch(explained) if not loc and err["type"] == "value_error" else None
    if named is not None:
        loc, explained = tuple(named.group(1).split(".")), named.group(2)
    path = key_path(loc) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _line_of(node, loc), f"{path}: {explained}{more}"


def field_line(path: Path, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of a key path in a config file, or None when it cannot be read."""
    return field_lines(path)(loc)


def field_lines(path: Path) -> Callable[[tuple[Any, ...]], int | None]:
    """A lookup of key-path lines in a config file that is read and parsed once: a
    report naming n fields must not parse an O(n) file n times."""
    try:
        node = compose_yaml(read_text(path))
    except FileProblem:
        node = None
    return lambda loc: _line_of(node, loc)


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest node along `loc` that exists in the document."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if getattr(key_node, "value", None) == str(part):
                    line, node = key_node.start_mark.line + 1, value_node
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line
