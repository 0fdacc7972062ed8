"""Hostile and broken input through the real CLI, and hostile model output contained.

Part one feeds `gitsleep validate` and `gitsleep consolidate --dry-run` files a careless
or malicious contributor could commit: binary and mis-encoded task files, a 21 MB file,
YAML bombs, 100k-deep JSON, regexes that stall or allocate gigabytes, symlinks out of the
repository, unsafe skill names and branch prefixes, configs of the wrong shape. Each must
end with one clear line and a documented exit code (validate: 1 for problems, 2 when it
cannot run; consolidate: 2 for bad input), never a traceback or a hang.

Part two is about model output: whatever an optimizer replies, only the learned block of
the document it was asked about changes, the block can never be closed early, and every
byte outside it stays as it was, through `parse_reply` -> `check_hygiene` -> `apply_edits`
and through whole epochs whose proposals hypothesis writes.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gitsleep.backends.offline import simulate_answer
from gitsleep.core import documents as d
from gitsleep.core.epoch import run_epoch
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import Answer, Check, Edit, EpochSettings, Judge, Task
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.proposals import parse_reply
from tests.support.cli import CliResult, run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "brief-writer"
TASKS = "evals/brief-writer/tasks.jsonl"
SKILL_MD = "skills/brief-writer/SKILL.md"
CONFIG = ".gitsleep.yml"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled example, as working files (validate and --dry-run need no git)."""
    for name in ("GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    return root


def validate(capsys: pytest.CaptureFixture[str], root: Path) -> CliResult:
    return run_cli(capsys, "--repo", str(root), "validate")


def dry_run(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> CliResult:
    return run_cli(capsys, "--repo", str(root), "consolidate", "--dry-run", *extra)


def evaluate(capsys: pytest.CaptureFixture[str], root: Path) -> CliResult:
    return run_cli(capsys, "--repo", str(root), "eval", "--split", "val")


def error_lines(result: CliResult) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("gitsleep: error:")]


def assert_one_clear_line(result: CliResult, code: int, fragment: str) -> None:
    """Exit `code`, exactly one `gitsleep: error:` line holding `fragment`, no traceback."""
    assert "Traceback" not in result.err, result.err
    assert result.code == code, (result.code, result.err[-2000:])
    lines = error_lines(result)
    assert len(lines) == 1, result.err
    assert fragment in lines[0], lines[0]
    assert len(lines[0]) < 600, "one readable line, not a screenful"


def assert_problem(result: CliResult, code: str, fragment: str) -> None:
    """validate: exit 1 and a `path:line: CODE message` line for the problem."""
    assert "Traceback" not in result.err, result.err
    assert result.code == 1, (result.code, result.out, result.err)
    hits = [line for line in result.out.splitlines() if f" {code} " in line and fragment in line]
    assert hits, result.out
    assert all(len(line) < 600 for line in result.out.splitlines())


def edit_config(root: Path, **changes: object) -> None:
    cfg = yaml.safe_load((root / CONFIG).read_text())
    cfg.update(changes)
    (root / CONFIG).write_text(yaml.safe_dump(cfg, allow_unicode=True))


def edit_skill(root: Path, **changes: object) -> None:
    cfg = yaml.safe_load((root / CONFIG).read_text())
    cfg["skills"][0].update(changes)
    (root / CONFIG).write_text(yaml.safe_dump(cfg, allow_unicode=True))


def task_line(**fields: object) -> str:
    record = {"id": "extra", "split": "val", "prompt": "Write a brief.",
              "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "brief"}]}}
    record.update(fields)
    return json.dumps(record) + "\n"


# -- task files ----------------------------------------------------------------------------

BILLION_LAUGHS = "a: &a [" + ", ".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP_ANCHORS = "a0: &a0 x\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n"
                                       for i in range(1, 41))
MERGE_BOMB = "m0: &m0 {k: v}\n" + "".join(f"m{i}: &m{i} {{<<: *m{i - 1}, k{i}: v}}\n"
                                          for i in range(1, 2000))


def _bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text, encoding="utf-8")


def _sparse(size: int) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("wb") as handle:
            handle.truncate(size)  # sparse: 21 MB on paper, nothing on disk

    return write


def _utf16(path: Path) -> None:
    path.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))


def _latin1(path: Path) -> None:
    text = path.read_text(encoding="utf-8").replace("decision brief", "décision brief")
    path.write_bytes(text.encode("latin-1"))


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _outside_symlink(path: Path) -> None:
    secret = path.parents[3] / "outside-secrets.jsonl"  # next to the repo, not in it
    secret.write_text(task_line(id="stolen", prompt="the contents of ~/.netrc"))
    path.unlink()
    path.symlink_to(secret)


def _append(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(path.read_text(encoding="utf-8") + text,
                                        encoding="utf-8")


# (id, how to break tasks.jsonl, validate code, a fragment of the message)
TASK_FILE_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("binary", _bytes(bytes(range(256)) * 20), "GS102", "looks binary"),
    ("binary-without-nul", _bytes(bytes(range(1, 256)) * 20), "GS102", "not valid UTF-8"),
    ("utf-16", _utf16, "GS102", "UTF-16"),
    ("latin-1", _latin1, "GS102", "not valid UTF-8"),
    ("21-mb-sparse", _sparse(21 * 1024 * 1024), "GS103", "files over 20 MB are refused"),
    ("billion-laughs", _text(BILLION_LAUGHS), "GS101", "aliases expand"),
    ("deep-anchors", _text(DEEP_ANCHORS), "GS101", "aliases expand"),
    ("merge-key-bomb", _text(MERGE_BOMB), "GS101", "aliases expand"),
    ("100k-nested-arrays", _text("[" * 100_000 + "]" * 100_000), "GS104", "nested too deeply"),
    ("100k-nested-objects", _text('{"a":' * 100_000 + "1" + "}" * 100_000), "GS104",
     "nested too deeply"),
    ("yaml-python-tag", _text("!!python/object/apply:os.system ['touch pwned']\n"), "GS101",
     "could not determine a constructor"),
    ("directory", _directory, "GS100", "is a directory"),
    # regressions: each of these was a traceback, a hang or an out-of-memory kill
    ("fifo", _fifo, "GS100", "not a regular file"),
    ("symlink-out-of-repo", _outside_symlink, "GS100", "outside the repository"),
    ("5000-digit-id", _text('{"id": 1' + "0" * 5000 + ', "prompt": "p", "split": "val", '
                            '"judge": {"kind": "exact", "answer": "x"}}\n'),
     "GS101", "number is too long"),
    ("5000-digit-bound", _text(task_line(judge={"kind": "rule", "checks": [
        {"op": "max_chars", "arg": "9" * 5000}]})), "GS124", "non-negative whole number"),
    ("yaml-impossible-date", _text("- {id: 2001-02-30, prompt: p, split: val, "
                                   "judge: {kind: exact, answer: x}}\n"),
     "GS101", "day is out of range"),
    ("yaml-duplicate-key", _text("- id: a\n  prompt: p\n  split: val\n  prompt: q\n"
                                 "  judge: {kind: exact, answer: x}\n"), "GS101", "twice"),
    ("lone-surrogate-escape", _text('{"id": "a\\ud800", "prompt": "p", "split": "val", '
                                    '"judge": {"kind": "exact", "answer": "x"}}\n'),
     "GS102", "surrogate"),
    ("regex-of-a-billion-steps", _append(task_line(judge={"kind": "rule", "checks": [
        {"op": "regex", "arg": "a{1000000000}"}]})), "GS123", "repeats too much"),
    ("regex-nested-million", _append(task_line(judge={"kind": "rule", "checks": [
        {"op": "regex", "arg": "((a{100}){100}){100}"}]})), "GS123", "repeats too much"),
]


@pytest.mark.parametrize(("mutate", "code", "fragment"),
                         [case[1:] for case in TASK_FILE_CASES],
                         ids=[case[0] for case in TASK_FILE_CASES])
def test_broken_task_file_is_one_line_never_a_traceback(
    repo: Path, capsys: pytest.CaptureFixture[str], mutate: Callable[[Path], None],
    code: str, fragment: str
) -> None:
    mutate(repo / TASKS)
    started = time.monotonic()
    assert_problem(validate(capsys, repo), code, fragment)
    for result in (dry_run(capsys, repo), evaluate(capsys, repo)):
        assert_one_clear_line(result, 2, fragment)
        assert TASKS in error_lines(result)[0], "the message names the file"
    assert time.monotonic() - started < 30, "refused quickly, not after chewing on it"
    assert not (repo / ".gitsleep" / "runs").exists(), "no epoch ran"


def test_a_regex_that_backtracks_is_bounded_by_the_judge_timeout(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid regex that stalls the engine on the answers costs REGEX_TIMEOUT per answer
    and reads as a failed check with the reason, never a hang."""
    from gitsleep.core.patterns import REGEX_TIMEOUT

    stall = task_line(id="stall", split="train", prompt="a" * 60 + "!",
                      judge={"kind": "rule", "checks": [{"op": "regex", "arg": "(a|a)*$"},
                                                        {"op": "contains", "arg": "zzz"}]})
    (repo / TASKS).write_text((repo / TASKS).read_text() + stall)
    assert validate(capsys, repo).code == 0
    started = time.monotonic()
    result = dry_run(capsys, repo, "--json")
    elapsed = time.monotonic() - started
    assert result.code == 0, result.err
    data = json.loads(result.out)
    diagnostics = json.loads(Path(data["diagnostics"]).read_text())
    reasons = [s["reason"] for p in diagnostics["passes"] for t in p["tasks"]
               if t["task_id"] == "stall" for s in t["samples"]]
    assert reasons and all(f"regex took over {REGEX_TIMEOUT}s" in r for r in reasons)
    assert elapsed < 20 * REGEX_TIMEOUT * 4 + 10


# -- the config ----------------------------------------------------------------------------

CONFIG_CASES: list[tuple[str, str, str]] = [
    ("a-list", "- a\n- b\n", "must be a mapping of keys"),
    ("empty", "", "is empty"),
    ("a-scalar", "hello\n", "must be a mapping of keys"),
    ("binary", "\x00\x01binary", "looks binary"),
    ("yaml-bomb", BILLION_LAUGHS, "aliases expand"),
    ("deep", "a: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested too deeply"),
    # regressions
    ("duplicate-key", "version: 1\nworkers: 2\nworkers: 64\nskills: []\n", "twice"),
    ("5000-digit-int", "version: 1\nworkers: 1" + "0" * 5000 + "\n", "cannot be read"),
    ("impossible-date", "version: 1\nmodel: 2001-02-30\n", "day is out of range"),
]


@pytest.mark.parametrize(("text", "fragment"), [c[1:] for c in CONFIG_CASES],
                         ids=[c[0] for c in CONFIG_CASES])
def test_broken_config_cannot_run_and_says_why_in_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    (repo / CONFIG).write_text(text, encoding="utf-8")
    for result in (validate(capsys, repo), dry_run(capsys, repo), evaluate(capsys, repo)):
        assert_one_clear_line(result, 2, fragment)
        assert CONFIG in error_lines(result)[0]


def test_config_that_is_a_directory(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / CONFIG).unlink()
    (repo / CONFIG).mkdir()
    for result in (validate(capsys, repo), dry_run(capsys, repo)):
        assert_one_clear_line(result, 2, "is a directory")


UNSAFE_NAMES = ["../x", "a..b", "-rf", "x.lock", "a b", "ünï", "A", "a/b", "", "x" * 65,
                "a\nb", "brief-writer;rm -rf ~", "@{-1}", "HEAD"]


@pytest.mark.parametrize("name", UNSAFE_NAMES, ids=[repr(n)[:20] for n in UNSAFE_NAMES])
def test_skill_names_that_would_make_unsafe_branch_names_are_refused(
    repo: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    edit_skill(repo, name=name)
    for result in (validate(capsys, repo), dry_run(capsys, repo)):
        assert_one_clear_line(result, 2, "skills[0].name")


BAD_PREFIXES = ["a.lock/", "a/.hidden/", "a.lock/b", "-x/", "x y/", "x@{/", "a//b/", "a..b/"]


@pytest.mark.parametrize("prefix", BAD_PREFIXES)
def test_branch_prefixes_git_would_refuse_are_refused_before_any_model_call(
    repo: Path, capsys: pytest.CaptureFixture[str], prefix: str
) -> None:
    """`a.lock/` used to pass: a whole epoch ran, then git refused the branch name and the
    message blamed a branch that "moved while gitsleep ran"."""
    edit_config(repo, branch_prefix=prefix)
    for result in (validate(capsys, repo), dry_run(capsys, repo)):
        assert_one_clear_line(result, 2, "branch_prefix")


def test_prefixes_git_accepts_stay_accepted(repo: Path) -> None:
    from gitsleep.inputs.config import load_config

    for prefix in ("gitsleep/", "team/gitsleep-", "nightly/v1.2/", "x.", "a./", "bot_"):
        edit_config(repo, branch_prefix=prefix)
        assert load_config(repo / CONFIG).branch_prefix == prefix


PATH_CASES = [
    ("skill", "../../etc/passwd", "remove '..'"),
    ("skill", "skills\\..\\..\\x", "remove '..'"),
    ("skill", "/etc/passwd", "not absolute"),
    ("skill", "C:/Windows/win.ini", "not absolute"),
    ("skill", "a\x00b", "control characters"),  # was: ValueError: embedded null byte
    ("skill", f"{SKILL_MD}\n", "control characters"),  # was: a message split in two
    ("memory", SKILL_MD, "same file"),  # was: the memory's rules overwrote the skill's
    ("skill", TASKS, "both a document and a task file"),  # was: a block appended to tasks
]


@pytest.mark.parametrize(("key", "value", "fragment"), PATH_CASES,
                         ids=[repr(c[1])[:24] for c in PATH_CASES])
def test_paths_that_leave_the_repo_or_alias_each_other_are_refused(
    repo: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, fragment: str
) -> None:
    edit_skill(repo, **{key: value})
    for result in (validate(capsys, repo), dry_run(capsys, repo)):
        assert_one_clear_line(result, 2, fragment)


def test_task_path_with_dot_dot_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_skill(repo, tasks=["evals/../../outside.jsonl"])
    for result in (validate(capsys, repo), dry_run(capsys, repo)):
        assert_one_clear_line(result, 2, "skills[0].tasks[0].path")


# -- skill documents ---------------------------------------------------------------------


def _doc_outside(repo: Path) -> None:
    outside = repo.parent / "outside.md"
    outside.write_text("# someone else's file\n")
    (repo / SKILL_MD).unlink()
    (repo / SKILL_MD).symlink_to(outside)


def test_document_symlinked_out_of_the_repo_is_refused_by_consolidate(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _doc_outside(repo)
    assert_one_clear_line(dry_run(capsys, repo), 2, "points outside the repository")


def test_document_symlinked_out_of_the_repo_is_a_validate_problem(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _doc_outside(repo)
    assert_problem(validate(capsys, repo), "GS200", "outside the repository")


@pytest.mark.parametrize(("mutate", "fragment"), [
    (_bytes(b"\xff\xfe" + bytes(range(256))), "UTF-8"),
    (_utf16, "UTF-8"),
    (_directory, "Is a directory"),
])
def test_unreadable_documents_are_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str], mutate: Callable[[Path], None],
    fragment: str
) -> None:
    mutate(repo / SKILL_MD)
    assert validate(capsys, repo).code == 1
    result = dry_run(capsys, repo)
    assert_one_clear_line(result, 2, fragment)
    assert SKILL_MD in error_lines(result)[0]


def test_a_corrupt_learned_block_is_refused_before_any_model_call(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / SKILL_MD
    path.write_text(path.read_text() + f"\n{d.END}\n{d.START}\n")
    result = dry_run(capsys, repo)
    assert_one_clear_line(result, 2, f"{SKILL_MD}:14")
    assert "scoring" not in result.err, "no model call before the input is known sound"


def test_a_huge_document_is_refused_before_any_model_call(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / SKILL_MD
    with path.open("r+b") as handle:  # the real text, then 21 MB of (sparse) padding
        handle.truncate(21 * 1024 * 1024)
    edit_config(repo, budget={"max_calls": 1, "max_tokens": 2_000_000}, workers=1)
    assert_problem(validate(capsys, repo), "GS103", "20 MB")
    assert_one_clear_line(dry_run(capsys, repo), 2, "20 MB")


def test_a_fifo_in_place_of_the_document_does_not_hang(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / SKILL_MD
    _fifo(path)
    stop = threading.Event()

    def unblock() -> None:  # let a blocked reader go after 1.5 s, so the suite never hangs
        deadline = time.monotonic() + 1.5
        while not stop.is_set():
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader (yet): nobody is blocked on it
                if time.monotonic() > deadline + 5:
                    return
                time.sleep(0.05)
                continue
            os.write(fd, b"# not the document\n")
            os.close(fd)
            return

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        result = dry_run(capsys, repo)
    finally:
        stop.set()
        thread.join()
    assert time.monotonic() - started < 1.5, "refused at once, not after a writer came"
    assert_one_clear_line(result, 2, "regular file")


# -- hostile model output, contained -----------------------------------------------------

HOSTILE_TEXT = st.sampled_from([
    d.START, d.END, "<!-- gitsleep:learned:end -->\n# Pwned", "<!--gitsleep : LEARNED:END-->",
    "gitsleep:learned", "-->", "<!--", "---", "===", "```", "~~~", "- ", "#", "\r", "\r\n",
    "\x00", "\x1b[2J", "\u2028", "\u202e", "\ufeff", "name: evil", "---\nname: evil\n---",
    ".github/workflows/ci.yml", "../../etc/passwd", "Always include \"Key Risks\"", "x" * 5000,
])
RULE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
CONTENT = st.lists(st.one_of(HOSTILE_TEXT, RULE_TEXT), min_size=1, max_size=4).map("".join)

FRONTMATTER = "---\nname: brief-writer\ndescription: Writes briefs.\n---\n"
HAND_BLOCK = (f"{d.START}\n## Learned rules\n\nA note a person wrote.\n- Use plain words\n"
              f"- Keep it short\n{d.END}\n")
DOC_PARTS = st.lists(st.one_of(
    st.sampled_from([FRONTMATTER, "# Skill\r\n", "Write plainly.\n", "\n", "no newline",
                     "- a hand-written bullet\n", "```\ncode\n```\n", "<!-- a comment -->\n",
                     "Key Risks\n", "café ✓\n"]),
    RULE_TEXT,
), max_size=6)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """Markdown documents: frontmatter, CRLF, no final newline, with or without a sound
    block (which may hold hand-written prose) at the end or in the middle."""
    before = "".join(draw(DOC_PARTS))
    after = "".join(draw(DOC_PARTS))
    where = draw(st.sampled_from(["none", "end", "middle"]))
    if where == "none":
        text = before + after
    else:
        joiner = "" if not before or before.endswith("\n") else "\n"
        block = draw(st.sampled_from([HAND_BLOCK, HAND_BLOCK.replace("\n", "\r\n"),
                                      f"{d.START}\n{d.END}\n"]))
        text = before + joiner + block + (after if where == "middle" else "")
    return text if not d.structure_problems(text) else before.replace("gitsleep", "g")


EDITS = st.lists(st.builds(
    Edit,
    op=st.sampled_from(["add", "replace", "delete", "add", "bogus"]),
    content=CONTENT,
    anchor=st.one_of(CONTENT, st.sampled_from(["Use plain words", "Keep it short",
                                               "Write plainly.", "name: brief-writer",
                                               "A note a person wrote."])),
    rationale=RULE_TEXT,
    target=st.sampled_from(["skill", "memory"]),
), max_size=8)


def assert_contained(before: str, after: str) -> None:
    """Only the block changed: outside bytes identical, one sound block, nothing closed
    early, hand-written lines inside the block kept in order."""
    assert d.structure_problems(after) == []
    if d.find_block(before) is None:
        assert after == before or after.startswith(before)
        if after != before:
            tail = after[len(before):]
            assert tail.count(d.START) == 1 and tail.rstrip("\r\n").endswith(d.END)
    else:
        assert d.outside_block(after) == d.outside_block(before)
    inner_before = [ln for ln in d.split_lines(d.learned_block_text(before))
                    if not ln.lstrip().startswith("- ")]
    inner_after = d.split_lines(d.learned_block_text(after))
    scaffold = {f"{d.HEADING}\n", "\n", f"{d.HEADING}\r\n", "\r\n"}  # of a new block
    for line in inner_after:  # every line the edits added is one bullet of plain text
        if line not in inner_before and not (d.find_block(before) is None and line in scaffold):
            assert line.startswith("- ") and not d.MARKER_RE.search(line)
            assert "<!--" not in line and "-->" not in line
    kept = [ln for ln in inner_after if ln in inner_before]
    assert kept == [ln for ln in inner_before if ln in inner_after]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), batch=EDITS)
def test_no_edit_sequence_reaches_outside_the_block(doc: str, batch: list[Edit]) -> None:
    new, outcomes = d.apply_edits(doc, batch, max_lines=40, max_chars=4000)
    assert len(outcomes) == len(batch)
    event(f"{sum(o.status == 'applied' for o in outcomes)} edit(s) applied")
    assert_contained(doc, new)
    again, _ = d.apply_edits(new, batch)  # and again, on the result
    assert_contained(doc, again)


def _reply_item(draw: st.DrawFn) -> dict[str, object]:
    item: dict[str, object] = {
        "op": draw(st.sampled_from(["add", "replace", "delete", "append", "remove", "write",
                                    "add or replace"])),
        "content": draw(CONTENT),
        "anchor": draw(st.one_of(CONTENT, st.just("Use plain words"))),
        "rationale": draw(RULE_TEXT),
    }
    # what a model told to escape the block might add: another file, another target
    for key in draw(st.lists(st.sampled_from(["target", "file", "path", "document"]),
                             max_size=2)):
        item[key] = draw(st.sampled_from(["memory", ".github/workflows/ci.yml", "AGENTS.md",
                                          "../../.git/config", "SKILL.md"]))
    return item


@st.composite
def optimizer_replies(draw: st.DrawFn) -> str:
    """Raw optimizer replies: JSON edit lists with hostile values, wrapped in prose and
    fences, sometimes broken, sometimes a whole replacement document."""
    items = [_reply_item(draw) for _ in range(draw(st.integers(0, 5)))]
    body = json.dumps({"edits": items}, ensure_ascii=draw(st.booleans()))
    shape = draw(st.sampled_from(["bare", "fenced", "prose", "truncated", "document"]))
    if shape == "fenced":
        return f"Sure:\n```json\n{body}\n```\n"
    if shape == "prose":
        return f"{draw(RULE_TEXT)}\n{body}\n{draw(HOSTILE_TEXT)}"
    if shape == "truncated":
        return body[: draw(st.integers(0, len(body)))]
    if shape == "document":
        return f"{FRONTMATTER}# Rewritten\n{d.END}\n{d.START}\n- {draw(RULE_TEXT)}\n{body}"
    return body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), raw=optimizer_replies(), target=st.sampled_from(["skill", "memory"]))
def test_an_optimizer_reply_can_only_change_the_block_of_its_target(
    doc: str, raw: str, target: str
) -> None:
    parsed = parse_reply(raw, target=target, budget=4)
    assert all(edit.target == target for edit in parsed.edits + [o.edit for o in parsed.dropped])
    kept, rejected = check_hygiene(parsed.edits, failing_checks=[Check("contains", "Key Risks")],
                                   task_prompts=["Write a brief."],
                                   current_rules=d.learned_rules(doc))
    assert len(kept) + len(rejected) == len(parsed.edits)
    assert all(edit.target == target for edit in kept)
    new, outcomes = d.apply_edits(doc, kept)
    event(f"{sum(o.status == 'applied' for o in outcomes)} edit(s) applied")
    assert_contained(doc, new)


@dataclass
class ScriptedOptimizer(Backend):
    """The simulated agent, and an optimizer that says whatever it was scripted to."""

    replies: list[str]
    name: str = "scripted"
    simulated: bool = True
    proposals: int = 0

    def writes_free_values(self, purpose: str) -> bool:  # stands in for the simulator
        return True

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            self.proposals += 1
            reply = self.replies[(self.proposals - 1) % len(self.replies)]
            return Answer(text=reply, prompt_tokens=1, completion_tokens=1)
        system = [content for role, content in call.messages if role == "system"]
        user = "\n".join(content for role, content in call.messages if role == "user")
        return Answer(text=simulate_answer(system, user), prompt_tokens=1, completion_tokens=1)


def _epoch_tasks() -> list[Task]:
    def rule(*args: str) -> Judge:
        return Judge("rule", tuple(Check("contains", a) for a in args))

    return [Task("t1", "Brief one.", "train", rule("Key Risks")),
            Task("t2", "Brief two.", "train", rule("Key Risks", "Owner")),
            Task("v1", "Brief three.", "val", rule("Key Risks")),
            Task("v2", "Brief four.", "val", rule("Owner")),
            Task("h1", "Brief five.", "test", rule("Key Risks"))]


USEFUL = json.dumps({"edits": [
    {"op": "add", "content": 'Always include "Key Risks"', "rationale": "t1"},
    {"op": "add", "content": 'Always include "Owner"', "rationale": "t2"}]})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(skill=documents(), memory=st.one_of(st.none(), documents()),
       replies=st.lists(st.one_of(optimizer_replies(), st.just(USEFUL)), min_size=1,
                        max_size=6))
def test_whole_epochs_with_scripted_proposals_never_touch_bytes_outside_the_blocks(
    skill: str, memory: str | None, replies: list[str]
) -> None:
    backend = ScriptedOptimizer(replies)
    settings_ = EpochSettings(model="agent", optimizer_model="optimizer", judge_model="judge",
                              workers=1, rounds=2, proposals=2)
    result = run_epoch(_epoch_tasks(), {"skill": skill, "memory": memory}, settings_, backend,
                       skill="hostile")
    assert result.decision in ("accepted", "rejected", "no_edits")
    event(f"decision {result.decision}")
    assert set(result.documents) == ({"skill", "memory"} if memory is not None else {"skill"})
    for target, (before, after) in result.documents.items():
        assert before == {"skill": skill, "memory": memory}[target]
        assert_contained(before, after)
        assert after == before or result.decision == "accepted"
    for trial in result.trials:
        assert all(edit.target == trial.target for edit in trial.applied)


def test_a_model_reply_with_a_lone_surrogate_is_not_a_traceback(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.test_model_server import scripted_model
    from tests.support.fake_openai import FakeOpenAIServer

    monkeypatch.setenv("GITSLEEP_HOSTILE_KEY", "sk-hostile-0123456789abcdefghij")
    with FakeOpenAIServer(responder=lambda r: scripted_model(r) + "\ud800") as server:
        edit_config(repo, backend="openai", model="m", base_url=server.base_url,
                    api_key_env="GITSLEEP_HOSTILE_KEY", timeout=5, max_retries=0)
        result = dry_run(capsys, repo)
    assert "Traceback" not in result.err
    assert result.code == 0, result.err[-2000:]
