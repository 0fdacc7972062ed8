"""`.gitsleep.yml`: defaults, strict validation with one-line messages, overrides."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gitsleep.inputs.config
from gitsleep.base.errors import UsageError
from gitsleep.core.models import EpochSettings, GateSettings
from gitsleep.inputs.config import Config, apply_overrides, config_path, load_config
from gitsleep.sandbox import check_program as command_check

MINIMAL = """\
skills:
  - name: brief-writer
    skill: skills/brief-writer/SKILL.md
    tasks:
      - path: evals/brief-writer/train.jsonl
"""

TWO_FILES = """\
version: 1
backend: openai
model: some-model
skills:
  - name: brief-writer
    skill: skills/brief-writer/SKILL.md
    memory: AGENTS.md
    tasks:
      - path: evals/brief-writer/train.jsonl
        split: auto
      - path: evals/brief-writer/held-out.jsonl
        split: {split}
"""


def write(tmp_path: Path, text: str, name: str = ".gitsleep.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(UsageError) as info:
        load_config(write(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message, "config errors are one line"
    assert ".gitsleep.yml" in message, "config errors name the file"
    return message


def test_minimal_config_gets_the_documented_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL))
    assert config.version == 1
    assert config.backend == "openai"
    assert config.model is None and config.optimizer_model is None
    assert config.judge_model is None and config.base_url is None
    assert config.api_key_env == "OPENAI_API_KEY"
    assert config.skills[0].memory is None
    assert config.skills[0].tasks[0].split == "auto"
    assert (config.gate.metric, config.gate.mixed_weight, config.gate.min_delta) == (
        "mixed", 0.5, 0.0)
    assert (config.gate.no_regression, config.gate.repeats) == (False, 1)
    assert (config.edit_budget, config.rounds, config.proposals, config.workers) == (4, 2, 3, 4)
    assert (config.budget.max_calls, config.budget.max_tokens) == (500, 2_000_000)
    assert config.branch_prefix == "gitsleep/"
    assert (config.pr.base, config.pr.labels, config.pr.draft) == (None, ["gitsleep"], False)
    # keys beyond the interface example
    assert config.max_error_rate == 0.2 and config.cache is True
    assert config.timeout == 60 and config.max_retries == 4
    assert config.azure is None and config.prices == {}
    assert (config.learned_block.max_lines, config.learned_block.max_chars) == (40, 4000)


def test_full_config_with_every_key(tmp_path: Path) -> None:
    text = TWO_FILES.format(split="test") + """\
optimizer_model: big-model
judge_model: judge-model
base_url: http://127.0.0.1:8080/v1
api_key_env: MY_KEY
gate: {metric: hard, mixed_weight: 0.3, min_delta: 0.05, no_regression: true, repeats: 3}
edit_budget: 2
rounds: 1
proposals: 2
workers: 8
budget: {max_calls: 100, max_tokens: 5000}
branch_prefix: bots/gitsleep/
pr: {base: main, labels: [gitsleep, bot], draft: true}
max_error_rate: 0.5
cache: false
timeout: 5.5
max_retries: 0
azure: {api_version: "2024-10-21", deployment: dep, endpoint: "https://x.openai.azure.com"}
prices: {some-model: {prompt: 0.4, completion: 1.6}}
learned_block: {max_lines: 10, max_chars: 900}
"""
    config = load_config(write(tmp_path, text))
    assert config.skills[0].memory == "AGENTS.md"
    assert config.skills[0].documents() == {
        "skill": "skills/brief-writer/SKILL.md", "memory": "AGENTS.md"}
    assert [t.split for t in config.skills[0].tasks] == ["auto", "test"]
    assert config.azure is not None and config.azure.deployment == "dep"
    assert config.prices["some-model"].completion == 1.6
    settings = config.epoch_settings()
    assert settings == EpochSettings(
        model="some-model", optimizer_model="big-model", judge_model="judge-model",
        gate=GateSettings(metric="hard", mixed_weight=0.3, min_delta=0.05,
                          no_regression=True, repeats=3),
        edit_budget=2, rounds=1, proposals=2, workers=8, max_calls=100, max_tokens=5000,
        max_error_rate=0.5, block_max_lines=10, block_max_chars=900,
        check_program=command_check.check_answer)


def test_task_file_shorthand_and_path_normalisation(tmp_path: Path) -> None:
    text = "skills:\n  - {name: a, skill: './skills\\\\a.md', tasks: [evals/a.jsonl]}\n"
    config = load_config(write(tmp_path, text))
    assert config.skills[0].skill == "skills/a.md"
    assert config.skills[0].tasks[0].path == "evals/a.jsonl"
    assert config.skills[0].tasks[0].split == "auto"


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        # unknown keys, with the likely intended key
        ("workerz: 4\n", [":6: workerz: unknown key", "did you mean 'workers'?", "remove it"]),
        ("gate:\n  repeat: 2\n", [":7: gate.repeat: unknown key", "'repeats'"]),
        # wrong types
        ("workers: four\n", [":6: workers: must be an integer (got 'four')", "change the value"]),
        ("workers: '4'\n", ["workers: must be an integer"]),
        ("pr:\n  draft: 'yes'\n", [":7: pr.draft: must be true or false"]),
        ("gate: [hard]\n", ["gate: must be a mapping of keys"]),
        ("model: 4\n", ["model: must be a string (got 4)"]),
        # bad values
        ("backend: anthropic\n",
         ["backend: must be 'openai', 'offline' or 'command' (got 'anthropic')",
          "use one of those values"]),
        ("version: 2\n", ["version: must be 1 (got 2)"]),
        ("gate:\n  metric: best\n", ["gate.metric: must be 'hard', 'soft' or 'mixed'"]),
        ("gate:\n  mixed_weight: 1.5\n", ["gate.mixed_weight:", "less than or equal to 1"]),
        ("gate:\n  repeats: 0\n", ["gate.repeats:", "greater than or equal to 1"]),
        ("budget:\n  max_calls: -1\n", ["budget.max_calls:", "greater than or equal to 1"]),
        ("timeout: 0\n", ["timeout:", "greater than 0"]),
        ("max_error_rate: 2\n", ["max_error_rate:", "less than or equal to 1"]),
        ("branch_prefix: 'my branch/'\n", ["branch_prefix:", "cannot start a git branch name"]),
        ("base_url: ftp://example\n", ["base_url: must be an http:// or https:// URL"]),
        ("prices:\n  m: {prompt: 1}\n", ["prices.m.completion: required key is missing: add it"]),
        ("azure:\n  endpoint: nope\n", ["azure.endpoint: must be an http"]),
    ],
)
def test_bad_top_level_values_name_line_key_and_fix(
    tmp_path: Path, snippet: str, expected: list[str]
) -> None:
    message = error_of(tmp_path, MINIMAL + snippet)
    for part in expected:
        assert part in message


@pytest.mark.parametrize(
    ("split", "expected"),
    [
        ("holdout", ":12: skills[0].tasks[1].split: must be 'auto', 'train', 'val' or 'test' "
                    "(got 'holdout')"),
        ("3", "skills[0].tasks[1].split: must be"),
    ],
)
def test_bad_task_file_split_names_the_nested_key(
    tmp_path: Path, split: str, expected: str
) -> None:
    assert expected in error_of(tmp_path, TWO_FILES.format(split=split))


@pytest.mark.parametrize(
    ("skill", "expected"),
    [
        ("{name: Brief_Writer, skill: s.md, tasks: [t.jsonl]}",
         ["skills[0].name:", "'Brief_Writer' is not a valid skill name", "lowercase letters"]),
        ("{name: a--b, skill: s.md, tasks: [t.jsonl]}", ["skills[0].name:", "single hyphens"]),
        ("{name: " + "a" * 65 + ", skill: s.md, tasks: [t.jsonl]}",
         ["skills[0].name:", "at most 64 characters"]),
        ("{name: a, tasks: [t.jsonl]}", ["skills[0].skill: required key is missing: add it"]),
        ("{name: a, skill: s.md, tasks: []}", ["skills[0].tasks:", "at least 1 item"]),
        ("{name: a, skill: /etc/passwd, tasks: [t.jsonl]}",
         ["skills[0].skill: must be relative to the repository root"]),
        ("{name: a, skill: ../outside.md, tasks: [t.jsonl]}",
         ["skills[0].skill: must stay inside the repository"]),
        ("{name: a, skill: s.md, memory: '', tasks: [t.jsonl]}",
         ["skills[0].memory: must be a non-empty path"]),
        ("{name: a, skill: s.md, tasks: [{path: t.jsonl, splt: test}]}",
         ["skills[0].tasks[0].splt: unknown key", "did you mean 'split'?"]),
    ],
)
def test_bad_skill_entries(tmp_path: Path, skill: str, expected: list[str]) -> None:
    message = error_of(tmp_path, f"skills:\n  - {skill}\n")
    assert ".gitsleep.yml:2:" in message
    for part in expected:
        assert part in message


def test_duplicate_skill_names(tmp_path: Path) -> None:
    text = ("skills:\n"
            "  - {name: a, skill: a.md, tasks: [a.jsonl]}\n"
            "  - {name: a, skill: b.md, tasks: [b.jsonl]}\n")
    message = error_of(tmp_path, text)
    assert "skills:" in message and "'a' is used twice (skills[0] and skills[1])" in message
    assert "must be unique" in message


def test_missing_skills_and_multiple_errors(tmp_path: Path) -> None:
    message = error_of(tmp_path, "version: 1\nworkers: many\n")
    assert "skills: required key is missing" in message
    assert "(and 1 more)" in message


def test_api_key_in_api_key_env_is_refused_without_echoing_it(tmp_path: Path) -> None:
    key = "sk-proj-" + "Ab3" * 15
    message = error_of(tmp_path, MINIMAL + f"api_key_env: {key}\n")
    assert "api_key_env: must be the NAME of the environment variable" in message
    assert key not in message and "sk-proj" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("skills: [\n  {name: a\n", ".gitsleep.yml:2: YAML does not parse"),
        ("a: 1\n\tb: 2\n", ".gitsleep.yml:2: YAML does not parse"),
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("- a\n- b\n", ".gitsleep.yml:1: must be a mapping of keys"),
        ("a: &x [1]\n---\nb: 2\n", "YAML does not parse"),
    ],
)
def test_yaml_problems(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error_of(tmp_path, text)


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        load_config(tmp_path / ".gitsleep.yml")
    assert "not found" in str(info.value) and "gitsleep init" in str(info.value)


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    message = error_of(tmp_path, "\n".join(lines) + "\n")
    assert "aliases expand" in message and "refused" in message


def test_shared_alias_used_a_few_times_is_fine(tmp_path: Path) -> None:
    text = ("x-common: &files [evals/a.jsonl]\n"
            "skills:\n"
            "  - {name: a, skill: a.md, tasks: *files}\n"
            "  - {name: b, skill: b.md, tasks: *files}\n")
    message = error_of(tmp_path, text)  # aliases are fine; the unknown key is not
    assert "x-common: unknown key" in message


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    assert "refers to itself" in error_of(tmp_path, "a: &a [*a]\n")


def test_deep_nesting_is_refused_without_a_traceback(tmp_path: Path) -> None:
    message = error_of(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in message


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / ".gitsleep.yml"
    with path.open("wb") as handle:
        handle.truncate(21 * 1024 * 1024)  # sparse: costs no disk and no time
    with pytest.raises(UsageError) as info:
        load_config(path)
    assert "21.0 MB" in str(info.value) and "20 MB" in str(info.value)


def test_non_utf8_config(tmp_path: Path) -> None:
    path = tmp_path / ".gitsleep.yml"
    path.write_bytes(MINIMAL.encode() + b"model: caf\xe9\n")
    with pytest.raises(UsageError) as info:
        load_config(path)
    assert ".gitsleep.yml:6: is not valid UTF-8" in str(info.value)


# --- models, overrides and settings -----------------------------------------------------


def config_from(text: str, tmp_path: Path) -> Config:
    return load_config(write(tmp_path, text))


def test_no_model_for_a_real_backend_is_a_usage_error(tmp_path: Path) -> None:
    config = config_from(MINIMAL, tmp_path)
    with pytest.raises(UsageError) as info:
        config.epoch_settings()
    message = str(info.value)
    assert "model:" in message and "--model" in message and "GITSLEEP_MODEL" in message


def test_optimizer_and_judge_default_down_the_chain(tmp_path: Path) -> None:
    config = config_from(MINIMAL + "model: agent-m\n", tmp_path)
    assert config.models() == ("agent-m", "agent-m", "agent-m")
    config = config_from(MINIMAL + "model: agent-m\noptimizer_model: opt-m\n", tmp_path)
    settings = config.epoch_settings()
    assert (settings.model, settings.optimizer_model, settings.judge_model) == (
        "agent-m", "opt-m", "opt-m")


def test_offline_backend_names_itself(tmp_path: Path) -> None:
    config = config_from(MINIMAL + "backend: offline\n", tmp_path)
    assert config.models() == ("offline", "offline", "offline")
    # a configured real model does not make the simulator claim to be it
    config = config_from(MINIMAL + "backend: offline\nmodel: real-model\n", tmp_path)
    assert config.epoch_settings().model == "offline"


def test_the_simulator_is_named_in_every_role_it_plays(tmp_path: Path) -> None:
    """The offline optimizer of an agent CLI was named after the agent program."""
    config = config_from(MINIMAL + "backend: command\noptimizer_backend: offline\n"
                         "agent: {command: [./my-agent]}\n", tmp_path)
    assert config.models() == ("my-agent", "offline", "offline")
    config = config_from(MINIMAL + "backend: command\noptimizer_backend: offline\n"
                         "judge_backend: openai\njudge_model: judge-m\n"
                         "agent: {command: [./my-agent]}\n", tmp_path)
    assert config.models() == ("my-agent", "offline", "judge-m")


def test_overrides_flag_beats_env_beats_file(tmp_path: Path) -> None:
    config = config_from(MINIMAL + "model: file-model\nbase_url: http://file/v1\n", tmp_path)
    env = {"GITSLEEP_MODEL": "env-model", "GITSLEEP_BACKEND": "offline",
           "GITSLEEP_BASE_URL": "http://env/v1"}
    assert apply_overrides(config, {}).model == "file-model"
    overridden = apply_overrides(config, env)
    assert (overridden.model, overridden.backend, overridden.base_url) == (
        "env-model", "offline", "http://env/v1")
    flagged = apply_overrides(config, env, backend="openai", model="flag-model")
    assert (flagged.model, flagged.backend) == ("flag-model", "openai")
    assert config.model == "file-model", "the original config is unchanged"


def test_empty_override_values_count_as_unset(tmp_path: Path) -> None:
    config = config_from(MINIMAL + "model: file-model\n", tmp_path)
    result = apply_overrides(config, {"GITSLEEP_MODEL": "", "GITSLEEP_BACKEND": "  "}, model="")
    assert (result.model, result.backend) == ("file-model", "openai")


def test_env_model_satisfies_a_real_backend(tmp_path: Path) -> None:
    config = apply_overrides(config_from(MINIMAL, tmp_path), {"GITSLEEP_MODEL": "env-m"})
    assert config.epoch_settings().model == "env-m"


@pytest.mark.parametrize(
    ("env", "flags", "expected"),
    [
        ({"GITSLEEP_BACKEND": "bogus"}, {},
         "GITSLEEP_BACKEND: must be 'openai', 'offline' or 'command'"),
        ({}, {"backend": "bogus"}, "--backend: must be 'openai', 'offline' or 'command'"),
        ({"GITSLEEP_BASE_URL": "localhost:8080"}, {},
         "GITSLEEP_BASE_URL: must be an http:// or https:// URL"),
    ],
)
def test_bad_override_names_its_source(
    tmp_path: Path, env: dict[str, str], flags: dict[str, str], expected: str
) -> None:
    with pytest.raises(UsageError) as info:
        apply_overrides(config_from(MINIMAL, tmp_path), env, **flags)
    assert expected in str(info.value)


def test_skill_lookup(tmp_path: Path) -> None:
    config = config_from(MINIMAL, tmp_path)
    assert config.skill("brief-writer").skill == "skills/brief-writer/SKILL.md"
    with pytest.raises(UsageError, match="unknown skill 'nope': the config defines brief-writer"):
        config.skill("nope")


def test_config_path(tmp_path: Path) -> None:
    assert config_path(tmp_path) == tmp_path / ".gitsleep.yml"
    assert config_path(tmp_path, "other.yml") == Path("other.yml")


def test_rollouts_defaults_to_off_and_reaches_the_epoch(tmp_path: Path) -> None:
    base = "backend: offline\nskills:\n  - {name: a, skill: a.md, tasks: [a.jsonl]}\n"
    assert load_config(write(tmp_path, base)).epoch_settings().rollouts == 1
    assert load_config(write(tmp_path, base + "rollouts: 3\n")).epoch_settings().rollouts == 3
    with pytest.raises(UsageError, match="rollouts"):
        load_config(write(tmp_path, base + "rollouts: 0\n"))


def test_config_imports_everything_at_the_top() -> None:
    """No import inside a function: nothing forces one (no cycle, no forbidden reach)."""
    tree = ast.parse(Path(gitsleep.inputs.config.__file__).read_text(encoding="utf-8"))
    inside = [node.lineno for func in ast.walk(tree)
              if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(func) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert inside == []


@pytest.mark.parametrize(
    ("text", "expected", "raw"),
    [
        ("version: 1\nskills: []\n",
         ".gitsleep.yml:2: skills: must have at least 1 item, it has 0: add a skill (its "
         "name, skill and tasks)", "List should have"),
        ("version: 2\n" + MINIMAL, ".gitsleep.yml:1: version: must be 1 (got 2): set "
                                   "`version: 1`", "use one of those values"),
        ("version: 1\nbackend: command\n" + MINIMAL,
         ".gitsleep.yml:2: backend: `command` runs an agent CLI, and there is no `agent:` "
         "section saying which: add `agent: codex`", "(top level)"),
        ("version: 1\nbackend: offline\noptimizer_backend: command\n" + MINIMAL,
         ".gitsleep.yml:3: optimizer_backend: `command` runs an agent CLI", "(top level)"),
    ],
)
def test_config_errors_say_the_field_and_the_fix_in_plain_words(
        tmp_path: Path, text: str, expected: str, raw: str) -> None:
    message = error_of(tmp_path, text)
    assert expected in message and raw not in message


@pytest.mark.parametrize(
    ("text", "line", "fix"),
    [
        ('version: 1\ngate:\n  metric: "hard\n' + MINIMAL, 3,
         "a quoted value that starts on this line is never closed: add the closing quote"),
        ("version: 1\nskills:\n  - name: a\n    skill: s.md\n    tasks: [a, b\n", 5,
         "a `[` list that starts on this line is never closed: add `]`"),
        ("version: 1\nskills:\n  - name: a\n\tskill: s.md\n", 4,
         "indent with spaces, not tabs: replace the tab"),
        ("version: 1\nskills:\n  - name: a\n    tasks:\n    - path: t.jsonl\n   split: val\n",
         6, "align this line with the `-` of the items above it"),
        ("version: 1\nmodel: a: b\n", 2, "a value holding `: ` needs quotes"),
    ],
)
def test_yaml_errors_name_the_line_of_the_mistake_and_a_fix(
        tmp_path: Path, text: str, line: int, fix: str) -> None:
    message = error_of(tmp_path, text)
    assert f".gitsleep.yml:{line}: YAML does not parse: " in message
    assert message.endswith(fix) or fix in message

# -- names are matched whole --------------------------------------------------------------


def _skill(name: str = "notes", **extra: object) -> dict[str, object]:
    return {"name": name, "skill": "SKILL.md", "tasks": [{"path": "t.jsonl"}], **extra}


@pytest.mark.parametrize("data", [
    {"skills": [_skill("notes\n")]},
    {"skills": [_skill()], "agents": [{"name": "small\n"}, {"name": "large"}]},
    {"skills": [_skill()], "api_key_env": "MY_KEY\n"},
    {"skills": [_skill()], "checks": {"pass_env": ["DATABASE_URL\n"]}},
    {"skills": [_skill()], "agent": {"command": ["a"], "env": {"HOME\n": "/tmp"}}},
], ids=["skill", "agent", "api_key_env", "pass_env", "agent.env"])
def test_a_name_with_a_trailing_newline_is_refused(data: dict[str, object]) -> None:
    """Before: `$` matched before a final newline, so `small\\n` passed and its trailers
    were then dropped (one agent shown where there were two)."""
    with pytest.raises(ValueError):
        Config.model_validate({"version": 1, "backend": "offline", **data})


def test_an_env_reference_with_a_trailing_newline_is_a_literal() -> None:
    from gitsleep.inputs.agent_settings import env_reference

    assert env_reference("$KEY") == "KEY"
    assert env_reference("$KEY\n") is None


def test_a_frontmatter_name_with_a_trailing_newline_is_warned() -> None:
    from gitsleep.inputs.validation import frontmatter_problems

    text = '---\nname: "notes\\n"\ndescription: Notes.\n---\n# Notes\n'
    assert [p.code for p in frontmatter_problems(text, "SKILL.md")] == ["GS203"]
    assert frontmatter_problems(text.replace("\\n", ""), "SKILL.md") == []


def test_the_actions_key_variable_with_a_trailing_newline_is_the_default(
        tmp_path: Path) -> None:
    """The Action exports the key with bash under this name: it must be a whole name."""
    from gitsleep.report.action_outputs import api_key_env

    config = write(tmp_path, 'version: 1\napi_key_env: "MY_KEY\\n"\nskills: []\n')
    assert api_key_env(str(config)) == "OPENAI_API_KEY"
    named = write(tmp_path, "version: 1\napi_key_env: MY_KEY\n" + MINIMAL)
    assert api_key_env(str(named)) == "MY_KEY"
