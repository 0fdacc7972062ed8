"""Section 6: `gitsleep harvest` reading generated Claude Code sessions.

Sessions are written in Claude Code's on-disk format (`tests/support/transcripts.py`: each
with tool calls, tool results, a sidechain line and metadata); a third ask for the
benchmark skill and end in a correction, a third ask for the skill without one, a third
are about something else. Each size is read by `harvest.pipeline.run` in a fresh Python
process, so its peak memory is its own:

- sessions read per second (every session parsed, filtered and mined, files included);
- peak RSS of the process. Reading streams one line at a time and keeps a bounded digest
  per session, so the peak should stay flat from 100 to 1,000 sessions, and one huge
  session (tens of MB in one file) should cost no more than small ones.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

SKILL_TEXT = """# Release notes writer

Write release notes for the product's customers: what changed, who it affects, how to
upgrade. Keep a Breaking Changes section and an Upgrade section.
"""
TOPICS = ("the billing export", "the search API", "SSO login", "the mobile sync engine",
          "the audit log", "webhooks", "CSV import", "the usage dashboard")


@dataclass
class HarvestRow:
    label: str
    sessions: int
    megabytes: float  # on disk
    lines: int
    seconds: float
    tasks: int
    peak_rss_mb: float

    @property
    def sessions_per_second(self) -> float:
        return self.sessions / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sessions_per_second": round(self.sessions_per_second, 1)}


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def write_sessions(home: Path, repo: Path, count: int, *, turns: int = 12,
                   huge_lines: int = 0) -> None:
    """`count` sessions in Claude Code's format under `home`; `huge_lines` > 0 writes one
    session with that many extra turns instead."""
    from tests.support.transcripts import T0, claude_file

    for index in range(count):
        topic = TOPICS[index % len(TOPICS)]
        kind = index % 3
        first = (f"Write release notes for the {index}th change to {topic}."
                 if kind < 2 else f"Refactor the retry loop in {topic} number {index}.")
        body = [(first, "Here are the notes. " * 20)]
        body += [(f"Also mention item {i} of {topic}, with more detail. " * 3, "Done. " * 40)
                  for i in range(turns - 2 + huge_lines)]
        last = "No, add a Breaking Changes section." if kind == 0 else "Thanks."
        body.append((last, "Updated."))
        claude_file(home, repo, body, start=T0 + timedelta(minutes=index))


def generate(root: Path, count: int, huge_lines: int = 0) -> None:
    (root / "repo").mkdir(parents=True, exist_ok=True)
    write_sessions(root / "home", root / "repo", count, huge_lines=huge_lines)


def measure_here(root: Path, label: str) -> HarvestRow:
    """Harvest the sessions `generate` wrote under `root` (in a process that did not write
    them, so the peak is the reader's own)."""
    from gitsleep.base.redact import Redactor
    from gitsleep.flows.harvest import pipeline

    files = list((root / "home").rglob("*.jsonl"))
    size = sum(f.stat().st_size for f in files) / 2**20
    plan = pipeline.Plan(source="claude", paths=[root / "home" / ".claude" / "projects"],
                         repo=root / "repo", skill="release-notes", skill_text=SKILL_TEXT,
                         max_tasks=10_000)
    started = time.perf_counter()
    result = pipeline.run(plan, Redactor(), home=str(root / "home"))
    seconds = time.perf_counter() - started
    return HarvestRow(label, result.stats.sessions, round(size, 1), result.stats.lines,
                      round(seconds, 3), len(result.records), round(_peak_rss_mb(), 1))


def measure(count: int, huge_lines: int = 0, *, in_child: bool = True) -> HarvestRow:
    label = f"1 session, {huge_lines:,} extra turns" if huge_lines else f"{count} sessions"
    with tempfile.TemporaryDirectory(prefix="gitsleep-harvest-bench-") as directory:
        root = Path(directory)
        if not in_child:
            generate(root, count, huge_lines)
            return measure_here(root, label)
        here = Path(__file__).resolve().parent.parent
        for args in (["write", directory, str(count), str(huge_lines)],
                     ["read", directory, label]):
            done = subprocess.run([sys.executable, "-m", "benchmarks.bench_harvest", *args],
                                  cwd=here, capture_output=True, text=True, check=True,
                                  timeout=900)
    data = json.loads(done.stdout.strip().splitlines()[-1])
    data.pop("sessions_per_second", None)
    return HarvestRow(**data)


def harvest_section(sizes: tuple[int, ...] = (100, 1000), huge_lines: int = 40_000,
                    *, in_child: bool = True) -> list[HarvestRow]:
    rows = [measure(n, in_child=in_child) for n in sizes]
    if huge_lines:
        rows.append(measure(1, huge_lines, in_child=in_child))
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "write":
        generate(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        print(json.dumps(measure_here(Path(sys.argv[2]), sys.argv[3]).as_dict()))
