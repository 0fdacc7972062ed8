"""Helpers for the composite GitHub Action (`action.yml`), run with the action's own Python.

    python -m gitsleep.action_outputs api-key-env --config .gitsleep.yml
        prints the name of the env var that must hold the model API key (`api_key_env`).
    python -m gitsleep.action_outputs publish --results DIR --exit-code N
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
from pathlib import Path
from typing import Any

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OUTPUT_NAMES = (
    "decision", "val-baseline", "val-candidate", "test-baseline", "test-candidate",
    "pr-operation", "pr-number", "pr-url", "commit",
)
EXIT_MEANINGS = {
    1: "problems found",
    2: "bad usage, config or input",
    3: "model backend failure; nothing committed",
    4: "git or forge failure; local work kept",
    5: "another gitsleep run holds the lock for this skill",
    6: "budget exhausted before a decision; nothing committed",
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --- api-key-env ------------------------------------------------------------------------


def api_key_env(config_file: str) -> str:
    """`api_key_env` from the config, or the default when the config cannot be read.

    An unreadable config is not this helper's to report: `consolidate` says what is wrong
    with it (exit 2) a moment later.
    """
    from gitsleep.config import load_config
    from gitsleep.errors import GitsleepError

    try:
        name = load_config(Path(config_file)).api_key_env
    except (GitsleepError, OSError):
        return DEFAULT_API_KEY_ENV
    return name if _ENV_NAME.match(name) else DEFAULT_API_KEY_ENV


# --- results ------------------------------------------------------------------------------


def load_results(results_dir: Path) -> list[dict[str, Any]]:
    """The results saved by the action, in file-name order; empty files are skipped.

    A file may hold one skill's object or an array of them. Raises ValueError naming the
    file when one is not the JSON `consolidate --json` prints.
    """
    results: list[dict[str, Any]] = []
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
            results.append(item)
    return results


def _score(value: Any) -> str:
    """A score as text, rounded to 3 decimals (never 0.20000000000000004)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return str(round(value, 3))
    return str(value)


def outputs_for(results: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The step outputs: the first skill's values, and all results as `results`."""
    first: Mapping[str, Any] = results[0] if results else {}
    val, test = first.get("val") or {}, first.get("test") or {}
    pr = first.get("pr") or {}
    outputs = {
        "decision": str(first.get("decision") or ""),
        "val-baseline": _score(val.get("baseline")),
        "val-candidate": _score(val.get("candidate")),
        "test-baseline": _score(test.get("baseline")),
        "test-candidate": _score(test.get("candidate")),
        "pr-operation": str(pr.get("operation") or ("none" if first else "")),
        "pr-number": _score(pr.get("number")),
        "pr-url": str(pr.get("url") or ""),
        "commit": str(first.get("commit") or ""),
        "results": json.dumps([_rounded(r) for r in results], separators=(",", ":")),
    }
    return outputs


def _rounded(data: Any) -> Any:
    """The result with every float rounded to 3 decimals."""
    if isinstance(data, float):
        return round(data, 3)
    if isinstance(data, dict):
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


def _cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: one line, no pipes, no HTML tags."""
    return " ".join(str(value).split()).replace("<", "&lt;").replace("|", "\\|")


def _split_cell(split: Mapping[str, Any] | None) -> str:
    if not split or not split.get("n"):
        return "no tasks"
    baseline, candidate = split.get("baseline"), split.get("candidate")
    if baseline is None:
        return f"n={split['n']}"
    after = "—" if candidate is None else f"{float(candidate):.3f}"
    return f"{float(baseline):.3f} → {after} (n={split['n']})"


def _pr_cell(pr: Mapping[str, Any] | None) -> str:
    pr = pr or {}
    operation = _cell(pr.get("operation") or "none")
    number, url = pr.get("number"), pr.get("url")
    if number and isinstance(url, str) and url.startswith(("https://", "http://")):
        return f"{operation} [#{int(number)}]({url.replace(')', '%29')})"
    return f"{operation} #{int(number)}" if number else operation


def history_charts(results: Sequence[Mapping[str, Any]], repo: Path) -> dict[str, str]:
    """skill -> a Mermaid chart of held-out per epoch, for skills with 2 or more epochs."""
    from gitsleep import history, report

    charts: dict[str, str] = {}
    for result in results:
        skill, branch = result.get("skill"), result.get("branch")
        if not isinstance(skill, str) or not isinstance(branch, str):
            continue
        epochs = history.read_epochs(repo, base="HEAD", branch_refs=[f"refs/heads/{branch}"],
                                     skills=[skill], details=False)  # trailers, not notes
        chart = report.held_out_chart(history.held_out_points(epochs),
                                      str(result.get("metric") or ""))
        if chart:
            charts[skill] = chart
    return charts


def summary_markdown(results: Sequence[Mapping[str, Any]], exit_code: int,
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
        commit = str(result.get("commit") or "")
        lines.append(
            f"| {_cell(result.get('skill', '?'))} | {_cell(result.get('decision', '?'))}"
            f"{' _(offline)_' if result.get('simulated') else ''} "
            f"| {_split_cell(result.get('val'))} | {_split_cell(result.get('test'))} "
            f"| {_pr_cell(result.get('pr'))} | {f'`{_cell(commit[:12])}`' if commit else '—'} |"
        )
    lines.append("")
    for result in results:
        skill = f"**{_cell(result.get('skill', '?'))}**"
        if result.get("reason"):
            lines.append(f"- {skill}: {_cell(result['reason'])}")
        pr = result.get("pr") or {}
        if (pr.get("operation") or "none") == "none" and pr.get("reason"):
            lines.append(f"- {skill}: no pull request: {_cell(pr['reason'])}")
    for skill, chart in (charts or {}).items():
        lines += ["", f"### {_cell(skill)}: held-out per epoch", "", chart]
    if any(r.get("simulated") for r in results):
        lines += ["", "> [!WARNING]", "> Rows marked _(offline)_ were scored by gitsleep's "
                  "offline simulator (`backend: offline`), not a real model: their scores say "
                  "nothing about a real model."]
    return "\n".join(lines) + "\n"


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
    _append(env.get("GITHUB_OUTPUT"), github_output_lines(outputs_for(results)))
    charts = history_charts(results, Path.cwd())
    _append(env.get("GITHUB_STEP_SUMMARY"), summary_markdown(results, exit_code, problem,
                                                             charts))
    if problem:
        print(f"::error title=gitsleep::cannot read the consolidate results: {problem}")
        return 0 if exit_code else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gitsleep.action_outputs")
    commands = parser.add_subparsers(dest="command", required=True)
    key = commands.add_parser("api-key-env", help="print the config's api_key_env")
    key.add_argument("--config", default=".gitsleep.yml")
    out = commands.add_parser("publish", help="write step outputs and the step summary")
    out.add_argument("--results", required=True, type=Path)
    out.add_argument("--exit-code", default="0",
                     help="consolidate's exit code (empty when it did not run)")
    args = parser.parse_args(argv)
    if args.command == "api-key-env":
        print(api_key_env(args.config))
        return 0
    exit_code = int(args.exit_code) if str(args.exit_code).strip().isdigit() else 1
    return publish(args.results, exit_code, os.environ)


if __name__ == "__main__":
    sys.exit(main())
