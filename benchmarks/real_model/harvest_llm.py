"""The LLM miner of `gitsleep harvest` with a real small model: how many mined tasks pass?

Opt-in, like `run.py` here: it needs an OpenAI-compatible server and its URL,

    GITSLEEP_TEST_LLM_URL=http://127.0.0.1:8765/v1 .venv/bin/python \
        benchmarks/real_model/harvest_llm.py --model qwen1.5b

and without that variable says why it skips and exits 0. It writes the harvest test
fixtures (Claude Code sessions about the brief-writer example, with corrections, a
secret and an e-mail address) into a temporary HOME and repository, runs the real CLI,
`gitsleep harvest --from claude --llm --json`, then `gitsleep validate --format json`,
and prints what the model proposed, what was dropped and why, and how many mined tasks
`validate` accepts. Nothing is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.e2e.test_harvest_run import HARVESTED, SESSIONS, example_files  # noqa: E402
from tests.support.gitrepo import write_files  # noqa: E402
from tests.support.transcripts import claude_file  # noqa: E402

URL_ENV = "GITSLEEP_TEST_LLM_URL"
EXTRA = [
    [("Write a decision brief on turning on HTTP/3 at the edge for the public API.", "Draft."),
     ("you forgot the Confidence line, and keep it under 300 characters", "Fixed.")],
    [("Write a decision brief on replacing our feature-flag table with Unleash.", "Draft."),
     ("Don't mention pricing. Add a Key Risks section.", "Fixed.")],
]


def gitsleep(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "OPENAI_API_KEY": "sk-local-not-a-key"}
    return subprocess.run([sys.executable, "-m", "gitsleep", "--repo", str(work), *args],
                          env=env, capture_output=True, text=True, timeout=1800, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen1.5b")
    args = parser.parse_args()
    url = os.environ.get(URL_ENV)
    if not url:
        print(f"skipped: set {URL_ENV} to an OpenAI-compatible server (see README.md)")
        return 0
    with tempfile.TemporaryDirectory(prefix="gitsleep-harvest-llm-") as directory:
        tmp = Path(directory)
        home, work = tmp / "home", tmp / "work"
        files = example_files()
        config = files[".gitsleep.yml"].decode().replace(
            "backend: offline", f"backend: openai\nbase_url: {url}\ntimeout: 600"
        ).replace("model: null", f"model: {args.model}")
        files[".gitsleep.yml"] = config.encode()
        write_files(work, files)
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        for turns in SESSIONS + EXTRA:
            claude_file(home, work, turns)
        harvested = gitsleep(home, work, "harvest", "--skill", "brief-writer", "--from",
                             "claude", "--llm", "--json")
        if harvested.returncode != 0:
            print(harvested.stderr)
            return harvested.returncode
        summary = json.loads(harvested.stdout)
        target = work / HARVESTED
        records = [json.loads(x) for x in target.read_text().splitlines()] if target.exists() \
            else []
        checked = gitsleep(home, work, "validate", "--format", "json")
        problems = json.loads(checked.stdout or "[]")
        errors = {p["line"] for p in problems if p["path"] == HARVESTED
                  and p["severity"] == "error"}
        llm = [(n, r) for n, r in enumerate(records, start=1) if r["source"]["miner"] == "llm"]
        accepted = [r for n, r in llm if n not in errors]
        llm_drops = {k: v for k, v in summary["dropped_tasks"].items() if k.startswith("llm:")}
        print(json.dumps({"model": args.model, "sessions": summary["kept_sessions"],
                          "llm_calls": summary["llm_sessions"],
                          "written": Counter(r["source"]["miner"] for r in records),
                          "llm_written": len(llm), "llm_validate_accepts": len(accepted),
                          "validate_exit": checked.returncode,
                          "dropped": summary["dropped_tasks"], "llm_drops": llm_drops,
                          "masked": summary["masked"], "seconds": summary["seconds"],
                          "llm_tasks": [{"prompt": r["prompt"], "judge": r["judge"]}
                                        for _, r in llm]}, indent=2))
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
