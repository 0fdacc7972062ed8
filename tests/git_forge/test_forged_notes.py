"""Forged or odd diagnostics notes and trailers.

Anyone who can push to the repository can push `refs/notes/gitsleep`, and a note is only
JSON someone wrote. `gitsleep log` (table and `--json`) reads every note and every
trailered commit, and the pull-request body charts the history: a note or a trailer that
is not what gitsleep writes must be skipped (one line on stderr says so), never a
traceback, never a row for a commit that is not an epoch, never raw control characters on
the terminal. Real git repositories, the real CLI.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitsleep.core.models import SKILL_NAME_RE
from gitsleep.git_forge.record import NOTES_REF
from tests.support.cli import init_repo, run_cli
from tests.support.fake_github import FakeGitHub
from tests.support.gitrepo import clone, commit_files, git, isolate_git, make_repo

pytestmark = pytest.mark.slow  # whole nights against forged notes

SKILL = "example-skill"
SKILL_MD = "skills/example-skill/SKILL.md"
BRANCH = "gitsleep/example-skill"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _note(value: object) -> bytes:
    return json.dumps(value).encode()


# Note bodies as someone could push them; each is written under NOTES_REF as raw bytes.
FORGED_NOTES: dict[str, bytes] = {
    "not-json": b"this is not json {",
    "empty": b"",
    "json-array": b"[1, 2, 3]",
    "json-string": b'"accepted"',
    "json-null": b"null",
    "empty-object": b"{}",
    "skill-not-a-string": _note({"skill": ["example-skill"], "decision": "accepted"}),
    "skill-number": _note({"skill": 42}),
    "skill-with-escapes": _note({"skill": "\x1b[2J\x1b]52;c;aGk=\x07example-skill"}),
    "splits-a-list": _note({"skill": SKILL, "splits": [1, 2]}),
    "split-a-string": _note({"skill": SKILL, "splits": {"val": "high", "test": [0.5]}}),
    "scores-wrong-types": _note(
        {
            "skill": SKILL,
            "splits": {
                "val": {"baseline": "0.1", "candidate": {"x": 1}},
                "test": {"baseline": True, "candidate": [1]},
            },
        }
    ),
    "edits-cost-extra-wrong-types": _note(
        {"skill": SKILL, "edits": [], "cost": "lots", "extra": 7}
    ),
    "inner-wrong-types": _note(
        {
            "skill": SKILL,
            "edits": {"applied": 5},
            "cost": {"calls": "many"},
            "extra": {"estimated_usd": "free"},
        }
    ),
    "bool-and-negative-counts": _note(
        {
            "skill": SKILL,
            "cost": {"calls": True},
            "extra": {"estimated_usd": -3.5},
            "edits": {"applied": [None] * 3},
        }
    ),
    "huge-numbers": (
        b'{"skill": "example-skill", "splits": {"test": {"baseline": 1e999, '
        b'"candidate": -1e999}, "val": {"baseline": NaN, "candidate": '
        + b"9" * 400
        + b'}}, "cost": {"calls": '
        + b"9" * 400
        + b'}, "extra": {"estimated_usd": 1e308}}'
    ),
    "too-many-digits": b'{"skill": "example-skill", "cost": {"calls": ' + b"9" * 5000 + b"}}",
    "nested-junk": _note(
        {
            "skill": SKILL,
            "decision": {"a": [1, {"b": None}]},
            "metric": [[[]]],
            "splits": {"test": {"baseline": {"c": {}}}},
        }
    ),
    "deeply-nested": b'{"skill": "example-skill", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "non-utf8": b'{"skill": "example-skill", "decision": "\xff\xfe accepted \xc3("}',
    "control-characters": _note(
        {
            "skill": SKILL,
            "decision": "\x1b]52;c;c2VjcmV0\x07accepted\nforged row",
            "metric": "\x1b[31mscore\r",
        }
    ),
    "long-text": _note({"skill": SKILL, "decision": "a" * 100_000, "metric": "m" * 100_000}),
}
# Where a forged note is put: on the real epoch (replacing its note), on the superseded
# one, on a commit that is not an epoch, and on an object that is not a commit.
PLACES = ("branch-epoch", "superseded-epoch", "not-an-epoch", "a-blob")

# Commits on the base with odd `Gitsleep-*` trailers (message bytes as written).
ODD_TRAILERS: dict[str, bytes] = {
    "applied-not-a-number": (
        b"gitsleep(example-skill): forged\n\nApplied edits (many):\n\n"
        b"Gitsleep-Skill: example-skill\nGitsleep-Val: banana\n"
        b"Gitsleep-Test: 1e999 -> nan\n"
    ),
    "skill-with-escapes": (
        b"forged\n\nGitsleep-Skill: \x1b[31mexample-skill\x07\nGitsleep-Decision: accepted\n"
    ),
    "scores-malformed": (
        b"forged\n\nGitsleep-Skill: example-skill\n"
        b"Gitsleep-Val: 0.5 -> 0.7 -> 0.9\nGitsleep-Test: -> \n"
        b"Gitsleep-Decision: \x1b]52;c;aGk=\x07accepted\n"
    ),
    "huge-value": (
        b"forged\n\nGitsleep-Skill: example-skill\nGitsleep-Decision: "
        + b"x" * 100_000
        + b"\nGitsleep-Test: "
        + b"9" * 5000
        + b" -> 1\n"
    ),
    "non-utf8": (
        b"forged \xff\xfe\n\nApplied edits (\xff):\n\n"
        b"Gitsleep-Skill: example-skill\nGitsleep-Decision: acc\xe9pted\n"
    ),
    "skill-not-a-name": b"forged\n\nGitsleep-Skill: ../../Not A Skill\n",
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """One repository with two epochs (the first superseded), made once and copied."""
    root = tmp_path_factory.mktemp("forged-notes")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, root)
        for name in (
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "GITHUB_REPOSITORY",
            "GITHUB_API_URL",
            "CI",
            "GITSLEEP_MODEL",
            "GITSLEEP_BACKEND",
        ):
            monkeypatch.delenv(name, raising=False)
        work, _ = make_repo(root)
        from gitsleep.cli import main  # in-process, as run_cli (capsys is per test)

        for args in (["init"], ["consolidate", "--push"]):
            with pytest.raises(SystemExit) as done:
                main(["--repo", str(work), "-q", *args])
            assert done.value.code == 0, args
            if args == ["init"]:
                git(work, "add", "-A")
                git(work, "commit", "--quiet", "--no-verify", "-m", "gitsleep init")
                git(work, "push", "--quiet", "origin", "main")
        first = git(work, "rev-parse", BRANCH)
        text = (work / SKILL_MD).read_text().replace("Release notes", "Release notes, short")
        commit_files(work, {SKILL_MD: text}, "reword the skill's title")
        with pytest.raises(SystemExit) as done:
            main(["--repo", str(work), "-q", "consolidate", "--push"])
        assert done.value.code == 0
        second = git(work, "rev-parse", BRANCH)
        assert first != second
        yield work, first, second


@pytest.fixture
def repo(
    template: tuple[Path, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str, str]:
    isolate_git(monkeypatch, tmp_path)
    work = tmp_path / "work"
    shutil.copytree(template[0], work, symlinks=True)
    return work, template[1], template[2]


def add_note(work: Path, target: str, body: bytes) -> None:
    path = work.parent / "forged-note"
    path.write_bytes(body)
    git(work, "notes", f"--ref={NOTES_REF}", "add", "--allow-empty", "-f", "-F", str(path), target)


def forged_commit(work: Path, message: bytes) -> str:
    """A commit on main with `message` (raw bytes, as a push could carry)."""
    path = work.parent / "forged-message"
    path.write_bytes(message)
    tree = git(work, "rev-parse", "HEAD^{tree}")
    sha = git(work, "commit-tree", tree, "-p", "HEAD", "-F", str(path))
    git(work, "update-ref", "refs/heads/main", sha)
    return sha


def read_log(capsys: pytest.CaptureFixture[str], work: Path) -> tuple[list[str], list[dict]]:
    """`gitsleep log` and `log --json`: both exit 0 with at most one line on stderr."""
    shown = run_cli(capsys, "--repo", str(work), "log")
    assert shown.code == 0, shown.err
    assert len(shown.err.strip().splitlines()) <= 1, shown.err
    assert "Traceback" not in shown.err and not CONTROL.search(shown.out + shown.err)
    as_json = run_cli(capsys, "--repo", str(work), "log", "--json")
    assert as_json.code == 0, as_json.err
    assert len(as_json.err.strip().splitlines()) <= 1, as_json.err

    def no_constants(name: str) -> None:
        raise AssertionError(f"log --json wrote {name}, which is not JSON")

    data = json.loads(as_json.out, parse_constant=no_constants)
    assert isinstance(data, list)
    for entry in data:
        assert SKILL_NAME_RE.match(entry["skill"]), entry["skill"]
        assert not CONTROL.search(json.dumps(entry, ensure_ascii=False))
        assert len(json.dumps(entry)) < 4000, "a forged value is clipped"
    return shown.out.splitlines()[1:], data


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("shape", sorted(FORGED_NOTES))
def test_a_forged_note_never_breaks_log(
    repo: tuple[Path, str, str], shape: str, place: str, capsys: pytest.CaptureFixture[str]
) -> None:
    work, first, second = repo
    target = {
        "branch-epoch": second,
        "superseded-epoch": first,
        "not-an-epoch": git(work, "rev-parse", "main"),
        "a-blob": git(work, "rev-parse", f"main:{SKILL_MD}"),
    }[place]
    add_note(work, target, FORGED_NOTES[shape])

    rows, data = read_log(capsys, work)

    commits = [entry["commit"] for entry in data]
    # the two epochs are still there (their commits carry trailers); nothing else is
    assert commits == [first, second], commits
    assert len(rows) == 2 and rows[1].split()[2:6] == [SKILL, second[:12], BRANCH, "accepted"]
    assert data[1]["test"] == {"baseline": 0.208, "candidate": 1.0}


@pytest.mark.parametrize("shape", sorted(ODD_TRAILERS))
def test_odd_trailers_never_break_log(
    repo: tuple[Path, str, str], shape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    work, first, second = repo
    forged = forged_commit(work, ODD_TRAILERS[shape])

    rows, data = read_log(capsys, work)

    commits = [entry["commit"] for entry in data]
    assert first in commits and second in commits
    assert set(commits) <= {first, second, forged}
    for entry in data:
        if entry["commit"] == forged:  # shown, since a trailer names the skill: but tamed
            assert entry["skill"] == SKILL
            assert entry["val"]["baseline"] is None and entry["test"]["baseline"] is None


def test_every_forged_note_at_once_is_one_line_on_stderr(
    repo: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    work, first, second = repo
    for shape, body in FORGED_NOTES.items():
        commit_files(work, {f"forged/{shape}.txt": shape}, f"a commit for {shape}")
        add_note(work, "HEAD", body)
    add_note(work, first, FORGED_NOTES["not-json"])  # an epoch's own note, unreadable

    rows, data = read_log(capsys, work)
    shown = run_cli(capsys, "--repo", str(work), "log")

    assert [entry["commit"] for entry in data] == [first, second]
    line = shown.err.strip()
    assert line.startswith("gitsleep: skipped ") and NOTES_REF in line, line
    assert f"{len(FORGED_NOTES) + 1} notes" in line, line


def test_a_superseded_epoch_whose_commit_is_gone_is_still_read_from_its_note(
    repo: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A superseded commit is unreachable; once git prunes it, only the note is left."""
    work, first, second = repo
    git(work, "reflog", "expire", "--expire=now", "--all")
    git(work, "gc", "--quiet", "--prune=now")
    assert git(work, "cat-file", "-t", first, check=False) == ""

    _, data = read_log(capsys, work)

    # its date is gone with the commit: it sorts last
    assert sorted((e["commit"], e["where"], e["date"]) for e in data) == sorted(
        [(first, "superseded", None), (second, "branch", data[0]["date"])]
    )
    assert data[1]["test"] == {"baseline": 0.208, "candidate": 1.0}
    assert data[1]["cost"]["calls"] > 0 and data[1]["edits_applied"] == 2


# -- a forged note on origin must not stop consolidate before its pull request -------------


@pytest.mark.parametrize("shape", ["splits-a-list", "non-utf8", "deeply-nested", "json-array"])
def test_a_forged_note_on_origin_does_not_stop_the_pull_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    work, origin = init_repo(tmp_path, monkeypatch, capsys)
    with FakeGitHub() as github:
        for key, value in github.env().items():
            monkeypatch.setenv(key, value)
        first = run_cli(capsys, "--repo", str(work), "consolidate", "--push")
        assert first.code == 0, first.err

        # someone else pushes a forged note for a commit of main to origin
        other = clone(origin, tmp_path / "other")
        git(other, "fetch", "--quiet", "origin", f"{NOTES_REF}:{NOTES_REF}")
        add_note(other, "HEAD", FORGED_NOTES[shape])
        git(other, "push", "--quiet", "origin", NOTES_REF)

        text = (work / SKILL_MD).read_text().replace("Release notes", "Release notes, short")
        commit_files(work, {SKILL_MD: text}, "reword the skill's title")
        git(work, "push", "--quiet", "origin", "main")
        second = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json")

        assert second.code == 0, second.err
        assert "Traceback" not in second.err
        summary = json.loads(second.out)
        assert summary["pr"]["operation"] in ("updated", "created"), summary["pr"]
        body = next(iter(github.pulls.values()))["body"]
        assert "line [0.208, 1.000, 1.000]" in body  # the chart, without the forged note


@pytest.mark.parametrize("shape", ["deeply-nested", "non-utf8", "too-many-digits"])
def test_a_forged_note_on_the_branch_tip_in_a_fresh_clone_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    """A nightly job clones afresh: its only proof for the branch tip is origin's note. A
    forged one proves nothing (the run refuses the branch, one line), and never crashes."""
    work, origin = init_repo(tmp_path, monkeypatch, capsys)
    assert run_cli(capsys, "--repo", str(work), "consolidate", "--push").code == 0
    tip = git(work, "rev-parse", BRANCH)

    other = clone(origin, tmp_path / "other")
    git(other, "fetch", "--quiet", "origin", f"{NOTES_REF}:{NOTES_REF}")
    add_note(other, tip, FORGED_NOTES[shape])
    git(other, "push", "--quiet", "origin", NOTES_REF)

    nightly = clone(origin, tmp_path / "nightly")
    before = git(origin, "rev-parse", f"refs/heads/{BRANCH}")
    done = run_cli(capsys, "--repo", str(nightly), "consolidate", "--push")

    assert "Traceback" not in done.err
    assert done.code == 4, done.err  # the tip is not proven gitsleep's: never overwritten
    assert len(done.err.strip().splitlines()) == 1 and "did not make" in done.err, done.err
    assert git(origin, "rev-parse", f"refs/heads/{BRANCH}") == before


def test_an_oversized_note_on_the_branch_tip_proves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`log` skips a note over MAX_NOTE_BYTES as not gitsleep's; the run's proof of the
    branch tip reads notes through the same bound, so gitsleep's own note padded past it
    (8 MB of spaces: valid JSON, the right commit and branch) proves nothing either."""
    from gitsleep.git_forge.record import MAX_NOTE_BYTES

    work, origin = init_repo(tmp_path, monkeypatch, capsys)
    assert run_cli(capsys, "--repo", str(work), "consolidate", "--push").code == 0
    tip = git(work, "rev-parse", BRANCH)
    other = clone(origin, tmp_path / "other")
    git(other, "fetch", "--quiet", "origin", f"{NOTES_REF}:{NOTES_REF}")
    own = git(other, "notes", f"--ref={NOTES_REF}", "show", tip).encode()
    first, rest = own.split(b"\n", 1)  # padded as indentation: `git notes` strips trailing space
    add_note(other, tip, first + b"\n" + b" " * (MAX_NOTE_BYTES + 1) + rest)
    git(other, "push", "--quiet", "origin", NOTES_REF)
    blob = git(origin, "notes", f"--ref={NOTES_REF}", "list", tip)
    assert int(git(origin, "cat-file", "-s", blob)) > MAX_NOTE_BYTES

    nightly = clone(origin, tmp_path / "nightly")
    done = run_cli(capsys, "--repo", str(nightly), "consolidate", "--push")

    assert "Traceback" not in done.err
    assert done.code == 4 and "did not make" in done.err, done.err
