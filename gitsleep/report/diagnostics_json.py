"""diagnostics.json: the full, redacted record of an epoch, written atomically."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitsleep.base.errors import EXIT_GIT, GitsleepError
from gitsleep.base.redact import Redactor
from gitsleep.core import judges
from gitsleep.core.models import EpochResult, TaskResult, ToolCall, to_dict
from gitsleep.core.outcome import Edits
from gitsleep.git_forge.record import with_proof
from gitsleep.report.common import (
    agent_tradeoffs,
    block_diff,
    default_redactor,
    group_scores,
    integrity_counts,
    noise_json,
    simulated,
    tool_calls,
)
from gitsleep.report.triggers import summary as trigger_summary

DIAGNOSTICS_SCHEMA = "gitsleep.diagnostics"
DIAGNOSTICS_VERSION = 1
RESPONSE_HEAD_CHARS = 500
_HEAD_WINDOW = 8192  # redacted beyond the head, so a secret across the cut is still whole


class ReportWriteError(GitsleepError):
    """diagnostics.json could not be written (disk full, read-only, no permission): exit 4,
    like other failures that keep the local work."""

    exit_code = EXIT_GIT


def response_head(text: str, redactor: Redactor) -> str:
    """The first 500 characters, redacted before the cut so a cut never splits a secret.

    Only a window is redacted (answers can be long). If redaction shrank the window so
    much that its cut edge comes near the head, the whole answer is redacted instead.
    """
    window = text[: RESPONSE_HEAD_CHARS + _HEAD_WINDOW]
    clean = redactor.redact(window)
    if len(window) < len(text) and len(clean) < RESPONSE_HEAD_CHARS + _HEAD_WINDOW // 2:
        clean = redactor.redact(text)
    return clean[:RESPONSE_HEAD_CHARS]


TRACE_RESULT_CHARS = 500  # of each tool result kept in diagnostics


def _trace_dicts(trace: Iterable[ToolCall], redactor: Redactor) -> list[dict[str, Any]]:
    """Each call as JSON-ready data, redacted, its result clipped."""
    return [{"name": c.name, "arguments": redactor.clip(c.arguments, TRACE_RESULT_CHARS),
             "result": redactor.clip(c.result, TRACE_RESULT_CHARS),
             "error": None if c.error is None else redactor.clip(c.error, TRACE_RESULT_CHARS)}
            for c in trace]


def _task_dict(task: TaskResult, redactor: Redactor) -> dict[str, Any]:
    samples = []
    for s in task.samples:
        samples.append({
            "sample": s.sample,
            "error": s.error,
            "response_head": response_head(s.answer, redactor) if s.answer is not None else None,
            "response_chars": len(s.answer) if s.answer is not None else 0,
            "hard": s.score.hard if s.score else None,
            "soft": s.score.soft if s.score else None,
            "reason": s.score.reason if s.score else None,
            "failed_checks": [c.label() for c in s.score.failed] if s.score else [],
            "finish_reason": s.finish_reason,
            # the tools the agent called, in order (a backend that reports them)
            **({} if s.trace is None else {"trace": _trace_dicts(s.trace, redactor)}),
        })
    return {
        "task_id": task.task_id,
        "hard": task.hard,
        "soft": task.soft,
        "value": task.value,
        "errors": task.errors,
        "samples": samples,
    }


def diagnostics(
    result: EpochResult, extra: Mapping[str, object], *, redactor: Redactor | None = None
) -> dict[str, Any]:
    """The full, redacted record of an epoch, ready for `json.dumps`.

    Response heads are redacted before they are cut to 500 characters, so a cut can
    never leave half a secret that no longer matches. `redactor` defaults to one built
    from this process's environment.
    """
    redactor = default_redactor(redactor)
    data: dict[str, Any] = {
        "schema": DIAGNOSTICS_SCHEMA,
        "schema_version": DIAGNOSTICS_VERSION,
        "skill": result.skill,
        "decision": result.decision,
        "reason": result.reason,
        "diagnosis": list(result.diagnosis),
        "warnings": list(result.warnings),
        "integrity_failures": integrity_counts(result),
        "group_scores": [g.to_json() for g in group_scores(result)],
        "noise": noise_json(result.noise),
        "abort_code": result.abort_code,
        "metric": result.metric,
        "decided_by": result.decided_by,
        "pr_eligible": result.pr_eligible,
        "backend": result.backend,
        "simulated": simulated(result.backend),
        "models": {
            "agent": result.agent_model,
            "optimizer": result.optimizer_model,
            "judge": result.judge_model,
        },
        "splits": {name: to_dict(getattr(result, name)) for name in ("train", "val", "test")},
        "documents": {
            target: {
                "changed": before != after,
                "learned_block_diff": block_diff(
                    redactor.redact(before), redactor.redact(after), target
                ),
            }
            for target, (before, after) in result.documents.items()
        },
        "edits": Edits.of(result).to_json(),
        "passes": [
            {
                "label": p.label,
                "split": p.split,
                "version": p.version,
                "mean": p.mean,
                "errors": p.errors,
                # answers cut at max_answer_tokens (scored as they are)
                "truncated": sum(1 for t in p.tasks for s in t.samples
                                 if s.finish_reason == "length"),
                # answers that only echoed the learned template, scored as failing
                "integrity_failures": judges.integrity_failures(
                    s for t in p.tasks for s in t.samples),
                "tasks": [_task_dict(t, redactor) for t in p.tasks],
            }
            for p in result.passes
        ],
        # per split and task, the tools the agent called at baseline and at the end
        "tool_calls": tool_calls(result),
        "proposals": [to_dict(p) for p in result.proposals],
        "trials": [to_dict(t) for t in result.trials],
        "call_errors": list(result.errors),
        "cost": to_dict(result.cost),
        "extra": to_dict(dict(extra)),
    }
    if result.triggers is not None:  # the trigger pass: its scores, picks and candidates
        data["triggers"] = {**trigger_summary(result.triggers).to_json(),
                            "trials": [to_dict(t) for t in result.triggers.trials]}
    if result.agents:  # several agents: each one's scores, how they aggregate, trade-offs
        data["agents"] = [to_dict(agent) for agent in result.agents]
        data["agent_gate"] = result.agent_gate
        data["agent_tradeoffs"] = agent_tradeoffs(result)
    redacted: dict[str, Any] = redactor.redact_obj(to_dict(data))
    return redacted


def dumps_diagnostics(data: Mapping[str, Any]) -> str:
    """The exact text of diagnostics.json (also used for the git note)."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


@dataclass(frozen=True)
class Diagnostics:
    """An epoch's diagnostics.json, written once: the file at `path`, and the commit's note,
    the same text plus the commit and branch it proves (`record.with_proof`)."""

    path: Path
    data: Mapping[str, Any]

    def note_text(self, sha: str, branch: str) -> str:
        return dumps_diagnostics(with_proof(self.data, sha, branch))

    @classmethod
    def write(cls, path: Path, result: EpochResult, extra: Mapping[str, object],
              redactor: Redactor) -> Diagnostics:
        """Render the epoch's diagnostics once and write them to `path` (atomically)."""
        data = diagnostics(result, extra, redactor=redactor)
        write_diagnostics(path, data)
        return cls(path, data)


def write_diagnostics(path: Path, data: Mapping[str, Any]) -> None:
    """Write diagnostics.json atomically: readers see the old file or the new, never half.

    Any OSError (disk full, read-only directory) becomes a one-line ReportWriteError.
    """
    path = Path(path)
    text = dumps_diagnostics(data)
    tmp_name: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise ReportWriteError(f"cannot write diagnostics to {path}: {why}") from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
