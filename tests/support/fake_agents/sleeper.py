"""An agent that starts a child, writes the child's pid to FAKE_AGENT_PIDFILE, and
sleeps far past any deadline. With FAKE_AGENT_STUBBORN set, both ignore SIGTERM."""
import os
import signal
import subprocess
import sys
import time

if sys.argv[1:] == ["--version"]:
    print("sleeper 1.0")
    sys.exit(0)
stubborn = bool(os.environ.get("FAKE_AGENT_STUBBORN"))
code = "import signal, time\n"
if stubborn:
    code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
code += "time.sleep(600)\n"
child = subprocess.Popen([sys.executable, "-c", code])
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.environ["FAKE_AGENT_PIDFILE"], "w", encoding="utf-8") as fh:
    fh.write(f"{os.getpid()} {child.pid}\n")
time.sleep(600)
