"""`gitsleep validate` when many skills name one document.

Two shapes, each run as a subprocess the way the pre-commit hook runs it:

- `skill`: every skill names one skill document, so every skill after the first is a GS002
  line (before the fix each such line parsed the whole config again: quadratic);
- `memory`: every skill has its own skill document and all share one AGENTS.md memory
  (allowed: a repository-wide memory), so the report is clean.

`.venv/bin/python -m benchmarks.bench_validate_shared [N ...]` prints seconds per size and
the ratio of time to the smallest size over the ratio of sizes (about 1 means linear).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_validate import gitsleep_command

SIZES = (150, 300, 600, 1500)


def write_repo(root: Path, skills: int, shape: str) -> None:
    """A repository whose `skills` skills all name one skill or one memory document."""
    (root / "skills").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "AGENTS.md").write_text("# memory\n", encoding="utf-8")
    (root / "skills/shared.md").write_text("---\nname: shared\ndescription: d\n---\n# s\n",
                                           encoding="utf-8")
    check = {"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]}
    rows = [json.dumps({"id": f"t{i}", "prompt": "p", "judge": check}) for i in range(10)]
    (root / "evals/t.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    lines = ["version: 1", "backend: offline", "skills:"]
    for i in range(skills):
        if shape == "skill":
            lines += [f"  - name: s{i}", "    skill: skills/shared.md",
                      "    tasks: [evals/t.jsonl]"]
        else:
            (root / f"skills/s{i}.md").write_text(
                f"---\nname: s{i}\ndescription: d\n---\n# s\n", encoding="utf-8")
            lines += [f"  - name: s{i}", f"    skill: skills/s{i}.md", "    memory: AGENTS.md",
                      "    tasks: [evals/t.jsonl]"]
    (root / ".gitsleep.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def measure(skills: int, shape: str) -> tuple[float, int]:
    """(seconds, exit code) of one `gitsleep validate` on a generated repository."""
    with tempfile.TemporaryDirectory(prefix="gitsleep-bench-shared-") as tmp:
        root = Path(tmp)
        write_repo(root, skills, shape)
        started = time.perf_counter()
        done = subprocess.run([*gitsleep_command(), "validate"], cwd=root,
                              capture_output=True, text=True, timeout=900)
        return time.perf_counter() - started, done.returncode


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or list(SIZES)
    for shape in ("skill", "memory"):
        first: tuple[int, float] | None = None
        for n in sizes:
            seconds, code = measure(n, shape)
            first = first or (n, seconds)
            growth = (seconds / first[1]) / (n / first[0])
            print(f"{shape:6} skills={n:5} exit={code} seconds={seconds:7.2f} "
                  f"time-ratio/size-ratio={growth:4.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
