"""An agent that reports what it called, as Claude Code (`FAKE_AGENT_TRACE=claude`:
stream-json) or Codex (`codex`: exec --json) do: it calls its `Grep` / shell search tool
only when its installed instructions mention searching."""
import json
import os
import sys
from pathlib import Path

if sys.argv[1:] == ["--version"]:
    print("tool-caller 0.1")
    sys.exit(0)
task = sys.stdin.read().strip()
skill = Path("AGENTS.md").read_text(encoding="utf-8") if Path("AGENTS.md").exists() else ""
searches = "search" in skill.lower() and "do not search" not in skill.lower()
answer = f"Answer to: {task}"
style = os.environ.get("FAKE_AGENT_TRACE", "claude")
if style == "claude":
    print(json.dumps({"type": "system", "subtype": "init", "tools": ["Grep", "Read"]}))
    if searches:
        print(json.dumps({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "Grep",
             "input": {"pattern": "pricing", "path": "."}}]}}))
        print(json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": "notes/pricing.md:1:# Pricing"}]}]}}))
    print(json.dumps({"type": "assistant", "message": {"content": [
        {"type": "text", "text": answer}]}}))
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                      "result": answer, "usage": {"input_tokens": 12, "output_tokens": 4}}))
else:
    print(json.dumps({"type": "thread.started", "thread_id": "t"}))
    if searches:
        print(json.dumps({"type": "item.completed", "item": {
            "id": "item_0", "type": "command_execution", "command": "bash -lc 'rg pricing'",
            "aggregated_output": "notes/pricing.md:# Pricing\n", "exit_code": 0,
            "status": "completed"}}))
    print(json.dumps({"type": "item.completed", "item": {
        "id": "item_1", "type": "agent_message", "text": answer}}))
    print(json.dumps({"type": "turn.completed",
                      "usage": {"input_tokens": 9, "output_tokens": 3}}))
    out = os.environ.get("FAKE_AGENT_ANSWER_FILE")
    if out:
        Path(out).write_text(answer, encoding="utf-8")
