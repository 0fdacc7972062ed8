"""Problems found by `gitsleep validate`: results to report, never exceptions.

Each problem names the file and line a person should open, a stable code they can
search for, and a message that says what is wrong and how to fix it.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, NamedTuple

import yaml

ERROR = "error"
WARNING = "warning"

# Stable codes, grouped by what they are about. Tests and docs refer to them.
CODES: dict[str, str] = {
    # configuration
    "GS000": "config cannot be read or is invalid (validate stops here, exit 2)",
    "GS001": "task file listed twice for one skill",
    "GS002": "two configured paths are one file (a repeat or a symlink)",
    "GS003": "document reached through a symlink",
    "GS004": "gitsleep's cache or run folder leads out of the repository",
    "GS005": "config cannot run: a model a backend needs is not set",
    "GS006": "agent program not found where the agent runs (a relative path, not on PATH)",
    "GS007": "gitsleep's answer cache is reached through a symlink inside the repository",
    # task files
    "GS100": "task file missing or unreadable",
    "GS101": "task file does not parse",
    "GS102": "task file is not UTF-8 text",
    "GS103": "task file too large",
    "GS104": "task file nested too deeply",
    "GS105": "task file has the wrong shape",
    "GS106": "unknown key in a task (likely a typo)",
    "GS107": "task file holds no tasks",
    "GS110": "task id missing or empty",
    "GS111": "task prompt missing or empty",
    "GS112": "duplicate task id",
    "GS113": "task leaks between the selection splits and the held-out split",
    "GS114": "bad split label",
    "GS115": "skill has no val tasks",
    "GS116": "skill has no train tasks",
    "GS117": "same prompt in train and val",
    "GS118": "bad system or tags field",
    "GS119": "task pending review (harvested), or a bad review mark",
    "GS120": "judge missing",
    "GS121": "unknown judge kind",
    "GS122": "unknown rule op",
    "GS123": "invalid regex",
    "GS124": "bad character bound",
    "GS125": "bad check argument",
    "GS126": "rule judge without checks",
    "GS127": "exact or rubric judge without its text",
    "GS128": "judge checks only formatting",
    "GS130": "bad workspace field (not a folder name inside the repository)",
    "GS131": "workspace folder missing, not a folder, or linked out of the repository",
    "GS132": "bad command check (not a non-empty argv list of strings)",
    "GS133": "check command's program not found where the check would run",
    "GS134": "bad argument of a workspace check (file_exists, file_contains, changed_files_max)",
    "GS135": "workspace check on a task without a workspace",
    "GS136": "workspace task with an answer backend that cannot work in a folder",
    "GS138": "workspace folder that holds one of the skill's task files",
    "GS140": "a text some tasks ask for and none checks the absence of",
    "GS150": "skill has no held-out (test) tasks: val decides",
    "GS151": "val or held-out has too few tasks for a decision to be more than a hint",

    "GS160": "bad tools declaration (tool kind, name, folder or argv)",
    "GS161": "trajectory check naming a tool the agent is not given",
    "GS162": "trajectory checks with an answer backend that gives no tool trace",
    "GS170": "trigger task without a true or false should_trigger",
    "GS171": "trigger task with a bad expect (the sibling skill a query belongs to)",
    "GS172": "trigger task with an empty query (left out)",
    "GS173": "trigger split with no should-not query",
    "GS174": "trigger task expects a skill that is not in the catalog",
    # skill and memory documents
    "GS200": "document missing",
    "GS201": "document is not UTF-8 text",
    "GS202": "frontmatter does not parse",
    "GS203": "frontmatter name missing or invalid",
    "GS204": "frontmatter description missing or invalid",
    "GS205": "document imports a file (@path) the agent is not shown",
    "GS206": "document imports form a cycle or too much text",
    "GS210": "learned block corrupt or too large",
    # secrets
    "GS300": "secret in a task file",
}


class Problem(NamedTuple):
    """One finding: where (repo-relative path, 1-based line or None), what, how bad."""

    path: str
    line: int | None
    code: str
    severity: str  # error | warning
    message: str

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    def render(self) -> str:
        """`path:line: CODE message` (warnings say so after the code)."""
        label = self.code if self.is_error else f"{self.code} warning:"
        return f"{self.location()}: {label} {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
        }


def error(path: str, line: int | None, code: str, message: str) -> Problem:
    return Problem(path, line, code, ERROR, message)


def warning(path: str, line: int | None, code: str, message: str) -> Problem:
    return Problem(path, line, code, WARNING, message)


# --- Reading files safely -------------------------------------------------------------
# Shared by the config loader and the task loader: size cap, UTF-8 check, and YAML that
# cannot blow up through aliases or nesting.

MAX_FILE_BYTES = 20 * 1024 * 1024
# Aliases may add at most this many nodes beyond the document's own: a shared judge used by
# a few thousand tasks is fine, a "billion laughs" document is refused.
MAX_ALIAS_EXPANSION = 100_000
MAX_YAML_DEPTH = 100  # task records need about 5 levels


class FileProblem(Exception):
    """A file cannot be read as structured text. Carries the code and 1-based line."""

    def __init__(self, code: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line


def read_text(path: Path) -> str:
    """The file as text: refuses missing, oversized, binary and non-UTF-8 files clearly."""
    try:
        info = path.stat()
        size = info.st_size
        if stat.S_ISDIR(info.st_mode):
            raise FileProblem("GS100", "is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
            raise FileProblem("GS100", "is not a regular file (a pipe, socket or device?)")
        if size > MAX_FILE_BYTES:
            raise FileProblem(
                "GS103",
                f"is {size / 1_048_576:.1f} MB; files over {MAX_FILE_BYTES // 1_048_576} MB "
                "are refused: split it into smaller files",
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileProblem("GS100", "not found: create it or fix the path") from None
    except PermissionError:
        raise FileProblem("GS100", "cannot be read (permission denied)") from None
    except OSError as exc:
        raise FileProblem("GS100", f"cannot be read ({exc.strerror or exc})") from None
    if b"\x00" in data[:8192]:
        raise FileProblem(
            "GS102", "looks binary (NUL bytes; UTF-16?): save it as UTF-8 text", line=1
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FileProblem(
            "GS102", f"is not valid UTF-8 (byte {exc.start}): save it as UTF-8", line=line
        ) from None


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# (words in the parser's message, the fix); the first that matches wins
_YAML_FIXES = (
    ("tab character", "indent with spaces, not tabs: replace the tab"),
    ("quoted scalar", "a quoted value that starts on this line is never closed: add the "
                      "closing quote"),
    ("flow sequence", "a `[` list that starts on this line is never closed: add `]`, or "
                      "write one `- item` per line"),
    ("flow mapping", "a `{` mapping that starts on this line is never closed: add `}`"),
    ("mapping values are not allowed", "a value holding `: ` needs quotes, or a key on this "
                                       "line is indented too far"),
    ("cannot start any token", "a value starting with this character needs quotes"),
    ("expected '-' indicator", "the items of one list start in the same column: align this "
                               "line with the `-` of the items above it"),
    ("expected <block end>", "the keys of one mapping start in the same column: align this "
                             "line with the keys above it"),
    ("could not find expected ':'", "a key needs `: ` after it (or the line above ends a "
                                    "quoted value too early)"),
)
_UNCLOSED = ("quoted scalar", "flow sequence", "flow mapping")


def yaml_fix(exc: yaml.MarkedYAMLError, line: int | None) -> tuple[int | None, str]:
    """(the line to name, the fix) for a YAML error. The parser notices an unclosed quote
    or bracket where the text ends: the line to open is where it was opened."""
    said = f"{exc.context or ''} {exc.problem or ''}"
    if any(kind in (exc.context or "") for kind in _UNCLOSED) and exc.context_mark:
        line = exc.context_mark.line + 1
    for words, fix in _YAML_FIXES:
        if words in said:
            return line, fix
    return line, "check the indentation and the quotes on this line and the one above"


def compose_yaml(text: str) -> yaml.Node | None:
    """Parse YAML into nodes (which keep line numbers), refusing alias bombs and deep nesting."""
    try:
        _check_depth(text)
        loader = _YAML_LOADER(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        if "maximum nesting depth" in (exc.problem or ""):
            # PyYAML 6.0.4's bundled libyaml refuses deep flow nesting in its scanner,
            # before our own depth check sees an event: the same problem, the same code.
            raise FileProblem("GS104", "is nested too deeply to read", line=line) from None
        line, fix = yaml_fix(exc, line)
        what = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise FileProblem("GS101", f"YAML does not parse: {what}: {fix}", line=line) from None
    except yaml.YAMLError as exc:
        # e.g. a ReaderError for a control character: its text ends with a second line
        # ('in "<unicode string>", position 0'), which would break one-line output.
        position = getattr(exc, "position", None)
        line = text.count("\n", 0, position) + 1 if isinstance(position, int) else None
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FileProblem("GS101", f"YAML does not parse: {first}", line=line) from None
    except RecursionError:
        raise FileProblem("GS104", "is nested too deeply to read") from None
    if node is not None:
        _check_alias_expansion(node)
        _check_duplicate_keys(node)
    return node


def _check_depth(text: str) -> None:
    """Refuse deep nesting from the event stream, before the (recursive) composer sees it.

    libyaml's composer recurses in C and can crash the interpreter on a few hundred
    thousand nested brackets; the event parser is iterative and stops early here.
    """
    depth = 0
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise FileProblem("GS104", f"is nested too deeply (over {MAX_YAML_DEPTH} levels): "
                                  "refused",
                                  line=event.start_mark.line + 1 if event.start_mark else None)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def construct_yaml(node: yaml.Node) -> Any:
    """Plain Python data from a composed node (safe types only)."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or node.start_mark
        first_line = str(exc).splitlines()[0] if str(exc) else "invalid value"
        raise FileProblem("GS101", f"YAML does not parse: {first_line}", mark.line + 1) from None
    except RecursionError:
        raise FileProblem("GS104", "is nested too deeply to read") from None
    except (ValueError, ArithmeticError, LookupError, AttributeError, TypeError) as exc:
        # PyYAML's own constructors fail with plain exceptions on values they resolved:
        # a date like 2001-02-30, an integer of thousands of digits (Python's int/str
        # limit), an explicit tag on nothing (`!!int` alone is an IndexError, `!!bool ""`
        # a KeyError). Bad input all the same.
        raise FileProblem("GS101", f"YAML holds a value that cannot be read "
                          f"({type(exc).__name__}: {_first_clause(exc)}); "
                          "quote it to keep it as text", node.start_mark.line + 1) from None


def _first_clause(exc: BaseException) -> str:
    """An exception's message up to its first ';' (Python's own advice is for programmers)."""
    return str(exc).split(";")[0].strip() or type(exc).__name__


def _check_duplicate_keys(root: yaml.Node) -> None:
    """Refuse a mapping that names a key twice: YAML forbids it and PyYAML keeps the last
    silently, so `workers: 8` further down would quietly win over `workers: 2`."""
    seen_nodes: set[int] = set()
    pending: list[yaml.Node] = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], yaml.Node] = {}
            for key, value in node.value:
                pending.append(value)
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    pending.append(key)
                    continue
                earlier = first.setdefault((key.tag, key.value), key)
                if earlier is not key:
                    raise FileProblem(
                        "GS101",
                        f"YAML names the key {key.value[:60]!r} twice (first on line "
                        f"{earlier.start_mark.line + 1}); keep one",
                        line=key.start_mark.line + 1,
                    )
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)


def _check_alias_expansion(root: yaml.Node) -> None:
    """Refuse documents whose aliases expand far beyond their own size, or loop."""
    expanded: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in expanded:
            return expanded[key]
        if key in open_nodes:
            raise FileProblem("GS101", "YAML alias refers to itself (recursive anchor)",
                              line=node.start_mark.line + 1)
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        expanded[key] = total
        return total

    try:
        total = size(root)
    except RecursionError:
        raise FileProblem("GS104", "is nested too deeply to read") from None
    if total - len(expanded) > MAX_ALIAS_EXPANSION:
        raise FileProblem(
            "GS101",
            f"YAML aliases expand to {total} nodes from {len(expanded)}: refused "
            "(write the data out instead of nesting aliases)",
        )
