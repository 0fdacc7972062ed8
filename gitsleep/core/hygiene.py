"""Hygiene: the edits of a parsed reply that read as real rules, and why the rest do not.

`check_hygiene` rejects edits that are not real rules: placeholder echoes, copies of a
task prompt, answers to one task (facts only one prompt has, a date or time no check asks
for, or a past-tense account of one case with nothing asked of the agent), rules that
contradict a failing check they should fix (also by taking away text the check needs, or
by "leave this section out" after naming it), marker text, frontmatter fences, control
characters, invisible characters and `javascript:`/`vbscript:`/`data:` links (see
`hostile_text`), over-long content, duplicates.

A `replace` whose anchor names no rule of the block is read as an `add`. Small
optimizers anchor on the heading a check wants (`replace "Severity" with "Severity: 3"`)
before any rule exists; taken literally the edit could never apply and the idea would be
lost. An anchor that names several rules is left alone (the document layer reports it).

Multi-line content: an edit whose content has several lines stands for several rules.
Each non-empty line becomes its own bullet in the learned block (a leading `- ` is not
doubled), and the edit is applied, and judged by hygiene, all or nothing: one bad line
rejects the whole edit. A line that starts with `#` is kept as rule text (`- ## Impact`),
never turned into a heading of the block. A placeholder inside a line is a placeholder
echo, unless it is a typed placeholder a failing check leaves open (`Severity: <1-4>` for
`Severity:\\s*[1-4]`): that one is kept as it is, for the agent to fill per task. It is
never filled with one value (`Severity: 1` in every answer passes only the tasks that
want 1).

Honest learning (see `honesty`): a rule or template line that fixes one literal where the
tasks' checks allow a choice is rejected with a reason, and an `add` that fixes a label a
kept rule fixes to another value becomes a `replace` of that rule, so the gate decides
between them and they never sit side by side. A template gets the same hostile-text rules
as a rule (control, invisible and bidi characters, `javascript:`/`data:` links).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gitsleep.base import hostile_text
from gitsleep.core import documents as docs
from gitsleep.core import fragments, groups, honesty, labels, skeleton, worked
from gitsleep.core import markdown as md
from gitsleep.core.check_ops import OPS, check_argv
from gitsleep.core.check_text import describe_check, is_section_check, passes, wants_text
from gitsleep.core.models import Check, Edit, EditOutcome, Task
from gitsleep.core.numbers import whole_number
from gitsleep.core.patterns import search
from gitsleep.core.proposals import PROMPT_EXAMPLE_TEXTS, PROMPT_SCAFFOLD
from gitsleep.core.regex_literal import CONTROL_CHARS, TYPED_SLOT, has_choice, sample_fill

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
     "example", "string", "op", "edit", "condition", "...", "…"}
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
# "leave this section out", "this section should not be present": a negation within a few
# words of a back-reference to a heading named earlier in the same edit.
_BACK_REFERENCE = r"(?:this|that|the|such\s+a)\s+(?:section|heading|part|block)"
_NEGATED_REFERENCE = re.compile(
    rf"\b(?:{_NEGATIVE_CUES})\b(?:\s+\S+){{0,3}}?\s+{_BACK_REFERENCE}\b"
    rf"|\b{_BACK_REFERENCE}(?:\s+\S+){{0,2}}?\s+(?:{_NEGATIVE_CUES})\b",
    re.IGNORECASE,
)
# Words too common to tie a text to one task prompt.
_COMMON_WORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by",
        "from", "with", "as", "is", "are", "was", "were", "be", "been", "it", "its", "this",
        "that", "these", "those", "after", "before", "during", "for", "into", "over", "under",
        "about", "than", "then", "there", "their", "they", "we", "you", "your", "our", "all",
        "any", "each", "every", "one", "two", "no", "not", "so", "do", "does", "did", "has",
        "have", "had", "can", "could", "will", "would", "may", "might", "should", "must",
        "shall", "write", "answer", "task"
    }
)
# An instruction asks something of the agent: a modal, or a sentence led by a verb (which
# the subject test below sees). Verbs such as "ensure" are not cues on their own: a story
# says "the team worked to ... ensure that it did not reoccur" (seen in a real reply).
_DIRECTIVE = re.compile(
    r"\b(?:must|should|shall|always|never|need\s+to|needs\s+to|required?|make\s+sure"
    r"|be\s+sure|do\s+not|don'?t)\b",
    re.IGNORECASE,
)
# A statement about one case has a subject: "The outage ...", "This issue ...", "We ...".
_SUBJECT_WORDS = frozenset(
    {"the", "this", "that", "these", "those", "it", "its", "they", "we", "our", "their", "he",
     "she", "his", "her", "a", "an"}
)
_PAST_TENSE = re.compile(r"\b(?:was|were|had|did|happened|occurred|\w{3,}ed)\b", re.IGNORECASE)
# A present-tense verb makes the sentence a description of every answer's shape instead.
_PRESENT_TENSE = re.compile(
    r"\b(?:is|are|has|have|does|can|will|names|lists|ends|starts|begins|includes|contains"
    r"|gives|states|shows|says|uses|follows|opens|closes|holds|carries|reads|comes|goes)\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:\*\*[^*]{1,60}\*\*|__[^_]{1,60}__|[\w ]{1,30}):\s*")
# A calendar date or clock time: a rule for every task has no use for one (seen: a
# "## Timeline" rule followed by "2022-01-15T14:00:00Z").
_DATE_OR_TIME = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?|\d{1,2}:\d{2}\s*(?:[AaPp][Mm])?"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?"
    r"(?:,?\s+\d{4})?)\b"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.;!?])\s+")
# "The maximum character limit ... should be increased to 500 characters": a new limit.
_NEW_LIMIT = re.compile(
    r"\b(?:limit|maximum|max)\b[^.;]{0,80}?\b(?:to|of)\s+(\d+)\s+(?:characters|chars)\b",
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
    current_template: str | None = None,
    task_checks: Sequence[Check] = (),
    pins_free_values: bool = False,
    varying: Sequence[groups.VaryingKey] = (),
    train_tasks: Sequence[Task] = (),
    document: str = "",
    own_wording: Sequence[str] = (),
) -> tuple[list[Edit], list[EditOutcome]]:
    """Keep the edits that read as real rules; reject the rest with a reason.

    `failing_checks` are the rule checks the shown train failures failed; `task_prompts`
    every prompt the optimizer may have seen (passing all prompts is safest);
    `current_rules` the learned rules of the target document. Kept edits come back in
    order, a placeholder filled from a failing check included (see the module notes).
    `contradiction_checks` (default: `failing_checks`) are the checks an edit must not
    contradict: pass only the common ones, so one odd task cannot veto a rule most
    failures need (the gate judges such conflicts on val). A `template` edit is judged
    whole by `_template_problem` (one per proposal, not the `current_template` again).
    `task_checks`: the rule checks of every task the optimizer may see; with the failing
    ones, they tell where a value is the task's choice (a line fixing one is rejected).
    `pins_free_values`: the proposer declares (`Backend.writes_free_values`) that its spec
    writes a literal for a label the check asks no value for (`Always include "Confidence:
    medium"`); that one kind of pin is let through for it, never for a model.
    `varying`: the keys the train tasks' checks want different values of (`groups`); a
    rule or template that passes one group's checks and fails another's (a pin) or passes
    every group's without a condition (a hedge) is rejected, whoever proposed it.
    `train_tasks`: what a worked example (`worked`) must quote and show the value of; an
    example no train task and its checks support is rejected.
    `document` (the document edited) and `own_wording` (gitsleep's own prompt sentences):
    a rule that repeats either, or is only the skill's name, is rejected (`Echoes`).
    """
    choice_checks = list(dict.fromkeys([*failing_checks, *task_checks]))
    kept: list[Edit] = []
    rejected: list[EditOutcome] = []
    existing = {key: rule for rule in current_rules if (key := docs.rule_key(rule))}
    prompts = [words for words in (_words(p) for p in task_prompts) if words]
    specific = _specific_words(prompts, failing_checks, current_rules)
    earlier: set[str] = set()
    template_kept = False
    examples = sum(1 for rule in current_rules if worked.is_example(rule))
    echoes = Echoes.of(document, own_wording)
    for edit in edits:
        if edit.op in ("add", "replace") and any(
                worked.is_example(line) for line in _content_lines(edit.content)):
            problem = _example_problem(edit, train_tasks, varying, existing, earlier, max_chars,
                                       examples)
            if problem:
                rejected.append(EditOutcome(edit, "rejected", problem))
                continue
            examples += len(_content_lines(edit.content))
            kept.append(edit)
            earlier.update(docs.rule_key(line) for line in _content_lines(edit.content))
            continue
        if edit.op == "template":
            checked, problem = _template_problem(edit, failing_checks, prompts, specific,
                                                 max_chars, current_template, template_kept,
                                                 choice_checks, varying)
            if problem:
                rejected.append(EditOutcome(edit, "rejected", problem))
            else:
                kept.append(checked)
                template_kept = True
            continue
        checked, problem = _hygiene_problem(
            edit, failing_checks, prompts, specific, existing, earlier, max_chars,
            failing_checks if contradiction_checks is None else contradiction_checks,
            choice_checks, free_values=not pins_free_values, varying=varying,
        )
        if not problem and checked.op in ("add", "replace"):
            problem = echoes.problem(_content_lines(checked.content))
        if not problem and checked.op == "add":
            checked = _superseding(checked, current_rules)
        names_a_rule = docs.anchor_names_a_rule(current_rules, checked.anchor)
        if not problem and checked.op == "delete" and not names_a_rule:
            problem = f"anchor {checked.anchor!r} names no rule of the block: nothing to delete"
        if problem:
            rejected.append(EditOutcome(edit, "rejected", problem))
            continue
        if checked.op == "replace" and not names_a_rule:
            note = f"(a replace of {checked.anchor!r}, not a rule of the block, read as add)"
            rationale = f"{checked.rationale} {note}".strip()
            checked = Edit("add", checked.content, "", rationale, checked.target)
        kept.append(checked)
        earlier.update(docs.rule_key(line) for line in _content_lines(checked.content))
    return kept, rejected


_FRONTMATTER_NAME = re.compile(r"\A---\s*\n(?:.*\n)*?name:\s*[\"']?(?P<name>[^\"'\n]+)")
_TITLE = re.compile(r"^#\s+(?P<title>.+?)\s*#*\s*$", re.MULTILINE)
ECHO_RUN = 8  # words in a row shared with the prompt or the document: a copy, not a rule
ECHO_MIN = 4  # a line this short or shorter is judged whole (it is the echo, or it is not)


@dataclass(frozen=True)
class Echoes:
    """What a rule must not repeat: gitsleep's own prompt (a real night proposed "A check
    program must pass (how it is run is not shown; ...)" as a rule), the document it edits
    (its text outside the learned block is already read by the agent) and the skill's name
    (`precise-writer`, proposed as a rule on the same night)."""

    own: tuple[tuple[str, ...], ...] = ()
    document: tuple[tuple[str, ...], ...] = ()
    names: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def of(cls, document: str, own_wording: Sequence[str]) -> Echoes:
        outside = docs.outside_block(document)
        body = _FRONTMATTER.sub("", outside, count=1)
        names = [m.group("name") for m in _FRONTMATTER_NAME.finditer(outside)]
        names += [m.group("title") for m in _TITLE.finditer(body)][:1]
        return cls(own=tuple(tuple(_words(text)) for text in own_wording),
                   document=tuple(tuple(_words(line)) for line in body.split("\n")
                                  if _words(line)),
                   names=tuple(tuple(w) for n in names if (w := _words(n.replace("-", " ")))))

    def problem(self, lines: Sequence[str]) -> str:
        """Why one of the lines repeats the prompt, the document or the skill's name, or ''."""
        for line in lines:
            words = _words(line)
            if tuple(words) in self.names:
                return (f"content is the skill's name ({md.clip(line, 40)!r}), not a rule: "
                        "say what every answer must do")
            if any(_repeats(words, own) for own in self.own):
                return (f"content repeats gitsleep's own prompt ({md.clip(line, 60)!r}): "
                        "state what the answer must do in the rule's own words")
            if any(_repeats(words, text) for text in self.document) or \
                    _repeats(words, tuple(w for text in self.document for w in text)):
                return (f"content repeats what the document already says "
                        f"({md.clip(line, 60)!r}): the agent reads it there already")
        return ""


_FRONTMATTER = re.compile(r"\A---\s*\n(?:.*\n)*?---\s*\n")


def _repeats(words: Sequence[str], source: Sequence[str]) -> bool:
    """`words` (a short line whole, or a run of ECHO_RUN of a longer one) appear in order
    in `source`."""
    if len(words) < ECHO_MIN:
        return False
    if len(words) <= ECHO_RUN:
        return _contains_run(list(source), list(words))
    windows = {tuple(source[i : i + ECHO_RUN]) for i in range(len(source) - ECHO_RUN + 1)}
    return any(tuple(words[i : i + ECHO_RUN]) in windows
               for i in range(len(words) - ECHO_RUN + 1))


def _hygiene_problem(
    edit: Edit,
    failing: Sequence[Check],
    prompts: list[list[str]],
    specific: dict[str, int],
    existing: dict[str, str],
    earlier: set[str],
    max_chars: int,
    contradicted: Sequence[Check],
    choice_checks: Sequence[Check] = (),
    *,
    free_values: bool = True,
    varying: Sequence[groups.VaryingKey] = (),
) -> tuple[Edit, str]:
    """The edit (a bare fragment maybe rewritten) and the first reason to reject it, or ''."""
    if edit.op in ("replace", "delete"):
        token = _angle_placeholder(edit.anchor, failing)
        if token or _echoes_example(edit.anchor):
            return edit, f"anchor is a placeholder ({token or edit.anchor}), not a learned rule"
    if edit.op == "delete":
        return edit, ""
    content = edit.content
    if not content.strip():
        return edit, "content is empty"
    if CONTROL_CHARS.search(content):
        return edit, "content contains control characters"
    hostile = hostile_text.invisible_problem(content) or hostile_text.unsafe_link_problem(content)
    if hostile:
        return edit, hostile
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
    scaffold = next((w for w in PROMPT_SCAFFOLD if w in content.casefold()), "")
    if scaffold:
        return edit, (f"content copies the prompt's wording ({scaffold!r}) around a check's "
                      "example: state what the answer must do in the rule's own words")
    program = program_quote(content, choice_checks or failing)
    if program:
        return edit, program
    token = _untyped_placeholder(lines, failing)
    if token:
        return edit, (f"content echoes a placeholder ({token}) instead of a concrete rule"
                      + _fill_note(lines))
    for line in lines:
        pin = honesty.pin_problem(line, choice_checks or failing, free_values=free_values)
        if pin:
            return edit, pin
    by_groups = groups.value_problem("\n".join(lines), varying)
    if by_groups:
        return edit, by_groups
    content_words = _words(content)
    for words in prompts:
        if _copies_prompt(content_words, words):
            return edit, "content copies a task prompt instead of stating a rule"
    one_task = _one_task_problem(content, specific)
    if one_task:
        return edit, one_task
    when = _DATE_OR_TIME.search(content)
    if when and not any(passes(check, when.group(0)) for check in failing):
        return edit, (f"content names a specific date or time ({when.group(0)}) that no check "
                      "asks for: a detail of one answer, not a rule")
    narrative = next((line for line in lines if _is_account_of_one_case(line)), "")
    if narrative:
        return edit, (f"content tells what happened in one case ({md.clip(narrative, 60)!r}) "
                      "and asks nothing of the agent: an answer to a task, not a rule")
    for check in contradicted:
        if any(_contradicts(line, check) for line in lines) or _refers_back_negated(lines, check):
            return edit, f"content contradicts a failing check: {describe_check(check)}"
        if edit.op == "replace" and _asks_for(check, edit.anchor) and not _asks_for(check, content):
            return edit, (f"contradicts a failing check: replacing {edit.anchor!r} takes away "
                          f"what it needs ({describe_check(check)})")
    rewritten, fragment = fragments.rewrite(lines, failing)
    if fragment:
        return edit, fragment
    if rewritten != lines:
        by_groups = groups.value_problem("\n".join(rewritten), varying)
        if by_groups:  # gitsleep's own rewrite passes the guards the optimizer's rule does
            return edit, by_groups
        note = "(a bare heading or label rewritten as a rule quoting a failing check)"
        edit = Edit(edit.op, "\n".join(rewritten), edit.anchor,
                    f"{edit.rationale} {note}".strip(), edit.target)
        lines = rewritten
    return edit, _duplicate_problem(edit, lines, existing, earlier)


# A template line's text after its bullet and label (`- **Impact:** ...`).
_LINE_LEAD = re.compile(
    rf"^\s*{labels.BULLET}(?:{labels.EMPHASIS}{labels.NAME}?:{labels.EMPHASIS})?\s*")
_PROSE_WORDS = 8  # a sentence this long with no placeholder is content, not a shape


# Words that make a template line an instruction to the agent rather than a line to copy.
_INSTRUCTION = re.compile(
    r"\b(?:must|should|always|never|every\s+answer|each\s+answer|all\s+answers|make\s+sure"
    r"|ensure|do\s+not|don'?t)\b", re.IGNORECASE)
_SLOT = re.compile(r"<[^<>\n]*>")


def _instructs(line: str) -> bool:
    """A template line that tells the agent what to do (outside its <placeholders>): a rule
    in words, which the agent would copy into its answer as if it were the answer's text."""
    return not line.lstrip().startswith("#") and bool(_INSTRUCTION.search(_SLOT.sub("", line)))


def _prose_line(lines: Sequence[str], failing: Sequence[Check]) -> str:
    """The first template line that is a sentence of content (one answer's text written
    into every answer: seen on real models, a brief's impact for one migration) rather
    than a heading, a labelled slot, a placeholder or a text a failing check asks for."""
    for line in lines:
        if line.lstrip().startswith("#") or "<" in line:
            continue
        rest = _LINE_LEAD.sub("", line, count=1)
        if len(_words(rest)) >= _PROSE_WORDS and not any(
                fragments.serves(line, check) for check in failing):
            return line.strip()
    return ""


def _example_problem(edit: Edit, train: Sequence[Task], varying: Sequence[groups.VaryingKey],
                     existing: dict[str, str], earlier: set[str], max_chars: int,
                     examples: int) -> str:
    """Why an edit of worked examples cannot be kept, or '': each line an example a train
    task and its checks support, a few at most, no hostile or marker text, no duplicate."""
    lines = _content_lines(edit.content)
    content = "\n".join(lines)
    if not all(worked.is_example(line) for line in lines):
        return "a worked example goes in an edit of its own, without rules beside it"
    hostile = hostile_text.invisible_problem(content) or hostile_text.unsafe_link_problem(content)
    if CONTROL_CHARS.search(content) or hostile or _MARKER_TEXT.search(content) \
            or "<!--" in content or "-->" in content:
        return hostile or "content contains control characters or marker text"
    if len(content) > max_chars:
        return f"content is {len(content)} characters, over the limit of {max_chars}"
    if examples + len(lines) > worked.MAX_EXAMPLES:
        return (f"a learned block holds at most {worked.MAX_EXAMPLES} worked examples: a few "
                "cases that cover the groups, not a copy of train")
    for line in lines:
        why = worked.problem(line, train, varying)
        if why:
            return why
    return _duplicate_problem(edit, lines, existing, earlier)


def program_quote(content: str, checks: Sequence[Check]) -> str:
    """Why `content` quotes how a check's program is run (its path, script or arguments;
    seen: `{"max_words": 73.0, "min_words": 71.0}` and an interpreter path as rules), or ''.
    A bare command name ("python") may be named; a path, a file name or an argument's
    JSON, or one of its keys, may not."""
    folded = content.casefold()
    for check in checks:
        argv = check_argv(check.op, check.text)
        for part in argv or []:
            quoted = [part, *_json_keys(part)]
            hit = next((q for q in quoted if len(q) >= 4 and (q is not part or _PROGRAMMY.search(q))
                        and q.casefold() in folded), "")
            if hit:
                return (f"content quotes how a check program is run ({md.clip(hit, 60)!r}): "
                        "state what the answer must do, not the check's command line")
    return ""


_PROGRAMMY = re.compile(r"[/\\.{}\[\]=:]|^-")  # a path, a file name, JSON, an option


def _json_keys(part: str) -> list[str]:
    """The keys of an argument that is a JSON object (`{"max_words": 73}` gives max_words)."""
    try:
        value = json.loads(part)
    except ValueError:
        return []
    return [str(k) for k in value] if isinstance(value, dict) else []


def _specific_words(
    prompts: list[list[str]], failing: Sequence[Check], rules: Sequence[str]
) -> dict[str, int]:
    """Words that only one task prompt has (word -> that prompt's index).

    With fewer than three prompts nothing is specific: the shared template of the tasks
    cannot be told from one task's facts. Words a check or a current rule uses are never
    specific: a rule may name what the checks need.
    """
    if len(prompts) < 3:
        return {}
    allowed = set(_words(" ".join(c.text for c in failing)))
    allowed.update(_words(" ".join(rules)))
    owners: dict[str, set[int]] = {}
    for index, words in enumerate(prompts):
        for word in set(words):
            if word not in _COMMON_WORDS and word not in allowed:
                owners.setdefault(word, set()).add(index)
    return {word: next(iter(where)) for word, where in owners.items() if len(where) == 1}


def _one_task_problem(content: str, specific: dict[str, int]) -> str:
    """Why a content reads as an answer to one task: two or more of that task's own words."""
    by_prompt: dict[int, list[str]] = {}
    for word in dict.fromkeys(_words(content)):
        if word in specific:
            by_prompt.setdefault(specific[word], []).append(word)
    shared = max(by_prompt.values(), key=len, default=[])
    if len(shared) < 2:
        return ""
    return (f"content answers one task instead of stating a rule: {', '.join(shared[:4])} "
            "come from a single task prompt")


def _asks_for(check: Check, text: str) -> bool:
    """Whether `text` names, without negating it, what a content check needs."""
    if is_section_check(check):
        arg = check.text
        named = bool(arg.strip()) and arg.casefold() in text.casefold()
    else:
        named = passes(check, text)  # contains and regex; False for the rest
    return named and not _contradicts(text, check)


def _refers_back_negated(lines: list[str], check: Check) -> bool:
    """A line names what the check needs; a later line says to leave "this section" out."""
    for i, line in enumerate(lines):
        if _asks_for(check, line):
            return any(_NEGATED_REFERENCE.search(later) for later in lines[i + 1 :])
    return False


def _is_account_of_one_case(line: str) -> bool:
    """A prose line that tells a story: every sentence has a subject and asks nothing of the
    agent, and one is in the past tense with no present-tense verb ("The outage affected
    the EU region."). That is what an answer says about one task, not a rule for every
    task; "The last line names the owner." describes a format and is kept."""
    text = _LABEL.sub("", line.lstrip("#").strip(), count=1)
    if len(text.split()) < 6:
        return False
    sentences = [s for s in _SENTENCE_SPLIT.split(text) if s.strip()]
    for sentence in sentences:
        first = _words(sentence)[:1]
        if _DIRECTIVE.search(sentence) or not first or first[0] not in _SUBJECT_WORDS:
            return False  # asks something, or is led by a verb (an imperative) or a label
    return any(_PAST_TENSE.search(s) and not _PRESENT_TENSE.search(s) for s in sentences)


def _content_lines(content: str) -> list[str]:
    """The rule lines an edit's content stands for: non-empty, without a leading bullet."""
    lines = []
    for raw in content.split("\n"):
        line = _BULLET.sub("", raw, count=1).strip()
        if line:
            lines.append(line)
    return lines


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
    return any(wants_text(c) and token.casefold() in c.text.casefold() for c in failing)


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


def _untyped_placeholder(lines: list[str], failing: Sequence[Check]) -> str:
    """The first placeholder that is an echo, not a typed one a failing check leaves open
    (`Severity: <1-4>` for `Severity:\\s*[1-4]`, kept for the agent to fill), or ''."""
    for line in lines:
        for match in _ANGLE.finditer(line):
            token = match.group(0)
            if not _is_placeholder_angle(match.group(1)) or _required_by(token, failing):
                continue
            if not (TYPED_SLOT.fullmatch(token) and _typed_for_a_check(line, failing)):
                return token
        for pattern in (_WORD_PLACEHOLDER, _CURLY_PLACEHOLDER):
            for match in pattern.finditer(line):
                if not _required_by(match.group(0), failing):
                    return match.group(0)
    return ""


def _fill_note(lines: list[str]) -> str:
    """Which placeholders a copied shape still holds, for the note back to the optimizer
    (a real 1.5B optimizer sent the conditional shape back with `<condition 1>` in it)."""
    left = list(dict.fromkeys(m.group(0) for line in lines for m in _ANGLE.finditer(line)
                              if "condition" in m.group(1).casefold()))
    if not left:
        return ""
    return (f"; fill {' and '.join(left)} in your own words (what in a task picks each "
            "value), keeping the quoted values")


def _typed_for_a_check(line: str, failing: Sequence[Check]) -> bool:
    """Whether the line, its typed placeholders filled with any one option, gives a failing
    check that leaves a choice what it wants."""
    filled = sample_fill(line)
    return any(passes(check, filled) and (check.op != "regex" or has_choice(check.text))
               for check in failing)


def _superseding(edit: Edit, rules: Sequence[str]) -> Edit:
    """An `add` that fixes a label a kept rule fixes to another value replaces that rule:
    the gate decides between the two, and the block never holds both."""
    for line in _content_lines(edit.content):
        old = honesty.superseded(line, rules)
        if old is not None:
            note = f"(supersedes the kept rule {old!r}: a replace, never beside it)"
            return Edit("replace", edit.content, old, f"{edit.rationale} {note}".strip(),
                        edit.target)
    return edit


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
    spec = OPS.get(check.op)
    if spec is None:
        return False
    arg = check.text
    line = line.replace("\u2019", "'")
    if spec.bound:
        try:
            bound = int(arg)
        except ValueError:
            return False
        if spec.bound == "min":
            return any(whole_number(m.group(1)) < bound for m in _UPPER_BOUND.finditer(line))
        return any(whole_number(m.group(1)) > bound
                   for pattern in (_LOWER_BOUND, _NEW_LIMIT) for m in pattern.finditer(line))
    if not any(ch.isalnum() for ch in arg):
        return False  # a bare ":" or "-" shows up in too many unrelated rules
    for clause in _CLAUSE_SPLIT.split(line):
        if spec.quotes == "pattern":
            match = search(arg, clause)
            at = match.start() if match else -1
        else:
            at = clause.casefold().find(arg.casefold())
        if at < 0:
            continue
        polarity = _polarity(clause[:at])
        if spec.quotes and polarity == "neg":  # the check wants the text, the rule forbids it
            return True
        if spec.avoids and polarity == "pos":  # the check forbids the text, the rule wants it
            return True
    return False


def _duplicate_problem(
    edit: Edit, lines: list[str], existing: dict[str, str], earlier: set[str]
) -> str:
    normed = [docs.rule_key(line) for line in lines]
    if len(set(normed)) < len(normed):
        return "content repeats a line"
    replaced: set[str] = set()
    if edit.op == "replace":
        anchor = docs.rule_key(edit.anchor)
        replaced = {norm for norm in existing if anchor and (norm == anchor or anchor in norm)}
        if replaced and set(normed) <= replaced:
            return "replacement is identical to the rule it replaces"
    for norm in normed:
        if norm in existing and norm not in replaced:
            return f"duplicates an existing rule: {existing[norm]!r}"
        if norm in earlier:
            return "repeats an earlier edit in this proposal"
    return ""


def _template_problem(
    edit: Edit,
    failing: Sequence[Check],
    prompts: list[list[str]],
    specific: dict[str, int],
    max_chars: int,
    current: str | None,
    seen: bool,
    choice_checks: Sequence[Check] = (),
    varying: Sequence[groups.VaryingKey] = (),
) -> tuple[Edit, str]:
    """A template edit (maybe rebuilt from the checks it names) and why to reject it, or ''.

    Placeholders are what a skeleton is for, so only the rules that keep task facts,
    secrets and hostile text out apply, a line may not fix a value the checks leave to
    the task, and the skeleton must give some failing check what it wants."""
    lines, problem = docs.template_lines(edit.content)
    if problem:
        return edit, problem
    content = "\n".join(lines)
    if CONTROL_CHARS.search(content):
        return edit, "template contains control characters"
    hostile = hostile_text.invisible_problem(content) or hostile_text.unsafe_link_problem(content)
    if hostile:
        return edit, hostile.replace("content", "template", 1)
    if _MARKER_TEXT.search(content) or "<!--" in content or "-->" in content:
        return edit, "template contains the learned-block marker text or an HTML comment marker"
    values = _template_value_problem(content, choice_checks or failing, varying)
    if values:
        return edit, values
    program = program_quote(content, choice_checks or failing).replace("content", "template", 1)
    if program:
        return edit, program
    bare = honesty.bare_labels(content)
    if bare:
        return edit, (f"template line {bare[0]!r} is a bare label: give it a slot the answer "
                      f"fills, naming what belongs there ({bare[0]} <...>: the values the "
                      "check allows, or what to write); "
                      "an answer copies a bare label empty")
    if len(content) > max_chars:
        return edit, f"template is {len(content)} characters, over the limit of {max_chars}"
    if len(lines) > skeleton.MAX_LINES:
        return edit, f"template has {len(lines)} lines, over the limit of {skeleton.MAX_LINES}"
    if _echoes_example(content):
        return edit, "template copies the prompt's example text"
    filled = [sample_fill(line) for line in lines]  # a typed placeholder as one option
    if any(_copies_prompt(_words(line), words) for line in lines for words in prompts):
        return edit, "template copies a task prompt instead of giving the answer's shape"
    one_task = _one_task_problem(content, specific)
    if one_task:
        return edit, one_task.replace("content answers", "template answers", 1)
    when = _DATE_OR_TIME.search(content)
    if when and not any(passes(check, when.group(0)) for check in failing):
        return edit, (f"template names a specific date or time ({when.group(0)}) that no check "
                      "asks for: a detail of one answer, not a shape")
    rebuilt = ""
    if any(_instructs(line) for line in lines) or not any(
            fragments.serves(line, check) for line in filled for check in failing):
        # a rule in words sent as a template ("Every answer must have a section headed
        # '## Impact'.", "Every answer must have a line 'Severity: <1-4>'", both seen from
        # Qwen2.5-Coder 1.5B): the skeleton of the checks it names
        named = [c for c in failing if skeleton.structural_line(c) and _names(c, content)]
        rebuilt = skeleton.derive(named) or ""
        if not rebuilt:
            return edit, ("the template names nothing a failing check needs: give the headings "
                          "and labelled lines the failing checks ask for")
        content = rebuilt
        values = _template_value_problem(content, choice_checks or failing, varying)
        if values:  # gitsleep's own rebuild passes the guards an optimizer's template does
            return edit, f"{values} (the template in words, rebuilt: {md.one_line(content)!r})"
    prose = "" if rebuilt else _prose_line(lines, failing)
    if prose:
        return edit, (f"template line {prose!r} is one answer's content, not a shape: write a "
                      "placeholder such as <write the impact here> for what each task fills")
    if current and " ".join(current.casefold().split()) == " ".join(content.casefold().split()):
        return edit, "the template is already in the learned block"
    if seen:
        return edit, "only one template per proposal: a second would replace the first"
    if rebuilt:
        note = "(a template in words rebuilt as the skeleton of the failing checks it names)"
        edit = Edit(edit.op, content, edit.anchor, f"{edit.rationale} {note}".strip(), edit.target)
    return edit, ""


def _template_value_problem(content: str, checks: Sequence[Check],
                            varying: Sequence[groups.VaryingKey]) -> str:
    """Why a template fixes a value the checks leave to the task (a pin, or a hedge of
    every value), or '': asked of the template as written and of gitsleep's rebuild of it."""
    for line in content.split("\n"):
        pin = honesty.pin_problem(line, checks, template=True)
        if pin:
            return pin
    return groups.value_problem(content, varying, template=True)


def _names(check: Check, text: str) -> bool:
    """Whether `text` names what a structural check wants: its section, or the label of
    the line it wants ("Severity" for `Severity:\\s*[1-4]`)."""
    lines = skeleton.structural_line(check)
    name = lines[0].lstrip("#").split(":")[0].strip().casefold() if lines else ""
    return bool(name) and re.search(rf"\b{re.escape(name)}\b", text.casefold()) is not None
