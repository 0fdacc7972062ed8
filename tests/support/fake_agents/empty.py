"""An agent that exits 0 with nothing on stdout; counts its runs in FAKE_AGENT_COUNTER."""
import os
import sys
from pathlib import Path

if sys.argv[1:] == ["--version"]:
    print("empty-agent 1.0")
    sys.exit(0)
sys.stdin.read()
counter = os.environ.get("FAKE_AGENT_COUNTER")
if counter:
    with open(counter, "a", encoding="utf-8") as fh:
        fh.write("run\n")
    runs = len(Path(counter).read_text(encoding="utf-8").splitlines())
    if runs >= int(os.environ.get("FAKE_AGENT_ANSWER_ON") or 10**9):
        print("an answer at last")
print("   ")
