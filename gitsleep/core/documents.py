"""The learned block: the only region of a document gitsleep may change.

A document is kept as its exact text. The block is the lines between
`<!-- gitsleep:learned:start -->` and `<!-- gitsleep:learned:end -->`, each marker alone
on its line; a near miss (other spacing or case) is a problem, never silently text, so
validate and every reader agree on where the block is. Marker lines inside a fenced or
indented code block (a quoted example) are text, not markers. Rules are the bullet lines
(`- ...`) inside the block; edits address those lines and nothing else, so every byte
outside the block (frontmatter, blank lines, CRLF line endings, a missing final newline)
survives any sequence of edits.

Multi-line edit content means several rules: each non-empty line becomes its own
bullet, and the edit applies all of them or none.

A `template` edit is the exception: its content is an answer skeleton (headings,
labelled lines, `<placeholders>`), kept whole as one fenced block after the rules, under
an intro line. A block holds at most one; a second replaces it. Lines inside a fence
are never rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gitsleep.base.errors import UsageError
from gitsleep.base.hostile_text import invisible_problem, unsafe_link_problem
from gitsleep.core.models import Edit, EditOutcome

START = "<!-- gitsleep:learned:start -->"
END = "<!-- gitsleep:learned:end -->"
HEADING = "## Learned rules"
# Anything that reads as one of our markers, however spaced, cased or punctuated. Only the
# exact START / END spelling is a marker; anything else this matches is a near miss that
# every reader refuses alike (validate passing it while the writer skips it once let a
# second block be appended and the run fail late).
MARKER_RE = re.compile(r"<!--\s*gitsleep[\s:_-]*learned[\s:_-]*(start|end)\s*-->",
                       re.IGNORECASE)
_MARKER_HINT = re.compile(r"gitsleep\s*:\s*learned", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")
_BULLET = re.compile(r"^\s*[-*+]\s+")
_FENCE = re.compile(r"^\s*```")
# A CommonMark fence line: 3+ backticks or tildes indented at most 3 spaces, then the rest.
_CODE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
TEMPLATE_INTRO = "Answer template: every answer follows this shape, with each <...> filled in:"


@dataclass(frozen=True)
class Block:
    """Where the block sits, as indexes into the document's lines (keepends)."""

    start: int  # index of the start marker line
    end: int  # index of the end marker line


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split on `\\n` only so no byte is reinterpreted."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


@dataclass(frozen=True)
class _Marker:
    """One marker-like text: its line index, `start`/`end`/`malformed`, and how it is written."""

    index: int
    kind: str
    exact: bool  # spelled exactly as START / END
    alone: bool  # nothing else on its line


@dataclass(frozen=True)
class _Code:
    """The document's code lines, and a fence that never closes (None when every one does)."""

    lines: frozenset[int]
    open_fence: tuple[int, str] | None  # (index of its opening line, its opening run)


def _indent(line: str) -> int:
    """Columns of leading whitespace, a tab reaching the next multiple of 4 (CommonMark)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _code(lines: list[str]) -> _Code:
    """Which lines are code, so that a marker quoted in an example is text, not a marker.

    CommonMark, kept simple: a fence opens with 3+ backticks or tildes indented at most 3
    spaces (a backtick fence's info string holds no backtick) and closes with a line of the
    same character, at least as long, with nothing after it but spaces; a fence never
    closed runs to the end. Outside fences, a non-blank line indented 4+ columns is code
    too (an indented code block, or a list item's continuation: a marker in neither).
    Fences inside list items or block quotes are not tracked."""
    code: set[int] = set()
    fence: tuple[int, str] | None = None
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        m = _CODE_FENCE.match(line)
        if fence is not None:
            code.add(i)
            run = fence[1]
            if m and m.group(1)[0] == run[0] and len(m.group(1)) >= len(run) \
                    and not m.group(2).strip():
                fence = None
        elif m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (i, m.group(1))
            code.add(i)
        elif line.strip() and _indent(line) >= 4:
            code.add(i)
    return _Code(frozenset(code), fence)


_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{1,2}/)?[\w.-]+(?:/[\w.-]+)*)")
_CODE_SPAN = re.compile(r"(`+).*?\1")


def imports(text: str) -> list[tuple[int, str]]:
    """(1-based line, path) of each `@path` import outside code, in Claude Code's syntax
    (`@AGENTS.md`, `@docs/style.md`, `@~/.claude/mine.md`): the files Claude Code would
    read in with this one. Only candidates: the caller decides which name a file."""
    lines = text.split("\n")
    skip = _code(lines).lines
    found = []
    for i, line in enumerate(lines):
        if i in skip:
            continue
        for match in _IMPORT.finditer(_CODE_SPAN.sub("", line)):
            found.append((i + 1, match.group(1).rstrip(".")))
    return found


def _markers(lines: list[str], code: _Code | None = None) -> list[_Marker]:
    """Every marker-like text outside code: the one classification all readers use."""
    skip = (code or _code(lines)).lines
    found = []
    for i, line in enumerate(lines):
        if i in skip:
            continue
        matches = list(MARKER_RE.finditer(line))
        if not matches:
            if _MARKER_HINT.search(line):
                found.append(_Marker(i, "malformed", False, False))
            continue
        alone = len(matches) == 1 and line.strip() == matches[0].group(0)
        for m in matches:
            kind = m.group(1).lower()
            exact = m.group(0) == (START if kind == "start" else END)
            found.append(_Marker(i, kind, exact, alone))
    return found


def structure_problems(text: str) -> list[tuple[int, str]]:
    """Corrupt-block problems as (1-based line, message); empty when sound or absent."""
    lines = split_lines(text)
    code = _code(lines)
    markers = _markers(lines, code)
    problems: list[tuple[int, str]] = []
    for m in markers:
        if m.kind == "malformed":
            problems.append((m.index + 1,
                             f"malformed learned-block marker; use exactly {START} / {END}"))
        elif not m.exact:
            problems.append((m.index + 1, "learned-block marker is not written exactly "
                             "(spacing or case): write it exactly as "
                             f"`{START if m.kind == 'start' else END}`"))
        elif not m.alone:
            problems.append((m.index + 1, "learned-block marker must stand alone on its line"))
    # a near miss is reported above, once, and not counted again as a start or an end
    kinds = [(m.index, m.kind) for m in markers if m.exact]
    starts = [i for i, k in kinds if k == "start"]
    ends = [i for i, k in kinds if k == "end"]
    if len(starts) > 1 or len(ends) > 1:
        nested = len(kinds) >= 2 and kinds[0][1] == "start" and kinds[1][1] == "start"
        what = "nested" if nested else "duplicated"
        line = (starts[1] if len(starts) > 1 else ends[1]) + 1
        problems.append((line, f"{what} learned-block markers: keep exactly one start and one end"))
    elif starts and not ends:
        why = ""
        if code.open_fence is not None and code.open_fence[0] > starts[0]:
            why = (f" (the code fence opened at line {code.open_fence[0] + 1} never closes, "
                   "so a marker after it is text)")
        problems.append((starts[0] + 1, f"learned block has a start marker but no {END}{why}"))
    elif ends and not starts:
        problems.append((ends[0] + 1, f"learned block has an end marker but no {START}"))
    elif starts and ends and ends[0] < starts[0]:
        problems.append((ends[0] + 1, "learned-block end marker comes before the start marker"))
    return problems


def find_block(text: str, *, where: str = "document") -> Block | None:
    """The block of a sound document, None when there is none; UsageError when corrupt.

    Reads markers exactly as `structure_problems` (and so `validate`) does."""
    problems = structure_problems(text)
    if problems:
        line, message = problems[0]
        raise UsageError(f"{where}:{line}: {message}")
    markers = _markers(split_lines(text))
    starts = [m.index for m in markers if m.kind == "start"]
    if not starts:
        return None
    ends = [m.index for m in markers if m.kind == "end"]
    return Block(starts[0], ends[0])


def _rule_text(line: str) -> str:
    return _BULLET.sub("", line.rstrip("\r\n"), count=1).strip()


_QUOTES = str.maketrans({"'": '"', "`": '"', "\u2018": '"', "\u2019": '"', "\u201c": '"',
                         "\u201d": '"'})


def rule_key(text: str) -> str:
    """A rule as compared for sameness: case, spacing, quote style and a final full stop
    do not matter (`'Severity: <1-4>'` is the rule `"Severity: <1-4>"`)."""
    return " ".join(_rule_text(text).casefold().translate(_QUOTES).split()).rstrip(".")


def _rule_indexes(inner: list[str]) -> list[int]:
    """Indexes of the bullet lines of a block's inner lines, outside any fence."""
    out, fenced = [], False
    for i, line in enumerate(inner):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _BULLET.match(line):
            out.append(i)
    return out


def _template_span(inner: list[str]) -> tuple[int, int] | None:
    """(first, after) of the template in the inner lines: intro line, fence, lines, fence."""
    fences = [i for i, line in enumerate(inner) if _FENCE.match(line)]
    if len(fences) < 2:
        return None
    first = fences[0]
    if first > 0 and inner[first - 1].strip() == TEMPLATE_INTRO:
        first -= 1
    return first, fences[1] + 1


def learned_rules(text: str) -> list[str]:
    """The rule lines of the block (bullet text), in order."""
    block = find_block(text)
    if block is None:
        return []
    lines = split_lines(text)[block.start + 1 : block.end]
    return [_rule_text(lines[i]) for i in _rule_indexes(lines)]


def learned_template(text: str) -> str | None:
    """The block's answer template (the lines inside its fence), None when it has none."""
    block = find_block(text)
    if block is None:
        return None
    inner = split_lines(text)[block.start + 1 : block.end]
    span = _template_span(inner)
    if span is None:
        return None
    body = [line.rstrip("\r\n") for line in inner[span[0]:span[1]]
            if line.strip() != TEMPLATE_INTRO]
    return "\n".join(body[1:-1])


def learned_block_text(text: str) -> str:
    """The block's inner text, for prompts and diffs ('' when there is none)."""
    block = find_block(text)
    if block is None:
        return ""
    return "".join(split_lines(text)[block.start + 1 : block.end])


def outside_block(text: str) -> str:
    """The document without its block: what an edit must never change."""
    block = find_block(text)
    if block is None:
        return text
    lines = split_lines(text)
    return "".join(lines[: block.start] + lines[block.end + 1 :])


def block_problems(text: str, max_lines: int, max_chars: int) -> list[tuple[int, str]]:
    """Everything wrong with a document's block: corruption, then size over the caps."""
    problems = structure_problems(text)
    if problems:
        return problems
    block = find_block(text)
    if block is None:
        return []
    inner = split_lines(text)[block.start + 1 : block.end]
    rules = _rule_indexes(inner)
    if len(rules) > max_lines:
        problems.append((block.start + 1, f"learned block has {len(rules)} rules, over the "
                         f"limit of {max_lines}; delete or merge rules"))
    size = sum(len(line) for line in inner)
    if size > max_chars:
        problems.append((block.start + 1, f"learned block has {size} characters, over the "
                         f"limit of {max_chars}; shorten it"))
    return problems


def clean_content(content: str) -> tuple[list[str], str | None]:
    """Rule lines from edit content, or a reason it cannot be written into the block."""
    if _MARKER_HINT.search(content):
        return [], "content contains learned-block markers"
    if "<!--" in content or "-->" in content:
        return [], "content contains HTML comment markers"
    # Invisible characters are refused. Control characters are stripped below; the epoch's
    # secret check reads text without them, so stripping cannot join a split secret.
    hostile = invisible_problem(_CONTROL.sub("", content)) or unsafe_link_problem(content)
    if hostile:
        return [], hostile
    lines = []
    for raw in content.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _rule_text(_CONTROL.sub("", raw).replace("\t", " "))
        if not line:
            continue
        if set(line) <= {"-"} or set(line) <= {"="}:
            return [], "content contains a frontmatter fence or rule line"
        lines.append(line)
    if not lines:
        return [], "content is empty"
    return lines, None


def anchor_names_a_rule(rules: Sequence[str], anchor: str) -> bool:
    """Whether `anchor` names at least one of `rules`, as `apply_edits` matches anchors."""
    want = rule_key(anchor)
    return bool(want) and any(want in rule_key(rule) for rule in rules)


def _match(rule_lines: list[tuple[int, str]], anchor: str) -> tuple[int | None, str]:
    """The one rule line an anchor names, or the reason there is not exactly one."""
    want = rule_key(anchor)
    if not want:
        return None, "empty anchor"
    exact = [i for i, line in rule_lines if rule_key(line) == want]
    if len(exact) == 1:
        return exact[0], ""
    partial = [i for i, line in rule_lines if want in rule_key(line)]
    if len(partial) == 1:
        return partial[0], ""
    if not partial:
        return None, "anchor matches no rule in the learned block"
    return None, f"anchor matches {len(partial)} rules; quote one rule exactly"


def _new_block(nl: str) -> list[str]:
    return [START + nl, HEADING + nl, nl, END + nl]


def apply_edits(
    text: str,
    edits: Iterable[Edit],
    *,
    max_lines: int = 40,
    max_chars: int = 4000,
    where: str = "document",
) -> tuple[str, list[EditOutcome]]:
    """Apply edits to the block (created at the end when needed); report each outcome.

    An edit that cannot apply exactly (no anchor match, several matches, a duplicate,
    over the size cap, unsafe content) is `unmatched` and changes nothing.
    """
    edits = list(edits)
    nl = newline_of(text)
    lines = split_lines(text)
    block = find_block(text, where=where)
    created = False
    if block is None:
        if not edits:
            return text, []
        prefix = [] if not lines or lines[-1].endswith("\n") else [nl]
        # A fence never closed runs to the end: close it first, or the new block would be
        # code (text, not a block). The fence shows the same; the original bytes are kept.
        fence = _code(lines).open_fence
        close = [fence[1] + nl] if fence is not None else []
        separator = [nl] if lines else []
        lines = lines + prefix + close + separator + _new_block(nl)
        block = Block(len(lines) - 4, len(lines) - 1)
        created = True
    head, tail = lines[: block.start + 1], lines[block.end :]
    inner = lines[block.start + 1 : block.end]
    outcomes: list[EditOutcome] = []
    for edit in edits:
        inner, outcome = _apply_one(inner, edit, nl, max_lines, max_chars)
        outcomes.append(outcome)
    if created and not any(o.status == "applied" for o in outcomes):
        return text, outcomes
    new = "".join(head + inner + tail)
    problems = structure_problems(new)
    if problems:  # never hand on a block that a later reader (no file name) would refuse
        line, message = problems[0]
        why = (f"the edits would leave the learned block unsound ({where}, line {line} "
               f"after editing: {message}); nothing written")
        return text, [EditOutcome(o.edit, "unmatched", why) if o.status == "applied" else o
                      for o in outcomes]
    return new, outcomes


def _apply_one(
    inner: list[str], edit: Edit, nl: str, max_lines: int, max_chars: int
) -> tuple[list[str], EditOutcome]:
    def unmatched(reason: str) -> tuple[list[str], EditOutcome]:
        return inner, EditOutcome(edit, "unmatched", reason)

    rule_lines = [(i, inner[i]) for i in _rule_indexes(inner)]
    new_lines: list[str] = []
    if edit.op == "template":
        result, problem = _with_template(inner, edit.content, nl)
        if problem:
            return unmatched(problem)
    elif edit.op in ("add", "replace"):
        contents, problem = clean_content(edit.content)
        if problem:
            return unmatched(problem)
        existing = {rule_key(line) for _, line in rule_lines}
        if len({rule_key(c) for c in contents}) < len(contents):
            return unmatched("content repeats a line")
        new_lines = [f"- {c}{nl}" for c in contents]
    if edit.op == "template":
        pass
    elif edit.op == "add":
        if any(rule_key(line) in existing for line in new_lines):
            return unmatched("rule is already in the learned block")
        span = _template_span(inner)
        if not rule_lines and span is not None:  # the first rule goes above the template
            result = inner[: span[0]] + new_lines + [nl] + inner[span[0]:]
        else:
            at = rule_lines[-1][0] + 1 if rule_lines else _end_of_content(inner)
            result = inner[:at] + new_lines + inner[at:]
    elif edit.op in ("replace", "delete"):
        anchor = edit.anchor or (edit.content if edit.op == "delete" else "")
        index, reason = _match(rule_lines, anchor)
        if index is None:
            return unmatched(reason)
        if edit.op == "replace":
            others = {rule_key(line) for i, line in rule_lines if i != index}
            if any(rule_key(line) in others for line in new_lines):
                return unmatched("replacement duplicates another rule")
            if [rule_key(x) for x in new_lines] == [rule_key(inner[index])]:
                return unmatched("replacement is identical to the rule")
        result = inner[:index] + new_lines + inner[index + 1 :]
    else:
        return unmatched(f"unknown op {edit.op!r}; use add, replace, delete or template")
    rules = len(_rule_indexes(result))
    if rules > max_lines:
        return unmatched(f"learned block would have {rules} rules (limit {max_lines})")
    if sum(len(line) for line in result) > max_chars:
        return unmatched(f"learned block would exceed {max_chars} characters")
    return result, EditOutcome(edit, "applied")


def template_lines(content: str) -> tuple[list[str], str | None]:
    """The skeleton's lines (inner blank lines kept), or why it cannot be a template."""
    if _MARKER_HINT.search(content):
        return [], "template contains learned-block markers"
    if "<!--" in content or "-->" in content:
        return [], "template contains HTML comment markers"
    lines = [_CONTROL.sub("", raw).replace("\t", " ").rstrip()
             for raw in content.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return [], "template is empty"
    if any(_FENCE.match(line) for line in lines):
        return [], "template contains a ``` fence line; give only the skeleton's lines"
    return lines, None


def _with_template(inner: list[str], content: str, nl: str) -> tuple[list[str], str | None]:
    """The inner lines with the template put in (or in place of the one there)."""
    lines, problem = template_lines(content)
    if problem:
        return inner, problem
    region = [TEMPLATE_INTRO + nl, "```" + nl] + [line + nl for line in lines] + ["```" + nl]
    span = _template_span(inner)
    if span is not None:
        if [x.rstrip("\r\n") for x in inner[span[0]:span[1]]] == [
                x.rstrip("\r\n") for x in region]:
            return inner, "template is already in the learned block"
        return inner[: span[0]] + region + inner[span[1]:], None
    at = len(inner)
    while at > 0 and not inner[at - 1].strip():
        at -= 1
    return inner[:at] + ([nl] if at else []) + region, None


def _end_of_content(inner: list[str]) -> int:
    """Where a first rule goes: after the last non-blank line of the block."""
    at = len(inner)
    while at > 0 and not inner[at - 1].strip():
        at -= 1
    if at == 0:
        return 0
    # keep one blank line between a heading or prose and the first rule
    return at + 1 if at < len(inner) else at
