"""The shipped JSON Schemas: generated from the models, valid, and true to what gitsleep reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from gitsleep.inputs import schemas
from gitsleep.inputs.config import load_config
from gitsleep.inputs.tasks import load_skill_tasks, load_trigger_tasks

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "schemas"


def shipped(name: str) -> dict:
    return json.loads((SHIPPED / name).read_text(encoding="utf-8"))


def test_shipped_schemas_equal_the_generated_ones(tmp_path: Path) -> None:
    written = schemas.write(tmp_path)
    for path in written:
        assert (SHIPPED / path.name).read_text(encoding="utf-8") == path.read_text(
            encoding="utf-8"), f"run `python -m gitsleep.inputs.schemas` to refresh {path.name}"


def test_shipped_schemas_are_valid_draft_2020_12() -> None:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool
    done = subprocess.run([tool, "--check-metaschema", *map(str, sorted(SHIPPED.glob("*.json")))],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("config", [ROOT / "gitsleep" / "templates" / "gitsleep.yml",
                                    *sorted((ROOT / "examples").glob("*/.gitsleep.yml"))])
def test_every_config_gitsleep_ships_validates(config: Path) -> None:
    jsonschema.validate(yaml.safe_load(config.read_text()),
                        shipped(schemas.CONFIG_FILE))


def test_the_config_schema_accepts_the_tasks_shorthand_and_rejects_typos() -> None:
    schema = shipped(schemas.CONFIG_FILE)
    good = {"skills": [{"name": "a", "skill": "S.md", "tasks": ["evals/a.jsonl"]}]}
    jsonschema.validate(good, schema)
    for bad in ({**good, "rounds": 0}, {**good, "gate": {"metric": "avg"}},
                {**good, "backnd": "offline"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_every_bundled_task_file_validates_and_loads(tmp_path: Path) -> None:
    schema = shipped(schemas.TASKS_FILE)
    for example in sorted((ROOT / "examples").glob("*/.gitsleep.yml")):
        config = load_config(example)
        for skill in config.skills:
            loaded = [*load_skill_tasks(example.parent, skill),
                      *load_trigger_tasks(example.parent, skill)]
            count = 0
            for entry in skill.tasks:
                lines = (example.parent / entry.path).read_text().splitlines()
                records = [json.loads(line) for line in lines if line.strip()]
                jsonschema.validate(records, schema)
                count += len(records)
            assert count == len(loaded)


def test_the_task_schema_is_a_tagged_union_on_judge_kind() -> None:
    schema = shipped(schemas.TASKS_FILE)
    rule = {"id": "t1", "prompt": "p", "judge": {"kind": "rule",
                                                 "checks": [{"op": "contains", "arg": "x"}]}}
    jsonschema.validate({"tasks": [rule, {"id": 2, "prompt": "q", "split": "test",
                                          "judge": {"kind": "exact", "answer": "42"}}]}, schema)
    for judge in ({"kind": "rule", "answer": "x"},  # the fields of another kind
                  {"kind": "exact"},
                  {"kind": "rule", "checks": [{"op": "containz", "arg": "x"}]},
                  {"kind": "vibes", "rubric": "good"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([{**rule, "judge": judge}], schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**rule, "split": "holdout"}], schema)


def test_the_task_schema_knows_workspaces_and_the_program_and_workspace_ops() -> None:
    schema = shipped(schemas.TASKS_FILE)
    task = {"id": "cl-01", "prompt": "Add a changelog entry.",
            "workspace": "evals/changelog/fixture",
            "judge": {"kind": "rule", "checks": [
                {"op": "command", "arg": ["python", "-m", "pytest", "-q"]},
                {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "text": "--watch"}},
                {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "regex": "watch"}},
                {"op": "file_exists", "arg": "docs/watch.md"},
                {"op": "changed_files_max", "arg": 3}]}}
    jsonschema.validate([task], schema)
    for check in ({"op": "command", "arg": []},
                  {"op": "command", "arg": ["python", 3]},
                  {"op": "file_contains", "arg": {"path": "a", "text": "x", "mode": "all"}},
                  {"op": "file_contains", "arg": {"text": "x"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([{**task, "judge": {"kind": "rule", "checks": [check]}}],
                                schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**task, "workspace": 3}], schema)
