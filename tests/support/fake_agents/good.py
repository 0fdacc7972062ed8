"""A good agent: reads the installed AGENTS.md (and MEMORY.md) and answers the task."""
import os
import sys
from pathlib import Path

if sys.argv[1:] == ["--version"]:
    print("good-agent 1.2.3")
    sys.exit(0)
task = sys.argv[-1] if os.environ.get("FAKE_AGENT_PROMPT") == "arg" else sys.stdin.read()
skill = Path("AGENTS.md").read_text(encoding="utf-8") if Path("AGENTS.md").exists() else ""
seen = sorted(os.path.join(d, f)[2:] for d, _, fs in os.walk(".") for f in fs)
print(f"task: {task}")
print(f"rules: {skill.strip()}")
print(f"files: {' '.join(seen)}")
out = os.environ.get("FAKE_AGENT_ANSWER_FILE")
if out:
    Path(out).write_text(f"from file: {task}", encoding="utf-8")
    print('{"type":"turn.completed","usage":{"input_tokens":7,"output_tokens":3}}')
if os.environ.get("FAKE_AGENT_USAGE"):
    print("Token usage: 11 input, 5 output", file=sys.stderr)
