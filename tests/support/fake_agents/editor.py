"""An agent that edits files: it works in its current folder (the task's workspace).

It appends a changelog entry when the task asks for one, writes docs/<flag>.md only when
its installed AGENTS.md says "Write a docs page", and answers with what it did. Each run
is counted in the file FAKE_AGENT_RUNS names (when set).
"""
import os
import re
import sys
from pathlib import Path

if sys.argv[1:] == ["--version"]:
    print("editor-agent 0.1.0")
    sys.exit(0)
task = sys.stdin.read()
rules = Path("AGENTS.md").read_text(encoding="utf-8") if Path("AGENTS.md").exists() else ""
runs = os.environ.get("FAKE_AGENT_RUNS")
if runs:
    with open(runs, "a", encoding="utf-8") as fh:
        fh.write("run\n")
flag = re.search(r"--[a-z][a-z-]*", task)
done = []
if flag and Path("CHANGELOG.md").exists():
    with open("CHANGELOG.md", "a", encoding="utf-8") as fh:
        fh.write(f"- Add the {flag.group(0)} flag\n")
    done.append("CHANGELOG.md")
if flag and "write a docs page" in rules.lower():
    Path("docs").mkdir(exist_ok=True)
    Path("docs", f"{flag.group(0)[2:]}.md").write_text(f"# {flag.group(0)}\n", encoding="utf-8")
    done.append(f"docs/{flag.group(0)[2:]}.md")
print(f"Done: edited {', '.join(done) or 'nothing'}.")
