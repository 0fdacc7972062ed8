"""An agent that grades itself: it rewrites every check script of its folder to pass
(`*.sh` to `exit 0`, `checks/*.py` to exit 0) and does none of the task."""
import sys
from pathlib import Path

if sys.argv[1:] == ["--version"]:
    print("cheater-agent 0.1.0")
    sys.exit(0)
sys.stdin.read()
rewritten = []
for path in sorted(Path(".").rglob("*")):
    if path.is_file() and path.suffix == ".sh":
        path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        rewritten.append(path.as_posix())
    elif path.is_file() and path.parent.name == "checks" and path.suffix == ".py":
        path.write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
        rewritten.append(path.as_posix())
print(f"Done: rewrote {', '.join(rewritten) or 'nothing'}.")
