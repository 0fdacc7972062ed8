"""Helpers for the composite GitHub Action (`action.yml`), run with the action's own Python.

    python -m gitsleep.report.action_outputs api-key-env --config .gitsleep.yml [--base REF]
        prints the name of the env var that must hold the model API key (`api_key_env`),
        read at REF when given (a review: the base's config decides).
    python -m gitsleep.report.action_outputs publish --results DIR --exit-code N
        reads the `consolidate --json` results saved in DIR (one file per skill), writes the
        step outputs to $GITHUB_OUTPUT and a Markdown table to $GITHUB_STEP_SUMMARY.

With several skills, the scalar outputs (`decision`, `val-baseline`, ...) hold the FIRST
skill's values (the action's exit code is the highest of the skills', as the CLI's),
`results` holds every skill's result as a JSON array, and the summary
has one row per skill. The action's matrix example runs one skill per job, where the
scalar outputs are simply that skill's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitsleep.base.errors import (
    EXIT_BACKEND,
    EXIT_BUDGET,
    EXIT_GIT,
    EXIT_LOCKED,
    EXIT_PROBLEMS,
    EXIT_USAGE,
)
from gitsleep.core.outcome import PrResult, Scores, SkillSummary

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OUTPUT_NAMES = (
    "decision", "val-baseline", "val-candidate", "test-baseline", "test-candidate",
    "pr-operation", "pr-number", "pr-url", "commit", "agents",
    "trigger-val-baseline", "trigger-val-candidate", "trigger-test-baseline",
    "trigger-test-candidate", "triggers",
)
EXIT_MEANINGS = {
    EXIT_PROBLEMS: "problems found",
    EXIT_USAGE: "bad usage, config or input",
    EXIT_BACKEND: "model backend failure; nothing committed",
    EXIT_GIT: "git or forge failure; local work kept",
    EXIT_LOCKED: "another gitsleep run holds the lock for this skill",
    EXIT_BUDGET: "budget exhausted before a decision; nothing committed",
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


# --- api-key-env ------------------------------------------------------------------------


def api_key_env(config_file: str, base: str = "") -> str:
    """`api_key_env` from the config, or the default when the config cannot be read.

    With `base` (review mode) the config is read as committed at that revision: a review's
    settings are the base's, so a pull request cannot choose the variable the model key is
    put in. An unreadable config is not this helper's to report: `consolidate` (or
    `review`) says what is wrong with it a moment later.
    """
    import tempfile

    from gitsleep.base.errors import GitsleepError
    from gitsleep.git_forge.gitrun import git_run
    from gitsleep.inputs.config import load_config

    try:
        if not base:
            name = load_config(Path(config_file)).api_key_env
        else:
            if base.startswith("-"):
                return DEFAULT_API_KEY_ENV
            relative = os.path.relpath(config_file) if os.path.isabs(config_file) \
                else config_file
            done = git_run(Path.cwd(), "cat-file", "--filters",
                           f"{base}:./{Path(relative).as_posix()}")
            if done.status != 0:
                return DEFAULT_API_KEY_ENV
            with tempfile.TemporaryDirectory() as folder:
                copy = Path(folder) / Path(config_file).name
                copy.write_bytes(done.out)
                name = load_config(copy).api_key_env
    except (GitsleepError, OSError):
        return DEFAULT_API_KEY_ENV
    return name if _ENV_NAME.match(name) else DEFAULT_API_KEY_ENV


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SavedResult:
    """One skill's `consolidate --json` result as the action saved it: the typed record
    every output and the summary read, and the file's object as written, which the
    `results` output hands on as it is (floats rounded), never read by key."""

    summary: SkillSummary
    saved: Mapping[str, object]


def load_results(results_dir: Path) -> list[SavedResult]:
    """The results saved by the action, in file-name order; empty files are skipped.

    A file may hold one skill's object or an array of them. Each is parsed here, at the
    edge (`SkillSummary.from_json`: a wrong field reads as unknown). Raises ValueError
    naming the file when one is not the JSON `consolidate --json` prints.
    """
    results: list[SavedResult] = []
    if not results_dir.is_dir():
        return results
    for path in sorted(results_dir.glob("*.json")):
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name}: not JSON ({exc.msg} at line {exc.lineno})") from None
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict) or "skill" not in item:
                raise ValueError(f"{path.name}: not a gitsleep consolidate result")
            results.append(SavedResult(SkillSummary.from_json(item), item))
    return results


def _score(value: float | int | None) -> str:
    """A score as text, rounded to 3 decimals (never 0.20000000000000004)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return str(round(value, 3))
    return str(value)


def outputs_for(results: Sequence[SkillSummary],
                saved: Sequence[Mapping[str, object]] = ()) -> dict[str, str]:
    """The step outputs: the first skill's values, and all results as `results` (the
    files' JSON as saved, floats rounded)."""
    first = results[0] if results else None
    if first is None:
        first = SkillSummary(skill="", decision="", pr=PrResult(operation=""))
    outputs = {
        "decision": first.decision,
        "val-baseline": _score(first.val.baseline),
        "val-candidate": _score(first.val.candidate),
        "test-baseline": _score(first.test.baseline),
        "test-candidate": _score(first.test.candidate),
        "pr-operation": first.pr.operation,
        "pr-number": _score(first.pr.number),
        "pr-url": first.pr.url or "",
        "commit": first.commit or "",
        # several agents: the first skill's per-agent scores ([] for a night of one agent)
        "agents": json.dumps([_rounded(a.to_json()) for a in first.agents],
                             separators=(",", ":")),
        # the trigger pass (when the skill is picked): empty when the night ran none
        **_trigger_scores(first),
        "triggers": json.dumps([_rounded(_trigger_entry(r)) for r in results
                                if r.triggers is not None], separators=(",", ":")),
        "results": json.dumps([_rounded(r) for r in saved], separators=(",", ":")),
    }
    return outputs


def _trigger_scores(result: SkillSummary) -> dict[str, str]:
    """The skill's trigger accuracy, shaped like the score outputs ('' without a pass)."""
    night = result.triggers
    val = night.val if night is not None else Scores()
    test = night.test if night is not None else Scores()
    return {"trigger-val-baseline": _score(val.baseline),
            "trigger-val-candidate": _score(val.candidate),
            "trigger-test-baseline": _score(test.baseline),
            "trigger-test-candidate": _score(test.candidate)}


def _trigger_entry(result: SkillSummary) -> dict[str, object]:
    """One skill's trigger pass in the `triggers` output."""
    night = result.triggers
    assert night is not None
    return {"skill": result.skill, "decision": night.decision,
            "pr_eligible": night.pr_eligible, "val": night.val.to_json(),
            "test": night.test.to_json()}


def _rounded(data: object) -> object:
    """The result with every float rounded to 3 decimals."""
    if isinstance(data, float):
        return round(data, 3)
    if isinstance(data, Mapping):
        return {k: _rounded(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_rounded(v) for v in data]
    return data


def github_output_lines(outputs: Mapping[str, str]) -> str:
    """`name=value` lines for $GITHUB_OUTPUT; multi-line values use a random delimiter."""
    lines = []
    for name, value in outputs.items():
        if "\n" in value or "\r" in value:
            delimiter = f"gitsleep_{uuid.uuid4().hex}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}")
        else:
            lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


# --- the step summary ----------------------------------------------------------------------


def _cell(value: object) -> str:
    """Text safe inside a Markdown table cell: one line, no pipes, no HTML tags."""
    return " ".join(str(value).split()).replace("<", "&lt;").replace("|", "\\|")


def _split_cell(split: Scores) -> str:
    if not split.n:
        return "no tasks"
    if split.baseline is None:
        return f"n={split.n}"
    after = "—" if split.candidate is None else f"{split.candidate:.3f}"
    return f"{split.baseline:.3f} → {after} (n={split.n})"


def _pr_cell(pr: PrResult) -> str:
    operation = _cell(pr.operation or "none")
    number, url = pr.number, pr.url
    if number and url and url.startswith(("https://", "http://")):
        return f"{operation} [#{number}]({url.replace(')', '%29')})"
    return f"{operation} #{number}" if number else operation


def history_charts(results: Sequence[SkillSummary], repo: Path) -> dict[str, str]:
    """skill -> a Mermaid chart of held-out per epoch, for skills with 2 or more epochs."""
    from gitsleep import report
    from gitsleep.git_forge import history

    charts: dict[str, str] = {}
    for result in results:
        if result.branch is None or not result.skill:
            continue
        epochs = history.read_epochs(repo, base="HEAD",
                                     branch_refs=[f"refs/heads/{result.branch}"],
                                     skills=[result.skill], details=False)  # trailers only
        chart = report.held_out_chart(history.held_out_points(epochs), result.metric)
        if chart:
            charts[result.skill] = chart
    return charts


def summary_markdown(results: Sequence[SkillSummary], exit_code: int,
                     problem: str = "", charts: Mapping[str, str] | None = None) -> str:
    """The Markdown written to $GITHUB_STEP_SUMMARY: one table row per skill."""
    lines = ["## gitsleep", ""]
    if exit_code:
        meaning = EXIT_MEANINGS.get(exit_code, "unexpected failure")
        lines += [f"> **gitsleep consolidate failed with exit code {exit_code}** ({meaning}). "
                  "The job log has the one-line reason.", ""]
    if problem:
        lines += [f"> Could not read the results: {_cell(problem)}", ""]
    if not results:
        lines.append("No skill produced a result.")
        return "\n".join(lines) + "\n"
    lines += [
        "| Skill | Decision | Validation | Held-out | Pull request | Commit |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        commit = result.commit or ""
        lines.append(
            f"| {_cell(result.skill)} | {_cell(result.decision or '?')}"
            f"{' _(offline)_' if result.simulated else ''} "
            f"| {_split_cell(result.val)} | {_split_cell(result.test)} "
            f"| {_pr_cell(result.pr)} | {f'`{_cell(commit[:12])}`' if commit else '—'} |"
        )
    lines.append("")
    lines += _agent_rows(results)
    for result in results:
        skill = f"**{_cell(result.skill)}**"
        if result.reason:
            lines.append(f"- {skill}: {_cell(result.reason)}")
        if (result.pr.operation or "none") == "none" and result.pr.reason:
            lines.append(f"- {skill}: no pull request: {_cell(result.pr.reason)}")
    for skill, chart in (charts or {}).items():
        lines += ["", f"### {_cell(skill)}: held-out per epoch", "", chart]
    if any(r.simulated for r in results):
        lines += ["", "> [!WARNING]", "> Rows marked _(offline)_ were scored by gitsleep's "
                  "offline simulator (`backend: offline`), not a real model: their scores say "
                  "nothing about a real model."]
    return "\n".join(lines) + "\n"


def _agent_rows(results: Sequence[SkillSummary]) -> list[str]:
    """Several agents: one table row per skill and agent (nothing for nights of one)."""
    rows = [f"| {_cell(r.skill)} | {_cell(a.name)} | {_cell(a.model) or '—'} "
            f"| {_split_cell(a.val)} | {_split_cell(a.test)} |"
            for r in results for a in r.agents]
    if not rows:
        return []
    return ["| Skill | Agent | Model | Validation | Held-out |",
            "| --- | --- | --- | --- | --- |", *rows, ""]


def _append(path: str | None, text: str) -> None:
    """Append to a runner file; outside Actions (no such env var) print to stdout."""
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


def publish(results_dir: Path, exit_code: int, env: Mapping[str, str]) -> int:
    """Write outputs and summary. Returns 1 only when the results cannot be read while
    consolidate claimed success; a failed consolidate already failed its own step."""
    problem = ""
    try:
        results = load_results(results_dir)
    except (ValueError, OSError) as exc:
        results, problem = [], str(exc)
    summaries = [r.summary for r in results]
    _append(env.get("GITHUB_OUTPUT"), github_output_lines(
        outputs_for(summaries, [r.saved for r in results])))
    charts = history_charts(summaries, Path.cwd())
    _append(env.get("GITHUB_STEP_SUMMARY"), summary_markdown(summaries, exit_code, problem,
                                                             charts))
    if problem:
        print(f"::error title=gitsleep::cannot read the consolidate results: {problem}")
        return 0 if exit_code else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gitsleep.report.action_outputs")
    commands = parser.add_subparsers(dest="command", required=True)
    key = commands.add_parser("api-key-env", help="print the config's api_key_env")
    key.add_argument("--config", default=".gitsleep.yml")
    key.add_argument("--base", default="", help="read the config as committed at this "
                     "revision (review mode: the base decides)")
    out = commands.add_parser("publish", help="write step outputs and the step summary")
    out.add_argument("--results", required=True, type=Path)
    out.add_argument("--exit-code", default="0",
                     help="consolidate's exit code (empty when it did not run)")
    args = parser.parse_args(argv)
    if args.command == "api-key-env":
        print(api_key_env(args.config, args.base))
        return 0
    exit_code = int(args.exit_code) if str(args.exit_code).strip().isdigit() else 1
    return publish(args.results, exit_code, os.environ)


if __name__ == "__main__":
    sys.exit(main())
