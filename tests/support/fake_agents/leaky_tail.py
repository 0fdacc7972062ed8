"""An agent that fails with a key wherever gitsleep cuts its output.

`FAKE_LEAK` is `key` and `FAKE_LEAK_CUTS` a comma list of character counts from the end
of its stderr: the key is written across each of those points, so a cut there leaves a
piece of it on each side. `--version` prints the key across character 200 of its line.
"""
import os
import sys

key = os.environ.get("FAKE_LEAK", "")
if sys.argv[1:] == ["--version"]:
    print("leaky-tail 0.1 " + "v" * (200 - 15 - len(key) // 2 - 1) + " " + key + " build")
    sys.exit(0)
sys.stdin.read()
print("an answer-looking text that must never be scored")
cuts = [int(c) for c in os.environ.get("FAKE_LEAK_CUTS", "").split(",") if c]
size = max(cuts, default=0) + 1000
text = list(("noise " * (size // 6 + 1))[:size] + "end.")
total = len(text)
for cut in cuts:
    start = total - cut - len(key) // 2
    text[start - 1:start + len(key) + 1] = " " + key + " "
sys.stderr.write("".join(text))
sys.exit(2)
