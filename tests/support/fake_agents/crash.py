"""An agent that fails without a fatal sign: exit 2 after echoing a secret in its error."""
import os
import sys

if sys.argv[1:] == ["--version"]:
    print("crash-agent 0.0.1")
    sys.exit(0)
sys.stdin.read()
print("an answer-looking text that must never be scored")
print("noise\n" * 2000, file=sys.stderr, end="")
secret = os.environ.get("FAKE_SECRET_KEY", "")
print(f"Traceback: upstream error with key {secret}", file=sys.stderr)
sys.exit(2)
