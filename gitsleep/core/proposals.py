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

Edits that parse are then screened by `gitsleep.core.hygiene`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import json_repair

from gitsleep.core.models import EDIT_OPS, Edit, EditOutcome, is_edit_op
from gitsleep.core.numbers import loads_json

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
EXAMPLE_TEMPLATE = "<answer skeleton: one heading or labelled line per line>"
# The reflection prompt's words around each failing check's example line and rule: a rule
# that quotes them copies the prompt rather than saying what the agent should do.
SHAPE_LEAD = "a line of the shape it wants"
PASSING_LEAD = "a line that passes"
RULE_LEAD = "as a rule"
PROMPT_SCAFFOLD = (SHAPE_LEAD, PASSING_LEAD, RULE_LEAD + ":")
PROMPT_EXAMPLE_TEXTS: tuple[str, ...] = (
    EXAMPLE_CONTENT,
    EXAMPLE_TEMPLATE,
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
    "skeleton": "template",
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
    elif found.truncated or found.cut_off:
        # a ``` inside a JSON string ends the fence early: the whole reply may read
        whole = _Found(salvage_calls=found.salvage_calls)
        _read_values(text, 0, text, whole)
        if whole.complete and not whole.truncated and not whole.cut_off:
            found = whole
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
        return loads_json(text, strict=False), [], None
    except json.JSONDecodeError as exc:
        error = exc
    except RecursionError:
        return None, [], None
    repaired, repairs = _repair_syntax(text)
    if repairs:
        try:
            return loads_json(repaired, strict=False), repairs, error
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
        text = "\n".join(str(v) for v in value)
    elif isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        return None
    # A backspace or form feed decoded from JSON was nearly always a regex \b or \f
    # written without doubling the backslash.
    text = text.replace("\x08", "\\b").replace("\x0c", "\\f")
    return text.replace("\r\n", "\n").strip()


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
    if not is_edit_op(op):
        return shown, f"unknown op {op_text!r}; use add, replace, delete or template"
    if op == "delete" and not anchor:
        anchor, content = content, ""  # the line to delete was given as content
    if op == "replace" and not anchor and content:
        # nothing to replace, something to say (Qwen2.5-Coder 1.5B: replace "" with
        # "Severity: Critical"): hygiene reads a replace of no rule as an add, so do we
        op = "add"
        rationale = f"{rationale} (a replace with no anchor, read as add)".strip()
    edit = Edit(op=op, content=content, anchor=anchor, rationale=rationale, target=target)
    if op in ("add", "template") and not content:
        return edit, f"{op} without content"
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
