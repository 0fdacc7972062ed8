"""A fake `claude -p --output-format stream-json`: streams events, loading skills as told.

FAKE_CLAUDE_EVENTS is a comma list played in order: `text`, `tool:<Name>` (a tool call
that loads no skill), `skill:<name>` (the Skill tool naming it), `read:<name>` (a Read of
its SKILL.md in this project). FAKE_CLAUDE_LOG gets one JSON line per run: the folder it
ran in, the query and the descriptions it found under .claude/skills/. FAKE_CLAUDE_SLEEP
makes it hang that many seconds first.
"""
import json
import os
import sys
import time
from pathlib import Path

query = sys.stdin.read()
if os.environ.get("FAKE_CLAUDE_SLEEP"):
    time.sleep(float(os.environ["FAKE_CLAUDE_SLEEP"]))
skills = {}
for path in sorted(Path(".claude/skills").glob("*/SKILL.md")):
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("description: "):
            skills[path.parent.name] = json.loads(line.removeprefix("description: "))
log = os.environ.get("FAKE_CLAUDE_LOG")
if log:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"cwd": os.getcwd(), "query": query, "skills": skills,
                                 "argv": sys.argv[1:]}) + "\n")


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


def tool(name: str, arguments: dict) -> None:
    emit({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t", "name": name, "input": arguments}]}})


emit({"type": "system", "subtype": "init", "tools": ["Skill", "Read", "Bash"]})
for item in filter(None, os.environ.get("FAKE_CLAUDE_EVENTS", "").split(",")):
    kind, _, value = item.partition(":")
    if kind == "text":
        emit({"type": "assistant", "message": {"content": [{"type": "text",
                                                             "text": "Let me look."}]}})
    elif kind == "tool":
        tool(value, {"command": "ls"})
    elif kind == "skill":
        tool("Skill", {"command": value})
    elif kind == "read":
        tool("Read", {"file_path": str(Path.cwd() / ".claude/skills" / value / "SKILL.md")})
emit({"type": "result", "subtype": "success", "result": "done"})
sys.exit(int(os.environ.get("FAKE_CLAUDE_EXIT", "0")))
