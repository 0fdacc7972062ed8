"""`gitsleep review`'s parts: the verdict rules, the paired interval, the comment text, the
pull request from the environment, the config comparison, the one comment per PR on the
loopback GitHub fake, the Action's `review` mode, the example workflow and `init`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gitsleep import paths, review, review_run
from gitsleep.backends.offline import OfflineBackend
from gitsleep.config import Config
from gitsleep.core import gate
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import (
    EpochSettings,
    GateSettings,
    Judge,
    PassResult,
    SampleResult,
    Score,
    Task,
    TaskResult,
)
from gitsleep.errors import EXIT_REGRESSION, GitError
from gitsleep.git_forge.forge import ForgeSettings, GitHubForge, Pacing
from gitsleep.redact import Redactor
from tests.support.cli import run_cli
from tests.support.fake_github import FakeGitHub, Fault
from tests.test_action import ACTION, STUB, action_step, read_outputs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "workflows" / "gitsleep-review.yml"


def task(task_id: str, value: float | None, answer: str = "an answer") -> TaskResult:
    if value is None:
        sample = SampleResult(0, None, "HTTP 500 from the model", None)
    else:
        sample = SampleResult(0, answer, None, Score(value, value, f"scored {value}"))
    return TaskResult(task_id, "test", [sample], value, value, value)


def a_pass(*tasks: TaskResult) -> PassResult:
    return PassResult("review", "test", "v", list(tasks))


# -- the verdict rules ----------------------------------------------------------------------


def split(before: float, after: float, low: float, high: float) -> review.SplitReview:
    return review.SplitReview("test", 6, before, after, low, high)


@pytest.mark.parametrize(("case", "min_delta", "regressed", "improved"), [
    (split(1.0, 0.5, -0.8, -0.2), 0.0, True, False),
    (split(1.0, 0.5, -0.8, 0.1), 0.0, False, False),  # the interval reaches zero: noise
    (split(1.0, 0.9, -0.2, -0.05), 0.1, False, False),  # a fall of exactly min_delta
    (split(1.0, 0.85, -0.2, -0.05), 0.1, True, False),
    (split(0.5, 1.0, 0.2, 0.8), 0.0, False, True),
    (split(0.5, 0.5, 0.0, 0.0), 0.0, False, False),
])
def test_regressed_needs_a_fall_beyond_min_delta_and_the_interval_below_zero(
        case: review.SplitReview, min_delta: float, regressed: bool, improved: bool) -> None:
    assert case.regressed(min_delta) is regressed
    assert case.improved(min_delta) is improved


def test_compare_uses_the_gates_paired_bootstrap_and_lists_moved_tasks_regressions_first():
    base = a_pass(task("a", 1.0), task("b", 0.0), task("c", 1.0), task("d", 1.0),
                  task("e", 1.0))
    head = a_pass(task("a", 0.0, "worse"), task("b", 1.0, "better"), task("c", 1.0),
                  task("d", None), task("e", 0.0, "worse too"))
    result = review.compare("test", base, head)
    expected = gate.bootstrap_interval([a - b for _, b, a in gate.paired(base, head)])
    assert expected is not None and (result.ci_low, result.ci_high) == expected
    assert (result.before, result.after, result.n, result.errors) == (0.8, 0.5, 5, 1)
    assert [(c.task_id, c.before, c.after) for c in result.changed] == [
        ("a", 1.0, 0.0), ("e", 1.0, 0.0), ("b", 0.0, 1.0), ("d", 1.0, None)]
    assert result.changed[0].answer_before == "an answer"
    assert result.changed[0].answer_after == "worse"
    assert result.changed[-1].reason_after.startswith("error: HTTP 500")


def test_val_decides_only_when_no_task_is_held_out():
    val = review.SplitReview("val", 3, 1.0, 0.0, -1.0, -1.0)
    held_out = review.SplitReview("test", 3, 1.0, 1.0, 0.0, 0.0)
    assert review.verdict_of({"val": val, "test": held_out}, 0.0) == ("no clear change", "test")
    assert review.verdict_of({"val": val}, 0.0) == ("regressed", "val")
    assert review.verdict_of({}, 0.0) == ("no tasks", None)


# -- the comment ----------------------------------------------------------------------------


def scored_review(answer: str) -> review.SkillReview:
    change = review.TaskChange("t-1", "test", 1.0, 0.0, "before", answer, "failed: contains")
    held_out = review.SplitReview("test", 1, 1.0, 0.0, -1.0, -1.0, 0, (change,))
    return review.SkillReview("notes", "scored", "changed: SKILL.md", ["SKILL.md"],
                              {"test": held_out}, [], "regressed", "test")


def render(*reviews: review.SkillReview, redactor: Redactor | None = None) -> str:
    return review.comment_markdown(list(reviews), metric="hard", min_delta=0.0,
                                   base_label="main", head_label="abc", rerun="gitsleep review"
                                   " --base main", redactor=redactor or Redactor())


def test_a_secret_across_the_clip_is_redacted_before_clipping():
    secret = "sk-proj-" + "A1b2C3d4" * 4
    answer = "a" * (review.ANSWER_CHARS - 12) + secret
    body = render(scored_review(answer), redactor=Redactor([secret]))
    assert "sk-proj" not in body and secret[:10] not in body
    assert "[REDACTED" in body


def test_the_comment_starts_with_the_marker_and_is_the_same_for_the_same_review():
    skipped = review.SkillReview("other", "skipped", "nothing changed")
    first = render(scored_review("x | y"), skipped)
    assert first.startswith(review.MARKER + "\n")
    assert first == render(scored_review("x | y"), skipped)
    assert "| notes | held-out | 1 | 1.000 | 0.000 | -1.000 | -1.000 to -1.000 | " \
           "**regressed** |" in first
    assert "- other: skipped: nothing changed" in first
    assert "x \\| y" in first
    assert "```sh\ngitsleep review --base main\n```" in first


def test_a_review_with_many_changed_tasks_shows_the_first_and_counts_the_rest():
    changes = tuple(review.TaskChange(f"t-{i}", "test", 1.0, 0.0, "b", "a", "r")
                    for i in range(review.TASK_ROWS + 5))
    held_out = review.SplitReview("test", len(changes), 1.0, 0.0, -1.0, -1.0, 0, changes)
    body = render(review.SkillReview("notes", "scored", "r", [], {"test": held_out}, [],
                                     "regressed", "test"))
    assert body.count("| t-") == review.TASK_ROWS and "_and 5 more" in body
    assert len(body) < review.COMMENT_LIMIT


# -- the pull request from the environment --------------------------------------------------


def event_file(tmp_path: Path, payload: object) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return str(path)


def test_the_pull_request_comes_from_the_event_the_ref_or_the_option(tmp_path: Path):
    same = {"full_name": "octo/skills"}
    event = {"pull_request": {"number": 12, "head": {"repo": same}, "base": {"repo": same}}}
    env = {"GITHUB_EVENT_PATH": event_file(tmp_path, event)}
    assert review_run.pull_request_from_env(env, None) == review_run.PullRequestRef(12, False)
    assert review_run.pull_request_from_env(env, 3) == review_run.PullRequestRef(3, False)
    assert review_run.pull_request_from_env({"GITHUB_REF": "refs/pull/7/merge"}, None) == \
        review_run.PullRequestRef(7, False)
    assert review_run.pull_request_from_env({"GITHUB_REF": "refs/heads/main"}, None) is None
    assert review_run.pull_request_from_env(
        {"GITHUB_EVENT_PATH": str(tmp_path / "missing.json")}, None) is None


def test_a_fork_is_a_head_repository_other_than_the_base(tmp_path: Path):
    fork = {"pull_request": {"number": 5, "head": {"repo": {"full_name": "someone/skills"}},
                             "base": {"repo": {"full_name": "octo/skills"}}}}
    gone = {"pull_request": {"number": 6, "head": {"repo": None},
                             "base": {"repo": {"full_name": "octo/skills"}}}}
    for payload, number in ((fork, 5), (gone, 6)):
        env = {"GITHUB_EVENT_PATH": event_file(tmp_path, payload)}
        assert review_run.pull_request_from_env(env, None) == \
            review_run.PullRequestRef(number, True)


# -- the config comparison ------------------------------------------------------------------


def config(**extra: object) -> Config:
    data: dict[str, object] = {"version": 1, "backend": "offline", "skills": [
        {"name": "notes", "skill": "SKILL.md", "tasks": [{"path": "t.jsonl"}]}]}
    data.update(extra)
    return Config.model_validate(data)


def test_only_settings_that_change_a_score_make_configs_differ():
    assert review_run.config_differences(config(), config(workers=2, rounds=5)) == []
    more_tasks = config(skills=[{"name": "notes", "skill": "SKILL.md",
                                 "tasks": [{"path": "t.jsonl"}, {"path": "u.jsonl"}]}])
    assert review_run.config_differences(config(), more_tasks) == []
    assert review_run.config_differences(config(), config(gate={"metric": "soft"})) == \
        ["gate.metric"]
    assert review_run.config_differences(config(), config(model="m2")) == ["model"]


def test_an_optimizer_model_that_moves_the_judge_is_a_scoring_difference():
    """Before: `optimizer_model` counted as "not scoring", yet the rubric judge defaults to
    it, so a pull request could pick the model that grades it unseen."""
    base = config(backend="openai", model="agent-m")
    head = config(backend="openai", model="agent-m", optimizer_model="friendly-grader")
    assert review_run.config_differences(base, head) == ["effective judge model"]
    both = config(backend="openai", model="agent-m", optimizer_model="o",
                  judge_model="agent-m")
    assert review_run.config_differences(base, both) == ["judge_model"]


# -- one comment per pull request, on the loopback fake --------------------------------------


ACTIONS_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
PERSON = {"login": "pr-author", "id": 77, "type": "User"}
REFUSED_USER = {"message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/users/users"
                                     "#get-the-authenticated-user"}


class AuthoredGitHub(FakeGitHub):
    """The loopback fake with comment authors as GitHub gives them: a comment made through
    the API is the token's own user, a seeded one a person's. `viewer` None is an Actions
    installation token (GITHUB_TOKEN): comments by `github-actions[bot]`, `GET /user`
    refused with 403; a user dict is a personal token, `GET /user` answers with it. With
    `refuse_foreign_edits`, editing someone else's comment is a 403, as for most tokens."""

    def __init__(self, *args: object, viewer: dict[str, object] | None = None,
                 refuse_foreign_edits: bool = True, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.viewer = viewer
        self.refuse_foreign_edits = refuse_foreign_edits

    def _identity(self, who: dict[str, object]) -> dict[str, object]:
        return {**who, "url": self._url(f"/users/{who['login']}")}

    def handle(self, method: str, path: str, query: dict[str, str],
               payload: object) -> tuple[int, object, dict[str, str]]:
        if path == "/user" and method == "GET":
            if self.viewer is None:
                return 403, REFUSED_USER, {}
            return 200, self._identity(self.viewer), {}
        if method == "PATCH" and "/issues/comments/" in path and self.refuse_foreign_edits:
            me = (self.viewer or ACTIONS_BOT)["id"]
            target = int(path.rsplit("/", 1)[-1])
            owner = next((c["user"]["id"] for cs in self.comments.values() for c in cs
                          if c["id"] == target), me)
            if owner != me:
                return 403, {"message": "Resource not accessible by integration"}, {}
        return super().handle(method, path, query, payload)  # type: ignore[arg-type]

    def _add_comment(self, pull: dict, payload: dict) -> tuple[int, object, dict[str, str]]:
        status, comment, headers = super()._add_comment(pull, payload)
        comment["user"] = self._identity(self.viewer or ACTIONS_BOT)  # type: ignore[index]
        return status, comment, headers

    def add_comment(self, number: int, body: str,
                    author: dict[str, object] | None = None) -> int:
        """Seed a comment as `author` wrote it (a person, the PR's author, by default)."""
        made = super().add_comment(number, body)
        comment = next(c for c in self.comments[number] if c["id"] == made)
        comment["user"] = self._identity(author or PERSON)
        return made



@pytest.fixture
def hub():
    with AuthoredGitHub() as fake:
        forge = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                            pacing=Pacing.none())
        yield fake, forge
        forge.close()


def test_sync_comment_creates_once_skips_an_unchanged_body_and_edits_in_place(hub):
    fake, forge = hub
    number = fake.add_pull("feature")
    fake.add_comment(number, f"a person quoting us: {review.MARKER} is not ours")
    body = f"{review.MARKER}\nfirst\n"
    assert review_run.sync_comment(forge, number, body).operation == "created"
    assert review_run.sync_comment(forge, number, body).operation == "none"
    assert [w.method for w in fake.writes] == ["POST"]
    done = review_run.sync_comment(forge, number, f"{review.MARKER}\nsecond\n")
    assert done.operation == "updated"
    assert [w.method for w in fake.writes] == ["POST", "PATCH"]
    assert [c["body"] for c in fake.comments[number]] == [
        f"a person quoting us: {review.MARKER} is not ours", f"{review.MARKER}\nsecond\n"]


def test_a_refused_comment_edit_is_one_git_error_line_without_the_token(hub):
    fake, forge = hub
    number = fake.add_pull("feature")
    review_run.sync_comment(forge, number, f"{review.MARKER}\nfirst\n")
    fake.fail_next(Fault(403, {"message": "Resource not accessible by integration"},
                         method="PATCH", path_contains="/issues/comments/"))
    with pytest.raises(GitError) as caught:
        review_run.sync_comment(forge, number, f"{review.MARKER}\nsecond\n")
    assert "403" in str(caught.value) and fake.token not in str(caught.value)
    assert "\n" not in str(caught.value)


# -- the Action's review mode ---------------------------------------------------------------


def run_step(tmp_path: Path, env_inputs: dict[str, str], stub_exit: str = "0"
             ) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, work, runner = tmp_path / "bin", tmp_path / "work", tmp_path / "runner"
    for folder in (bin_dir, work, runner):
        folder.mkdir()
    stub = STUB.replace('skill="${*: -1}"',
                        'case " $* " in *" review "*) exit "${STUB_REVIEW_EXIT:-0}" ;; esac\n'
                        'skill="${*: -1}"')
    (bin_dir / "gitsleep").write_text(stub)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for name in ("gitsleep", "python"):
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(action_step("consolidate")["run"])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path),
           "GITSLEEP_BIN": str(bin_dir), "RUNNER_TEMP": str(runner),
           "GITHUB_OUTPUT": str(tmp_path / "github_output"), "STUB_LOG": str(tmp_path / "log"),
           "STUB_REVIEW_EXIT": stub_exit, "GITSLEEP_ACTION_SKILL": "all",
           "GITSLEEP_ACTION_CONFIG": ".gitsleep.yml", "GITSLEEP_ACTION_BASE": "",
           "GITSLEEP_ACTION_MODEL": "", "GITSLEEP_ACTION_BACKEND": "",
           "GITSLEEP_ACTION_DRY_RUN": "false", "GITSLEEP_ACTION_API_KEY": "",
           "GITHUB_TOKEN": "ghs_token", **env_inputs}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=60)
    return done, tmp_path


def args_logged(root: Path) -> list[str]:
    log = root / "log"
    return [line for line in log.read_text().splitlines() if line.startswith("ARGS")] \
        if log.exists() else []


def test_action_mode_input_defaults_to_consolidate_and_passes_through_env():
    action = yaml.safe_load(ACTION.read_text())
    assert action["inputs"]["mode"]["default"] == "consolidate"
    step = action_step("consolidate")
    assert step["env"]["GITSLEEP_ACTION_MODE"] == "${{ inputs.mode }}"
    assert step["env"]["GITSLEEP_PR_BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert "inputs.mode != 'review'" in action_step("outputs")["if"]


def test_review_mode_runs_one_review_against_the_pull_requests_base(tmp_path: Path):
    done, root = run_step(tmp_path, {"GITSLEEP_ACTION_MODE": "review",
                                     "GITSLEEP_PR_BASE_SHA": "b" * 40}, stub_exit="7")
    assert done.returncode == EXIT_REGRESSION, done.stderr
    assert args_logged(root) == [
        f"ARGS --config .gitsleep.yml review --base {'b' * 40} --comment"]
    assert read_outputs(root / "github_output") == {"exit-code": "7"}


def test_review_mode_passes_named_skills_and_the_base_input(tmp_path: Path):
    done, root = run_step(tmp_path, {"GITSLEEP_ACTION_MODE": "review",
                                     "GITSLEEP_ACTION_BASE": "origin/main",
                                     "GITSLEEP_ACTION_SKILL": "notes, other",
                                     "GITSLEEP_ACTION_MODEL": "m1"})
    assert done.returncode == 0, done.stderr
    assert args_logged(root) == ["ARGS --config .gitsleep.yml review --base origin/main "
                                 "--comment --model m1 --skill notes --skill other"]


@pytest.mark.parametrize("inputs", [{"GITSLEEP_ACTION_MODE": "review"},
                                    {"GITSLEEP_ACTION_MODE": "reveiw"}])
def test_review_mode_without_a_base_or_a_wrong_mode_is_exit_2(tmp_path: Path,
                                                               inputs: dict[str, str]):
    done, root = run_step(tmp_path, inputs)
    assert done.returncode == 2
    assert "::error title=gitsleep::" in done.stdout
    assert args_logged(root) == []


# -- the example workflow and init ----------------------------------------------------------


def test_example_review_workflow_runs_on_pull_requests_with_least_privilege():
    workflow = yaml.safe_load(EXAMPLE.read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"pull_request"}
    assert {".gitsleep.yml", "skills/**", "evals/**"} <= set(triggers["pull_request"]["paths"])
    assert workflow["permissions"] == {}
    job = workflow["jobs"]["review"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    checkout, _cache, step = job["steps"]
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert step["uses"].startswith("OWNER/gitsleep@")
    assert step["with"]["mode"] == "review"
    assert "pull_request_target" not in EXAMPLE.read_text()


def test_init_offers_the_review_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    if not (paths.examples_dir() / "workflows" / "gitsleep-review.yml").is_file():
        pytest.skip("the bundled examples are not in this install")
    result = run_cli(capsys, "--repo", str(tmp_path), "init")
    assert result.code == 0, result.err
    assert ".github/workflows/gitsleep-review.yml: created" in result.out
    written = (tmp_path / ".github/workflows/gitsleep-review.yml").read_text()
    assert "mode: review" in written and "pull_request:" in written


def test_the_marked_comment_is_found_past_the_first_page_of_comments(hub):
    fake, forge = hub
    fake.per_page = 30  # GitHub's default page size
    number = fake.add_pull("feature")
    for index in range(34):
        fake.add_comment(number, f"comment {index}")
    assert review_run.sync_comment(forge, number, f"{review.MARKER}\none\n").operation == \
        "created"
    pages = [r.query.get("page", "1") for r in fake.requests
             if r.method == "GET" and r.path.endswith(f"/issues/{number}/comments")]
    assert pages == ["1", "2"]
    again = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                        pacing=Pacing.none())
    try:
        assert review_run.sync_comment(again, number, f"{review.MARKER}\none\n").operation \
            == "none"
    finally:
        again.close()
    assert len(fake.comments[number]) == 35 and len(fake.writes) == 1


# -- only gitsleep's own comment is edited ---------------------------------------------------


def forge_for(fake: FakeGitHub) -> GitHubForge:
    return GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                       pacing=Pacing.none())


@pytest.mark.parametrize("viewer", [None, {"login": "octo-maintainer", "id": 5, "type": "User"}],
                         ids=["GITHUB_TOKEN", "personal token"])
def test_a_marked_comment_by_someone_else_is_never_edited(viewer):
    with AuthoredGitHub(viewer=viewer) as fake:
        number = fake.add_pull("feature")
        forged = f"{review.MARKER}\n## gitsleep review: improvement\n\nmerge it\n"
        fake.add_comment(number, forged)  # the PR's author, posting our marker
        forge = forge_for(fake)
        try:
            made = review_run.sync_comment(forge, number, f"{review.MARKER}\nfirst\n")
            assert made.operation == "created"
            again = review_run.sync_comment(forge, number, f"{review.MARKER}\nsecond\n")
        finally:
            forge.close()
        assert again.operation == "updated" and again.id == made.id
        assert [w.method for w in fake.writes] == ["POST", "PATCH"]
        assert fake.comments[number][0]["body"] == forged, "the person's comment is theirs"
        assert fake.comments[number][1]["body"] == f"{review.MARKER}\nsecond\n"


def test_a_personal_token_owns_only_its_own_login_not_any_bot():
    me = {"login": "octo-maintainer", "id": 5, "type": "User"}
    with AuthoredGitHub(viewer=me) as fake:
        number = fake.add_pull("feature")
        fake.add_comment(number, f"{review.MARKER}\nan app's\n",
                         author={"login": "other-app[bot]", "id": 9, "type": "Bot"})
        ours = fake.add_comment(number, f"{review.MARKER}\nold\n", author=me)
        forge = forge_for(fake)
        try:
            done = review_run.sync_comment(forge, number, f"{review.MARKER}\nnew\n")
        finally:
            forge.close()
        assert (done.operation, done.id) == ("updated", ours)
        assert fake.comments[number][0]["body"] == f"{review.MARKER}\nan app's\n"


def test_without_get_user_only_a_bot_comment_counts_and_user_is_asked_only_when_needed():
    body = f"{review.MARKER}\nfirst\n"
    with AuthoredGitHub() as fake:  # GITHUB_TOKEN: GET /user is refused
        quiet, copied = fake.add_pull("feature"), fake.add_pull("other")
        fake.add_comment(copied, body)  # a person's exact copy of what gitsleep would say
        forge = forge_for(fake)
        try:
            assert review_run.sync_comment(forge, quiet, body).operation == "created"
            assert not [r for r in fake.requests if r.path == "/user"], \
                "no marked comment yet: nobody's authorship to check"
            made = review_run.sync_comment(forge, copied, body)
            again = review_run.sync_comment(forge, copied, body)
        finally:
            forge.close()
        assert made.operation == "created"
        assert (again.operation, again.id) == ("none", made.id)
        assert [w.method for w in fake.writes] == ["POST", "POST"]


# -- how many calls a review needs, before the first one -----------------------------------


def test_calls_needed_counts_each_uncached_call_once_and_a_rubric_judge_too():
    rule = Judge("rule")
    rubric = Judge("rubric", rubric="Is it short?")
    tasks = [Task("t", "p1", "train", rule), Task("v", "p2", "val", rule),
             Task("h", "p3", "test", rubric)]
    settings = EpochSettings(model="m", optimizer_model="m", judge_model="m",
                             gate=GateSettings(repeats=2))
    base, head = {"skill": "Be brief.", "memory": None}, {"skill": "Be long.", "memory": None}
    runner = CallRunner(OfflineBackend(), max_calls=1000)
    # val 1 x 2 samples x 2 sides + held-out (1 answer + 1 judge) x 2 samples x 2 sides
    assert review.calls_needed(runner, tasks, base, head, settings) == 4 + 8
    assert review.calls_needed(runner, tasks, base, base, settings) == 2 + 4, \
        "the same documents on both sides ask the same calls: counted once"
    review.score_skill(runner, tasks, base, head, settings, skill="s")
    assert 0 < runner.cost.calls <= 12, "an upper bound (equal answers share a judge call)"
    assert review.calls_needed(runner, tasks, base, head, settings) == 0, "all cached"


def test_terminal_lines_redact_then_escape_each_untrusted_piece_onto_one_line():
    """A secret split by a zero-width space is still masked (redacted before escaping),
    and a task id cannot start a line of its own (`::error` would be an annotation)."""
    secret = "sk-live-0123456789abcdefghij"
    split_id = secret[:10] + "\u200b" + secret[10:] + "\n::error::x\x1b]52;c;aGk=\x07"
    change = review.TaskChange(split_id, "test", 1.0, 0.0, "", "", "")
    item = review.SkillReview("notes", "scored", "changed: SKILL.md", splits={
        "test": review.SplitReview("test", 1, 1.0, 0.0, -1.0, -1.0, changed=(change,))},
        verdict="regressed", decided_by="test",
        exam_changes=review.ExamChanges(added={"test": ["new\n::warning::y"]}))
    lines = review.terminal_lines(item, "hard", Redactor([secret]))
    text = "\n".join(lines)
    assert secret[10:] not in text and "[REDACTED" in text
    assert "\x1b" not in text and "\x07" not in text
    assert not any(line.lstrip().startswith("::") for line in lines)
    assert "  exam: the head adds 1 held-out task(s), not used: new\\n::warning::y" in lines


def test_the_comment_result_writes_the_json_keys_review_has_always_written():
    """`review --json`'s `comment`: operation, id, url, pr, then why not or what failed."""
    made = review_run.CommentResult("created", 7, "https://x/7", 3)
    assert list(made.to_json()) == ["operation", "id", "url", "pr"]
    ref = review_run.PullRequestRef(3)
    assert review_run.CommentResult.none(ref, reason="--no-comment").to_json() == {
        "operation": "none", "id": None, "url": None, "pr": 3, "reason": "--no-comment"}
    assert list(review_run.CommentResult.none(None, error="403").to_json()) == [
        "operation", "id", "url", "pr", "error"]
