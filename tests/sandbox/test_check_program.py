"""Check commands: an argv run in a folder with a deadline, an output cap and a group kill;
the answer in the file `GITSLEEP_ANSWER` names. Real subprocesses throughout."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from gitsleep.base.errors import EXIT_BACKEND
from gitsleep.base.redact import Redactor
from gitsleep.sandbox import check_program as command_check
from gitsleep.sandbox.check_program import CheckCannotRun

PY = sys.executable


def test_exit_zero_passes_and_a_failure_carries_its_output_tail(tmp_path: Path) -> None:
    assert command_check.run_check([PY, "-c", "pass"], tmp_path) == (True, "")
    ok, why = command_check.run_check(
        [PY, "-c", "import sys; print('collected 3'); print('FAILED test_a', file=sys.stderr);"
                   " sys.exit(1)"], tmp_path)
    assert not ok
    assert why.startswith("exited 1")
    assert "collected 3" in why and "FAILED test_a" in why


def test_the_answer_is_in_the_file_gitsleep_answer_names(tmp_path: Path) -> None:
    reader = ("import os, sys; text = open(os.environ['GITSLEEP_ANSWER']).read();"
              " sys.exit(0 if 'Severity: 2' in text else 3)")
    assert command_check.check_answer([PY, "-c", reader], "## Impact\nSeverity: 2\n")[0]
    ok, why = command_check.check_answer([PY, "-c", reader], "no severity here")
    assert not ok and why.startswith("exited 3")


def test_the_scratch_folder_is_empty_and_gone_afterwards(tmp_path: Path) -> None:
    record = tmp_path / "seen.txt"
    script = ("import os, sys; open(sys.argv[1], 'w').write(os.getcwd() + '\\n' + "
              "repr(os.listdir('.')) + '\\n' + os.environ['GITSLEEP_ANSWER'])")
    assert command_check.check_answer([PY, "-c", script, str(record)], "hi")[0]
    cwd, listing, answer_file = record.read_text().splitlines()
    assert listing == "[]"
    assert not Path(cwd).exists() and not Path(answer_file).exists()
    assert not Path(answer_file).is_relative_to(cwd)  # the answer is not a workspace file


def test_a_hanging_command_is_a_failed_check_and_its_group_dies(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    hang = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); print('waiting', flush=True); "
            "time.sleep(60)")
    started = time.monotonic()
    ok, why = command_check.run_check([PY, "-c", hang], tmp_path, timeout=1.5, kill_grace=0.2)
    assert time.monotonic() - started < 15
    assert not ok and "timed out after 1.5s" in why and "waiting" in why
    child = int(pidfile.read_text())
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the check's child outlived the deadline")


def test_a_flooding_command_is_stopped_and_fails(tmp_path: Path) -> None:
    flood = "import sys\nwhile True: sys.stdout.write('y' * 65536)"
    started = time.monotonic()
    ok, why = command_check.run_check([PY, "-c", flood], tmp_path, max_output_bytes=100_000)
    assert time.monotonic() - started < 15
    assert not ok and "more than 100000 bytes" in why
    assert len(why) < 600


def test_a_missing_program_cannot_run_exit_3_never_a_score(tmp_path: Path) -> None:
    with pytest.raises(CheckCannotRun) as caught:
        command_check.run_check(["gitsleep-no-such-program", "-q"], tmp_path)
    assert caught.value.exit_code == EXIT_BACKEND
    assert "gitsleep-no-such-program" in str(caught.value) and "not found" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_executable_cannot_run(tmp_path: Path) -> None:
    script = tmp_path / "check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(CheckCannotRun, match="permission denied"):
        command_check.run_check([str(script)], tmp_path)


def test_output_is_redacted_whole_before_it_is_clipped(tmp_path: Path) -> None:
    secret = "sk-live-" + "q" * 40
    redactor = Redactor([secret])
    noisy = f"print('x' * 3000); print('key={secret}'); raise SystemExit(2)"
    ok, why = command_check.run_check([PY, "-c", noisy], tmp_path, redact=redactor.redact)
    assert not ok and secret not in why and "qqqqqqqq" not in why
    assert why.startswith("exited 2") and len(why) <= command_check.REASON_CHARS + 40


def test_the_check_sees_no_forge_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "a" * 36)
    probe = "import os, sys; sys.exit(1 if 'GITHUB_TOKEN' in os.environ else 0)"
    assert command_check.run_check([PY, "-c", probe], tmp_path)[0]


def test_argv_problem_names_each_bad_shape() -> None:
    assert command_check.argv_problem(["python", "-m", "pytest"]) is None
    assert "list" in (command_check.argv_problem("pytest -q") or "")
    assert "empty" in (command_check.argv_problem([]) or "")
    assert "strings" in (command_check.argv_problem(["python", 3]) or "")
    assert "empty" in (command_check.argv_problem(["", "x"]) or "")
    assert "NUL" in (command_check.argv_problem(["py\0thon"]) or "")


def test_program_problem_finds_programs_on_path_and_in_the_workspace(tmp_path: Path) -> None:
    assert command_check.program_problem(["sh", "-c", "true"]) is None
    assert "not on PATH" in (command_check.program_problem(["gitsleep-no-such-program"]) or "")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o755)
    assert command_check.program_problem(["./run.sh"], workspace=tmp_path) is None
    assert "does not exist" in (command_check.program_problem(["./nope.sh"],
                                                              workspace=tmp_path) or "")
    assert "scratch folder" in (command_check.program_problem(["./run.sh"]) or "")


def test_a_script_another_process_still_holds_open_for_writing_starts_once_it_is_closed(
        tmp_path: Path) -> None:
    """Before: `cannot be started: Text file busy` (exit 3) at random with `workers` > 1,
    when another thread forked while `./check.sh` was being put back: the child held a
    write descriptor to it until its exec. Made deterministic: a forked process holds one
    for half a second."""
    script = tmp_path / "check.sh"
    fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    os.write(fd, b"#!/bin/sh\nexit 0\n")
    child = os.fork()
    if child == 0:  # holds the inherited write descriptor, then leaves without cleanup
        time.sleep(0.5)
        os._exit(0)
    os.close(fd)
    try:
        assert command_check.run_check(["./check.sh"], tmp_path) == (True, "")
    finally:
        os.waitpid(child, 0)


def test_a_script_held_open_for_writing_for_good_still_cannot_run(tmp_path: Path) -> None:
    script = tmp_path / "check.sh"
    fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    os.write(fd, b"#!/bin/sh\nexit 0\n")
    try:
        started = time.monotonic()
        with pytest.raises(CheckCannotRun, match="Text file busy"):
            command_check.run_check(["./check.sh"], tmp_path)
        assert time.monotonic() - started < 10
    finally:
        os.close(fd)
