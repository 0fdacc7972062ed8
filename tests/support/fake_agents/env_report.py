"""An agent that reports which of the variables named in FAKE_AGENT_SHOW (comma
separated) it was handed, as NAME=set or NAME=unset; never their values."""
import os
import sys

if sys.argv[1:] == ["--version"]:
    print("env-report 1.0")
    sys.exit(0)
sys.stdin.read()
for name in os.environ.get("FAKE_AGENT_SHOW", "").split(","):
    print(f"{name}={'set' if name in os.environ else 'unset'}")
