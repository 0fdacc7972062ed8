"""Section 5: `gitsleep validate` on generated repositories, as the pre-commit hook runs it.

Each size gets a temporary directory holding `.gitsleep.yml`, a skill, a memory document
and one task file per split; `gitsleep validate` runs there as a subprocess, so the time
includes interpreter start-up and imports, exactly what a commit waits for. The best of
`repeats` runs is reported (the first also compiles bytecode), with the first run's time.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import generate


def gitsleep_command() -> list[str]:
    """The `gitsleep` console script beside this interpreter, else `python -m gitsleep`."""
    script = Path(sys.executable).with_name("gitsleep")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gitsleep"]


@dataclass
class ValidateRow:
    tasks: int
    exit_code: int
    first_seconds: float
    best_seconds: float
    runs: int
    output_tail: str  # the last lines it printed, to report a failure as it happened

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def measure(total: int, *, repeats: int = 3) -> ValidateRow:
    tasks = generate.make_tasks(*generate.split_sizes(total))
    with tempfile.TemporaryDirectory(prefix="gitsleep-bench-validate-") as tmp:
        root = Path(tmp)
        generate.write_repo(root, tasks)
        times: list[float] = []
        done: subprocess.CompletedProcess[str] | None = None
        for _ in range(max(1, repeats)):
            started = time.perf_counter()
            done = subprocess.run([*gitsleep_command(), "validate"], cwd=root,
                                  capture_output=True, text=True, timeout=300)
            times.append(time.perf_counter() - started)
    assert done is not None
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
    return ValidateRow(total, done.returncode, times[0], min(times), len(times), tail)


def validate_section(
    sizes: tuple[int, ...] = (500, 5000), *, repeats: int = 3
) -> list[ValidateRow]:
    return [measure(n, repeats=repeats) for n in sizes]
