"""`gitsleep log` and the pull request's chart over thousands of recorded epochs.

A repository made with `git fast-import`: `gitsleep init`, then `--epochs` epochs of
`example-skill`, one a minute, each a commit with gitsleep's trailers and a diagnostics
note of realistic size (about 20 KB). Every other epoch is merged into main; the rest are
superseded (their commits only in the object store, as after a branch restart), and the
last one is on `gitsleep/example-skill`.

Timed, each in a fresh process: the whole `gitsleep log` command, `read_epochs` for `log`
(every note) and for the pull request's chart (one skill, `details=False`). With
`--before REV`, the same two reads run with `gitsleep/git_forge/history.py` as it was at REV of this
checkout, and the ratios are printed.

    .venv/bin/python -m benchmarks.bench_log --epochs 4000 --before ca6fe20~1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_validate import gitsleep_command

ROOT = Path(__file__).resolve().parents[1]
SKILL = "example-skill"
BRANCH = f"gitsleep/{SKILL}"
START = 1_700_000_000  # the first epoch's commit time (Unix seconds)

# Run in a fresh interpreter: import history (from a file when given), read, print seconds.
READ = """
import importlib.util, json, sys, time
from pathlib import Path
source, repo, skills, details = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]), \\
    sys.argv[4] == "1"
if source:
    spec = importlib.util.spec_from_file_location("gitsleep.git_forge.history", source)
    history = importlib.util.module_from_spec(spec)
    sys.modules["gitsleep.git_forge.history"] = history
    spec.loader.exec_module(history)
else:
    from gitsleep.git_forge import history
from gitsleep.git_forge.history import branch_refs
options = {"details": False} if not details and source == "" else {}
started = time.perf_counter()
epochs = history.read_epochs(repo, base="HEAD", branch_refs=branch_refs(repo, "gitsleep/"),
                             skills=skills, **options)
print(json.dumps({"seconds": time.perf_counter() - started, "epochs": len(epochs)}))
"""


def _note(number: int, commit_hint: str) -> bytes:
    """A diagnostics note shaped like gitsleep's (its size comes mostly from trials)."""
    trial = {"task": "t", "split": "val", "score": 0.5, "answer": "x" * 180,
             "reason": "rule passed"}
    return json.dumps({
        "schema": "gitsleep.diagnostics", "schema_version": 1, "skill": SKILL,
        "decision": "accepted", "metric": "mixed", "reason": f"epoch {number}",
        "splits": {"val": {"baseline": 0.2, "candidate": 0.2 + (number % 80) / 100},
                   "test": {"baseline": 0.2, "candidate": 0.2 + (number % 70) / 100}},
        "edits": {"applied": [{"op": "add"}, {"op": "replace"}]},
        "cost": {"calls": 40 + number % 9}, "extra": {"estimated_usd": 0.01},
        "trials": [trial] * 80, "branch": BRANCH, "commit": commit_hint,
    }).encode()


def _message(number: int) -> bytes:
    change = f"0.200 -> {0.2 + (number % 80) / 100:.3f}"
    held = f"0.200 -> {0.2 + (number % 70) / 100:.3f}"
    return (f"gitsleep({SKILL}): epoch {number}\n\nApplied edits (2):\n- one\n- two\n\n"
            f"Gitsleep-Skill: {SKILL}\nGitsleep-Decision: accepted\nGitsleep-Metric: mixed\n"
            f"Gitsleep-Val: {change}\nGitsleep-Test: {held}\nGitsleep-Base: unknown\n"
            f"Gitsleep-Tasks: unknown\nGitsleep-Model: offline / offline\n"
            f"Gitsleep-Inputs: unknown\n").encode()


def make_repo(root: Path, epochs: int) -> Path:
    """`gitsleep init` in a new repository, then `epochs` epochs through fast-import."""
    work = root / "work"
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    run = lambda *args: subprocess.run(args, cwd=work, env=env, check=True,  # noqa: E731
                                       capture_output=True)
    work.mkdir()
    run("git", "init", "--quiet", "--initial-branch=main")
    run("git", "config", "user.name", "bench")
    run("git", "config", "user.email", "bench@example.com")
    run(*gitsleep_command(), "init")
    run("git", "add", "-A")
    run("git", "commit", "--quiet", "--no-verify", "-m", "gitsleep init")

    stream: list[bytes] = []
    data = lambda payload: stream.append(b"data %d\n" % len(payload) + payload + b"\n")  # noqa: E731
    main_mark = 0  # 0: refs/heads/main as it was
    notes: list[tuple[int, int]] = []  # (note blob mark, commit mark)
    for number in range(1, epochs + 1):
        commit_mark, blob_mark = 2 * number, 2 * number + 1
        merged = number % 2 == 0 or number == epochs
        ref = b"refs/heads/main" if merged and number != epochs else b"refs/heads/bench-tmp"
        stream.append(b"commit " + ref + b"\nmark :%d\n" % commit_mark)
        stream.append(b"committer bench <bench@example.com> %d +0000\n" % (START + 60 * number))
        data(_message(number))
        stream.append(b"from " + (b":%d" % main_mark if main_mark else b"refs/heads/main^0")
                      + b"\n\n")
        if ref == b"refs/heads/main":
            main_mark = commit_mark
        stream.append(b"blob\nmark :%d\n" % blob_mark)
        data(_note(number, "unknown"))
        notes.append((blob_mark, commit_mark))
    stream.append(b"commit refs/notes/gitsleep\n")
    stream.append(b"committer bench <bench@example.com> %d +0000\n" % START)
    data(b"notes")
    stream.extend(b"N :%d :%d\n" % pair for pair in notes)
    stream.append(b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=work, env=env, check=True,
                   input=b"".join(stream))
    run("git", "update-ref", f"refs/heads/{BRANCH}", "refs/heads/bench-tmp")
    run("git", "update-ref", "-d", "refs/heads/bench-tmp")
    return work


def read_seconds(repo: Path, source: str, skills: list[str] | None, details: bool
                 ) -> tuple[float, int]:
    done = subprocess.run(
        [sys.executable, "-c", READ, source, str(repo), json.dumps(skills),
         "1" if details else "0"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=1800)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(found["seconds"]), int(found["epochs"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4000)
    parser.add_argument("--before", help="a revision of this checkout to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitsleep-bench-log-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        repo = make_repo(root, args.epochs)
        print(f"made {args.epochs} epochs in {time.perf_counter() - started:.1f}s")

        started = time.perf_counter()
        done = subprocess.run([*gitsleep_command(), "log"], cwd=repo, capture_output=True,
                              text=True, timeout=1800)
        rows = len(done.stdout.splitlines()) - 1
        print(f"gitsleep log (whole command): {time.perf_counter() - started:.2f}s, "
              f"exit {done.returncode}, {rows} rows")

        old = None
        if args.before:
            old = root / "history_before.py"
            old.write_bytes(subprocess.run(
                ["git", "show", f"{args.before}:gitsleep/git_forge/history.py"], cwd=ROOT,
                capture_output=True, check=True).stdout)
        for label, skills, details in (("log (every note)", None, True),
                                       ("PR chart (one skill)", [SKILL], False)):
            after, count = read_seconds(repo, "", skills, details)
            line = f"{label}: read_epochs {after:.2f}s, {count} epochs"
            if old is not None:
                before, count_before = read_seconds(repo, str(old), skills, details)
                line += (f"; before ({args.before}) {before:.2f}s, {count_before} epochs; "
                         f"{before / after:.0f}x faster")
            print(line)


if __name__ == "__main__":
    main()
