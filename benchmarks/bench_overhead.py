"""Section 4: the tool's own overhead, with the offline backend standing in for the model.

A whole epoch (default settings: rounds 2, proposals 3, edit_budget 4, workers 4) runs on
generated tasks split into equal thirds, each size in a fresh Python process so its peak
memory is its own. Reported per size:

- seconds per scored answer: the epoch's wall time over every answer it scored (all
  passes), so replay, judging, reflection, the gate and its bootstrap are all included;
- peak RSS of the process (`resource.getrusage`), what the memory target is about;
- the memory the epoch holds: resident memory with the result still alive, minus
  resident memory after imports and before the tasks exist (Linux `/proc/self/statm`).
  That is the part that grows with the task count; the peak also holds the interpreter
  and its imports, which do not grow.

Growth per 10x is the ratio between sizes 10x apart: ~10 means linear.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import generate
from benchmarks.bench_calls import generated_workload, measure_epoch

ROUNDS = 2  # the config default


def _current_rss_mb() -> float | None:
    """Resident memory now (Linux only; None elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


@dataclass
class OverheadRow:
    tasks: int
    splits: dict[str, int]
    answers: int  # answers scored over every pass
    calls: int
    seconds: float
    peak_rss_mb: float
    held_mb: float | None  # resident memory the epoch's data holds (see module docstring)
    decision: str

    @property
    def ms_per_answer(self) -> float:
        return 1000 * self.seconds / self.answers if self.answers else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ms_per_answer": round(self.ms_per_answer, 4)}


def measure_here(total: int, rounds: int = ROUNDS) -> OverheadRow:
    """One epoch on `total` generated tasks, in this process."""
    before = _current_rss_mb()
    n_train, n_val, n_test = generate.split_sizes(total)
    workload = generated_workload(n_train, n_val, n_test)
    row, result = measure_epoch(workload, rounds)
    answers = sum(len(t.samples) for p in result.passes for t in p.tasks)
    now = _current_rss_mb()  # `result` and the workload are still alive here
    return OverheadRow(
        tasks=total,
        splits=workload.split_counts,
        answers=answers,
        calls=row.calls,
        seconds=row.seconds,
        peak_rss_mb=_peak_rss_mb(),
        held_mb=None if before is None or now is None else now - before,
        decision=result.decision,
    )


def measure_in_child(total: int, rounds: int = ROUNDS) -> OverheadRow:
    """`measure_here` in a fresh interpreter, so peak memory belongs to this size alone."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_overhead", str(total), str(rounds)],
        cwd=root, capture_output=True, text=True, check=True, timeout=600,
    )
    return OverheadRow(**json.loads(done.stdout.strip().splitlines()[-1]))


def growth(rows: list[OverheadRow], key: str) -> list[dict[str, Any]]:
    """The ratio of `key` between each pair of sizes 10x apart."""
    by_size = {r.tasks: r for r in rows}
    out = []
    for small in sorted(by_size):
        big = by_size.get(small * 10)
        if big is None:
            continue
        before, after = getattr(by_size[small], key), getattr(big, key)
        out.append({"from": small, "to": small * 10,
                    "ratio": round(after / before, 2) if before and after is not None else None})
    return out


def overhead_section(sizes: tuple[int, ...] = (100, 1000, 3000, 10000),
                     *, in_child: bool = True) -> list[OverheadRow]:
    measure = measure_in_child if in_child else measure_here
    return [measure(n) for n in sizes]


if __name__ == "__main__":
    print(json.dumps(asdict(measure_here(int(sys.argv[1]), int(sys.argv[2])))))
