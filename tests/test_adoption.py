"""What a new user reads: split sizes, small-n warnings, unused edits, dry runs, the demo.

Every test runs the real CLI on a real git repository (a bare `origin` beside it) set up
with `gitsleep init`, and reads what the user would read.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from gitsleep.core import scores
from gitsleep.flows import consolidate as run
from gitsleep.flows.prepare import Setup
from tests.support.cli import init_repo, run_cli
from tests.support.gitrepo import git, isolate_git

SKILL_MD = "skills/example-skill/SKILL.md"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Path:
    """A repository after `gitsleep init` (2 val and 2 held-out tasks), committed and pushed."""
    return init_repo(tmp_path, monkeypatch, capsys)[0]


def floats(data: object) -> list[float]:
    if isinstance(data, float):
        return [data]
    if isinstance(data, dict):
        return [f for v in data.values() for f in floats(v)]
    if isinstance(data, list):
        return [f for v in data for f in floats(v)]
    return []


def test_validate_prints_split_sizes_and_warns_on_small_val_and_held_out(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(work), "validate")

    assert result.code == 0  # a warning, not a problem: the pre-commit hook stays quiet
    assert "example-skill: 3 train, 2 val, 2 held-out (test)" in result.err
    assert "warning: val (2 tasks) and held-out (2 tasks): fewer than 5 tasks" in result.err


def test_eval_prints_sizes_explains_the_metric_and_warns_on_small_splits(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(work), "eval")

    assert result.code == 0, result.err
    assert re.search(r"example-skill val +n=2 ", result.out)
    assert "mixed: a weighted mean of hard" in result.out
    assert "warning: few tasks in example-skill: val (2 tasks) and held-out (2 tasks)" in (
        result.err)

    as_json = run_cli(capsys, "--repo", str(work), "eval", "--json")
    data = json.loads(as_json.out)
    assert data and all(f == round(f, 3) for f in floats(data))
    # scores of the offline simulator say so, as consolidate's --json does
    assert [row["simulated"] for row in data] == [True] * len(data)
    assert "mixed: a weighted mean" not in as_json.out


def test_consolidate_flags_a_decision_on_a_small_sample_everywhere(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--push")

    assert result.code == 0, result.err
    assert "example-skill: accepted:" in result.out
    assert "  warning: Small sample: val (2 tasks) and held-out (2 tasks)" in result.out
    message = git(work, "log", "-1", "--format=%B", "gitsleep/example-skill")
    assert "Small sample: val (2 tasks) and held-out (2 tasks)" in message
    # no token: one reason, said once
    assert "no pull request: no GITHUB_TOKEN or GH_TOKEN in the environment\n" in result.err
    assert result.err.count("no pull request") == 1
    assert "1 tasks" not in result.err + result.out


def test_the_pull_request_body_warns_on_small_n_and_reads_well(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    setup = Setup.load(work, None, progress=lambda _line: None)
    outcome = run.dry_run(setup, setup.config.skill("example-skill"), work / "out")

    body = outcome.pr_body or ""
    assert "> [!CAUTION]\n> Small sample: val (2 tasks) and held-out (2 tasks)" in body
    assert "change: 95% interval (paired bootstrap)" in body
    assert "| val | 0.208 | 1.000 | 2 | +0.750 to +0.833 |" in body
    assert "_`mixed`: a weighted mean of hard" in body
    assert "&gt;" not in body and "-> 1.000" in body


def test_json_scores_are_rounded_and_say_why_there_is_no_pull_request(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--push")

    data = json.loads(result.out)
    assert data["val"] == {"baseline": 0.208, "candidate": 1.0, "n": 2}
    assert all(f == round(f, 3) for f in floats(data))
    assert data["simulated"] is True
    assert data["pr"] == {"operation": "none", "number": None, "url": None,
                          "reason": "no GITHUB_TOKEN or GH_TOKEN in the environment"}

    dry = json.loads(run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run",
                             "--json").out)
    assert dry["pr"]["reason"] == "dry run"


def test_dry_run_says_so_in_its_result_line(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")

    assert result.code == 0, result.err
    first = result.out.splitlines()[0]
    assert first.startswith("example-skill: accepted: ")
    assert first.endswith("(dry run: nothing committed, pushed or opened)")


def test_uncommitted_documents_and_tasks_are_named_with_how_to_include_them(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first_run = run_cli(capsys, "--repo", str(work), "consolidate", "--json")
    assert first_run.code == 0
    first = json.loads(first_run.out)
    with (work / SKILL_MD).open("a") as handle:
        handle.write("\nA new idea, not committed yet.\n")
    with (work / "evals/example-skill/tasks.jsonl").open("a") as handle:
        handle.write("\n")
    index = (work / ".git" / "index").read_bytes()

    result = run_cli(capsys, "--repo", str(work), "consolidate")

    assert result.code == 0, result.err
    assert "up to date" in result.out
    assert ("  not used: uncommitted changes to evals/example-skill/tasks.jsonl, "
            f"{SKILL_MD}; consolidate reads the committed base, so commit them") in result.out
    data = json.loads(run_cli(capsys, "--repo", str(work), "consolidate", "--json").out)
    assert data["uncommitted"] == ["evals/example-skill/tasks.jsonl", SKILL_MD]
    # this run decided nothing: it says up to date and repeats what the branch records, the
    # decision (one of the contract's four values) with the edits that made it, never
    # "accepted" beside empty edit lists
    assert data["decision"] == "accepted" and data["up_to_date"] is True
    assert data["recorded_decision"] == "accepted"
    assert data["edits"]["applied"], data["edits"]
    assert data["edits"]["applied"] == first["edits"]["applied"]
    assert result.out.startswith("example-skill: up to date: "), result.out
    assert data["pr"]["reason"] == "up to date: its pull request, if one was opened, is unchanged"
    assert (work / ".git" / "index").read_bytes() == index  # git status left it alone


def test_demo_shows_no_html_escapes_and_says_where_it_ran(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    result = run_cli(capsys, "demo")

    assert result.code == 0, result.err
    assert "&gt;" not in result.out and "&amp;" not in result.out
    assert "1 tasks" not in result.out + result.err
    assert "(mixed: a weighted mean of hard" in result.out
    where = re.search(r"The demo ran in (\S+), removed now; `gitsleep demo --keep` keeps it",
                      result.out)
    assert where and not Path(where.group(1)).exists()

    # the kept demo went to the system's temporary folder and stayed
    # there after every test run; here it goes under this test's own folder
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    kept = run_cli(capsys, "demo", "--keep")
    path = re.search(r"The demo repository is kept at (\S+) ", kept.out)
    assert path and (Path(path.group(1)) / ".git").exists()
    assert Path(path.group(1)).is_relative_to(tmp_path)


def test_small_sample_note_counts_tasks_in_words() -> None:
    assert scores.small_splits(1, 0) == ["val (1 task)"]
    assert scores.small_splits(5, 4) == ["held-out (4 tasks)"]


def test_the_actions_backend_input_names_every_backend_the_config_accepts() -> None:
    """A team with an agent CLI reads the input's description to learn `command` exists."""
    import typing

    import yaml

    from gitsleep.inputs.config import Config

    action = yaml.safe_load((Path(__file__).resolve().parents[1] / "action.yml").read_text())
    description = action["inputs"]["backend"]["description"]
    backends = typing.get_args(Config.model_fields["backend"].annotation)
    assert set(backends) == {"openai", "offline", "command"}
    for name in backends:
        assert f"`{name}`" in description, (name, description)


def test_frontmatter_that_breaks_the_skill_stops_consolidate_as_it_fails_validate(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Frontmatter that never closes is an error on both paths, also behind a byte-order
    mark (validate skipped the BOM and the run did not, so the run
    accepted what validate refused)."""
    skill = work / SKILL_MD
    text = skill.read_text()
    assert text.startswith("---\nname: example-skill\n")
    broken = "\ufeff" + text.replace("\n---\n", "\n", 1)  # no closing fence
    assert "\n---" not in broken and broken.startswith("\ufeff---\n")
    skill.write_text(broken, encoding="utf-8")
    git(work, "commit", "--quiet", "--no-verify", "-am", "frontmatter that never closes")

    checked = run_cli(capsys, "--repo", str(work), "validate")
    assert checked.code == 1 and "GS202" in checked.out + checked.err

    for command in (("consolidate",), ("consolidate", "--dry-run"), ("eval",)):
        result = run_cli(capsys, "--repo", str(work), *command)
        assert result.code == 2, (command, result.out, result.err)
        line = result.err.strip().splitlines()[-1]
        assert SKILL_MD in line and "never closes" in line and "GS202" in line, line
    assert git(work, "branch", "--list", "gitsleep/*") == ""  # stopped before any epoch


def test_an_invalid_frontmatter_name_or_long_description_is_a_warning_everywhere(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Anthropic's claude-api skill has a 1,068-character description and
    was refused (validate GS204, consolidate exit 2). gitsleep never edits frontmatter, so
    a name or description outside the Agent Skills limits is a warning on both paths,
    with or without a byte-order mark."""
    skill = work / SKILL_MD
    text = skill.read_text()
    long = "d" * 1068
    odd = "\ufeff" + text.replace("name: example-skill\n", "name: Example_Skill\n", 1)
    odd = odd.replace("description: ", f"description: {long} ", 1)
    skill.write_text(odd, encoding="utf-8")
    git(work, "commit", "--quiet", "--no-verify", "-am", "a hand-written frontmatter")

    checked = run_cli(capsys, "--repo", str(work), "validate")
    assert checked.code == 0, checked.out + checked.err
    assert "GS203 warning" in checked.out and "GS204 warning" in checked.out
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["decision"] in ("accepted", "rejected", "no_edits")
    assert "frontmatter name 'Example_Skill'" in result.err  # said, not refused


def test_a_night_answered_from_the_cache_says_so_in_log_and_up_to_date_is_said_once(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`log` showed 0 calls for a night the response cache answered, and
    a re-run printed "up to date" twice (a progress line and the result line)."""
    first = run_cli(capsys, "--repo", str(work), "consolidate", "--no-push", "--json")
    assert first.code == 0 and json.loads(first.out)["cost"]["calls"] > 0
    again = run_cli(capsys, "--repo", str(work), "consolidate", "--no-push")
    assert again.code == 0
    assert (again.out + again.err).count("up to date") == 1, again.out + again.err
    assert again.out.startswith("example-skill: up to date: gitsleep/example-skill already "
                                "records this base, these tasks and these documents")
    # kept local (--no-push), so without the branch the next night replays the cache
    git(work, "branch", "-D", "gitsleep/example-skill")
    cached = run_cli(capsys, "--repo", str(work), "consolidate", "--no-push", "--json")
    data = json.loads(cached.out)
    assert data["cost"]["calls"] == 0 and data["cost"]["cache_hits"] > 0
    log = run_cli(capsys, "--repo", str(work), "log")
    row = next(line for line in log.out.splitlines() if data["commit"][:12] in line)
    assert f"0 ({data['cost']['cache_hits']} cached)" in row, log.out
    records = json.loads(run_cli(capsys, "--repo", str(work), "log", "--json").out)
    assert any(r["cost"] == {"calls": 0, "cache_hits": data["cost"]["cache_hits"],
                             "estimated_usd": None} for r in records), records


def test_an_aborted_run_gets_no_small_sample_hint(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """"treat this decision as a hint" followed a run that decided
    nothing (exit 6, the budget ran out)."""
    config = work / ".gitsleep.yml"
    config.write_text(config.read_text().replace("max_calls: 500", "max_calls: 3"))
    git(work, "commit", "--quiet", "--no-verify", "-am", "a tiny budget")
    result = run_cli(capsys, "--repo", str(work), "consolidate")
    assert result.code == 6, result.out + result.err
    assert "aborted" in result.err and "Small sample" not in result.out + result.err


def test_thrifty_says_why_its_call_ceiling_is_above_thorough(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the example thrifty printed a higher call ceiling than thorough,
    which read as the opposite of what it is for."""
    config = work / ".gitsleep.yml"
    config.write_text(config.read_text() + "search: thrifty\n")
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")
    assert result.code == 0, result.err
    assert ("search thrifty: that worst case adds each proposal's screen to thorough's "
            "passes; a night usually makes fewer calls") in result.err


def test_a_simulated_night_stays_local_unless_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A real `consolidate` with the offline simulator pushed its branch
    to `origin`, so a simulated night landed on the team's remote. Towards a remote on a
    host it now stays local unless --push (or --pr) asks. The team's URL is rewritten to
    the bare folder with `url.*.insteadOf`, so nothing leaves this machine."""
    work, origin = init_repo(tmp_path, monkeypatch, capsys)
    team_url = "https://git.example.invalid/team/repo.git"
    git(work, "config", f"url.{origin}.insteadOf", team_url)
    git(work, "remote", "set-url", "origin", team_url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "x" * 36)  # a token is no request either
    data = json.loads(run_cli(capsys, "--repo", str(work), "consolidate", "--json").out)
    assert data["decision"] == "accepted" and data["commit"]
    assert data["pr"]["operation"] == "none" and "simulated night" in data["pr"]["reason"]
    assert git(work, "rev-parse", "--verify", "--quiet", "gitsleep/example-skill")
    assert git(origin, "branch", "--list", "gitsleep/*") == ""
    result = run_cli(capsys, "--repo", str(work), "consolidate")
    assert result.code == 0, result.err
    assert "  kept local: a simulated night (offline backend) is not pushed unless asked: " \
           "pass --push (or --pr) to send it to the remote" in result.out
    assert git(origin, "branch", "--list", "gitsleep/*") == ""
    monkeypatch.delenv("GITHUB_TOKEN")
    pushed = run_cli(capsys, "--repo", str(work), "consolidate", "--push")
    assert pushed.code == 0, pushed.err
    assert "gitsleep/example-skill" in git(origin, "branch", "--list", "gitsleep/*")


def test_a_simulated_night_is_pushed_to_a_remote_that_is_a_folder_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The spec's default (push when a remote exists) holds for a bare `origin` that is a
    folder on this machine, as the demo's and a tutorial's are: nobody else reads it."""
    work, origin = init_repo(tmp_path, monkeypatch, capsys)
    result = run_cli(capsys, "--repo", str(work), "consolidate")
    assert result.code == 0, result.err
    assert "kept local" not in result.out
    assert "gitsleep/example-skill" in git(origin, "branch", "--list", "gitsleep/*")


def test_the_demo_learns_a_verdict_that_depends_on_the_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The demo path covers learning a judgment. On dependency-review the
    simulator learns which verdict fits which update (a condition, never one verdict for
    all) and held-out reaches 1.000 for both groups of tasks."""
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = run_cli(capsys, "demo", "--example", "dependency-review", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["decision"] == "accepted"
    assert (data["test"]["baseline"], data["test"]["candidate"]) == (0.25, 1.0)
    rules = [e["content"] for e in data["edits"]["applied"]]
    conditional = [r for r in rules if "Verdict: reject" in r and "Verdict: approve" in r]
    assert conditional and conditional[0].startswith("When "), rules
    assert run_cli(capsys, "demo", "--example", "no-such-example").code == 2
