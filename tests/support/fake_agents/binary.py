"""An agent that writes bytes, not text, on stdout and exits 0."""
import sys

if sys.argv[1:] == ["--version"]:
    print("binary 1.0")
    sys.exit(0)
sys.stdin.read()
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
