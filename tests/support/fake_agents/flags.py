"""An agent that parses its argv the way real agent CLIs do (argparse): a task that
reached the argv as an option would set a flag (`--dangerously-skip-permissions`) or
print the usage text (`-h`) and exit 0, and that text would be scored as an answer."""
import argparse
import sys

if sys.argv[1:] == ["--version"]:
    print("flags-agent 1.0")
    sys.exit(0)
parser = argparse.ArgumentParser(prog="flags-agent")
parser.add_argument("--dangerously-skip-permissions", action="store_true")
parser.add_argument("--prompt", default=None)
parser.add_argument("task", nargs="?")
args = parser.parse_args()
print(f"skip-permissions={args.dangerously_skip_permissions}")
print(f"task={args.prompt if args.prompt is not None else args.task}")
