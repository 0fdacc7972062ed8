"""SkillOpt-Sleep side by side with gitsleep: same server, same models, same examples.

Opt-in, like run.py: without GITSLEEP_TEST_LLM_URL it says why it skipped and exits 0.
It needs `skillopt` (PyPI 0.2.0, which ships `skillopt_sleep`) installed in a SEPARATE
environment, given with `--skillopt-python` (never a gitsleep dependency):

    python3 -m venv /work/llm/skillopt-venv
    /work/llm/skillopt-venv/bin/pip install skillopt==0.2.0
    GITSLEEP_TEST_LLM_URL=http://127.0.0.1:8765/v1 .venv/bin/python \\
        benchmarks/real_model/skillopt_side.py --skillopt-python /work/llm/skillopt-venv/bin/python

Per example and seed it writes a reviewed tasks file in SkillOpt-Sleep's format (the
example's train/val/test tasks with the same rule judges), a scratch HOME with its
`config.json` (its OpenAI-compatible backend for both models, the run's seed, no memory
document), and runs `skillopt_sleep run ... --json` (through `skillopt_compat.py`, which
gives 0.2.0 the OpenAI-compatible transport its later versions have) via a counting proxy
that tallies the requests and the `usage` tokens the server reports. SkillOpt-Sleep 0.2.0
does not score the test split itself, so the skill it proposes (or the original, when it
rejects) is scored on the example's val and held-out tasks by gitsleep's own replay and
rule judges, with the same agent, answer cap and answer store as run.py: both tools'
skills are measured by one scorer.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.real_model.run import (
    EXAMPLES,
    HERE,
    URL_ENV,
    SeededBackend,
    ServerLog,
    bench_config,
)
from benchmarks.real_model.run import (
    parse_args as run_args,
)
from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.base.bundled import examples_dir
from gitsleep.core import replay
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.flows.consolidate import read_inputs


class CountingProxy(http.server.ThreadingHTTPServer):
    """Forwards every request to the real server and counts calls and usage tokens."""

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream.rstrip("/")
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: CountingProxy

    def log_message(self, *args: Any) -> None:
        pass

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        path = self.path[3:] if self.path.startswith("/v1") else self.path
        request = urllib.request.Request(self.server.upstream + path, data=body, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=900) as reply:
                status, data = reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        if method == "POST":
            usage: dict[str, Any] = {}
            with contextlib.suppress(ValueError, AttributeError):
                usage = json.loads(data).get("usage") or {}
            with self.server.lock:
                self.server.calls += 1
                self.server.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                self.server.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        self._forward("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._forward("GET")


def tasks_file(example: str, project: Path, skill_path: Path) -> dict[str, Any]:
    config = bench_config(example, run_args([]), "http://unused")
    tasks, _documents = read_inputs(examples_dir() / example, config.skills[0])
    records = []
    for task in tasks:
        checks = [{"op": c.op, "arg": c.arg} if c.arg is not None else {"op": c.op}
                  for c in task.judge.checks]
        records.append({"id": task.id, "project": str(project), "intent": task.prompt,
                        "reference_kind": "rule", "judge": {"kind": "rule", "checks": checks},
                        "split": task.split, "outcome": "fail"})
    return {"format": "skillopt_sleep.tasks.v1", "project": str(project), "reviewed": True,
            "target_skill_path": str(skill_path), "tasks": records}


def one_run(example: str, seed: int, args: argparse.Namespace, url: str,
            scorer: SeededBackend) -> dict[str, Any]:
    work = args.out / "skillopt" / f"{example}-seed{seed}"
    shutil.rmtree(work, ignore_errors=True)
    home, project = work / "home", work / "project"
    (home / ".skillopt-sleep").mkdir(parents=True)
    project.mkdir(parents=True)
    config = bench_config(example, run_args([]), url)
    source = examples_dir() / example / config.skills[0].skill
    skill_path = project / "SKILL.md"
    skill_path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    tasks_path = work / "tasks.json"
    tasks_path.write_text(json.dumps(tasks_file(example, project, skill_path), indent=2) + "\n")
    (home / ".skillopt-sleep" / "config.json").write_text(json.dumps({
        "backend": "azure_openai", "optimizer_backend": "azure_openai",
        "target_backend": "azure_openai", "model": args.agent_model,
        "optimizer_model": args.optimizer_model, "target_model": args.agent_model,
        "evolve_memory": False, "llm_mine": False, "seed": seed, "edit_budget": 4,
    }, indent=2))
    proxy = CountingProxy(url)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    env = {**os.environ, "HOME": str(home), "AZURE_OPENAI_AUTH_MODE": "openai_compatible",
           "AZURE_OPENAI_ENDPOINT": proxy.url, "AZURE_OPENAI_API_KEY": "x",
           "SKILLOPT_SLEEP_COMPAT_MAX_TOKENS": str(args.max_tokens)}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [args.skillopt_python, str(HERE / "skillopt_compat.py"), "run", "--project",
             str(project),
             "--tasks-file", str(tasks_path), "--target-skill-path", str(skill_path), "--json"],
            env=env, cwd=project, capture_output=True, text=True, timeout=args.timeout)
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout, stderr, code = str(exc.stdout or ""), str(exc.stderr or ""), -1
    wall = time.monotonic() - started
    proxy.shutdown()
    (work / "stdout.txt").write_text(stdout)
    (work / "stderr.txt").write_text(stderr)
    try:
        report = json.loads(stdout[stdout.index("{"):]) if "{" in stdout else {}
    except ValueError:
        report = {}
    proposed = sorted(project.glob(".skillopt-sleep/staging/*/proposed_SKILL.md"))
    original = skill_path.read_text(encoding="utf-8")
    final = proposed[-1].read_text(encoding="utf-8") if proposed else original
    scores = score(example, original, final, args, scorer)
    return {
        "example": example, "seed": seed, "exit_code": code,
        "action": report.get("gate_action"),
        "own_val": {"baseline": report.get("baseline"), "candidate": report.get("candidate")},
        "val": scores["val"], "test": scores["test"],
        "changed": final != original,
        "edits": [e.get("content") for e in report.get("edits") or []],
        "calls": proxy.calls, "prompt_tokens": proxy.prompt_tokens,
        "completion_tokens": proxy.completion_tokens, "wall_seconds": round(wall, 1),
    }


def score(example: str, original: str, final: str, args: argparse.Namespace,
          scorer: SeededBackend) -> dict[str, dict[str, float | None]]:
    """Val and held-out of the original and the final skill, scored as run.py scores."""
    config = bench_config(example, run_args(["--agent-model", args.agent_model]),
                          os.environ[URL_ENV])
    tasks, _documents = read_inputs(examples_dir() / example, config.skills[0])
    settings = config.epoch_settings()
    runner = CallRunner(scorer, workers=1)
    out: dict[str, dict[str, float | None]] = {}
    for split in ("val", "test"):
        chosen = [t for t in tasks if t.split == split]
        before = replay.score_split(runner, chosen, {"skill": original, "memory": None}, settings,
                                    label="baseline", split=split)
        after = replay.score_split(runner, chosen, {"skill": final, "memory": None}, settings,
                                   label="final", split=split)
        out[split] = {"baseline": before.mean, "candidate": after.mean}
    return out


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    def f(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    lines = ["| example | seed | action | its own val | val before -> after | held-out before "
             "-> after | calls | tokens | wall |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['example']} | {r['seed']} | {r['action']} "
            f"| {f(r['own_val']['baseline'])} -> {f(r['own_val']['candidate'])} "
            f"| {f(r['val']['baseline'])} -> {f(r['val']['candidate'])} "
            f"| {f(r['test']['baseline'])} -> {f(r['test']['candidate'])} "
            f"| {r['calls']} | {r['prompt_tokens'] + r['completion_tokens']:,} "
            f"| {r['wall_seconds'] / 60:.1f} min |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    url = os.environ.get(URL_ENV, "").strip()
    if not url:
        print(f"skipped: set {URL_ENV} (see benchmarks/real_model/README.md)")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skillopt-python", required=True,
                        help="python of the separate environment that has skillopt installed")
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES), choices=EXAMPLES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--agent-model", default="qwen0.5b")
    parser.add_argument("--optimizer-model", default="qwen1.5b")
    parser.add_argument("--max-tokens", type=int, default=512,
                        help="SKILLOPT_SLEEP_COMPAT_MAX_TOKENS: its cap on every reply")
    parser.add_argument("--answer-max-tokens", type=int, default=320,
                        help="the cap on agent answers when scoring, as in run.py")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--time-limit", type=float, default=75.0,
                        help="minutes; no new run starts after this")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "real_model")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()  # SkillOpt-Sleep runs in the scratch project folder
    scorer_args = run_args(["--out", str(args.out),
                            "--answer-max-tokens", str(args.answer_max_tokens)])
    inner = OpenAIBackend(api_key="local-server-needs-no-key", base_url=url,
                          timeout=scorer_args.timeout, max_retries=1)
    log = ServerLog(ResponseCache(args.out / "answers"), scorer_args.answer_max_tokens)
    scorer = SeededBackend(inner, 0, log, {})
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for seed in args.seeds:
        for example in args.examples:
            if time.monotonic() - started > args.time_limit * 60:
                print(f"skipped (time limit): {example} seed {seed}", flush=True)
                continue
            print(f"skillopt {example} seed {seed}: starting", flush=True)
            row = one_run(example, seed, args, url, scorer)
            rows.append(row)
            print(f"skillopt {example} seed {seed}: {json.dumps(row)}", flush=True)
            (args.out / "skillopt.json").write_text(json.dumps(rows, indent=2) + "\n")
            (args.out / "skillopt.md").write_text(markdown(rows))
    inner.close()
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
