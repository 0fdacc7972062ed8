"""A condition is judged by the train tasks it picks: one that holds for every task, or for
none, or picks the wrong ones, gives a value no better than a pin."""

from __future__ import annotations

import json
import re

import pytest

from gitsleep.backends.offline import simulate_answer, simulate_conditions
from gitsleep.core import conditions, groups
from gitsleep.core import documents as docs
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Answer, Check, EpochResult, EpochSettings, Judge, Task
from gitsleep.core.ports import Backend, ModelCall

REJECT, APPROVE = Check("regex", r"(?im)^\W*verdict\W*reject\b"), \
    Check("regex", r"(?im)^\W*verdict\W*approve\b")
SQL = {
    "t1": ("Review this SQL statement: DROP TABLE users; it destroys data.", REJECT),
    "t2": ("Review this SQL statement: SELECT id FROM users;", APPROVE),
    "t3": ("Review this SQL statement: DELETE FROM orders; it destroys data.", REJECT),
    "t4": ("Review this SQL statement: INSERT INTO logs VALUES (1);", APPROVE),
    "t5": ("Review this SQL statement: TRUNCATE sessions; it destroys data.", REJECT),
    "t6": ("Review this SQL statement: UPDATE users SET name = 'a' WHERE id = 1;", APPROVE),
}
TRAIN = [Task(i, p, "train", Judge("rule", (c,))) for i, (p, c) in SQL.items()]
KEYS = groups.varying_keys(TRAIN)

# the four pseudo-conditions a scripted optimizer got accepted, one a night
PSEUDO = [
    'When you answer, end the answer with "Verdict: reject".',
    'For SQL statements, write "Verdict: reject".',
    'If in doubt, write "Verdict: reject".',
    'When reviewing a statement, write "Verdict: approve".',
]


@pytest.mark.parametrize(("rule", "condition", "value"), [
    (PSEUDO[0], "When you answer", "reject"),
    (PSEUDO[1], "For SQL statements", "reject"),
    (PSEUDO[2], "If in doubt", "reject"),
    (PSEUDO[3], "When reviewing a statement", "approve"),
    ('Write "Verdict: reject" when the statement drops or deletes data, else '
     '"Verdict: approve".', "when the statement drops or deletes data", "reject"),
])
def test_each_clause_that_gives_a_value_under_a_condition_is_found(
        rule: str, condition: str, value: str) -> None:
    found = conditions.of_rule(rule, KEYS)
    assert found[0].text == condition and value in found[0].group.wants()


def test_an_otherwise_clause_takes_what_the_others_leave() -> None:
    rule = ('When the task mentions "DROP", include "Verdict: reject"; otherwise include '
            '"Verdict: approve".')
    first, rest = conditions.of_rule(rule, KEYS)
    assert first.text == 'When the task mentions "DROP"' and not first.otherwise
    assert rest.otherwise and "approve" in rest.group.wants()
    assert conditions.of_rule("Always be concise.", KEYS) == []


def picks(rule: str) -> list[set[str]]:
    """What the offline simulator says each condition of `rule` holds for."""
    found = conditions.of_rule(rule, KEYS)
    call = conditions.judge_call("judge", found, TRAIN)
    reply = simulate_conditions(dict(call.context or {}))
    parsed = conditions.parse_reply(reply, len(conditions.judged(found)), [t.id for t in TRAIN])
    assert isinstance(parsed, list)
    return parsed


@pytest.mark.parametrize(("rule", "why"), [
    (PSEUDO[0], "holds for every train task (t1, t2, t3, t4, t5, t6)"),
    (PSEUDO[1], "holds for every train task (t1, t2, t3, t4, t5, t6)"),
    (PSEUDO[2], "holds for no train task"),
    (PSEUDO[3], "holds for every train task (t1, t2, t3, t4, t5, t6)"),
])
def test_a_pseudo_condition_is_refused_and_the_note_says_which_tasks_it_picked(
        rule: str, why: str) -> None:
    found = conditions.of_rule(rule, KEYS)
    problem = conditions.problem(found, picks(rule))
    assert why in problem and "a pin" in problem


def test_a_condition_that_picks_the_tasks_of_its_value_is_kept() -> None:
    rule = ('When the task mentions "DROP", "DELETE" or "TRUNCATE", include "Verdict: reject"; '
            'otherwise include "Verdict: approve".')
    found = conditions.of_rule(rule, KEYS)
    assert conditions.problem(found, [{"t1", "t3", "t5"}]) == ""


def test_the_thresholds_are_most_of_its_own_and_few_of_the_others() -> None:
    (found,) = conditions.of_rule('When the task mentions "users", write "Verdict: reject".',
                                  KEYS)
    # t1 of the 3 reject tasks (1 in 3 < 3 in 4), and t2, t6 of the 3 approve tasks
    problem = conditions.problem([found], [{"t1", "t2", "t6"}])
    assert "picks t1, t2, t6" in problem
    assert "1 of the 3 train tasks that want" in problem and "2 of the 3 others" in problem
    # 3 of 3 and none of the others: kept; 3 of 3 and 1 of 3 others (above 1 in 4): refused
    assert conditions.problem([found], [{"t1", "t3", "t5"}]) == ""
    assert conditions.problem([found], [{"t1", "t3", "t5", "t2"}]) != ""


def test_the_judge_call_is_one_batched_call_with_its_conditions_and_tasks() -> None:
    found = conditions.of_rule(PSEUDO[1], KEYS)
    call = conditions.judge_call("m", found, TRAIN)
    assert call.purpose == "judge" and call.model == "m" and call.temperature == 0.0
    user = call.messages[-1][1]
    assert "For SQL statements" in user and all(f"<<<TASK {t.id}" in user for t in TRAIN)
    assert conditions.judge_call("m", found, TRAIN).cache_key() == call.cache_key()


def test_a_reply_that_cannot_be_read_is_an_error_never_a_pick() -> None:
    assert isinstance(conditions.parse_reply("no json here", 1, ["t1"]), str)
    assert isinstance(conditions.parse_reply('{"1": "t1"}', 1, ["t1"]), str)
    # an id no task has is left out; a condition the reply skips holds for none
    assert conditions.parse_reply(json.dumps({"1": ["t1", "zz"]}), 2, ["t1"]) == [{"t1"}, set()]


def test_severity_and_commit_type_keys_are_judged_alike() -> None:
    high, low = Check("regex", r"Severity:\s*[12]\b"), Check("regex", r"Severity:\s*[34]\b")
    train = [Task(f"s{i}", f"Incident {i}: {'outage' if i % 2 else 'typo'}.", "train",
                  Judge("rule", (high if i % 2 else low,))) for i in range(4)]
    keys = groups.varying_keys(train)
    (found,) = conditions.of_rule('For incidents, write "Severity: 1".', keys)
    assert "every train task" in conditions.problem([found], [{t.id for t in train}])
    kinds = ("feat", "fix", "docs")
    checks = {k: Check("regex", rf"(?m)\A\s*{k}(\([^)]*\))?!?: \S") for k in kinds}
    commits = [Task(f"c{i}", f"Commit for change {i}", "train", Judge("rule", (checks[k],)))
               for i, k in enumerate(kinds * 2)]
    (pin,) = conditions.of_rule('When writing a commit, start with "feat: add".',
                                groups.varying_keys(commits))
    assert "every train task" in conditions.problem([pin], [{t.id for t in commits}])


# -- scripted nights: the four pseudo-conditions, one a night ----------------------------


class ObeysAnyRule(Backend):
    """An agent that obeys every rule it reads: each learned rule's quoted texts go into the
    answer, whatever its condition says (the offline simulator's own conditional directive
    it follows as the simulator does). The optimizer proposes `rule` once; the condition
    judge is the offline simulator's, or `credulous`: it says each condition holds for
    exactly the train tasks that want its value, so only the gate stands in the way."""

    name = "scripted"

    def __init__(self, rule: str, *, credulous: bool = False) -> None:
        self.rule, self.credulous, self.proposed = rule, credulous, 0
        self.condition_calls = 0
        self.prompts: list[str] = []  # what the optimizer was shown, retry included

    def complete(self, call: ModelCall) -> Answer:
        context = dict(call.context or {})
        if call.purpose == "propose":
            self.proposed += 1
            self.prompts.append(call.messages[-1][1])
            edits = [{"op": "add", "content": self.rule}] if self.proposed == 1 else []
            return Answer(json.dumps({"edits": edits}), None, 1, 1)
        if call.purpose == "judge" and context.get("kind") == "conditions":
            self.condition_calls += 1
            if self.credulous:
                return Answer(json.dumps({"1": [t for t, (_, c) in SQL.items()
                                                if c == self.wanted()]}), None, 1, 1)
            return Answer(simulate_conditions(context), None, 1, 1)
        prompt = call.messages[-1][1]
        lines = ["## Review", "Reviewed the statement."]
        for rule in docs.learned_rules("\n".join(context.get("documents", []))):
            if "mentions" in rule:
                lines.append(simulate_answer([rule], prompt).split("\n")[-1])
            else:
                lines += [m.group(1) for m in re.finditer(r'"([^"]+)"', rule)]
        return Answer("\n".join(lines), None, 1, 1)

    def wanted(self) -> Check:
        return REJECT if "reject" in self.rule else APPROVE


def sql_night(rule: str, *, credulous: bool = False) -> tuple[EpochResult, ObeysAnyRule]:
    """6 train, 4 val and 4 held-out SQL reviews; the reject ones say they destroy data."""
    tasks = [Task(i, p, "train", Judge("rule", (c,))) for i, (p, c) in SQL.items()]
    held = {"v1": ("DROP TABLE carts; it destroys data.", REJECT),
            "v2": ("SELECT * FROM carts;", APPROVE),
            "v3": ("DELETE FROM carts; it destroys data.", REJECT),
            "v4": ("SELECT count(*) FROM carts;", APPROVE)}
    tasks += [Task(i, f"Review this SQL statement: {p}", "val", Judge("rule", (c,)))
              for i, (p, c) in held.items()]
    tasks += [Task(i.replace("v", "h"), f"Review this SQL statement: {p}", "test",
                   Judge("rule", (c,))) for i, (p, c) in held.items()]
    backend = ObeysAnyRule(rule, credulous=credulous)
    settings = EpochSettings(model="a", optimizer_model="o", judge_model="j", rounds=1,
                             proposals=1, workers=1)
    result = run_epoch(tasks, {"skill": "# SQL review\n", "memory": None}, settings, backend,
                       skill="sql-review")
    return result, backend


def refusals(result: EpochResult) -> list[str]:
    return [o.reason for p in result.proposals for o in p.dropped]


@pytest.mark.slow
def test_each_pseudo_condition_is_refused_before_scoring_on_its_night() -> None:
    accepted, refused, judged = 0, 0, 0
    for rule in PSEUDO:
        result, backend = sql_night(rule)
        accepted += result.decision == "accepted"
        refused += any("holds for every train task" in why or "holds for no train task" in why
                       for why in refusals(result))
        judged += backend.condition_calls
        assert [p.label for p in result.passes if p.split == "val"] == ["baseline"], rule
        # the retry tells the optimizer which tasks its condition picked
        assert "holds for" in backend.prompts[-1] and "train task" in backend.prompts[-1]
    # one judge call a night: the retry that follows the refusal proposes nothing new
    assert (accepted, refused, judged) == (0, 4, 4)


@pytest.mark.slow
def test_a_pseudo_condition_past_a_credulous_judge_is_refused_by_its_wrong_values() -> None:
    accepted, by_wrong_values = 0, 0
    for rule in PSEUDO:
        result, _ = sql_night(rule, credulous=True)
        accepted += result.decision == "accepted"
        by_wrong_values += any("carry another group's value" in t.reason
                               for t in result.trials)
    assert (accepted, by_wrong_values) == (0, 4)


@pytest.mark.slow
def test_a_condition_that_picks_its_tasks_is_still_accepted_on_a_scripted_night() -> None:
    honest = ('When the task mentions "destroys", include "Verdict: reject"; otherwise '
              'include "Verdict: approve".')
    result, backend = sql_night(honest)
    assert result.decision == "accepted" and backend.condition_calls == 1
    assert [r for p in result.proposals for r in p.judged_rules] == [honest]
    assert (result.val.baseline, result.val.candidate) == (0.0, 1.0)


def test_the_call_ceiling_counts_one_condition_call_per_edit_of_each_reflect_call() -> None:
    from gitsleep.core.epoch import call_ceiling

    settings = EpochSettings(model="a", optimizer_model="o", judge_model="j", rounds=2,
                             proposals=3, edit_budget=2)
    same = [Task(t.id, t.prompt, "train", Judge("rule", (REJECT,))) for t in TRAIN]
    val = [Task("v1", "p", "val", Judge("rule", (REJECT,)))]
    extra = call_ceiling(settings, [*TRAIN, *val], False) - call_ceiling(settings, [*same, *val],
                                                                          False)
    assert extra == 2 * 3 * 2 * 2  # rounds x proposals x (call and retry) x edits


def test_the_dependency_review_condition_picks_exactly_its_breaking_tasks() -> None:
    """The honest rule the bundled example learns offline passes the condition judge."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "examples/dependency-review/evals"
    rows = [json.loads(line) for line in
            (folder / "dependency-review/tasks.jsonl").read_text().splitlines() if line.strip()]
    train = [Task(r["id"], r["prompt"], "train", Judge("rule", tuple(
        Check(c["op"], c.get("arg")) for c in r["judge"]["checks"])))
        for r in rows if r.get("split", "train") == "train"]
    rule = ('When the task mentions "breaking", include "Verdict: reject"; otherwise include '
            '"Verdict: approve".')
    found = conditions.of_rule(rule, groups.varying_keys(train))
    call = conditions.judge_call("j", found, train)
    picks = conditions.parse_reply(simulate_conditions(dict(call.context or {})), 1,
                                   [t.id for t in train])
    assert isinstance(picks, list) and picks[0]
    assert conditions.problem(found, picks) == ""
