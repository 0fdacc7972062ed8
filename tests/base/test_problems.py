"""A problem a file has, one line each, and files read safely before any parsing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitsleep.base.problems import (
    MAX_FILE_BYTES,
    FileProblem,
    Problem,
    error,
    read_text,
    warning,
)


def test_a_problem_renders_as_path_line_code_message() -> None:
    assert error("evals/a.jsonl", 3, "GS101", "bad").render() == "evals/a.jsonl:3: GS101 bad"
    assert warning("SKILL.md", None, "GS201", "long").render() == (
        "SKILL.md: GS201 warning: long")
    found = Problem("a", 1, "GS1", "error", "m")
    assert found.is_error and found.as_dict() == {
        "path": "a", "line": 1, "code": "GS1", "severity": "error", "message": "m"}


def test_text_is_utf8_with_its_bom_dropped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf{\"id\": \"a\"}\r\n")
    assert read_text(path) == '{"id": "a"}\r\n'  # line endings as written


@pytest.mark.parametrize(("data", "code", "line"), [
    (b"ok\n\x00\x01", "GS102", 1),
    (b"one\ntwo \xff\n", "GS102", 2),
])
def test_binary_and_broken_utf8_are_refused_with_a_line(tmp_path: Path, data: bytes, code: str,
                                                        line: int) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    with pytest.raises(FileProblem) as found:
        read_text(path)
    assert (found.value.code, found.value.line) == (code, line)


def test_missing_folders_pipes_and_huge_files_are_refused(tmp_path: Path) -> None:
    for target, words in ((tmp_path / "missing", "not found"), (tmp_path, "is a directory")):
        with pytest.raises(FileProblem, match=words):
            read_text(target)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FileProblem, match="not a regular file"):
        read_text(fifo)
    huge = tmp_path / "huge"
    with huge.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: no 20 MB written
    with pytest.raises(FileProblem, match="files over 20 MB are refused") as found:
        read_text(huge)
    assert found.value.code == "GS103"
