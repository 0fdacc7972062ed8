"""An agent whose login expired: exit 1 with the seed's Codex message on stderr (or the
message in FAKE_AGENT_ERROR, and the exit code in FAKE_AGENT_EXIT)."""
import os
import sys

if sys.argv[1:] == ["--version"]:
    print("codex-cli 0.1.0")
    sys.exit(0)
sys.stdin.read()
print("partial output that must never be scored")
default = "ERROR: unexpected status 401 Unauthorized: refresh_token_reused"
print(os.environ.get("FAKE_AGENT_ERROR", default), file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_AGENT_EXIT", "1")))
