"""The offline backend: a deterministic simulator of the agent, optimizer and judge.

It exists for `gitsleep demo`, the test suite and trying gitsleep without a key. It goes
through exactly the same code path as a real backend; only `complete` is simulated, and
every result it produces says so (`simulated = True`, model name `offline`). The rules
it follows are in `shared/spec/offline-backend.md` and the README.

A workspace task is answered in a copy of its folder, as an agent CLI would:
the skill document is installed as AGENTS.md, the simulated agent carries out the file
directives (`Always create "<path>"`, `Always add "<text>" to "<path>"`) literally, in
document order and only inside the folder, and the task's workspace and command checks
are judged there afterwards, exactly as for `backend: command`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gitsleep.backends import tool_loop
from gitsleep.backends.offline_triggers import simulated_trigger_reply
from gitsleep.base.redact import Redactor
from gitsleep.core import sandbox
from gitsleep.core.models import Answer, ToolCall
from gitsleep.core.numbers import whole_number
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.regex_literal import literal_for_regex, sample_fill, typed_form
from gitsleep.core.tools import ToolSpec
from gitsleep.sandbox import workspace as task_workspace
from gitsleep.sandbox.cleanup import remove_tree
from gitsleep.sandbox.trees import NoTrees, TreeSource

_Q = r"[\"'](.+?)[\"']"
# A conditional directive: `When the task mentions "X", include "A"; when it
# mentions "Y", include "B"; otherwise include "C".` The first clause whose word the task's
# prompt holds picks the line the answer contains; none does: the `otherwise` line, if any.
_WHEN = re.compile(rf"\bwhen (?:the task|it) mentions {_Q},? include {_Q}", re.IGNORECASE)
_OTHERWISE = re.compile(rf"\botherwise,? include {_Q}", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z-]{3,}")
DIRECTIVES = [
    ("include", re.compile(rf"\balways include {_Q}", re.IGNORECASE)),
    ("start", re.compile(rf"\b(?:start|begin) with {_Q}", re.IGNORECASE)),
    ("end", re.compile(rf"\bend with {_Q}", re.IGNORECASE)),
    ("never", re.compile(rf"\bnever (?:say|include) {_Q}", re.IGNORECASE)),
    ("limit", re.compile(r"\bkeep answers under (\d+) characters\b", re.IGNORECASE)),
    ("heading", re.compile(r"\buse the heading [\"'](#+ .+?)[\"']", re.IGNORECASE)),
]
# What the simulated agent does in a workspace (never in the text answer): in document order.
FILE_DIRECTIVES = [
    ("add", re.compile(rf"\balways add {_Q} to {_Q}", re.IGNORECASE)),
    ("create", re.compile(rf"\balways create {_Q}", re.IGNORECASE)),
]
AGENT_FILE = "AGENTS.md"  # where the simulated agent's skill document is installed
# What the simulated agent calls (a gitsleep addition to the spec, docs/tools.md): a tool
# the documents tell it to call, in document order, when the task declares it; `never`
# drops one; later lines win.
TOOL_DIRECTIVES = [
    ("never", re.compile(r"\bnever (?:call|use) the [\"'](\w[\w-]*)[\"'] tool\b", re.IGNORECASE)),
    ("call", re.compile(r"\b(?:call|use) the [\"'](\w[\w-]*)[\"'] tool\b", re.IGNORECASE)),
    # in plain words: "Search the notes before you answer" calls the tool named `search`
    ("search", re.compile(r"\bsearch (?:the|your) [\w -]{1,40}?before (?:you )?answer",
                          re.IGNORECASE)),
]


@dataclass
class _Plan:
    """The answer's shape after reading every directive in document order."""

    start: tuple[int, str] | None = None
    end: tuple[int, str] | None = None
    headings: list[tuple[int, str]] = field(default_factory=list)
    includes: list[tuple[int, str]] = field(default_factory=list)
    nevers: list[tuple[int, str]] = field(default_factory=list)
    limit: int | None = None
    # (order, [(word, line)], otherwise line or None): resolved per task prompt
    choices: list[tuple[int, list[tuple[str, str]], str | None]] = field(default_factory=list)


def read_directives(documents: list[str]) -> _Plan:
    plan = _Plan()
    order = 0
    for doc in documents:
        for line in doc.splitlines():
            clauses = [(m.group(1), m.group(2)) for m in _WHEN.finditer(line)]
            if clauses:
                order += 1
                otherwise = _OTHERWISE.search(line)
                plan.choices.append((order, clauses, otherwise.group(1) if otherwise else None))
                continue
            for kind, pattern in DIRECTIVES:
                m = pattern.search(line)
                if not m:
                    continue
                order += 1
                value = m.group(1)
                if kind == "include":
                    plan.includes.append((order, value))
                elif kind == "start":
                    plan.start = (order, value)
                elif kind == "end":
                    plan.end = (order, value)
                elif kind == "never":
                    plan.nevers.append((order, value))
                elif kind == "limit":
                    plan.limit = int(min(whole_number(value), sys.maxsize))
                else:
                    plan.headings.append((order, value))
                break
    return plan


def read_file_directives(documents: list[str]) -> list[tuple[str, str, str]]:
    """(kind, path, text) of each file directive, in document order."""
    found = []
    for doc in documents:
        for line in doc.splitlines():
            for kind, pattern in FILE_DIRECTIVES:
                m = pattern.search(line)
                if m:
                    found.append((kind, m.group(2), m.group(1)) if kind == "add"
                                 else (kind, m.group(1), ""))
                    break
    return found


def simulate_work(folder: Path, documents: list[str]) -> None:
    """Carry out the documents' file directives in `folder`, literally: `create` makes the
    file when it is missing (empty), `add` appends the text as a line (creating the file).
    A path that leaves the folder, or names a folder, is not touched."""
    for kind, relative, text in read_file_directives(documents):
        path = folder / relative
        try:
            inside = path.resolve().is_relative_to(folder.resolve())
        except (OSError, RuntimeError):
            inside = False
        if not inside or path.is_dir() or not relative.strip():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "create":
            path.touch(exist_ok=True)
            continue
        with path.open("a", encoding="utf-8") as fh:
            current = path.stat().st_size
            needs_break = current and not path.read_bytes().endswith(b"\n")
            fh.write(("\n" if needs_break else "") + text + "\n")


def tools_to_call(documents: list[str]) -> list[str]:
    """The tool names the documents tell the agent to call, in document order (a later
    `Never call the "X" tool` drops X, a later call brings it back)."""
    wanted: list[str] = []
    for doc in documents:
        for line in doc.splitlines():
            for kind, pattern in TOOL_DIRECTIVES:
                m = pattern.search(line)
                if not m:
                    continue
                name = "search" if kind == "search" else m.group(1)
                if name in wanted:
                    wanted.remove(name)
                if kind != "never":
                    wanted.append(name)
                break
    return wanted


def simulate_calls(documents: list[str], prompt: str, tools: Sequence[ToolSpec],
                   redact: Callable[[str], str] | None = None,
                   pass_env: Sequence[str] = ()) -> tuple[ToolCall, ...]:
    """The calls the simulated agent makes, answered by the real tools: each tool the
    documents name and the task declares, in document order; `search` with the prompt as
    its query, `read_file` on the path of the last search's best hit (skipped without
    one), `command` with nothing on stdin. What the tools answer is data: it never
    changes what the agent does next."""
    declared = {t.name: t for t in tools}
    made: list[ToolCall] = []
    for name in tools_to_call(documents):
        tool = declared.get(name)
        if tool is None:
            continue
        if tool.kind == "search":
            arguments: dict[str, str] = {"query": " ".join(prompt.split())}
        elif tool.kind == "read_file":
            hit = next((c.result.split(":", 1)[0] for c in reversed(made)
                        if declared[c.name].kind == "search" and not c.error and c.result
                        and c.result != "no file matches"), None)
            if hit is None:
                continue
            arguments = {"path": hit}
        else:
            arguments = {"input": ""}
        made.append(tool_loop.run_tool(tools, name, json.dumps(arguments), redact=redact,
                                       pass_env=pass_env))
    return tuple(made)


def generic_body(prompt: str) -> list[str]:
    """A plain answer restating the prompt: long enough to fail a tight `max_chars`."""
    topic = " ".join(prompt.split())
    return [
        f"Here is a response to the request: {topic}",
        "I considered the request carefully and addressed each part of it in turn.",
        "The points above cover the main context, the open questions and sensible next steps.",
    ]


RECENT_MODEL = re.compile(r"^offline-recent-([1-9][0-9]{0,2})\Z")


def recent_only(documents: list[str], model: str) -> list[str]:
    """The documents as the `offline-recent-N` agent reads them: only the last N directive
    lines (an agent whose attention holds the few latest instructions: a rule appended to
    the learned block pushes the first hand-written one out). A gitsleep addition to the
    simulator, for nights of several agents that disagree; any other model
    name reads everything, as the spec's agent does."""
    found = RECENT_MODEL.match(model)
    if found is None:
        return documents
    keep = int(found.group(1))
    lines = [(d, i) for d, doc in enumerate(documents)
             for i, line in enumerate(doc.splitlines()) if _is_directive(line)]
    dropped = set(lines[:-keep])
    return ["\n".join(line for i, line in enumerate(doc.splitlines()) if (d, i) not in dropped)
            for d, doc in enumerate(documents)]


def _is_directive(line: str) -> bool:
    return bool(_WHEN.search(line)) or any(p.search(line) for _, p in DIRECTIVES)


def simulate_answer(documents: list[str], prompt: str) -> str:
    """Obey the documents' directives literally; later directives win on conflict."""
    plan = read_directives(documents)
    directive: list[tuple[int, str]] = []
    if plan.start:
        directive.append(plan.start)
    directive += plan.headings
    body = [(0, line) for line in generic_body(prompt)]
    chosen = [(order, line) for order, clauses, otherwise in plan.choices
              if (line := _choose(clauses, otherwise, prompt)) is not None]
    includes = sorted(plan.includes + chosen)
    tail = includes + ([plan.end] if plan.end else [])

    def scrub(order: int, line: str) -> str:
        for never_order, phrase in plan.nevers:
            if never_order > order:  # a directive after this line's own wins
                line = re.sub(re.escape(phrase), "", line, flags=re.IGNORECASE)
        return line

    head = [scrub(o, t) for o, t in directive]
    middle = [scrub(o, t) for o, t in body]
    end = [scrub(o, t) for o, t in tail]
    if plan.limit is None:
        return "\n".join(head + middle + end)
    kept_middle: list[str] = []
    for line in middle:  # directive lines are kept first; body lines fill what is left
        if len("\n".join(head + kept_middle + [line] + end)) <= plan.limit:
            kept_middle.append(line)
    return "\n".join(head + kept_middle + end)[: plan.limit]


def _choose(clauses: list[tuple[str, str]], otherwise: str | None, prompt: str) -> str | None:
    """The line a conditional directive gives this prompt: the first clause whose word the
    prompt holds (case-insensitive), else the `otherwise` line."""
    folded = prompt.casefold()
    return next((line for word, line in clauses if word.casefold() in folded), otherwise)


def _include_a_match(pattern: str) -> str | None:
    """`Always include "<a literal the pattern matches>"`; no edit when the pattern leaves
    the value to the task (`[1-4]`, `(approve|reject)`, `\\d+`): the simulated optimizer
    cannot say how to choose, and one constant is a pin the honesty rules forbid."""
    literal = literal_for_regex(pattern)
    return f'Always include "{literal}"' if literal else None


def _quoted(text: str) -> str | None:
    """`"text"`, or `'text'` when it holds a double quote; None when it holds both."""
    if '"' not in text:
        return f'"{text}"'
    return f"'{text}'" if "'" not in text else None


def _add_to_file(arg: str) -> str | None:
    """`Always add "<text>" to "<path>"` for a failed `file_contains` (a regex gives the
    literal it matches, as for `regex`); None when no directive can say it."""
    from gitsleep.core.check_ops import file_text_arg

    try:
        path, kind, value = file_text_arg(arg)
    except (ValueError, KeyError, TypeError):
        return None
    text = literal_for_regex(value) if kind == "regex" else value
    if not text or "\n" in text:
        return None
    quoted_text, quoted_path = _quoted(text), _quoted(path)
    if quoted_text is None or quoted_path is None:
        return None
    return f"Always add {quoted_text} to {quoted_path}"


def _create_file(path: str) -> str | None:
    quoted = _quoted(path)
    return None if quoted is None else f"Always create {quoted}"


# The spec's table "failed check -> proposed directive", one row per op that gets an edit
# (min_chars, no_refusal, equals, command and changed_files_max get none). Its words are
# the simulator's own: they are the directives `simulate_answer` (and, in a workspace,
# `simulate_work`) obeys, not `check_text.describe_check`'s.
PROPOSED: dict[str, Callable[[str], str | None]] = {
    "contains": lambda text: f'Always include "{text}"',
    "section_present": lambda text: f'Use the heading "## {text}"',
    "section_contains": lambda text: f'Use the heading "## {text}"',
    "not_contains": lambda text: f'Never say "{text}"',
    "max_chars": lambda text: f"Keep answers under {text} characters",
    "regex": _include_a_match,
    "file_exists": _create_file,  # workspace tasks
    "file_contains": _add_to_file,
    # trajectory checks (a gitsleep addition: docs/tools.md)
    "tool_called": lambda name: f'Call the "{name}" tool before you answer.',
    "tool_not_called": lambda name: f'Never call the "{name}" tool.',
}


def directive_for(op: str, arg: object) -> str | None:
    """The directive the simulated optimizer proposes for one failed check."""
    propose = PROPOSED.get(op)
    return None if propose is None else propose("" if arg is None else str(arg))


def _line_for(want: list[list[Any]]) -> str | None:
    """A line that passes a group's checks: a `contains` text, or the literal a `regex`
    matches (its first option where the pattern leaves a choice)."""
    for op, arg in want:
        if op == "contains" and arg:
            return str(arg)
        if op == "regex" and arg:
            typed = typed_form(str(arg))
            return literal_for_regex(str(arg)) or (sample_fill(typed) if typed else None)
    return None


def _separating_word(prompts: list[str], others: list[str]) -> str | None:
    """The first word (4+ letters) of the group's first prompt that every prompt of the
    group holds and no other group's prompt does."""
    if not prompts:
        return None
    words = [set(_WORD.findall(p.casefold())) for p in prompts]
    elsewhere = set().union(*(_WORD.findall(p.casefold()) for p in others))
    common = set.intersection(*words) - elsewhere
    return next((w for w in _WORD.findall(prompts[0].casefold()) if w in common), None)


def conditional_for(key: Mapping[str, Any]) -> str | None:
    """`When the task mentions "X", include "A"; ...; otherwise include "B".` for a key
    whose groups a word of the train prompts separates (all but one group, which gets
    `otherwise`); None when no such words exist."""
    groups = list(key.get("groups", []))
    clauses: list[tuple[str, str]] = []
    rest: list[str] = []
    for index, group in enumerate(groups):
        line = _line_for(list(group.get("want", [])))
        others = [p for j, g in enumerate(groups) if j != index for p in g.get("prompts", [])]
        word = _separating_word(list(group.get("prompts", [])), others)
        if line is None or _quoted(line) is None:
            return None
        if word is None or (len(clauses) == len(groups) - 1 and not rest):
            rest.append(line)
        else:
            clauses.append((word, line))
    if len(rest) > 1 or not clauses:
        return None
    said = [f'{"When the task" if i == 0 else "when it"} mentions "{word}", include {_quoted(line)}'
            for i, (word, line) in enumerate(clauses)]
    if rest:
        said.append(f"otherwise include {_quoted(rest[0])}")
    return "; ".join(said) + "."


def simulate_proposal(context: dict[str, Any]) -> str:
    """Edits that fix the failed checks shown, most frequent first, never a rejected one.
    A failed check of a key whose train groups want different values gets no directive of
    its own: the key gets one conditional directive (`conditional_for`), or none."""
    counts: Counter[tuple[str, str]] = Counter()
    first_seen: dict[tuple[str, str], int] = {}
    keys = list(context.get("groups", []))
    wanted = {(op, "" if arg is None else str(arg)): index for index, key in enumerate(keys)
              for group in key.get("groups", []) for op, arg in group.get("want", [])}
    for failure in context.get("failures", []):
        seen: dict[tuple[str, str], None] = {}  # counted once per failure
        for op, arg in failure.get("failed", []):
            key = (op, "" if arg is None else str(arg))
            seen.setdefault(("varying", str(wanted[key])) if key in wanted else key, None)
        for key in seen:
            counts[key] += 1
            first_seen.setdefault(key, len(first_seen))
    rejected = {" ".join(r.casefold().split()) for r in context.get("rejected", [])}
    existing = {" ".join(r.casefold().split()) for r in context.get("rules", [])}
    edits = []
    for (op, arg), n in sorted(counts.items(), key=lambda kv: (-kv[1], first_seen[kv[0]])):
        directive = (conditional_for(keys[int(arg)]) if op == "varying"
                     else directive_for(op, arg))
        if directive is None:
            continue
        norm = " ".join(directive.casefold().split())
        if norm in rejected or norm in existing:
            continue
        edits.append(
            {
                "op": "add",
                "content": directive,
                "rationale": (f"{n} failing train task(s) want a value that depends on the "
                              "task" if op == "varying"
                              else f"{n} failing train task(s) need: {op} {arg}"),
            }
        )
        if len(edits) >= int(context.get("budget", 4)):
            break
    return json.dumps({"edits": edits})


def simulate_judge(context: dict[str, Any]) -> str:
    """A stand-in grader: the share of the rubric's quoted phrases present in the answer."""
    rubric = str(context.get("rubric", ""))
    answer = str(context.get("answer", "")).casefold()
    phrases = re.findall(r"[\"']([^\"']+)[\"']", rubric)
    if not phrases:
        return json.dumps({"score": 0.5, "reason": "simulated judge: no quoted phrase"})
    found = sum(1 for p in phrases if p.casefold() in answer)
    return json.dumps(
        {"score": found / len(phrases), "reason": f"simulated judge: {found}/{len(phrases)}"}
    )


# Words a condition uses to say how it is phrased, not what it picks: "When you answer"
# and "when the task mentions" name no property of a task.
_CONDITION_FRAME = frozenset({
    "when", "whenever", "if", "unless", "for", "the", "a", "an", "and", "or", "of", "in", "on",
    "to", "with", "by", "as", "is", "are", "be", "it", "its", "this", "that", "these", "those",
    "any", "each", "every", "all", "you", "your", "task", "tasks", "answer", "answers",
    "reply", "replies", "respond", "mention", "mentions", "mentioned", "says", "say",
    "contains", "contain", "include", "includes", "write", "writes", "writing", "given", "has",
    "have", "there",
})
_QUOTED_WORDS = re.compile(r"\"([^\"]+)\"|'([^']+)'")
_PREFIX = 5  # a condition word and a task word sharing their first letters: `reviewing`, `review`


def condition_holds(condition: str, prompt: str) -> bool:
    """The simulated condition judge, by words: each quoted phrase of the condition (one
    of them, when it says "or") is in the task's text, and each other word of it (its
    framing words aside) shares its first five letters with a word of the task. A
    condition with no such word ("When you answer") holds for every task."""
    folded = prompt.casefold()
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED_WORDS.finditer(condition)]
    words = re.findall(r"[a-z0-9]+", _QUOTED_WORDS.sub(" ", condition).casefold())
    present = [q.casefold() in folded for q in quoted]
    if quoted and not (any(present) if "or" in words else all(present)):
        return False  # `mentions "DROP" or "DELETE"`: one of them; else each of them
    words = [w for w in words if w not in _CONDITION_FRAME]
    task_words = {w[:_PREFIX] for w in re.findall(r"[a-z0-9]+", folded)}
    return all(w[:_PREFIX] in task_words for w in words)


def simulate_conditions(context: Mapping[str, Any]) -> str:
    """`{"1": [ids], ...}`: per condition, the tasks `condition_holds` for."""
    tasks = [(str(t[0]), str(t[1])) for t in context.get("tasks", [])]
    return json.dumps({str(n): [i for i, prompt in tasks if condition_holds(str(text), prompt)]
                       for n, text in enumerate(context.get("conditions", []), 1)})


class OfflineBackend(Backend):
    """Deterministic simulator. Same inputs, same outputs; no network, no key."""

    name = "offline"
    simulated = True
    workspaces = True  # simulates an agent in a copy of a workspace task's folder
    traces = True  # its agent calls the declared tools its documents tell it to

    def __init__(self, check_pass_env: Sequence[str] = (),
                 trees: TreeSource | None = None) -> None:
        # the task folders, read once a run by the run's setup; this backend owns them
        self._workspaces: TreeSource = trees or NoTrees()
        self.check_pass_env = tuple(check_pass_env)  # what checks see beyond the minimum
        self._redactor: Redactor | None = None

    def close(self) -> None:
        self._workspaces.cleanup()

    def writes_free_values(self, purpose: str) -> bool:
        """The simulated optimizer's spec (docs: offline backend) has it write a literal for
        a label the check asks no value for (`Always include "Confidence: medium"`)."""
        return purpose == "propose"

    def cache_salt(self, call: ModelCall) -> str:
        """A workspace answer carries its checks' outcomes: valid for this fixture tree and
        these check commands only (as for `backend: command`); an answer that may run a
        command tool, for the environment it was handed."""
        return (task_workspace.call_key(call.context, call.purpose, self.check_pass_env)
                + tool_loop.environment_key(call, self.check_pass_env))

    def complete(self, call: ModelCall) -> Answer:
        context = dict(call.context or {})
        picked = simulated_trigger_reply(context)  # a skill pick or a description proposal
        if picked is not None:
            return Answer(text=picked, prompt_tokens=sum(len(c) for _, c in call.messages) // 4,
                          completion_tokens=len(picked) // 4)
        if call.purpose == "answer":
            documents = context.get("documents")
            if documents is None:
                documents = [c for role, c in call.messages if role == "system"]
            prompt = "\n".join(c for role, c in call.messages if role == "user")
            documents = recent_only(list(documents), call.model)
            text = simulate_answer(documents, prompt)
            trace = simulate_calls(documents, prompt, tool_loop.tools_of(call),
                                   redact=self._redact, pass_env=self.check_pass_env)
            found = task_workspace.workspace_of(call.context, call.purpose)
            if found is not None:
                return replace(self._in_workspace(call, found, list(documents), text),
                               trace=trace)
            prompt_chars = sum(len(c) for _, c in call.messages)
            return Answer(text=text, prompt_tokens=prompt_chars // 4,
                          completion_tokens=len(text) // 4, trace=trace)
        elif call.purpose == "propose":
            text = simulate_proposal(context)
        elif call.purpose == "judge" and context.get("kind") == "conditions":
            text = simulate_conditions(context)
        elif call.purpose == "judge":
            text = simulate_judge(context)
        else:
            return Answer(text=None, error=f"offline backend: unknown call purpose {call.purpose}")
        prompt_chars = sum(len(c) for _, c in call.messages)
        return Answer(text=text, prompt_tokens=prompt_chars // 4, completion_tokens=len(text) // 4)

    def _redact(self, text: str) -> str:
        if self._redactor is None:
            self._redactor = Redactor.from_env(os.environ)
        return self._redactor.redact(text)

    def _in_workspace(self, call: ModelCall, found: Mapping[str, Any], documents: list[str],
                      text: str) -> Answer:
        """The answer of a workspace task: the folder copied, the documents installed, the
        file directives carried out, the checks judged there, the diff kept."""
        if self._redactor is None:
            self._redactor = Redactor.from_env(os.environ)
        tree = self._workspaces.prepare_tree(Path(str(found["repo"])), str(found["tree"]),
                                             str(found["folder"]))
        folder = Path(tempfile.mkdtemp(prefix="gitsleep-offline-"))
        try:
            self._workspaces.copy(tree, folder)
            package = task_workspace.package_of(call.context)
            packaged = ({} if package is None else  # beside the skill document
                        task_workspace.install_package(self._workspaces, package, folder,
                                                       AGENT_FILE))
            installed = {AGENT_FILE: "\n\n".join(documents)}
            (folder / AGENT_FILE).write_text(installed[AGENT_FILE], encoding="utf-8")
            before = sandbox.snapshot(folder)
            simulate_work(folder, documents)
            changed = sandbox.changed_files(before, sandbox.snapshot(folder))
            # the diff before the checks: they put back the fixture files they name
            diff = task_workspace.agent_diff(tree, folder, changed, packaged, installed,
                                             redact=self._redactor.redact)
            checks = task_workspace.judge_answer(folder, found, changed, text,
                                                 redact=self._redactor.redact,
                                                 pristine=tree.path,
                                                 pass_env=self.check_pass_env)
        finally:
            remove_tree(folder)
        prompt_chars = sum(len(c) for _, c in call.messages)
        return Answer(text=text, prompt_tokens=prompt_chars // 4,
                      completion_tokens=len(text) // 4, checks=checks, diff=diff)
