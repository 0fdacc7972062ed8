"""An agent whose every output holds terminal control sequences.

Its version line, stdout answer and stderr carry an OSC 52 clipboard write, CSI colour
and cursor moves, an OSC 8 hyperlink, a bare ESC, 8-bit C1 controls, BEL and backspace or
carriage-return overwrites. A terminal that gets them raw runs them.
"""
import os
import sys

SEQUENCES = [
    "\x1b]52;c;cm0gLXJmIH4K\x07",  # OSC 52: write "rm -rf ~" to the clipboard
    "\x1b]52;p;ZXZpbA==\x1b\\",  # OSC 52 ended by ST
    "\x1b[31mred\x1b[0m",  # CSI SGR colour
    "\x1b[2J\x1b[H",  # CSI: clear the screen, cursor home
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1bc",  # bare ESC: RIS, reset the terminal
    "\x9b31m",  # C1 CSI (8-bit)
    "\x9d0;title\x9c",  # C1 OSC set-title, ended by C1 ST
    "\x07",  # BEL
    "safe\x08\x08\x08\x08evil",  # backspaces overwrite what was printed
    "looks fine\rEVIL",  # carriage return overwrites the line
    "\x1bP+q544e\x1b\\",  # DCS: request a terminfo answer
    "del\x7f\x1b",  # DEL, and a trailing ESC
]
ALL = "".join(SEQUENCES)


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"hostile-tty 1.0 {ALL}")
        sys.exit(0)
    sys.stdin.read()
    print(f"## Answer {ALL}\n" + "\n".join(SEQUENCES))
    sys.stderr.write(f"warning: {ALL}\x00nul\n")  # a NUL too (stdout with one is binary)
    sys.exit(int(os.environ.get("FAKE_TTY_EXIT", "0")))


if __name__ == "__main__":  # the tests import SEQUENCES
    main()
