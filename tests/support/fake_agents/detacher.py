"""An agent that hides its work from a process-group kill: it starts a grandchild in a
new session (setsid, so `killpg` on the agent's group misses it) and a plain child, all
three ignore SIGTERM, appends "agent child detached" pids to FAKE_AGENT_PIDFILE, then
sleeps. With FAKE_AGENT_EXIT_NOW set it answers and exits at once, leaving the detached
grandchild behind holding its stdout, the way a careless daemon does."""
import os
import signal
import subprocess
import sys
import time

if sys.argv[1:] == ["--version"]:
    print("detacher 1.0")
    sys.exit(0)
hold = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n"
detached = subprocess.Popen([sys.executable, "-c", hold], start_new_session=True,
                            stdin=subprocess.DEVNULL)
child = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(os.environ["FAKE_AGENT_PIDFILE"], "a", encoding="utf-8") as fh:
    fh.write(f"{os.getpid()} {child.pid} {detached.pid}\n")
if os.environ.get("FAKE_AGENT_EXIT_NOW"):
    print("an answer from an agent that left a daemon behind", flush=True)
    os._exit(0)
time.sleep(600)
