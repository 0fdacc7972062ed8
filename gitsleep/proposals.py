"""Optimizer replies turned into clean edits: tolerant parsing, then hygiene.

Small local models rarely return clean JSON. Against Qwen2.5-Coder 0.5B/1.5B more than
half the replies of an older engine were thrown away: regex backslashes left unescaped
inside JSON strings, unquoted keys, several fenced arrays, one object instead of an
array, prose around the JSON. `parse_reply` reads all of those. Parsing is a chain, each
step tried only when the one before failed:

1. fenced ```json blocks (several are merged in order), else the first balanced JSON
   value in the text (found with a bracket matcher that knows about strings);
2. `json.loads` as written;
3. our own repairs, which keep the meaning: unescaped backslashes inside strings
   (`\\s` in a regex becomes a literal backslash-s), trailing commas, single-quoted
   strings, unquoted keys, Python's True/False/None;
4. the `json-repair` library, for damage we cannot fix by rule: quotes left unescaped
   inside a string (`"Always include "Confidence:" here"`), missing commas between
   items, comments.

A reply cut off by the token limit keeps its complete edits; the edit it ended inside is
dropped, never applied half-written.

`check_hygiene` then rejects edits that are not real rules: placeholder echoes, copies
of a task prompt, rules that contradict the failing check they should fix, marker text,
frontmatter fences, control characters, over-long content, duplicates.

Multi-line content: an edit whose content has several lines stands for several rules.
Each non-empty line becomes its own bullet in the learned block (a leading `- ` is not
doubled), and the edit is applied, and judged by hygiene, all or nothing: one bad line
rejects the whole edit. A line that starts with `#` is kept as rule text (`- ## Impact`),
never turned into a heading of the block. A placeholder inside a line (`Severity: <1-4>`)
is a placeholder echo, unless it can be filled from a failing check: `<1-4>` becomes `1`
and `<low|high>` becomes `low` when the filled line then satisfies a failing `contains`
or `regex` check (the kept edit carries the filled text and says so in its rationale).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import json_repair
import regex

from gitsleep import judges
from gitsleep.models import EDIT_OPS, Check, Edit, EditOutcome

try:  # Python 3.11+
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

# --------------------------------------------------------------------------------------
# What we ask for
# --------------------------------------------------------------------------------------

# Flat and strict-mode compatible: every field required, no extra keys, no defaults.
EDITS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": list(EDIT_OPS)},
                    "content": {"type": "string"},
                    "anchor": {"type": "string"},
                    "rationale": {"type": "string"},
                },
                "required": ["op", "content", "anchor", "rationale"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["edits"],
    "additionalProperties": False,
}
# The canonical text, for `ModelCall.json_schema` (part of the cache key).
EDITS_SCHEMA_JSON = json.dumps(EDITS_SCHEMA, sort_keys=True, separators=(",", ":"))

# The example strings the reflection prompt shows in its output shape (the ones
# `reflect.SYSTEM` uses). Small models copy them verbatim, so hygiene rejects any edit
# that echoes one; build the prompt from these names so the two cannot drift apart.
EXAMPLE_CONTENT = "<one rule>"
EXAMPLE_NEW_CONTENT = "<new rule>"
EXAMPLE_ANCHOR = "<an existing rule, quoted exactly>"
EXAMPLE_RATIONALE = "<why>"
PROMPT_EXAMPLE_TEXTS: tuple[str, ...] = (
    EXAMPLE_CONTENT,
    EXAMPLE_NEW_CONTENT,
    EXAMPLE_ANCHOR,
    EXAMPLE_RATIONALE,
)
# A whole example reply built from those strings, ready to paste into a prompt.
PROMPT_EXAMPLE_REPLY = json.dumps(
    {
        "edits": [
            {"op": "add", "content": EXAMPLE_CONTENT, "anchor": "", "rationale": EXAMPLE_RATIONALE},
            {
                "op": "replace",
                "content": EXAMPLE_NEW_CONTENT,
                "anchor": EXAMPLE_ANCHOR,
                "rationale": EXAMPLE_RATIONALE,
            },
            {
                "op": "delete",
                "content": "",
                "anchor": EXAMPLE_ANCHOR,
                "rationale": EXAMPLE_RATIONALE,
            },
        ]
    },
    indent=2,
)

# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------

WRAPPER_KEYS = ("edits", "changes", "rules")
_OP_KEYS = ("op", "operation", "action")
_CONTENT_KEYS = ("content", "rule", "text")
_RATIONALE_KEYS = ("rationale", "reason", "why")
_OP_ALIASES = {
    "append": "add",
    "insert": "add",
    "update": "replace",
    "modify": "replace",
    "change": "replace",
    "remove": "delete",
}
_EDIT_KEYS = frozenset(_OP_KEYS + _CONTENT_KEYS + ("anchor",))
_JSON_FENCE_LANGS = ("", "json", "json5", "jsonc", "js", "javascript")
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
# Where a JSON value plausibly starts: `[` before a value, `{` before a key or `}`.
_JSON_START = re.compile(r"""\[\s*[\[{"'\]]|\{\s*(?:["'}]|[A-Za-z_$][\w$-]*\s*:)""")
_MAX_STARTS = 25  # candidate start positions tried per text: keeps junk replies cheap
_MAX_CHARS = 50_000  # longer replies are read up to here
# json-repair slows down sharply on long, badly broken input (seconds at 8k characters of
# nested quotes); real edit lists are a few thousand characters, so longer values get our
# own repairs only.
_JSON_REPAIR_MAX = 8_000
_MAX_SALVAGE_CALLS = 4  # json-repair calls per reply
_CLOSER = {"[": "]", "{": "}"}
_HINTS = {
    "Invalid \\escape": "write each backslash inside a JSON string as \\\\",
    "Expecting property name enclosed in double quotes": "put every key in double quotes",
    "Expecting ',' delimiter": "separate items with commas and escape quotes inside strings",
    "Unterminated string": "close every string with a double quote",
}


@dataclass
class ParsedReply:
    """What one optimizer reply yielded.

    `error` is set only when nothing at all could be read; it is written for the model,
    which sees it on one retry. `repairs` lists what had to be fixed, for diagnostics.
    """

    edits: list[Edit] = field(default_factory=list)
    dropped: list[EditOutcome] = field(default_factory=list)
    error: str | None = None
    repairs: list[str] = field(default_factory=list)


@dataclass
class _Scan:
    """Where a bracketed value starting at some index ends, or how it was left open."""

    end: int | None  # index after the closing bracket; None when the text ran out
    stack: str = ""  # brackets still open when the text ran out
    opened_at: tuple[int, ...] = ()  # where each of those brackets opened
    in_string: bool = False
    last_comma: dict[int, int] = field(default_factory=dict)  # depth -> last comma index


@dataclass
class _Found:
    """Raw items read from a reply, before they become edits."""

    items: list[Any] = field(default_factory=list)
    cut_off: list[str] = field(default_factory=list)  # text of items the reply ended inside
    repairs: list[str] = field(default_factory=list)
    complete: bool = False  # at least one edit-shaped value was read
    truncated: bool = False  # the reply ended inside a JSON value
    errors: list[str] = field(default_factory=list)  # why candidates did not read
    salvage_calls: int = 0

    def salvage(self) -> bool:
        """Whether json-repair may still be tried: it is slow on long junk, so a few times."""
        self.salvage_calls += 1
        return self.salvage_calls <= _MAX_SALVAGE_CALLS


def parse_reply(raw: str, *, target: str, budget: int) -> ParsedReply:
    """Edits from an optimizer reply, however it was wrapped; never raises."""
    text = (raw or "")[:_MAX_CHARS]
    if not text.strip():
        return ParsedReply(error='the reply was empty; reply with a JSON object {"edits": [...]}')
    found = _Found()
    for block, offset in _fenced_json_blocks(text):
        _read_values(block, offset, text, found)
    if not found.complete and not found.truncated and not found.cut_off:
        found = _Found(errors=found.errors, salvage_calls=found.salvage_calls)
        _read_values(text, 0, text, found)
    result = ParsedReply(repairs=sorted(set(found.repairs)))
    if not found.complete:
        result.error = _no_edits_error(found, text)
        if len(raw) > _MAX_CHARS:
            result.error = (
                f"the reply is longer than {_MAX_CHARS} characters and holds no readable "
                "edit list near its start; reply with only the JSON edit list"
            )
    seen: set[tuple[str, str, str, str]] = set()
    for item in found.items:
        edit, reason = _edit_from_item(item, target)
        if not reason and edit.key() in seen:
            reason = "repeats an earlier edit in this reply"
        elif not reason and len(result.edits) >= budget:
            reason = f"over the edit budget ({budget})"
        if reason:
            result.dropped.append(EditOutcome(edit, "unmatched", reason))
        else:
            seen.add(edit.key())
            result.edits.append(edit)
    for partial in found.cut_off:
        reason = "the reply was cut off inside this edit"
        result.dropped.append(EditOutcome(_partial_edit(partial, target), "unmatched", reason))
    return result


def _fenced_json_blocks(text: str) -> list[tuple[str, int]]:
    """The bodies of ``` fences that may hold JSON, with their offsets in the reply."""
    blocks = []
    for match in _FENCE.finditer(text):
        if match.group(1).lower() in _JSON_FENCE_LANGS:
            blocks.append((match.group(2), match.start(2)))
    return blocks


def _read_values(text: str, offset: int, reply: str, found: _Found) -> None:
    """Add the items of the first edit-shaped JSON value in `text` to `found`.

    A run of single edit objects one after another (JSON lines) is read as a list. A
    value the text ends inside counts only when it holds a complete edit or nothing
    else is found: an unclosed bracket in prose must not hide the real list after it.
    """
    pos, tries = 0, 0
    single_run = False
    unfinished: str | None = None  # the first value the text ended inside, if any
    while tries < _MAX_STARTS:
        match = _JSON_START.search(text, pos)
        if match is None:
            break
        tries += 1
        start = match.start()
        scan = _scan(text, start)
        if scan.end is None:
            if single_run:
                found.cut_off.append(text[start:])
                return
            if _read_cut_off(text, start, scan, found):
                return
            if unfinished is None:
                unfinished = text[start:]
            pos = start + 1
            continue
        value, repairs, error = _load(text[start : scan.end], salvage=found.salvage())
        items = _items_of(value, salvaged="json-repair" in repairs)
        if single_run and not (isinstance(value, dict) and items == [value]):
            return  # the run of single edit objects ended
        if items is None:
            problems = []
            if error is not None:
                problems.append("could not read the JSON: " + _locate(error, offset + start, reply))
            if value is not None:
                problems.append(f"the JSON is not an edit list ({_describe_value(value)})")
            found.errors.append("; ".join(problems) or "could not read the JSON")
            pos = start + 1
            continue
        found.items.extend(items)
        found.repairs.extend(repairs)
        found.complete = True
        if not (isinstance(value, dict) and items == [value]):
            return
        single_run = True
        pos = scan.end
    if unfinished is not None and not found.complete:
        found.truncated = True
        found.cut_off.append(unfinished)


def _scan(text: str, start: int) -> _Scan:
    """Match the bracket at `start`, skipping brackets inside strings.

    A single quote opens a string only where a key or value may start, so an apostrophe
    in unquoted text does not swallow the rest. A closer that does not match closes the
    inner brackets it skips (repair later reads what it can).
    """
    stack: list[str] = []
    opened: list[int] = []
    last_comma: dict[int, int] = {}
    quote = ""
    prev = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch == '"' or (ch == "'" and prev in "[{,:"):
            quote = ch
        elif ch in "[{":
            stack.append(ch)
            opened.append(i)
        elif ch in "]}":
            if ch in (_CLOSER[b] for b in stack):
                while _CLOSER[stack.pop()] != ch:
                    opened.pop()
                opened.pop()
                if not stack:
                    return _Scan(i + 1)
        elif ch == ",":
            last_comma[len(stack)] = i
        if not quote and not ch.isspace():
            prev = ch
        i += 1
    return _Scan(None, "".join(stack), tuple(opened), bool(quote), last_comma)


def _read_cut_off(text: str, start: int, scan: _Scan, found: _Found) -> bool:
    """Read the complete items of a value the reply ended inside; keep the rest aside.

    Items sit directly inside the outermost open list; the text is cut after the last
    item that closed and the open brackets are closed for it. False when no complete
    edit was found (and nothing was added).
    """
    list_depth = scan.stack.find("[") + 1
    if list_depth == 0:  # no list open: at most one object, cut off
        return False
    list_open = scan.opened_at[list_depth - 1]
    if len(scan.stack) == list_depth and not scan.in_string:
        cut = len(text)  # ended between items
    else:
        comma = scan.last_comma.get(list_depth, -1)
        cut = comma if comma > list_open else list_open + 1
    closers = "".join(_CLOSER[b] for b in reversed(scan.stack[:list_depth]))
    complete_part = text[start:cut].rstrip().rstrip(",") + closers
    value, repairs, _error = _load(complete_part, salvage=found.salvage())
    items = _items_of(value, salvaged="json-repair" in repairs)
    if not items:
        return False
    found.items.extend(items)
    found.repairs.extend([*repairs, "cut-off reply"])
    found.complete = found.truncated = True
    rest = text[cut:].lstrip(", \t\r\n")
    if rest.strip():
        found.cut_off.append(rest)
    return True


def _load(text: str, *, salvage: bool = True) -> tuple[Any, list[str], json.JSONDecodeError | None]:
    """Parse JSON as written, then with our repairs, then (if `salvage`) with json-repair."""
    try:
        return json.loads(text, strict=False), [], None
    except json.JSONDecodeError as exc:
        error = exc
    except RecursionError:
        return None, [], None
    repaired, repairs = _repair_syntax(text)
    if repairs:
        try:
            return json.loads(repaired, strict=False), repairs, error
        except (json.JSONDecodeError, RecursionError):
            pass
    value = None
    if salvage and len(repaired) <= _JSON_REPAIR_MAX:
        try:
            value = json_repair.repair_json(repaired, return_objects=True)
        except Exception:  # a heuristic library must not take the whole parse down with it
            value = None
    if isinstance(value, (list, dict)):
        return value, [*repairs, "json-repair"], error
    return None, repairs, error


def _repair_syntax(text: str) -> tuple[str, list[str]]:
    """Fix what small models get wrong in JSON syntax, without guessing at meaning."""
    out: list[str] = []
    repairs: set[str] = set()
    quote = ""
    prev = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                nxt = text[i + 1] if i + 1 < n else ""
                if nxt == "'":
                    out.append("'")  # \' is not a JSON escape
                    i += 2
                    continue
                if nxt and nxt in '"\\/bfnrt' or (nxt == "u" and _is_hex4(text, i + 2)):
                    out.append(ch + nxt)
                    i += 2
                    continue
                out.append("\\\\")  # a lone backslash: keep it as a character
                repairs.add("escaped backslashes")
                i += 1
                continue
            if ch == quote:
                out.append('"')
                quote = ""
            elif ch == '"':  # a double quote inside a single-quoted string
                out.append('\\"')
            else:
                out.append(ch)
            i += 1
            continue
        if ch == '"' or (ch == "'" and prev in "[{,:"):
            quote = ch
            if ch == "'":
                repairs.add("single quotes")
            out.append('"')
        elif ch == ",":
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            if j < n and text[j] in "]}":
                repairs.add("trailing commas")
            else:
                out.append(ch)
        elif ch.isalpha() or ch in "_$":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_$-"):
                j += 1
            word = text[i:j]
            k = j
            while k < n and text[k] in " \t":
                k += 1
            if k < n and text[k] == ":" and prev in "{,":
                out.append(json.dumps(word))
                repairs.add("unquoted keys")
            elif word in ("True", "False", "None"):
                out.append({"True": "true", "False": "false", "None": "null"}[word])
                repairs.add("Python literals")
            else:
                out.append(word)
            prev = word[-1]
            i = j
            continue
        else:
            out.append(ch)
        if not ch.isspace():
            prev = ch
        i += 1
    return "".join(out), sorted(repairs)


def _is_hex4(text: str, at: int) -> bool:
    return len(text) >= at + 4 and all(c in "0123456789abcdefABCDEF" for c in text[at : at + 4])


def _is_edit_object(value: Any) -> bool:
    return isinstance(value, dict) and bool(_EDIT_KEYS & {str(k).strip().lower() for k in value})


def _items_of(value: Any, *, salvaged: bool = False) -> list[Any] | None:
    """The raw edit items of a parsed value, or None when it is not edit-shaped.

    A bare list counts when it is empty or holds an edit object or, unless json-repair
    salvaged it (which turns bracketed prose into strings), a plain string.
    """
    if isinstance(value, list):
        if salvaged:
            value = [v for v in value if isinstance(v, dict)]
            return value if any(_is_edit_object(v) for v in value) else None
        if not value or any(isinstance(v, str) or _is_edit_object(v) for v in value):
            return value
        return None
    if isinstance(value, dict):
        keys = {str(k).strip().lower(): v for k, v in value.items()}
        for name in WRAPPER_KEYS:
            inner = keys.get(name)
            if isinstance(inner, list):
                return inner
            if isinstance(inner, (dict, str)):
                return [inner]
        if _is_edit_object(value):
            return [value]
    return None


def _field(fields: dict[str, Any], names: Sequence[str]) -> tuple[bool, Any]:
    for name in names:
        if name in fields:
            return True, fields[name]
    return False, None


def _as_text(value: Any) -> str | None:
    """A field's text: strings as written, lists joined by lines; None when not text."""
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        value = "\n".join(str(v) for v in value)
    elif isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        return None
    # A backspace or form feed decoded from JSON was nearly always a regex \b or \f
    # written without doubling the backslash.
    value = value.replace("\x08", "\\b").replace("\x0c", "\\f")
    return value.replace("\r\n", "\n").strip()


def _edit_from_item(item: Any, target: str) -> tuple[Edit, str]:
    """One raw item as an Edit, with the reason it is unusable ('' when usable)."""
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, dict):
        return Edit(op="", content=_short(item), target=target), "not an edit object"
    fields = {str(k).strip().lower(): v for k, v in item.items()}
    has_op, op_value = _field(fields, _OP_KEYS)
    content = _as_text(_field(fields, _CONTENT_KEYS)[1])
    anchor = _as_text(fields.get("anchor"))
    rationale = _as_text(_field(fields, _RATIONALE_KEYS)[1]) or ""
    op_text = "" if op_value is None else str(op_value).strip()
    shown = Edit(
        op=op_text,
        content=content if content is not None else _short(fields.get("content")),
        anchor=anchor if anchor is not None else _short(fields.get("anchor")),
        rationale=rationale,
        target=target,
    )
    if content is None:
        return shown, "content is not text"
    if anchor is None:
        return shown, "anchor is not text"
    if not has_op or not op_text:
        if not content:
            return shown, "no op and no content"
        op = "add"
    else:
        op = _OP_ALIASES.get(op_text.lower(), op_text.lower())
    if op not in EDIT_OPS:
        return shown, f"unknown op {op_text!r}; use add, replace or delete"
    if op == "delete" and not anchor:
        anchor, content = content, ""  # the line to delete was given as content
    edit = Edit(op=op, content=content, anchor=anchor, rationale=rationale, target=target)
    if op == "add" and not content:
        return edit, "add without content"
    if op == "replace" and not anchor:
        return edit, "replace without an anchor (the learned rule to change)"
    if op == "replace" and not content:
        return edit, "replace without content; use delete to remove a rule"
    if op == "delete" and not anchor:
        return edit, "delete without an anchor (the learned rule to delete)"
    return edit, ""


def _partial_edit(text: str, target: str) -> Edit:
    """What can be read of an edit the reply ended inside, for the record only."""
    value, _repairs, _error = _load(text[:2000])
    if isinstance(value, dict):
        fields = {str(k).strip().lower(): v for k, v in value.items()}
        return Edit(
            op=_short(_field(fields, _OP_KEYS)[1] or ""),
            content=_short(_field(fields, _CONTENT_KEYS)[1] or ""),
            anchor=_short(fields.get("anchor") or ""),
            target=target,
        )
    return Edit(op="", content=_short(text), target=target)


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _locate(error: json.JSONDecodeError, offset: int, reply: str) -> str:
    """A decode error with its line and column in the whole reply, plus a hint."""
    pos = offset + error.pos
    line = reply.count("\n", 0, pos) + 1
    column = pos - (reply.rfind("\n", 0, pos) + 1) + 1
    message = f"{error.msg} at line {line} column {column}"
    for start, hint in _HINTS.items():
        if error.msg.startswith(start):
            return f"{message} ({hint})"
    return message


def _describe_value(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(json.dumps(str(k)) for k in list(value)[:6])
        return f"found an object with keys {keys}" if keys else "found an empty object"
    if isinstance(value, list):
        return f"found a list of {len(value)} item(s), none of them an edit object"
    return f"found {type(value).__name__}"


def _no_edits_error(found: _Found, text: str) -> str:
    shape = '{"edits": [{"op": "add", "content": "...", "anchor": "", "rationale": "..."}]}'
    if found.truncated or found.cut_off:
        return (
            f"the reply was cut off after {len(text)} characters, before the first edit "
            "was complete; reply with fewer, shorter edits"
        )
    if found.errors:
        return f"{found.errors[0]}; reply with only {shape}"
    return f"no JSON found in the reply; reply with only {shape}"


# --------------------------------------------------------------------------------------
# Hygiene
# --------------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_MARKER_TEXT = re.compile(r"gitsleep\s*:\s*learned", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^(?:-{3,}|={3,})$")
_BULLET = re.compile(r"^\s*[-*+]\s+")
_ANGLE = re.compile(r"<([^<>\s]|[^<>\s][^<>\n]{0,58}[^<>\s])>")
_WORD_PLACEHOLDER = re.compile(r"\b(?:TODO|TBD|FIXME)\b|\.\.\.|…")
_CURLY_PLACEHOLDER = re.compile(
    r"\{\s*(?:rule|text|content|anchor|rationale|reason|placeholder)\s*\}", re.IGNORECASE
)
_PLACEHOLDER_WORDS = frozenset(
    {"rule", "rules", "text", "content", "anchor", "rationale", "reason", "why", "line",
     "value", "name", "number", "n", "x", "y", "heading", "section", "placeholder",
     "example", "string", "op", "edit", "...", "…"}
)
_RANGE_PLACEHOLDER = re.compile(r"^\s*(\d+)\s*(?:-|–|\.\.)\s*\d+\s*$")
_WORDS = re.compile(r"\w+")

_NEGATIVE_CUES = (
    r"never|don'?t|do\s+not|doesn'?t|does\s+not|avoid|omit|must\s+not|mustn'?t|should\s+not"
    r"|shouldn'?t|no\s+longer|remove|exclude|leave\s+out|drop|skip|without|stop|forget"
    r"|neglect|fail\s+to"
)
_POSITIVE_CUES = (
    r"always|include|add|use|say|write|mention|start\s+with|begin\s+with|end\s+with|state"
    r"|put|show|output|print|give|must|should|need|require"
)
_CUE = re.compile(rf"\b(?:(?P<neg>{_NEGATIVE_CUES})|(?P<pos>{_POSITIVE_CUES}))\b", re.IGNORECASE)
_CLAUSE_SPLIT = re.compile(r"(?<=[.;!?])\s+|\s+but\s+", re.IGNORECASE)
_UPPER_BOUND = re.compile(
    r"\b(?:under|at most|no more than|fewer than|less than|maximum of|max(?:imum)?)\s+(\d+)\s+"
    r"(?:characters|chars)\b",
    re.IGNORECASE,
)
_LOWER_BOUND = re.compile(
    r"\b(?:at least|minimum of|min(?:imum)?)\s+(\d+)\s+(?:characters|chars)\b",
    re.IGNORECASE,
)


def check_hygiene(
    edits: list[Edit],
    *,
    failing_checks: Sequence[Check],
    task_prompts: Sequence[str],
    current_rules: Sequence[str],
    max_chars: int = 500,
    contradiction_checks: Sequence[Check] | None = None,
) -> tuple[list[Edit], list[EditOutcome]]:
    """Keep the edits that read as real rules; reject the rest with a reason.

    `failing_checks` are the rule checks the shown train failures failed; `task_prompts`
    every prompt the optimizer may have seen (passing all prompts is safest);
    `current_rules` the learned rules of the target document. Kept edits come back in
    order, a placeholder filled from a failing check included (see the module notes).
    `contradiction_checks` (default: `failing_checks`) are the checks an edit must not
    contradict: pass only the common ones, so one odd task cannot veto a rule most
    failures need (the gate judges such conflicts on val).
    """
    kept: list[Edit] = []
    rejected: list[EditOutcome] = []
    existing = {_norm_rule(rule): rule for rule in current_rules if _norm_rule(rule)}
    prompts = [words for words in (_words(p) for p in task_prompts) if words]
    earlier: set[str] = set()
    for edit in edits:
        checked, problem = _hygiene_problem(
            edit, failing_checks, prompts, existing, earlier, max_chars,
            failing_checks if contradiction_checks is None else contradiction_checks,
        )
        if problem:
            rejected.append(EditOutcome(edit, "rejected", problem))
            continue
        kept.append(checked)
        earlier.update(_norm_rule(line) for line in _content_lines(checked.content))
    return kept, rejected


def _hygiene_problem(
    edit: Edit,
    failing: Sequence[Check],
    prompts: list[list[str]],
    existing: dict[str, str],
    earlier: set[str],
    max_chars: int,
    contradicted: Sequence[Check],
) -> tuple[Edit, str]:
    """The edit (a placeholder maybe filled) and the first reason to reject it, or ''."""
    if edit.op in ("replace", "delete"):
        token = _angle_placeholder(edit.anchor, failing)
        if token or _echoes_example(edit.anchor):
            return edit, f"anchor is a placeholder ({token or edit.anchor}), not a learned rule"
    if edit.op == "delete":
        return edit, ""
    content = edit.content
    if not content.strip():
        return edit, "content is empty"
    if _CONTROL.search(content):
        return edit, "content contains control characters"
    if _MARKER_TEXT.search(content):
        return edit, "content contains the learned-block marker text (gitsleep:learned)"
    if "<!--" in content or "-->" in content:
        return edit, "content contains an HTML comment marker"
    lines = _content_lines(content)
    for line in lines:
        if _FENCE_LINE.match(line):
            return edit, f"content has a line {line!r} (a frontmatter fence or underline)"
    if len(content) > max_chars:
        return edit, f"content is {len(content)} characters, over the limit of {max_chars}"
    if _echoes_example(content):
        return edit, "content copies the prompt's example text"
    filled_lines, token = _fill_placeholders(lines, failing)
    if token:
        return edit, f"content echoes a placeholder ({token}) instead of a concrete rule"
    if filled_lines != lines:
        content = "\n".join(filled_lines)
        rationale = f"{edit.rationale} (placeholder filled from a failing check)".strip()
        edit = Edit(edit.op, content, edit.anchor, rationale, edit.target)
        lines = filled_lines
    content_words = _words(content)
    for words in prompts:
        if _copies_prompt(content_words, words):
            return edit, "content copies a task prompt instead of stating a rule"
    for line in lines:
        for check in contradicted:
            if _contradicts(line, check):
                return edit, f"content contradicts a failing check: {describe_check(check)}"
    return edit, _duplicate_problem(edit, lines, existing, earlier)


def _content_lines(content: str) -> list[str]:
    """The rule lines an edit's content stands for: non-empty, without a leading bullet."""
    lines = []
    for raw in content.split("\n"):
        line = _BULLET.sub("", raw, count=1).strip()
        if line:
            lines.append(line)
    return lines


def _norm_rule(text: str) -> str:
    return " ".join(_BULLET.sub("", text, count=1).casefold().split()).rstrip(".")


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.casefold())


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _echoes_example(text: str) -> bool:
    """The prompt's example text, brackets and all, or its words: all of a short one,
    a run of a longer one (so a rule may still say "one rule per line")."""
    folded, words = text.casefold(), _words(text)
    for example in PROMPT_EXAMPLE_TEXTS:
        example_words = _words(example)
        if example.casefold() in folded or words == example_words:
            return True
        if len(example_words) >= 4 and _contains_run(words, example_words):
            return True
    return False


def _copies_prompt(content_words: list[str], prompt_words: list[str]) -> bool:
    """Equal, containing a whole prompt (4+ words), or 80% of its words in order (6+)."""
    if content_words == prompt_words:
        return True
    if len(prompt_words) >= 4 and _contains_run(content_words, prompt_words):
        return True
    if len(prompt_words) >= 6:
        matcher = difflib.SequenceMatcher(None, prompt_words, content_words, autojunk=False)
        shared = sum(block.size for block in matcher.get_matching_blocks())
        return shared >= 0.8 * len(prompt_words)
    return False


def _required_by(token: str, failing: Sequence[Check]) -> bool:
    """A placeholder-looking text that a failing check asks for literally is not an echo."""
    return any(c.op == "contains" and token.casefold() in str(c.arg).casefold() for c in failing)


def _is_placeholder_angle(inner: str) -> bool:
    stripped = inner.strip()
    if any(c in stripped for c in '="/:@') or not stripped:
        return False  # an HTML tag with attributes, a closing tag, an autolink
    return (
        stripped.casefold() in _PLACEHOLDER_WORDS
        or " " in stripped
        or "|" in stripped
        or bool(_RANGE_PLACEHOLDER.match(stripped))
        or (stripped.isupper() and len(stripped) <= 12)
    )


def _angle_placeholder(text: str, failing: Sequence[Check]) -> str:
    for match in _ANGLE.finditer(text):
        if _is_placeholder_angle(match.group(1)) and not _required_by(match.group(0), failing):
            return match.group(0)
    return ""


def _placeholder_in(text: str, failing: Sequence[Check]) -> str:
    """The first placeholder in `text` that no failing check asks for, or ''."""
    token = _angle_placeholder(text, failing)
    if token:
        return token
    for pattern in (_WORD_PLACEHOLDER, _CURLY_PLACEHOLDER):
        for match in pattern.finditer(text):
            if not _required_by(match.group(0), failing):
                return match.group(0)
    return ""


def _fill_value(inner: str) -> str | None:
    """The value a fillable placeholder stands for: the low end of a range, a first option."""
    match = _RANGE_PLACEHOLDER.match(inner)
    if match:
        return match.group(1)
    if "|" in inner:
        first = inner.split("|")[0].strip()
        return first if first and re.fullmatch(r"[\w .%+-]+", first) else None
    return None


def _fill_placeholders(lines: list[str], failing: Sequence[Check]) -> tuple[list[str], str]:
    """Lines with fillable placeholders filled, or the first placeholder that is not."""
    out = []
    for line in lines:
        token = _placeholder_in(line, failing)
        if not token:
            out.append(line)
            continue
        filled = line
        for match in _ANGLE.finditer(line):
            if not _is_placeholder_angle(match.group(1)) or _required_by(match.group(0), failing):
                continue
            value = _fill_value(match.group(1))
            if value is None:
                return lines, match.group(0)
            filled = filled.replace(match.group(0), value, 1)
        leftover = _placeholder_in(filled, failing)
        if leftover:
            return lines, leftover
        if not any(_satisfies(check, filled) for check in failing):
            return lines, token
        out.append(filled)
    return out, ""


def _satisfies(check: Check, text: str) -> bool:
    """Whether `text` alone meets a content check (used to confirm a filled placeholder)."""
    arg = "" if check.arg is None else str(check.arg)
    if check.op == "contains":
        return bool(arg) and arg.casefold() in text.casefold()
    if check.op == "regex":
        return _search(arg, text) is not None
    return False


def _search(pattern: str, text: str) -> Any:
    """`pattern` searched in `text` as the judge does it: task regexes are untrusted, so
    the search is bounded in time. None on no match, an invalid pattern or a timeout."""
    try:
        return judges.compile_pattern(pattern).search(text, timeout=judges.REGEX_TIMEOUT)
    except (regex.error, TimeoutError):
        return None


def _polarity(before: str) -> str:
    """'neg', 'pos' or '' for the directive that governs the text after `before`.

    The last group of cues decides ("don't forget to include" is positive: two negations).
    """
    cues = list(_CUE.finditer(before))
    if not cues:
        return ""
    group = [cues[-1]]
    for cue in reversed(cues[:-1]):
        if len(before[cue.end() : group[0].start()].split()) > 2:
            break
        group.insert(0, cue)
    negatives = sum(1 for cue in group if cue.group("neg"))
    return "neg" if negatives % 2 else "pos"


def _contradicts(line: str, check: Check) -> bool:
    """Whether a rule line asks for the opposite of what a failing check needs."""
    arg = "" if check.arg is None else str(check.arg)
    line = line.replace("\u2019", "'")
    if check.op in ("max_chars", "min_chars"):
        try:
            bound = int(arg)
        except ValueError:
            return False
        if check.op == "min_chars":
            return any(int(m.group(1)) < bound for m in _UPPER_BOUND.finditer(line))
        return any(int(m.group(1)) > bound for m in _LOWER_BOUND.finditer(line))
    if not any(ch.isalnum() for ch in arg):
        return False  # a bare ":" or "-" shows up in too many unrelated rules
    for clause in _CLAUSE_SPLIT.split(line):
        if check.op == "regex":
            match = _search(arg, clause)
            at = match.start() if match else -1
        else:
            at = clause.casefold().find(arg.casefold())
        if at < 0:
            continue
        polarity = _polarity(clause[:at])
        if check.op in ("contains", "section_present", "section_contains", "regex"):
            if polarity == "neg":
                return True
        elif check.op == "not_contains" and polarity == "pos":
            return True
    return False


def _duplicate_problem(
    edit: Edit, lines: list[str], existing: dict[str, str], earlier: set[str]
) -> str:
    normed = [_norm_rule(line) for line in lines]
    if len(set(normed)) < len(normed):
        return "content repeats a line"
    replaced: set[str] = set()
    if edit.op == "replace":
        anchor = _norm_rule(edit.anchor)
        replaced = {norm for norm in existing if anchor and (norm == anchor or anchor in norm)}
        if replaced and set(normed) <= replaced:
            return "replacement is identical to the rule it replaces"
    for norm in normed:
        if norm in existing and norm not in replaced:
            return f"duplicates an existing rule: {existing[norm]!r}"
        if norm in earlier:
            return "repeats an earlier edit in this proposal"
    return ""


# --------------------------------------------------------------------------------------
# Checks in words, and examples that pass them
# --------------------------------------------------------------------------------------


def describe_check(check: Check) -> str:
    """A failing check in plain words, for the reflection prompt."""
    arg = "" if check.arg is None else str(check.arg)
    op = check.op
    if op == "contains":
        return f'the answer must contain the text "{arg}"'
    if op == "not_contains":
        return f'the answer must not contain the text "{arg}"'
    if op == "regex":
        return f"the answer must match the regular expression `{arg}`"
    if op == "section_present":
        return f'the answer must have a section headed "{arg}"'
    if op == "section_contains":
        return f'the answer must have a Markdown heading containing "{arg}"'
    if op == "max_chars":
        return f"the answer must be at most {arg} characters"
    if op == "min_chars":
        return f"the answer must be at least {arg} characters"
    if op == "no_refusal":
        return "the answer must not refuse the task"
    if op == "equals":
        return f'the answer must be exactly "{arg}" (whitespace aside)'
    return f"the check {check.label()} must pass"


def example_for_check(check: Check) -> str | None:
    """A concrete text that passes `check`, or None when none can be given.

    `equals` gets None on purpose: a skill rule cannot make every answer one text.
    """
    arg = "" if check.arg is None else str(check.arg)
    if check.op == "contains":
        return arg or None
    if check.op in ("section_present", "section_contains"):
        if not arg.strip():
            return None
        return arg.strip() if arg.lstrip().startswith("#") else f"## {arg.strip()}"
    if check.op == "regex":
        return literal_for_regex(arg)
    return None


_MAX_LITERAL = 200
_SPACE_AFTER = ":=,;.)]}!?|>-"  # an optional space after these reads naturally
_FREE_TEXT = "medium"  # what fills a "Label: <anything>" slot


def literal_for_regex(pattern: str) -> str | None:
    """A short literal that `re.search(pattern, literal)` matches, or None.

    Walks the parsed pattern choosing natural characters: a capital at the start under
    (?i) or [Cc], one space for an optional space after punctuation, the first character
    of a class, the lowest digit of a range, "medium" after a "Label:". Lookarounds and
    backreferences give None, and so does any literal that does not verify (with the
    judge's own time-bounded search, so the literal passes the check it was made for).
    """
    try:
        re.compile(pattern)
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    out: list[str] = []
    ignorecase = bool(parsed.state.flags & sre_c.SRE_FLAG_IGNORECASE)
    try:
        if not _walk(list(parsed), out, ignorecase):
            return None
    except RecursionError:
        return None
    literal = "".join(out)
    candidates = []
    if literal.rstrip().endswith(":"):
        candidates.append(literal.rstrip() + " " + _FREE_TEXT)
    candidates += [literal, literal.strip()]
    for candidate in candidates:
        if (
            candidate.strip()
            and len(candidate) <= _MAX_LITERAL
            and not _CONTROL.search(candidate)
            and "\n" not in candidate
            and _search(pattern, candidate) is not None
        ):
            return candidate
    return None


_CATEGORY_SAMPLE = {
    sre_c.CATEGORY_DIGIT: "0",
    sre_c.CATEGORY_NOT_DIGIT: "a",
    sre_c.CATEGORY_SPACE: " ",
    sre_c.CATEGORY_NOT_SPACE: "a",
    sre_c.CATEGORY_WORD: "a",
    sre_c.CATEGORY_NOT_WORD: " ",
}
_CATEGORY_RE = {
    sre_c.CATEGORY_DIGIT: r"\d",
    sre_c.CATEGORY_NOT_DIGIT: r"\D",
    sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S",
    sre_c.CATEGORY_WORD: r"\w",
    sre_c.CATEGORY_NOT_WORD: r"\W",
}
_REPEATS = {sre_c.MAX_REPEAT, sre_c.MIN_REPEAT} | (
    {sre_c.POSSESSIVE_REPEAT} if hasattr(sre_c, "POSSESSIVE_REPEAT") else set()
)


def _walk(items: list[tuple[Any, Any]], out: list[str], ignorecase: bool) -> bool:
    """Append a literal for `items` to `out`; False when the pattern has no safe literal."""
    for op, av in items:
        if len(out) > _MAX_LITERAL:
            return False
        if op == sre_c.LITERAL:
            ch = chr(av)
            out.append(ch.upper() if ignorecase and not "".join(out).strip() else ch)
        elif op == sre_c.NOT_LITERAL:
            out.append("a" if chr(av) != "a" else "b")
        elif op == sre_c.ANY:
            out.append("x")
        elif op == sre_c.IN:
            ch = _class_char(av, at_start=not "".join(out).strip(), ignorecase=ignorecase)
            if ch is None:
                return False
            out.append(ch)
        elif op == sre_c.AT:
            continue  # zero width; the final check verifies it
        elif op == sre_c.BRANCH:
            for alternative in av[1]:
                trial = list(out)
                if _walk(list(alternative), trial, ignorecase):
                    out[:] = trial
                    break
            else:
                return False
        elif op == sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            local = (ignorecase or bool(add_flags & sre_c.SRE_FLAG_IGNORECASE)) and not (
                del_flags & sre_c.SRE_FLAG_IGNORECASE
            )
            if not _walk(list(sub), out, local):
                return False
        elif op in _REPEATS:
            if not _walk_repeat(av, out, ignorecase):
                return False
        elif getattr(sre_c, "ATOMIC_GROUP", None) is not None and op == sre_c.ATOMIC_GROUP:
            if not _walk(list(av), out, ignorecase):
                return False
        else:  # lookarounds, backreferences, conditionals
            return False
    return True


def _walk_repeat(av: tuple[int, int, Any], out: list[str], ignorecase: bool) -> bool:
    low, _high, sub = av
    sub = list(sub)
    if low > _MAX_LITERAL:
        return False
    if _is_space_class(sub):
        if low == 0:
            before = "".join(out)
            if before and before[-1] in _SPACE_AFTER:
                out.append(" ")
        else:
            out.append(" " * low)
        return True
    if low >= 1 and _accepts_free_text(sub) and "".join(out).rstrip().endswith(":"):
        if not "".join(out).endswith(" "):
            out.append(" ")
        out.append(_FREE_TEXT)
        return True
    return all(_walk(sub, out, ignorecase) for _ in range(low))


def _is_space_class(sub: list[tuple[Any, Any]]) -> bool:
    return (
        len(sub) == 1
        and sub[0][0] == sre_c.IN
        and sub[0][1] == [(sre_c.CATEGORY, sre_c.CATEGORY_SPACE)]
    ) or sub == [(sre_c.LITERAL, ord(" "))]


def _accepts_free_text(sub: list[tuple[Any, Any]]) -> bool:
    if len(sub) != 1:
        return False
    op, av = sub[0]
    if op == sre_c.ANY:
        return True
    return op == sre_c.IN and all(_in_class(ch, av) for ch in _FREE_TEXT)


def _in_class(ch: str, items: list[tuple[Any, Any]]) -> bool:
    negate = False
    hit = False
    for op, av in items:
        if op == sre_c.NEGATE:
            negate = True
        elif op == sre_c.LITERAL:
            hit = hit or ch == chr(av)
        elif op == sre_c.RANGE:
            hit = hit or av[0] <= ord(ch) <= av[1]
        elif op == sre_c.CATEGORY:
            expr = _CATEGORY_RE.get(av)
            hit = hit or bool(expr and re.fullmatch(expr, ch))
    return hit != negate


def _class_char(items: list[tuple[Any, Any]], *, at_start: bool, ignorecase: bool) -> str | None:
    """A natural member of a character class."""
    if items and items[0][0] == sre_c.NEGATE:
        for ch in ("a", "x", "0", " ", "-", "."):
            if _in_class(ch, items):
                return ch
        return None
    options: list[str] = []
    for op, av in items:
        if op == sre_c.LITERAL:
            options.append(chr(av))
        elif op == sre_c.RANGE:
            options.append(chr(av[0]))
        elif op == sre_c.CATEGORY and av in _CATEGORY_SAMPLE:
            options.append(_CATEGORY_SAMPLE[av])
    if not options:
        return None
    if at_start:
        capitals = [ch for ch in options if ch.isupper()]
        if capitals:
            return capitals[0]
        if ignorecase and options[0].isalpha():
            return options[0].upper()
    return options[0]
