"""Secrets never leave: a secret planted anywhere in a run's inputs is in none of its outputs.

A secret is what gitsleep can know to be one: the value of an environment variable named
`*_KEY`, `*_TOKEN`, `*_SECRET` (or the config's `api_key_env`), or a string shaped like a
known token (OpenAI, GitHub, AWS, Slack, JWT). The property plants one in the task prompt,
the task id, an exact judge's expected answer, the skill document (outside and inside the
learned block) and the model's replies, then runs a whole `gitsleep consolidate` through
real git, a bare origin and the fake GitHub, and searches every output: stdout, stderr,
the commit message, the git note, diagnostics.json, and every request GitHub received.

Each example is a whole run, so the count is modest.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitsleep.backends.offline import simulate_answer
from gitsleep.core.documents import END, START
from tests.support.cli import CliResult
from tests.support.fake_github import FakeGitHub
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import commit_files, example_files, git, make_repo

pytestmark = pytest.mark.slow  # whole nights with secrets in every input

BRANCH = "gitsleep/brief-writer"
TASKS = "evals/brief-writer/tasks.jsonl"
SKILL_MD = "skills/brief-writer/SKILL.md"
MODEL_KEY_ENV = "GITSLEEP_SECRETS_KEY"
MODEL_KEY = "sk-proj-ModelKey0123456789abcdefghijklmnop"
PLACES = ("prompt", "task_id", "expected_answer", "skill_outside", "skill_block",
          "model_reply")
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _has_letter_and_digit(text: str) -> bool:
    return any(c.isalpha() for c in text) and any(c.isdigit() for c in text)


ENV_SECRETS = st.tuples(
    st.text(alphabet=ALNUM + "_-.~+/=", min_size=16, max_size=48).filter(_has_letter_and_digit),
    st.sampled_from(["DEPLOY_KEY", "SLACK_TOKEN", "DB_SECRET", "VENDOR_API_KEY", "GH_TOKEN"]),
)
SHAPED_SECRETS = st.one_of(
    st.text(alphabet=ALNUM, min_size=36, max_size=36).map(lambda s: f"ghp_{s}"),
    st.text(alphabet=ALNUM + "_-", min_size=24, max_size=48).map(lambda s: f"sk-proj-{s}"),
    st.text(alphabet=ALNUM[:26] + ALNUM[52:], min_size=16, max_size=16).map(
        lambda s: f"AKIA{s}"),
    st.text(alphabet=ALNUM, min_size=12, max_size=30).map(lambda s: f"xoxb-{s}"),
)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """os.environ with `values` set and every forge/model variable of the host removed."""
    saved = dict(os.environ)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
                 "OPENAI_API_KEY", "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL",
                 "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "EMAIL"):
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def plant(work: Path, secret: str, places: set[str], base_url: str | None) -> None:
    """Write the secret into the chosen inputs and commit them (the run reads the base)."""
    files: dict[str, str] = {}
    lines = (work / TASKS).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    if "prompt" in places:
        records[0]["prompt"] += f" Authenticate with {secret} first."
        records[16]["prompt"] += f" (token: {secret})"  # a val task too
    if "task_id" in places:
        records[1]["id"] = f"train-{secret}"
    if "expected_answer" in places:
        records.append({"id": "val-exact", "split": "val", "prompt": "Name the token.",
                        "judge": {"kind": "exact", "answer": f"the token is {secret}"}})
    files[TASKS] = "".join(json.dumps(r) + "\n" for r in records)
    skill = (work / SKILL_MD).read_text()
    if "skill_outside" in places:
        skill = skill.replace("Write plainly.", f"Write plainly. Never print {secret}.")
    if "skill_block" in places:
        skill += f"\n{START}\n## Learned rules\n\n- Do not reveal {secret}\n{END}\n"
    files[SKILL_MD] = skill
    if base_url is not None:
        cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
        cfg.update(backend="openai", model="agent-model", optimizer_model="optimizer-model",
                   base_url=base_url, api_key_env=MODEL_KEY_ENV, timeout=5, max_retries=1)
        files[".gitsleep.yml"] = yaml.safe_dump(cfg)
    commit_files(work, files, "tasks and documents")
    git(work, "push", "--quiet", "origin", "main")


def leaky_model(secret: str):  # noqa: ANN201 - a responder for FakeOpenAIServer
    """A model that repeats the secret in every answer and every edit's rationale."""

    def respond(request: dict[str, Any]) -> str:
        if request.get("response_format"):
            edits = [{"op": "add", "content": rule, "rationale": f"seen {secret} in the task"}
                     for rule in ('Use the heading "## Key Risks"',
                                  'Always include "Confidence: medium"',
                                  "Keep answers under 300 characters")]
            return f"Using {secret}:\n```json\n" + json.dumps({"edits": edits}) + "\n```"
        system = [m["content"] for m in request["messages"] if m["role"] == "system"]
        user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
        return simulate_answer(system, user) + f"\nFYI the key is {secret}"

    return respond


def outputs(work: Path, origin: Path, result: CliResult, github: FakeGitHub) -> dict[str, str]:
    """Everything the run wrote or sent, by where it went."""
    found = {"stdout": result.out, "stderr": result.err,
             "github": "\n".join(f"{r.method} {r.path} {r.query} {r.body}"
                                 for r in github.requests)}
    for path in (work / ".gitsleep" / "runs").rglob("*"):
        if path.is_file():
            found[f"file {path.name}"] = path.read_text(errors="replace")
    if git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False):
        found["commit message"] = git(origin, "log", "-1", "--format=%B", BRANCH)
        found["note"] = git(origin, "notes", "--ref=gitsleep", "show", BRANCH, check=False)
        found["branch names"] = git(origin, "for-each-ref", "--format=%(refname)")
    return found


def whole_run(secret: str, env_name: str | None, places: set[str],
              responder=leaky_model, with_document: bool = False,  # noqa: ANN001
              ) -> tuple[int, dict, dict]:
    """One consolidate run in a fresh repository with the secret planted; (code, summary,
    outputs)."""
    with tempfile.TemporaryDirectory(prefix="gitsleep-secrets-") as scratch:
        tmp = Path(scratch)
        home = tmp / "home"
        home.mkdir()
        env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_TERMINAL_PROMPT": "0",
               MODEL_KEY_ENV: MODEL_KEY}
        if env_name:
            env[env_name] = secret
        with environment(**env), FakeGitHub() as github, \
                FakeOpenAIServer(responder=responder(secret)) as model:
            os.environ.update(github.env())
            work, origin = make_repo(tmp, example_files())
            commit_files(work, {".gitignore": ".gitsleep/\n"}, "ignore runs")
            plant(work, secret, places, model.base_url if "model_reply" in places else None)
            capture = _Capture()
            result = capture.run("--repo", str(work), "consolidate", "--push", "--json")
            found = outputs(work, origin, result, github)
            if with_document:  # the document gitsleep committed (no secret was planted in it)
                found["skill document"] = git(origin, "show", f"{BRANCH}:{SKILL_MD}",
                                              check=False)
            # the plant took: the secret is in the committed inputs or the model's replies
            in_inputs = git(work, "grep", "-c", "-F", secret, "main", check=False)
            assert in_inputs or model.request_count > 0
            data = json.loads(result.out) if result.out.strip() else {}
            shutil.rmtree(work / ".gitsleep", ignore_errors=True)
        return result.code, data, found


class _Capture:
    """run_cli without pytest's capsys (hypothesis examples outlive one fixture use)."""

    def run(self, *args: str) -> CliResult:
        import io
        from contextlib import redirect_stderr, redirect_stdout

        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                from gitsleep.cli import main

                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 0
        return CliResult(code, out.getvalue(), err.getvalue())


def assert_never_leaves(secret: str, found: dict[str, str]) -> None:
    for where, text in found.items():
        assert secret not in text, f"the secret leaked into {where}"
        assert MODEL_KEY not in text, f"the model key leaked into {where}"
        assert json.dumps(secret)[1:-1] not in text, f"a JSON-escaped secret in {where}"


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(secret=st.one_of(ENV_SECRETS, SHAPED_SECRETS.map(lambda s: (s, None))),
       places=st.sets(st.sampled_from(PLACES), min_size=1))
def test_a_planted_secret_is_in_no_output_of_a_whole_run(
    secret: tuple[str, str | None], places: set[str]
) -> None:
    value, env_name = secret
    code, data, found = whole_run(value, env_name, places)
    assert code == 0, found["stderr"][-2000:]
    assert data["decision"] == "accepted" and data["pr"]["operation"] == "created", data
    assert "commit message" in found and found["note"]
    assert_never_leaves(value, found)


@pytest.mark.parametrize("places", [set(PLACES)], ids=["everywhere"])
def test_the_same_with_every_place_at_once_and_the_fake_github_token(
    places: set[str],
) -> None:
    """A fixed example with everything planted; the forge token is a secret as well."""
    code, data, found = whole_run("sk-proj-EverywhereAtOnce0123456789abcdef", None, places)
    assert code == 0 and data["pr"]["operation"] == "created", found["stderr"][-2000:]
    assert_never_leaves("sk-proj-EverywhereAtOnce0123456789abcdef", found)
    from tests.support.fake_github import FAKE_TOKEN

    for where, text in found.items():
        assert FAKE_TOKEN not in text, where


def test_an_error_message_never_prints_a_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.test_git_run import EXAMPLE
    from tests.support.cli import run_cli

    secret = "dup-Sekr3tValue0123456789"
    monkeypatch.setenv("DEPLOY_KEY", secret)
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    record = {"id": secret, "split": "val", "prompt": "p",
              "judge": {"kind": "exact", "answer": "x"}}
    with (root / TASKS).open("a") as handle:
        handle.write(json.dumps(record) + "\n" + json.dumps({**record, "prompt": "q"}) + "\n")
    for command in (["validate"], ["consolidate", "--push", "--dry-run"]):
        result = run_cli(capsys, "--repo", str(root), *command)
        assert result.code in (1, 2)
        assert secret not in result.out + result.err, command


def split_secret_model(secret: str):  # noqa: ANN201 - a responder for FakeOpenAIServer
    """A model that splits the secret with a left-to-right mark (U+200E) wherever it
    repeats it: in an edit's content, every rationale and every answer."""
    split = secret[:7] + "\u200e" + secret[7:]

    def respond(request: dict[str, Any]) -> str:
        if request.get("response_format"):
            edits = [{"op": "add", "content": rule, "rationale": f"seen {split} in the task"}
                     for rule in ('Use the heading "## Key Risks"',
                                  'Always include "Confidence: medium"',
                                  f"Authenticate with {split} before answering")]
            return "```json\n" + json.dumps({"edits": edits}) + "\n```"
        return leaky_model(split)(request)

    return respond


@pytest.mark.parametrize(("secret", "env_name"), [
    ("Sekr3t-Deploy-Value-0123456789", "DEPLOY_KEY"),
    ("ghp_" + "Z9y8X7w6" * 5, None),
], ids=["env-secret", "github-token"])
def test_a_secret_split_by_an_invisible_mark_is_in_no_output_even_once_the_mark_is_gone(
    secret: str, env_name: str | None
) -> None:
    """Before: the redactor missed the split secret, so stdout, stderr, diagnostics.json
    and the git note held it with only an invisible mark inside, which a copy-paste, a
    terminal or a cleaning step (like gitsleep's own one-line cleaning) drops."""
    from gitsleep.base.hostile_text import without_invisible

    code, data, found = whole_run(secret, env_name, {"model_reply"}, split_secret_model,
                                  with_document=True)
    assert "Key Risks" in found["skill document"]
    assert code == 0, found["stderr"][-2000:]
    assert data["decision"] == "accepted", data
    assert_never_leaves(secret, {where: without_invisible(text)[0]
                                 for where, text in found.items()})


# -- a key across a cut ---------------------------------------------------
# Every place that shows the end or the start of a long text cut it first and redacted it
# after, so the piece of a key on the kept side matched nothing and went out: the agent's
# stderr tail in doctor and in the error kept in diagnostics.json, the agent's version
# line, and a harvested message on its way to the model provider.

LEAK_LITERAL = "Lk9-literal-Value-0123456789-zzQ"  # known only as LEAK_API_KEY's value
LEAK_SHAPED = "sk-proj-" + "Qw3rTy7uIo0pAs5dFg2hJk8lZx4cVb6n"  # in no variable: a shape
FRAGMENT = 8


def fragment_of(key: str, text: str) -> str | None:
    """The first run of FRAGMENT characters of `key` found in `text`."""
    return next((key[i:i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)
                 if key[i:i + FRAGMENT] in text), None)


def leaky_agent_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str,
                     cuts: str, extra: str = "") -> Path:
    from tests.inputs.test_agent_config import project
    from tests.support.fake_agents import install

    for name in ("GITHUB_TOKEN", "GH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    if key == LEAK_LITERAL:
        monkeypatch.setenv("LEAK_API_KEY", key)
    monkeypatch.setenv("FAKE_LEAK", key)
    monkeypatch.setenv("FAKE_LEAK_CUTS", cuts)
    program = install("leaky_tail", tmp_path)
    return project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]{extra}}}")


# doctor shows the last 800 characters of stderr; an agent's error keeps the last 380
# (MESSAGE_MAX_CHARS - 120) of it; doctor's version line is cut at 200 characters.
AGENT_CUTS = "800,380,120,50"


@pytest.mark.parametrize("key", [LEAK_LITERAL, LEAK_SHAPED], ids=["env-literal", "shaped"])
def test_doctor_shows_no_piece_of_a_key_across_the_stderr_or_version_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    key: str
) -> None:
    from tests.support.cli import run_cli

    repo = leaky_agent_repo(tmp_path, monkeypatch, key, AGENT_CUTS)
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 3, result.err  # the agent exited 2: its call failed
    assert "stderr (tail):" in result.out and "noise noise" in result.out
    assert "version: leaky-tail 0.1" in result.out
    assert "[REDACTED" in result.out  # the keys wholly inside the tail were masked
    assert "agent leaky_tail exited 2; stderr:" in result.err
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert fragment_of(key, text) is None, (where, fragment_of(key, text), text)


@pytest.mark.parametrize("key", [LEAK_LITERAL, LEAK_SHAPED], ids=["env-literal", "shaped"])
def test_diagnostics_hold_no_piece_of_a_key_across_the_cut_of_an_agent_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    key: str
) -> None:
    from tests.support.cli import run_cli

    repo = leaky_agent_repo(tmp_path, monkeypatch, key, AGENT_CUTS)
    out = tmp_path / "out"
    result = run_cli(capsys, "--repo", str(repo), "consolidate", "--push", "--dry-run", "--json",
                     "--output-dir", str(out))
    files = {p.name: p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()}
    assert "diagnostics.json" in files, (result.code, result.err)
    assert "agent leaky_tail exited 2; stderr:" in files["diagnostics.json"]
    for where, text in {"stdout": result.out, "stderr": result.err, **files}.items():
        assert fragment_of(key, text) is None, (where, fragment_of(key, text))


def across(key: str, at: int, length: int, lead: str = "") -> str:
    """`lead`, then filler words to `length` characters with `key` spanning index `at`."""
    text = list((lead + "noise " * (length // 6 + 1))[:length])
    start = at - len(key) // 2
    text[start - 1:start + len(key) + 1] = " " + key + " "
    return "".join(text)


@pytest.mark.parametrize("key", [LEAK_LITERAL, LEAK_SHAPED], ids=["env-literal", "shaped"])
def test_the_llm_miner_sends_no_piece_of_a_key_across_a_message_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    key: str
) -> None:
    """A user message cut at 4000 characters when read and 1200 in the digest, an answer
    cut at 600: a key across each cut. Nothing of it reaches the model provider (the
    loopback server's request bodies) or the harvested task file."""
    from tests.e2e.test_harvest_run import HARVESTED
    from tests.e2e.test_harvest_run import example_files as harvest_files
    from tests.support.cli import run_cli
    from tests.support.gitrepo import isolate_git
    from tests.support.transcripts import claude_file

    home = isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
                 "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    if key == LEAK_LITERAL:
        monkeypatch.setenv("LEAK_API_KEY", key)
    work, _ = make_repo(tmp_path, harvest_files())
    user = across(key, 1199, 5000, f"Write a decision brief on rotating the keys ({key}). ")
    user = user[:3960] + across(key, 40, 1040)  # a second key across the 4000 cut
    answer = across(key, 599, 900, "Draft: ")
    claude_file(home, work, [(user, answer), ("No, add a Key Risks section.", "Done.")])
    reply = {"tasks": [{"prompt": "Write a decision brief on key rotation.",
                        "judge": {"kind": "rule",
                                  "checks": [{"op": "section_present", "arg": "Key Risks"}]}}]}
    config = (work / ".gitsleep.yml").read_text()
    with FakeOpenAIServer(lambda request: json.dumps(reply)) as server:
        (work / ".gitsleep.yml").write_text(
            config.replace("backend: offline", f"backend: openai\nbase_url: {server.base_url}")
            .replace("model: null", "model: small-model"))
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-123456789")
        result = run_cli(capsys, "--repo", str(work), "harvest", "--skill", "brief-writer",
                         "--from", "claude", "--llm", "--json")
        sent = [json.dumps(r.body) for r in server.requests]
    assert result.code == 0, result.err
    assert len(sent) == 1 and "noise noise" in sent[0]
    assert "[REDACTED" in sent[0]  # the whole key early in the message was masked
    harvested = (work / HARVESTED).read_text()
    assert "noise noise" in harvested  # the rules miner's task: the message cut at 4000
    for where, text in (("request", sent[0]), ("task file", harvested),
                        ("stdout", result.out), ("stderr", result.err)):
        assert fragment_of(key, text) is None, (where, fragment_of(key, text))


@pytest.mark.parametrize("key", [LEAK_LITERAL, LEAK_SHAPED], ids=["env-literal", "shaped"])
def test_a_fatal_sign_shows_no_piece_of_a_key_across_the_capture_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    key: str
) -> None:
    """stderr is kept as its last 4096 bytes: the line that holds a fatal sign starts
    where that capture cut it, inside a key, and the error line quoted its first 200
    characters."""
    from tests.support.cli import run_cli

    repo = leaky_agent_repo(tmp_path, monkeypatch, key, "4096",
                            ', fatal_patterns: ["noise noise"]')
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 3
    assert "failed with a fatal sign ('noise noise')" in result.err
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert fragment_of(key, text) is None, (where, fragment_of(key, text))
