"""Real small models on the bundled examples: does an epoch help, and what does it cost?

Opt-in. It needs an OpenAI-compatible server (see README.md in this folder) and its URL:

    GITSLEEP_TEST_LLM_URL=http://127.0.0.1:8765/v1 .venv/bin/python benchmarks/real_model/run.py

Without that variable it prints why it skipped and exits 0, so it is safe anywhere.

Each run is one epoch of the pure core (`gitsleep.core.epoch.run_epoch`) on an example's
tasks and documents, read from the working tree, with the 0.5B model answering and the
1.5B model proposing. Runs differ only in the optimizer's seed: the reflection prompt
fixes its seed per proposal, so a thin backend wrapper shifts the seed of `propose`
calls by the run seed. Agent answers are greedy (temperature 0), so they are memoised
across runs: a document version is answered once, whichever seed first needs it.
`calls` is what the epoch counted; `server calls` is what reached the server.

Results go to `results.json` and `results.md` (rewritten after every run, so a stopped
benchmark still leaves its numbers) and every raw optimizer reply to `raw/`, with the
context it was given, ready to become a test fixture.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gitsleep import report
from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.base.bundled import examples_dir
from gitsleep.core import documents as docs
from gitsleep.core import groups, honesty, reflect, replay, worked
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import AgentRef, Answer, EpochResult, EpochSettings, Task
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.flows.consolidate import read_inputs
from gitsleep.inputs.config import Config, load_config

URL_ENV = "GITSLEEP_TEST_LLM_URL"
HERE = Path(__file__).resolve().parent
EXAMPLES = ("brief-writer", "incident-notes", "outage-summary", "incident-triage",
            "dependency-review")
SEED_STRIDE = 7919  # a prime: shifted seeds of different runs never meet


@dataclass
class ServerLog:
    """What actually reached the server, shared by every run."""

    answers: ResponseCache  # greedy agent answers, kept on disk between invocations
    answer_max_tokens: int | None = None
    calls: int = 0
    replies: list[dict[str, Any]] = field(default_factory=list)  # propose replies, this run
    lock: threading.Lock = field(default_factory=threading.Lock)


class SeededBackend(Backend):
    """A real backend with the optimizer's seed shifted and greedy answers memoised."""

    name = "openai"

    def __init__(self, inner: Backend, run_seed: int, log: ServerLog,
                 tasks: dict[str, Task]) -> None:
        self.inner = inner
        self.run_seed = run_seed
        self.log = log
        self.tasks = tasks

    def complete(self, call: ModelCall) -> Answer:
        sent = call
        if call.purpose == "answer" and self.log.answer_max_tokens:
            sent = replace(call, max_tokens=self.log.answer_max_tokens)
        if call.purpose == "propose" and call.seed is not None:
            sent = replace(call, seed=call.seed + SEED_STRIDE * self.run_seed)
        # Greedy answers, and sampled ones (rollouts) with their fixed seed, are the same
        # for every run: the server is deterministic for a given seed.
        memo_key = sent.cache_key() if call.purpose == "answer" and call.seed is not None else ""
        if memo_key:
            hit = self.log.answers.get(memo_key)
            if hit is not None:
                return Answer(hit.text, None, 0, 0)  # tokens were counted when first spent
        answer = self.inner.complete(sent)
        if memo_key:
            self.log.answers.put(memo_key, answer)  # failed calls are not kept
        with self.log.lock:
            self.log.calls += 1
            if call.purpose == "propose":
                self.log.replies.append(self._reply_record(sent, answer))
        return answer

    def _reply_record(self, call: ModelCall, answer: Answer) -> dict[str, Any]:
        context = dict(call.context or {})
        # several agents: a failure's id is `<task id>@<agent>`
        shown = [str(f["task_id"]).rsplit("@", 1)[0] if "@" in str(f["task_id"])
                 and str(f["task_id"]) not in self.tasks else f["task_id"]
                 for f in context.get("failures", [])]
        return {
            "model": call.model,
            "seed": call.seed,
            "retry": len(call.messages) > 2 or reflect.REJECTION_NOTE in call.messages[-1][1],
            "text": answer.text,
            "error": answer.error,
            "completion_tokens": answer.completion_tokens,
            "context": {**context, "task_prompts": [self.tasks[t].prompt for t in shown]},
        }

    def close(self) -> None:
        """The epoch closes its backend; the shared client stays open for the next run."""


def bench_config(example: str, args: argparse.Namespace, url: str) -> Config:
    """The example's config with the real models and benchmark-sized settings."""
    config = load_config(examples_dir() / example / ".gitsleep.yml")
    data = config.model_dump()
    data.update(
        backend="openai", base_url=url, model=args.agent_model,
        optimizer_model=args.optimizer_model, judge_model=args.optimizer_model,
        rounds=args.rounds, proposals=args.proposals, edit_budget=args.edit_budget,
        workers=1,  # a llama.cpp server answers one request at a time anyway
        timeout=args.timeout, max_retries=1, cache=False,
        budget={"max_calls": args.max_calls, "max_tokens": 2_000_000},
        rollouts=args.rollouts,
    )
    if args.search:
        data["search"] = args.search
    return Config.model_validate(data)


def night_settings(config: Config, args: argparse.Namespace) -> EpochSettings:
    """The config's settings, with `--agents` (several agents) when given."""
    settings = config.epoch_settings()
    if not args.agents:
        return settings
    refs = tuple(AgentRef(name, model, "openai") for name, model in args.agents)
    return replace(settings, agents=refs, model=refs[0].model,
                   gate=replace(settings.gate, agents=args.agent_gate))


def per_agent(result: EpochResult) -> list[dict[str, Any]]:
    """Each agent's val and held-out, before and after."""
    return [{"name": a.name, "model": a.model,
             "val": {"baseline": a.val.baseline, "candidate": a.val.candidate, "n": a.val.n},
             "test": {"baseline": a.test.baseline, "candidate": a.test.candidate,
                      "n": a.test.n}} for a in result.agents]


def one_agent_gates(result: EpochResult, settings: EpochSettings) -> list[str]:
    """The several-agents question, per candidate scored in full on val: would a gate on one agent
    alone have accepted it while another agent's val fell? Each such candidate, said."""
    said = []
    for trial in result.trials:
        if trial.candidate is None or trial.stopped_after is not None:
            continue
        means: dict[str, tuple[float, float]] = {}
        for name in (a.name for a in settings.agents):
            pairs = [(d.before, d.after) for d in trial.deltas
                     if d.task_id.endswith(f"@{name}") and d.before is not None
                     and d.after is not None]
            if pairs:
                means[name] = (sum(b for b, _ in pairs) / len(pairs),
                               sum(a for _, a in pairs) / len(pairs))
        for name, (b, a) in means.items():
            others = [(o, ob, oa) for o, (ob, oa) in means.items() if o != name and oa < ob]
            if a > b + settings.gate.min_delta and others:
                o, ob, oa = others[0]
                edits = "; ".join(e.summary() for e in trial.applied)
                said.append(f"{trial.target} round {trial.round} proposal {trial.proposal + 1}"
                            f" ({edits}): {name} alone {b:.3f} -> {a:.3f} would pass, {o} "
                            f"{ob:.3f} -> {oa:.3f}; two-agent gate: "
                            f"{'accepted' if trial.accepted else 'refused'}")
    return said


def one_run(example: str, seed: int, args: argparse.Namespace, url: str, inner: Backend,
            log: ServerLog) -> tuple[dict[str, Any], EpochResult]:
    config = bench_config(example, args, url)
    skill = config.skills[0]
    tasks, documents = read_inputs(examples_dir() / example, skill)
    backend = SeededBackend(inner, seed, log, {t.id: t for t in tasks})
    calls_before = log.calls
    log.replies = []
    started = time.monotonic()
    cache = ResponseCache()  # gitsleep's own cache, kept for the night after a merge
    result = run_epoch(tasks, documents, night_settings(config, args), backend,
                       skill=skill.name,
                       cache=cache,
                       progress=lambda line: print(f"  [{example} seed {seed}] {line}",
                                                   flush=True))
    wall = time.monotonic() - started
    proposals = result.proposals
    row = {
        "example": example,
        "seed": seed,
        **outcome(result, tasks),
        "rejected_edits": [f"{o.edit.summary()}: {o.reason}" for o in result.rejected],
        "dropped_edits": [f"{o.edit.summary()}: {o.reason}" for o in result.unmatched],
        "proposals": len(proposals),
        "parse_failures": sum(p.parse_failures for p in proposals),
        "proposal_errors": [p.error for p in proposals if p.error],
        "edits_parsed": sum(len(p.edits) for p in proposals),
        "contrasts_shown": sum(p.contrasts for p in proposals),
        "rollouts": args.rollouts,
        "search": config.search,
        "calls": result.cost.calls,
        "server_calls": log.calls - calls_before,
        "call_errors": result.cost.errors,
        "prompt_tokens": result.cost.prompt_tokens,
        "completion_tokens": result.cost.completion_tokens,
        "wall_seconds": round(wall, 1),
        "errors": result.errors[:10],
        "warnings": list(result.warnings),
        "integrity_failures": report.integrity_counts(result),
        "agents": per_agent(result),
        "one_agent_gates": one_agent_gates(result, night_settings(config, args)),
    }
    save_replies(args.out / "raw", example, seed, log.replies)
    if args.merged_night and result.decision == "accepted":
        log.replies = []
        row["merged_night"] = merged_night(result, tasks, config, backend, cache, example, seed)
        save_replies(args.out / "raw", f"{example}-night2", seed, log.replies)
    epochs = args.out / "epochs"
    epochs.mkdir(parents=True, exist_ok=True)
    (epochs / f"{example}-seed{seed}.json").write_text(
        report.dumps_diagnostics(report.diagnostics(result, {"seed": seed})), encoding="utf-8")
    return row, result


def merged_night(night1: EpochResult, tasks: Sequence[Task], config: Config,
                 backend: Backend, cache: ResponseCache, example: str,
                 seed: int) -> dict[str, Any]:
    """The next night after a person merged night 1's pull request: the same tasks under
    the accepted documents, with the cache night 1 filled (gitsleep's `.gitsleep/cache`).
    `calls` counts only the calls the cache could not answer, as the product's do."""
    merged = {target: after for target, (_, after) in night1.documents.items()}
    started = time.monotonic()
    result = run_epoch(tasks, merged, config.epoch_settings(), backend,
                       skill=config.skills[0].name, cache=cache,
                       progress=lambda line: print(f"  [{example} seed {seed} night 2] {line}",
                                                   flush=True))
    return {
        **outcome(result, tasks),
        "calls": result.cost.calls,
        "cache_hits": result.cost.cache_hits,
        "wall_seconds": round(time.monotonic() - started, 1),
    }


def outcome(result: EpochResult, tasks: Sequence[Task]) -> dict[str, Any]:
    """What a night decided and learned, and the audit of it: the fields a first night's
    row and the night after a merge share."""
    return {
        "decision": result.decision,
        "reason": result.reason,
        "val": {"baseline": result.val.baseline, "candidate": result.val.candidate,
                "n": result.val.n},
        "test": {"baseline": result.test.baseline, "candidate": result.test.candidate,
                 "n": result.test.n},
        "accepted_edits": [o.edit.summary() for o in result.applied],
        "learned_block": docs.learned_block_text(result.documents["skill"][1])
        if "skill" in result.documents and result.decision == "accepted" else "",
        "audit": audit(result, tasks),
        "group_scores": [g.to_json() for g in report.group_scores(result)],
        "noise": noise_row(result),
    }


def noise_row(result: EpochResult) -> dict[str, Any] | None:
    """How far val moved under the placebo and the sign tests that judged the gain
    (None: val was never scored)."""
    if result.noise is None:
        return None
    row = asdict(result.noise)
    row["summary"] = result.noise.summary()
    row["val_line"] = result.noise.val.line() if result.noise.val else ""
    row["test_line"] = result.noise.test.line() if result.noise.test else ""
    return row


def audit(result: EpochResult, tasks: Sequence[Task]) -> list[str]:
    """The honesty questions about an accepted block, asked again from the outside
    and against every split's tasks: does a rule or template line pin a value the checks
    leave open (by its spelling, or by passing one group's checks of a varying key and
    failing another's), hedge (pass every group's without choosing), leave a template
    label with nothing to fill, quote a val or held-out task as a worked example, give one
    label two values, or does a final held-out answer repeat a template placeholder?"""
    if result.decision != "accepted" or "skill" not in result.documents:
        return []
    after = result.documents["skill"][1]
    rules, template = docs.learned_rules(after), docs.learned_template(after)
    checks = [c for t in tasks for c in t.judge.checks]
    found = [f"pin: {p}" for p in (honesty.pin_problem(r, checks) for r in rules) if p]
    found += [f"pin (template): {p}" for p in (
        honesty.pin_problem(line, checks, template=True)
        for line in (template or "").split("\n")) if p]
    varying = groups.varying_keys(tasks)  # every split's: the audit may look at all of them
    found += [f"by the checks: {p}" for p in (
        groups.value_problem(r, varying) for r in rules) if p]
    if template and (p := groups.value_problem(template, varying, template=True)):
        found.append(f"by the checks (template): {p}")
    found += [f"hollow label (template): {line}"
              for line in honesty.bare_labels(template or "")]
    unseen = [t for t in tasks if t.split != "train"]
    found += [f"worked example from a val or held-out task: {r}" for r in rules
              if worked.is_example(r) and not worked.problem(r, unseen, varying)]
    if clash := honesty.contradiction(rules, template):
        found.append(f"contradiction: {clash}")
    if len({docs.rule_key(rule) for rule in rules}) < len(rules):
        found.append("duplicate: two rules that differ only in quotes, case or spacing")
    # a typed slot of a rule (`Severity: <1-4>`) counts too, as integrity counts it
    holes = honesty.template_placeholders(template or "") + honesty.rule_slots(rules)
    for p in result.passes:
        if p.split == "test" and p.final:
            for t in p.tasks:
                for s in t.samples:
                    hit = [h for h in holes if h in (s.answer or "")]
                    if hit:
                        found.append(f"held-out answer {t.task_id} repeats {hit[0]}")
    return found


def record(example: str, count: int, args: argparse.Namespace, url: str, inner: Backend,
           log: ServerLog) -> None:
    """Score train once, then ask the optimizer `count` times with different seeds.

    Only the optimizer's raw replies are wanted here (for test fixtures); nothing is
    gated. The train answers land in the answer store, so a later run reuses them.
    """
    config = bench_config(example, args, url)
    skill = config.skills[0]
    settings = config.epoch_settings()
    tasks, documents = read_inputs(examples_dir() / example, skill)
    by_id = {t.id: t for t in tasks}
    backend = SeededBackend(inner, 0, log, by_id)
    runner = CallRunner(backend, max_calls=args.max_calls, workers=1)
    train = replay.score_split(runner, [t for t in tasks if t.split == "train"], documents,
                               settings, label="baseline", split="train")
    failures = [t for t in train.tasks if t.hard is not None and t.hard < 1.0]
    passes = [t for t in train.tasks if t.hard == 1.0]
    print(f"{example}: train baseline {train.mean}, {len(failures)} failing", flush=True)
    for seed in range(count):
        log.replies = []
        backend.run_seed = 100 + seed  # apart from the benchmark's run seeds
        started = time.monotonic()
        fresh = CallRunner(backend, workers=1)  # its cache must not answer for another seed
        evidence = reflect.Evidence("skill", documents["skill"] or "", failures, passes, by_id, [])
        proposal = reflect.propose(fresh, settings, evidence, round_no=1, index=0)
        print(f"{example} record {seed}: {len(proposal.edits)} edit(s) kept, "
              f"{len(proposal.dropped)} dropped, parse failures {proposal.parse_failures}, "
              f"{time.monotonic() - started:.0f}s", flush=True)
        save_replies(args.out / "raw", f"{example}-record", seed, log.replies)


def save_replies(folder: Path, example: str, seed: int, replies: Sequence[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number, reply in enumerate(replies, start=1):
        stem = f"{example}-seed{seed}-{number:02d}{'-retry' if reply['retry'] else ''}"
        (folder / f"{stem}.txt").write_text(reply["text"] or "", encoding="utf-8")
        meta = {k: v for k, v in reply.items() if k != "text"}
        (folder / f"{stem}.context.json").write_text(
            json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _cell(edit: str) -> str:
    """An edit summary inside one table cell: its own lines marked, pipes escaped."""
    return edit.replace("|", "\\|").replace("\n", " ⏎ ")


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def markdown(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Agent `{meta['agent_model']}`, optimizer `{meta['optimizer_model']}`, "
        f"{meta['rounds']} round(s) x {meta['proposals']} proposal(s), edit budget "
        f"{meta['edit_budget']}, max_calls {meta['max_calls']}, rollouts "
        f"{meta.get('rollouts', 1)}, search {meta.get('search', 'thorough')}, metric mixed.",
        "",
        "| example | seed | decision | val before -> after | held-out before -> after "
        "| accepted edits | parse failures | calls (server) | tokens | wall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        edits = "<br>".join(_cell(e) for e in r["accepted_edits"]) or "none"
        lines.append(
            f"| {r['example']} | {r['seed']} | {r['decision']} "
            f"| {_score(r['val']['baseline'])} -> {_score(r['val']['candidate'])} "
            f"| {_score(r['test']['baseline'])} -> {_score(r['test']['candidate'])} "
            f"| {edits} | {r['parse_failures']} | {r['calls']} ({r['server_calls']}) "
            f"| {r['prompt_tokens'] + r['completion_tokens']:,} "
            f"| {r['wall_seconds'] / 60:.1f} min |"
        )
    if meta.get("skipped"):
        lines += ["", f"Not run (time limit reached): {', '.join(meta['skipped'])}."]
    for r in rows:
        if not r.get("learned_block"):
            continue
        lines += ["", f"{r['example']} seed {r['seed']}, the accepted learned block:", "",
                  "````text", r["learned_block"].rstrip("\n"), "````", ""]
        lines += [f"- audit: {a}" for a in r.get("audit", [])] or ["- audit: clean"]
        lines += [f"- warning: {w}" for w in r.get("warnings", [])]
        lines += [f"- integrity failures: {k} {v}"
                  for k, v in r.get("integrity_failures", {}).items()]
    noisy = [r for r in rows if r.get("noise")]
    if noisy:
        lines += ["", "The noise each night (val under a placebo) and the sign tests:", ""]
        for r in noisy:
            n = r["noise"]
            said = [n["summary"]] + [x for x in (n["val_line"], n["test_line"], n["note"]) if x]
            lines.append(f"- {r['example']} seed {r['seed']}: " + "; ".join(said))
    several = [r for r in rows if r.get("agents")]
    if several:
        lines += ["", f"Per agent (gate.agents: {meta.get('agent_gate', 'mean')}):", "",
                  "| example | seed | agent | model | val before -> after "
                  "| held-out before -> after |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['example']} | {r['seed']} | {a['name']} | {a['model']} "
                  f"| {_score(a['val']['baseline'])} -> {_score(a['val']['candidate'])} "
                  f"| {_score(a['test']['baseline'])} -> {_score(a['test']['candidate'])} |"
                  for r in several for a in r["agents"]]
        lines += ["", "Candidates a gate on one agent alone would have passed while another "
                  "agent's val fell:", ""]
        lines += [f"- {r['example']} seed {r['seed']}: {s}" for r in several
                  for s in r.get("one_agent_gates", [])] or ["- none"]
    grouped = [r for r in rows if r.get("group_scores")]
    if grouped:
        lines += ["", "Per group of a varying key (tasks whose checks want different values):", "",
                  "| example | seed | split | the tasks that want | n | before -> after |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r['example']} | {r['seed']} | {g['split']} | {_cell(g['group'])} "
                  f"| {g['n']} | {_score(g['baseline'])} -> {_score(g['candidate'])} |"
                  for r in grouped for g in r["group_scores"]]
    return "\n".join(lines) + "\n"


def _agents(text: str) -> list[tuple[str, str]]:
    """`small=qwen0.5b,large=qwen1.5b` -> [(small, qwen0.5b), (large, qwen1.5b)]."""
    return [(name.strip(), model.strip()) for name, model in
            (pair.split("=", 1) for pair in text.split(",") if pair.strip())]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES), choices=EXAMPLES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--agent-model", default=os.environ.get("GITSLEEP_TEST_LLM_AGENT",
                                                                "qwen0.5b"))
    parser.add_argument("--optimizer-model", default=os.environ.get(
        "GITSLEEP_TEST_LLM_OPTIMIZER", "qwen1.5b"))
    parser.add_argument("--agents", type=_agents, default=[],
                        help="several agents: name=model,name=model (the first is "
                        "also --agent-model's place)")
    parser.add_argument("--agent-gate", choices=["mean", "min"], default="mean")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--proposals", type=int, default=3)  # gitsleep's own default
    parser.add_argument("--edit-budget", type=int, default=4)
    parser.add_argument("--rollouts", type=int, default=1,
                        help="answers per train task for contrastive reflection (1 = off)")
    # call_ceiling of one round of three proposals on brief-writer (15/6/6 tasks): 27 +
    # 3 x (2 + 6) + 5 x 6 + 15 + 6 = 102; about 80 were used. 220 leaves room for both.
    parser.add_argument("--search", choices=["thorough", "thrifty"], default=None,
                        help="the search mode (default: the example's config)")
    parser.add_argument("--max-calls", type=int, default=220)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per call")
    parser.add_argument("--time-limit", type=float, default=75.0,
                        help="minutes; no new run starts after this")
    parser.add_argument("--answer-max-tokens", type=int, default=320,
                        help="cap on an agent answer (0: none); keeps runs short on CPUs")
    parser.add_argument("--record", type=int, default=0, metavar="N",
                        help="only record N optimizer replies per example, then stop")
    parser.add_argument("--merged-night", action="store_true",
                        help="after a night that accepted, run the next night on its documents "
                        "with its cache (the night after a merged pull request)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "real_model",
                        help="where results, raw replies and the answer store go "
                        "(default benchmarks/results/real_model, git-ignored)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    url = os.environ.get(URL_ENV, "").strip()
    if not url:
        print(f"skipped: set {URL_ENV} to an OpenAI-compatible endpoint, for example "
              "http://127.0.0.1:8765/v1 (see benchmarks/real_model/README.md)")
        return 0
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    inner = OpenAIBackend(api_key="local-server-needs-no-key", base_url=url,
                          timeout=args.timeout, max_retries=1)
    log = ServerLog(ResponseCache(args.out / "answers"), args.answer_max_tokens or None)
    if args.record:
        for example in args.examples:
            record(example, args.record, args, url, inner, log)
        inner.close()
        return 0
    meta: dict[str, Any] = {
        "url": url, "agent_model": args.agent_model, "optimizer_model": args.optimizer_model,
        "rounds": args.rounds, "proposals": args.proposals, "edit_budget": args.edit_budget,
        "max_calls": args.max_calls, "answer_max_tokens": args.answer_max_tokens,
        "rollouts": args.rollouts, "search": args.search or "the example's",
        "seeds": args.seeds, "skipped": [],
        "agents": [f"{name}={model}" for name, model in args.agents],
        "agent_gate": args.agent_gate,
    }
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    plan = [(example, seed) for seed in args.seeds for example in args.examples]
    for example, seed in plan:
        if time.monotonic() - started > args.time_limit * 60:
            meta["skipped"].append(f"{example} seed {seed}")
            continue
        print(f"{example} seed {seed}: starting", flush=True)
        row, _ = one_run(example, seed, args, url, inner, log)
        rows.append(row)
        print(f"{example} seed {seed}: {row['decision']}: {row['reason']}", flush=True)
        meta["total_wall_seconds"] = round(time.monotonic() - started, 1)
        write_results(args.out, rows, meta)
    meta["total_wall_seconds"] = round(time.monotonic() - started, 1)
    write_results(args.out, rows, meta)
    inner.close()
    print(markdown(rows, meta))
    return 0


def write_results(out: Path, rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> None:
    (out / "results.json").write_text(
        json.dumps({"meta": meta, "runs": list(rows)}, indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8")
    (out / "results.md").write_text(markdown(rows, meta), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
