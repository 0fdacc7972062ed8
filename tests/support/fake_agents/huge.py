"""A runaway agent: writes output without end (stops only when it is killed)."""
import sys

if sys.argv[1:] == ["--version"]:
    print("huge 1.0")
    sys.exit(0)
line = b"all work and no play makes a dull agent\n" * 1000
while True:
    sys.stdout.buffer.write(line)
