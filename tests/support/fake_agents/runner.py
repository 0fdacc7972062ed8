"""An agent that does what its installed skill says: for each line of AGENTS.md like
"run scripts/check.sh" it runs that script (with sh) in its working folder, and answers
with the scripts' output. It edits nothing itself; a script may."""
import re
import subprocess
import sys
from pathlib import Path

if sys.argv[1:] == ["--version"]:
    print("runner-agent 0.1.0")
    sys.exit(0)
sys.stdin.read()
rules = Path("AGENTS.md").read_text(encoding="utf-8") if Path("AGENTS.md").exists() else ""
out = []
for script in re.findall(r"\brun (\S+\.sh)\b", rules):
    done = subprocess.run(["sh", script], capture_output=True, text=True, check=False)
    out.append(f"{script}: exit {done.returncode}: {done.stdout.strip()} {done.stderr.strip()}")
print("\n".join(out) or "Nothing to run.")
