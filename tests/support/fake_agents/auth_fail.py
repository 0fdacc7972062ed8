"""An agent whose login expired: exit 1 with the seed's Codex message on stderr."""
import sys

if sys.argv[1:] == ["--version"]:
    print("codex-cli 0.1.0")
    sys.exit(0)
sys.stdin.read()
print("partial output that must never be scored")
print("ERROR: unexpected status 401 Unauthorized: refresh_token_reused", file=sys.stderr)
sys.exit(1)
