"""Groups: train tasks whose checks want different values of the same thing.

A skill's judgment shows where its tasks' checks disagree: one task wants
`Verdict:\\s*reject`, another `Verdict:\\s*approve`; one wants `Severity:\\s*[12]`,
another `Severity:\\s*[34]`. A rule can only be honest about such a value by saying
which condition picks it. This module finds the disagreements, from the checks alone:

- `varying_keys`: per key (a line's label such as `Verdict`, or an op whose every task
  has exactly one unlabelled check), the tasks grouped by what their checks want, when
  they want two or more different things;
- `value_problem`: why a required text is a pin (it passes the checks of some groups and
  fails another's) or a hedge (it passes every group's checks without choosing), or ''.

Only train tasks are grouped for the optimizer (reflection, hygiene); the gate groups
val tasks the same way to show a score per group. Nothing here reads an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gitsleep.core import labels
from gitsleep.core.check_ops import OPS
from gitsleep.core.check_text import example_for_check, passes
from gitsleep.core.models import Check, Task
from gitsleep.core.regex_literal import TYPED_SLOT, literal_for_regex, sample_fill

VALUE_OPS = ("contains", "regex")  # ops whose argument is a value one line can carry
MAX_GROUPS = 6  # a key with more distinct wants than this is free text, not a choice
_LABEL_VALUE = re.compile(rf"^\s*{labels.LABEL}\s*(?P<value>\S.*?)?\s*$")
# A condition: what makes a rule say which value fits which task. "or" is no condition
# ("approve or reject" chooses nothing), nor "for every ..." / "for the reviewer".
CONDITION = re.compile(
    r"\b(?:if|when|whenever|unless|otherwise|else|depending\s+on|depends\s+on|based\s+on"
    r"|according\s+to)\b"
    r"|\bfor\s+(?!(?:every|each|all|any|the|a|an|this|that|these|those|its|their|your|our)\b)"
    r"[a-z]\w*",
    re.IGNORECASE,
)
_CLAUSES = re.compile(r"(?<=[;.!?])\s+")


@dataclass(frozen=True)
class Group:
    """Tasks whose checks of one key want the same thing."""

    want: tuple[Check, ...]
    task_ids: tuple[str, ...]

    def wants(self) -> str:
        """What the group's checks want, as the task file says it (`regex Verdict:\\s*reject`)."""
        return "; ".join(f"{c.op} {c.text}" for c in self.want)


@dataclass(frozen=True)
class VaryingKey:
    """A key the tasks' checks want different values of, with its groups (largest first,
    ties in first-seen order)."""

    key: str
    groups: tuple[Group, ...]


def keys_of(check: Check) -> list[str]:
    """The keys a value check counts under: `label:<name>` when it wants a labelled value
    (`Verdict: reject`, `Severity:\\s*[12]`), and always `op:<op>`; none for other ops."""
    if check.op not in VALUE_OPS or not check.text.strip():
        return []
    example = example_for_check(check) or ""
    match = _LABEL_VALUE.match(sample_fill(example))
    if match and match.group("value") and any(ch.isalnum() for ch in match.group("value")):
        return ["label:" + " ".join(match.group("label").casefold().split()), f"op:{check.op}"]
    return [f"op:{check.op}"]


def varying_keys(tasks: Iterable[Task]) -> list[VaryingKey]:
    """The keys whose tasks want different things, each with its groups.

    A labelled key groups every task with a check of that label. An op key
    (`op:regex`) counts only when every rule-judged task has exactly one check of that op,
    as a classifier's tasks do (`regex "^fix: "`, `regex "^docs: "`): otherwise its checks
    ask for unrelated texts, not for a choice among values. A key whose groups split the
    tasks as an earlier key's do is the same choice, listed once."""
    rule_tasks = [t for t in tasks if t.judge.kind == "rule"]
    per_key: dict[str, dict[str, list[Check]]] = {}  # key -> task id -> its checks
    for task in rule_tasks:
        for check in dict.fromkeys(task.judge.checks):
            for key in keys_of(check):
                per_key.setdefault(key, {}).setdefault(task.id, []).append(check)
    found: list[VaryingKey] = []
    seen: set[frozenset[tuple[str, ...]]] = set()
    for key, by_task in per_key.items():
        if key.startswith("op:") and (
                len(by_task) != len(rule_tasks) or any(len(c) != 1 for c in by_task.values())):
            continue
        groups: dict[tuple[Check, ...], list[str]] = {}
        for task_id, checks in by_task.items():
            groups.setdefault(tuple(checks), []).append(task_id)
        split = frozenset(tuple(ids) for ids in groups.values())
        if 2 <= len(groups) <= MAX_GROUPS and split not in seen:
            seen.add(split)
            ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
            found.append(VaryingKey(key, tuple(Group(w, tuple(ids)) for w, ids in ordered)))
    return found


def group_of(key: VaryingKey, task: Task) -> Group | None:
    """The group of `key` a task (of any split) belongs to by its checks, or None."""
    mine = tuple(c for c in dict.fromkeys(task.judge.checks) if key.key in keys_of(c))
    return next((g for g in key.groups if g.want == mine), None)


def passed_groups(text: str, key: VaryingKey) -> list[Group]:
    """The groups whose every check `text` passes on its own; a typed slot (`<a|b>`)
    chooses nothing, so it counts as no value."""
    lines = [TYPED_SLOT.sub(" ", line)
             for line in [text, *_quoted(text), *_regex_quoted(text, key)]]
    # together, and each on its own: `\A` in a check (`(?m)\A\s*feat...`) reads the
    # start of the answer, which a quoted line is when the rule asks for it
    probes = ["\n".join(lines), *lines[1:]]
    return [g for g in key.groups
            if any(all(OPS[c.op].satisfied_by is not None and passes(c, probe) for c in g.want)
                   for probe in probes)]


def _regex_quoted(text: str, key: VaryingKey) -> list[str]:
    """A line each check's pattern that `text` quotes word for word stands for (`the answer
    matches `Verdict:\\s*reject\\b`` asks for `Verdict: reject`): a rule that copies a
    group's regex chooses that group's value as surely as one that spells it out."""
    found = []
    for group in key.groups:
        for check in group.want:
            if check.op == "regex" and check.text and check.text in text:
                line = literal_for_regex(check.text)
                found += [line] if line else []
    return found


def has_condition(text: str) -> bool:
    return CONDITION.search(_outside_quotes(text)) is not None


_QUOTE = re.compile(r"\"([^\"\n]*)\"|(?<!\w)'([^'\n]*)'(?!\w)|`([^`\n]*)`")


def _outside_quotes(text: str) -> str:
    return _QUOTE.sub(" ", text)


def _quoted(text: str) -> list[str]:
    """What a rule quotes, each part as the line an answer would carry (`Always include
    "fix: a" and "docs: a"` asks for two lines)."""
    return [next(g for g in m.groups() if g is not None) for m in _QUOTE.finditer(text)]


def value_problem(text: str, keys: Sequence[VaryingKey], *, template: bool = False) -> str:
    """Why `text` (a rule, or a whole template) answers a varying key without choosing, or ''.

    A pin passes the checks of some groups and fails another's, whatever its spelling
    (`Verdictreject`, `Verdict - reject`); a hedge passes every group's checks (one line
    per value) and chooses none. A rule escapes both only when each of its clauses that
    names a value says when (`when the changelog mentions a removal, "Verdict: reject";
    otherwise "Verdict: approve"`). A template is copied whatever the task: any value in
    it is a pin or a hedge."""
    for key in keys:
        passed = passed_groups(text, key)
        if not passed:
            continue
        if not template and _every_value_has_a_condition(text, key):
            continue
        wants = " / ".join(g.wants() for g in key.groups)
        what = "template" if template else "rule"
        if len(passed) == len(key.groups):
            return (f"the {what} passes every group's check of {_shown(key)} ({wants}) "
                    "without choosing: a hedge, not a rule; say which value fits which "
                    "task (when ..., one value; when ..., the other)")
        return (f"the {what} gives one value of {_shown(key)} ({passed[0].wants()}) that "
                f"{len(passed[0].task_ids)} train task(s) want and others do not "
                f"({wants}): a pin; keep a typed placeholder and add a rule that says "
                "which value fits which task (when ..., one value; when ..., the other)")
    return ""


def _every_value_has_a_condition(text: str, key: VaryingKey) -> bool:
    clauses = [c for line in text.split("\n") for c in _CLAUSES.split(line.replace(";", "; "))
               if c.strip()]
    valued = [c for c in clauses if passed_groups(c, key)]
    return bool(valued) and all(has_condition(c) for c in valued)


def _shown(key: VaryingKey) -> str:
    kind, _, name = key.key.partition(":")
    return f"the line {name.capitalize()!r}" if kind == "label" else f"the {name} checks"


def named_groups(keys: Sequence[VaryingKey], tasks: Iterable[Task]) -> dict[str, list[str]]:
    """Per group of each key (named by what its checks want), the ids of `tasks` (any
    split) whose checks fall in it: the gate and the pull request score each group."""
    tasks = list(tasks)
    named: dict[str, list[str]] = {}
    for key in keys:
        for group in key.groups:
            ids = [t.id for t in tasks if group_of(key, t) == group]
            if ids:
                named[group.wants()] = ids
    return named


def group_means(named: dict[str, list[str]],
                values: dict[str, tuple[float, float]]) -> list[tuple[str, int, float, float]]:
    """(group, n, mean before, mean after) over the tasks of each group scored in both
    passes (`values`: task id -> (before, after)); groups with no such task are left out."""
    out = []
    for name, ids in named.items():
        pairs = [values[i] for i in ids if i in values]
        if pairs:
            out.append((name, len(pairs), sum(b for b, _ in pairs) / len(pairs),
                        sum(a for _, a in pairs) / len(pairs)))
    return out


# -- wrong values: an answer that carries another group's value ---------------------------

# `1 = outage`, `4 -> cosmetic`, `2 - degraded`: one value and what it means. A line with two
# or more of them lists a scale (`Severity: 1 = outage, 4 = cosmetic`); it gives no value.
_MEANING = re.compile(r"\b\w{1,20}\s*(?:=|->|→|–|—|\s-\s)\s*\w")


def other_wants(keys: Sequence[VaryingKey],
                tasks: Iterable[Task]) -> dict[str, tuple[tuple[Check, ...], ...]]:
    """Per task id (any split), what the other groups of each key it falls in want: an
    answer that passes one of those is wrong, whatever its own checks say. Only groups a
    line can pass (`contains`, `regex`) count."""
    found: dict[str, tuple[tuple[Check, ...], ...]] = {}
    for task in tasks:
        for key in keys:
            mine = group_of(key, task)
            if mine is None:
                continue
            found[task.id] = found.get(task.id, ()) + tuple(
                g.want for g in key.groups
                if g != mine and all(c.op in VALUE_OPS for c in g.want))
    return {tid: wants for tid, wants in found.items() if wants}


def carries_another_value(answer: str, others: Sequence[tuple[Check, ...]]) -> bool:
    """Whether `answer`, its scale lines left out, passes every check of another group."""
    text = "\n".join(line for line in answer.split("\n") if len(_MEANING.findall(line)) < 2)
    return any(all(OPS[c.op].judge(text, c.text)[0] for c in want) for want in others)


def wrong_counts(named: dict[str, list[str]], others: dict[str, tuple[tuple[Check, ...], ...]],
                 answers: dict[str, list[str]]) -> dict[str, int]:
    """Per group (named as in `named_groups`), how many of its tasks' `answers` (task id ->
    answers) carry another group's value: a pin lifts its own group and shows here, in the
    groups it does not fit, even when their checks only look for their own value."""
    return {name: sum(1 for tid in ids for answer in answers.get(tid, [])
                      if carries_another_value(answer, others.get(tid, ())))
            for name, ids in named.items()}
