"""The answer cache is local: entries git tracks are neither read nor written,
text read back is cleaned as a fresh reply is, and a cache folder it creates ignores
itself. Real files in tmp_path and a real git repository for what git tracks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.core.cache import ResponseCache
from gitsleep.core.models import Answer
from gitsleep.inputs.repo_paths import tracked_cache_entries
from tests.e2e.test_review_run import FILES
from tests.support.cli import run_cli
from tests.support.gitrepo import git, isolate_git, make_repo

KEY = "ab" + "0" * 62


def entry(directory: Path, key: str, payload: str) -> Path:
    path = directory / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload, encoding="utf-8")
    return path


def test_a_lone_surrogate_in_a_cache_entry_reads_as_a_replacement_character(
        tmp_path: Path) -> None:
    """Before: the text kept the lone surrogate, and encoding it (hashing, writing a
    report) raised UnicodeEncodeError in eval, consolidate and review."""
    entry(tmp_path, KEY, '{"text": "Owner: \\ud800 x", "diff": "\\udfff", '
                         '"finish_reason": "\\ud801", "checks": [[0, true, "\\ud802"]]}')
    hit = ResponseCache(tmp_path).get(KEY)
    assert hit is not None and hit.text.startswith("Owner: \ufffd")
    for text in (hit.text, hit.diff or "", hit.finish_reason or "",
                 *(reason for _, _, reason in hit.checks or ())):
        text.encode("utf-8")  # raises on a lone surrogate


def test_an_entry_git_tracks_is_neither_read_nor_overwritten(tmp_path: Path) -> None:
    forged = entry(tmp_path, KEY, json.dumps({"text": "forged"}))
    cache = ResponseCache(tmp_path, ignored=frozenset({f"ab/{KEY}.json"}))
    assert cache.get(KEY) is None
    cache.put(KEY, Answer(text="fresh"))
    assert json.loads(forged.read_text())["text"] == "forged", "the user's file is kept"
    assert cache.get(KEY) is not None and cache.get(KEY).text == "fresh"  # type: ignore[union-attr]


def test_a_cache_folder_it_creates_ignores_itself(tmp_path: Path) -> None:
    folder = tmp_path / ".gitsleep" / "cache"
    ResponseCache(folder).put(KEY, Answer(text="an answer"))
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    existing = tmp_path / "mine"
    existing.mkdir()
    ResponseCache(existing).put(KEY, Answer(text="an answer"))
    assert not (existing / ".gitignore").exists(), "a folder someone made is left as it is"


def test_tracked_cache_entries_are_those_git_tracks_under_the_cache_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, {"README.md": "hi\n", ".gitignore": ".gitsleep/\n"})
    entry(work / ".gitsleep" / "cache", KEY, '{"text": "x"}')
    entry(work / ".gitsleep" / "cache", "cd" + "1" * 62, '{"text": "y"}')
    git(work, "add", "-f", f".gitsleep/cache/ab/{KEY}.json")
    assert tracked_cache_entries(work) == frozenset({f"ab/{KEY}.json"})
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    assert tracked_cache_entries(outside) == frozenset()


def test_validate_names_cache_entries_git_tracks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: nothing said that a committed cache entry was there."""
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, dict(FILES))
    assert "GS006" not in run_cli(capsys, "--repo", str(work), "validate").out
    entry(work / ".gitsleep" / "cache", KEY, '{"text": "x"}')
    git(work, "add", "-f", f".gitsleep/cache/ab/{KEY}.json")
    result = run_cli(capsys, "--repo", str(work), "validate")
    line = next(line for line in result.out.splitlines() if "GS006" in line)
    assert f"ab/{KEY}.json" in line and "git rm -r --cached .gitsleep/cache" in line
