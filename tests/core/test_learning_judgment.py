"""Learning the judgment, not only the shape.

Train tasks whose checks want different values of one line are grouped (`core.groups`);
the reflection shows the groups side by side, hygiene refuses a pin or a hedge by testing
the edit against the groups' checks (whatever its spelling), and the offline simulator
learns the condition on the bundled dependency-review example.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitsleep.backends.offline import OfflineBackend, simulate_answer, simulate_proposal
from gitsleep.core import documents as docs
from gitsleep.core import gate, groups, honesty, reflect, skeleton
from gitsleep.core.calls import CallRunner
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import (
    Check,
    Edit,
    EpochSettings,
    GateSettings,
    Judge,
    PassResult,
    SampleResult,
    Score,
    Task,
    TaskResult,
)
from tests.support.cli import consolidate_example
from tests.support.gitrepo import git

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUMMARY = Check("section_present", "Summary")
# the shape of the checks behind the pin a real night accepted (held-out 0 -> 0.438): the
# label and the value may run together, so the shape-based guard derived `Verdictreject`
REJECT, APPROVE = Check("regex", r"(?i)verdict\W*reject"), Check("regex", r"(?i)verdict\W*approve")
PROMPTS = {
    "t1": "Update a 1.0 -> 2.0. Changelog: BREAKING: removed the v1 client.",
    "t2": "Update b 3.1 -> 3.2. Changelog: fixed a leak.",
    "t3": "Update c 0.9 -> 1.0. Changelog: BREAKING: renamed every option.",
    "t4": "Update d 5.0 -> 5.1. Changelog: faster parsing.",
    "v1": "Update e 1.0 -> 1.1. Changelog: VALONLY wording.",
}
WANTS = {"t1": REJECT, "t2": APPROVE, "t3": REJECT, "t4": APPROVE, "v1": REJECT}
TASKS = {i: Task(i, p, "val" if i.startswith("v") else "train",
                 Judge("rule", (SUMMARY, WANTS[i]))) for i, p in PROMPTS.items()}
TRAIN = [t for t in TASKS.values() if t.split == "train"]
DOC = "---\nname: s\n---\n# Review\nReview updates.\n"
CONDITIONAL = ('When the changelog announces a breaking change, end with "Verdict: reject"; '
               'otherwise end with "Verdict: approve".')


def hygiene(edits: list[Edit], *, simulated: bool = False):
    checks = [c for t in TRAIN for c in t.judge.checks]
    return check_hygiene(edits, failing_checks=[SUMMARY, REJECT, APPROVE],
                         task_prompts=[t.prompt for t in TRAIN], current_rules=[],
                         task_checks=checks, pins_free_values=simulated,
                         varying=groups.varying_keys(TRAIN))


# -- item 2: a pin or a hedge is decided by the checks, not by the spelling ---------------


@pytest.mark.parametrize("simulated", [False, True])
def test_the_pin_a_real_night_accepted_is_refused_whoever_proposed_it(simulated: bool) -> None:
    pin = Edit("add", "Every answer must contain the text 'Verdictreject'.")
    kept, refused = hygiene([pin], simulated=simulated)
    assert kept == []
    assert "a pin" in refused[0].reason and "2 train task(s) want" in refused[0].reason


@pytest.mark.parametrize(("content", "why"), [
    # accepted by a real two-agent night (dependency-review seed 2): the check's own
    # regex, quoted, asks every answer for one group's value
    ("Every answer must match the regular expression `(?i)verdict\\W*reject`.", "a pin"),
    ("Answers match `(?i)verdict\\W*reject` or `(?i)verdict\\W*approve`.", "a hedge"),
])
def test_a_rule_quoting_one_groups_regex_is_a_pin_and_both_a_hedge(content: str,
                                                                    why: str) -> None:
    kept, refused = hygiene([Edit("add", content)])
    assert kept == [] and why in refused[0].reason, refused


def test_a_rule_quoting_each_groups_regex_with_its_condition_is_kept() -> None:
    rule = ("When the changelog announces a breaking change, the answer matches "
            "`(?i)verdict\\W*reject`; otherwise it matches `(?i)verdict\\W*approve`.")
    kept, _ = hygiene([Edit("add", rule)])
    assert [e.content for e in kept] == [rule]


def test_a_template_with_a_line_per_value_is_a_hedge_and_a_conditional_rule_is_kept() -> None:
    hedge = Edit("template", "## Summary\n<what changes>\nVerdict: approve\nVerdict: reject")
    kept, refused = hygiene([hedge, Edit("add", CONDITIONAL)])
    assert [e.content for e in kept] == [CONDITIONAL]
    assert "a hedge" in refused[0].reason


def test_a_rule_that_lists_every_value_without_saying_when_is_a_hedge() -> None:
    kept, refused = hygiene([Edit("add", 'Always include "Verdict: approve" and '
                                         '"Verdict: reject".')])
    assert kept == [] and "a hedge" in refused[0].reason


# -- item 1: contrast evidence in reflection ------------------------------------------------


def result(task_id: str, answer: str, failed: tuple[Check, ...]) -> TaskResult:
    score = Score(0.0 if failed else 1.0, 0.5, "failed" if failed else "ok", failed)
    return TaskResult(task_id, "train", [SampleResult(0, answer, None, score)],
                      hard=score.hard, soft=score.soft, value=score.hard)


def test_the_prompt_shows_train_groups_side_by_side_and_never_a_val_task() -> None:
    failures = [result("t1", "Looks fine.", (REJECT,)), result("t2", "Hmm.", (APPROVE,))]
    prompt = reflect.build_prompt(reflect.Evidence("skill", DOC, failures, [], TASKS, []), 2)
    section = prompt.split("These train tasks' checks want different values", 1)[1]
    one, two = section.split("Group 2", 1)
    assert "Group 1 (2 train task(s)): the answer must match the regular expression" in one
    assert PROMPTS["t1"] in one and PROMPTS["t3"] in one and "Looks fine." in one
    assert PROMPTS["t2"] in two and PROMPTS["t4"] in two
    assert "names that condition for each value" in prompt
    assert "VALONLY" not in prompt


def test_the_optimizer_context_carries_the_train_groups_only() -> None:
    class Recorder(OfflineBackend):
        contexts: list[dict[str, object]] = []

        def complete(self, call):  # type: ignore[no-untyped-def]
            self.contexts.append(dict(call.context or {}))
            return super().complete(call)

    backend = Recorder()
    settings = EpochSettings(model="a", optimizer_model="o", judge_model="j", edit_budget=2)
    failures = [result(i, "x", (SUMMARY, WANTS[i])) for i in ("t1", "t2", "t3", "t4")]
    proposal = reflect.propose(CallRunner(backend), settings,
                               reflect.Evidence("skill", DOC, failures, [], TASKS, []),
                               round_no=1, index=0)
    (key,) = backend.contexts[0]["groups"]  # type: ignore[misc]
    assert [len(g["prompts"]) for g in key["groups"]] == [2, 2]
    assert "VALONLY" not in json.dumps(key)
    # the literal each group's pattern matches, each under the condition that picks it
    assert [e.content for e in proposal.edits] == [
        'Use the heading "## Summary"',
        'When the task mentions "breaking", include "Verdict: reject"; '
        'otherwise include "Verdict: approve".']


# -- item 7: the simulator obeys and proposes a conditional directive ----------------------


def test_the_simulated_agent_picks_the_line_the_condition_names() -> None:
    doc = 'When the task mentions "breaking", include "Verdict: reject"; otherwise include ' \
          '"Verdict: approve".'
    assert simulate_answer([doc], "Changelog: Breaking: gone").endswith("Verdict: reject")
    assert simulate_answer([doc], "Changelog: faster").endswith("Verdict: approve")


def test_no_word_separates_the_groups_so_the_simulator_proposes_no_value() -> None:
    context = {"budget": 4, "failures": [{"task_id": "t1", "failed": [["regex", "V:\\s*a"]]}],
               "groups": [{"key": "op:regex", "groups": [
                   {"want": [["regex", "V:\\s*a"]], "prompts": ["one red", "two blue"]},
                   {"want": [["regex", "V:\\s*b"]], "prompts": ["one blue", "two red"]}]}]}
    assert json.loads(simulate_proposal(context)) == {"edits": []}


def test_the_dependency_review_example_learns_the_condition_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = EXAMPLES / "dependency-review"
    work, data = consolidate_example(tmp_path, monkeypatch, capsys, example)
    assert data["decision"] == "accepted"
    assert (data["val"]["baseline"], data["val"]["candidate"]) == (0.25, 1.0)
    assert (data["test"]["baseline"], data["test"]["candidate"]) == (0.25, 1.0)
    # the reviewer sees each group lifted, on val and on held-out
    diagnostics = json.loads(next((work / ".gitsleep/runs").glob("*/diagnostics.json"))
                             .read_text())
    assert [(g["split"], g["n"], g["baseline"], g["candidate"])
            for g in diagnostics["group_scores"]] == [("val", 3, 0.25, 1.0)] * 2 + [
        ("test", 3, 0.25, 1.0)] * 2
    git(work, "checkout", "--quiet", "gitsleep/dependency-review")
    skill = (work / "skills/dependency-review/SKILL.md").read_text()
    rules = docs.learned_rules(skill)
    assert rules == ['Use the heading "## Summary"',
                     'When the task mentions "breaking", include "Verdict: reject"; '
                     'otherwise include "Verdict: approve".']
    # judged against every split's groups, no learned rule pins or hedges
    tasks = [Task(t["id"], t["prompt"], "train", Judge("rule", tuple(
        Check(c["op"], c.get("arg")) for c in t["judge"]["checks"])))
        for name in ("tasks.jsonl", "held-out.jsonl")
        for t in map(json.loads, (example / "evals/dependency-review" / name).read_text()
                     .splitlines())]
    keys = groups.varying_keys(tasks)
    assert [len(g.task_ids) for g in keys[0].groups] == [12, 12]
    assert all(groups.value_problem(rule, keys) == "" for rule in rules)
    shutil.rmtree(work / ".gitsleep", ignore_errors=True)


# -- item 2, third part: a label in a template carries a slot -----------------------------


def test_a_template_label_with_nothing_to_fill_is_refused_and_derived_labels_carry_a_slot(
) -> None:
    risk = Check("contains", "Risk level:")
    kept, refused = check_hygiene([Edit("template", "## Summary\n<what changes>\nRisk level:")],
                                  failing_checks=[SUMMARY, risk], task_prompts=[],
                                  current_rules=[])
    assert kept == [] and "'Risk level:' is a bare label" in refused[0].reason
    slotted = Edit("template", "## Summary\n<what changes>\nRisk level: <low|medium|high>")
    assert check_hygiene([slotted], failing_checks=[SUMMARY, risk], task_prompts=[],
                         current_rules=[])[0] == [slotted]
    assert skeleton.derive([risk]) == "Risk level: <text>"


# -- item 5: per-group gating and the per-group scores a reviewer sees ---------------------


def val_pass(values: dict[str, float]) -> PassResult:
    return PassResult("val", "val", "v", [
        TaskResult(tid, "val", [], hard=v, soft=v, value=v) for tid, v in values.items()])


def test_a_candidate_that_lifts_one_group_by_breaking_another_is_refused() -> None:
    named = groups.named_groups(groups.varying_keys(TRAIN), [
        Task(f"v{i}", "p", "val", Judge("rule", (SUMMARY, want)))
        for i, want in enumerate((REJECT, REJECT, APPROVE, APPROVE))])
    assert list(named.values()) == [["v0", "v1"], ["v2", "v3"]]
    best = val_pass({"v0": 0.5, "v1": 0.5, "v2": 1.0, "v3": 1.0})
    lifts_one = val_pass({"v0": 1.0, "v1": 1.0, "v2": 0.75, "v3": 0.75})  # mean 0.75 -> 0.875
    accepted, why, before, after = gate.judge_trial(best, lifts_one, GateSettings(), named)
    assert (accepted, before, after) == (False, 0.75, 0.875)
    assert "the val tasks that want regex (?i)verdict\\W*approve fell 1.000 -> 0.750" in why
    assert gate.judge_trial(best, lifts_one, GateSettings())[0]  # the mean alone would accept
    both = val_pass({"v0": 1.0, "v1": 1.0, "v2": 1.0, "v3": 1.0})
    assert gate.judge_trial(best, both, GateSettings(), named)[0]


# -- item 6: evidence from programs, not their command lines ------------------------------

WORDS = Check("command", json.dumps(["/usr/bin/python3", "checks/word_count.py",
                                     '{"max_words": 73.0, "min_words": 71.0}']))


@pytest.mark.parametrize("content", [
    'Every answer must satisfy {"max_words": 73.0, "min_words": 71.0}.',
    "Keep max_words at 73 and min_words at 71.",
    "Answers are checked by /usr/bin/python3 checks/word_count.py: keep to its limits.",
])
def test_an_edit_that_quotes_a_checks_program_or_arguments_is_refused(content: str) -> None:
    kept, refused = check_hygiene([Edit("add", content)], failing_checks=[WORDS],
                                  task_prompts=[], current_rules=[], task_checks=[WORDS])
    assert kept == [] and "quotes how a check program is run" in refused[0].reason


def test_a_rule_in_the_answers_own_terms_passes_next_to_a_program_check() -> None:
    rule = Edit("add", "Every answer must be between 71 and 73 words long, counted by python.")
    assert check_hygiene([rule], failing_checks=[WORDS], task_prompts=[], current_rules=[],
                         task_checks=[WORDS])[0] == [rule]


def test_the_prompt_shows_what_a_program_printed_never_how_it_is_run() -> None:
    task = Task("w1", "Write a 72-word blurb.", "train", Judge("rule", (WORDS,)))
    score = Score(0.0, 0.0, f"failed: {WORDS.label()} [exit 1: 64 words, want 71 to 73]",
                  (WORDS,))
    failure = TaskResult("w1", "train", [SampleResult(0, "a blurb", None, score)],
                         hard=0.0, soft=0.0, value=0.0)
    prompt = reflect.build_prompt(reflect.Evidence("skill", DOC, [failure], [], {"w1": task},
                                                   []), 2)
    assert "exit 1: 64 words, want 71 to 73" in prompt
    assert "max_words" not in prompt and "word_count.py" not in prompt
    assert "python3" not in prompt
    assert "a check program must pass" in prompt


# -- item 3: a conditional rule has a shape the optimizer fills ---------------------------


def test_the_prompt_offers_the_conditional_shape_and_hygiene_wants_it_filled() -> None:
    prompt = reflect.build_prompt(reflect.Evidence("skill", DOC, [], [], TASKS, []), 2)
    shape = ('When <condition 1>, the answer has "Verdict: reject"; when <condition 2>, the '
             'answer has "Verdict: approve".')
    assert shape in prompt
    kept, refused = hygiene([Edit("add", shape)])
    assert kept == [] and "placeholder (<condition 1>)" in refused[0].reason
    assert "fill <condition 1> and <condition 2> in your own words" in refused[0].reason
    filled = shape.replace("<condition 1>", "the changelog announces a breaking change") \
        .replace("<condition 2>", "it announces none")
    assert [e.content for e in hygiene([Edit("add", filled)])[0]] == [filled]


# -- item 4: worked examples from train, never invented, never from val or held-out -------


def example(prompt: str, value: str) -> str:
    return f'Example: for "{prompt}", the answer has "{value}".'


def examples_hygiene(edits: list[Edit], rules: list[str] | None = None):
    return check_hygiene(edits, failing_checks=[SUMMARY, REJECT, APPROVE],
                         task_prompts=[t.prompt for t in TRAIN], current_rules=rules or [],
                         varying=groups.varying_keys(TRAIN), train_tasks=TRAIN)


def test_the_prompt_offers_one_example_per_group_from_a_passing_train_answer() -> None:
    passing = result("t3", "## Summary\nRenamed options.\nVerdict: reject", ())
    prompt = reflect.build_prompt(reflect.Evidence("skill", DOC, [], [passing], TASKS, []), 2)
    assert example(PROMPTS["t3"], "Verdict: reject") in prompt  # as the answer wrote it
    assert example(PROMPTS["t2"], "Verdict: approve") in prompt  # from the check: no answer
    assert "VALONLY" not in prompt


def test_an_example_a_train_task_and_its_checks_support_is_kept_beside_another_value() -> None:
    two = Edit("add", example(PROMPTS["t1"], "Verdict: reject") + "\n"
               + example(PROMPTS["t2"], "Verdict: approve"))
    kept, refused = examples_hygiene([two])
    assert kept == [two] and refused == []
    rules = [line for line in two.content.split("\n")]
    assert honesty.contradiction(rules, None) == ""  # each value is its own task's


@pytest.mark.parametrize(("content", "why"), [
    (example(PROMPTS["v1"], "Verdict: reject"), "exactly one train task: 0"),
    (example(PROMPTS["t1"], "Verdict: approve"), "not what the checks of t1 want"),
    (example("Update f 2.0 -> 3.0. Changelog: invented.", "Verdict: reject"),
     "exactly one train task: 0"),
    (example("Changelog:", "Verdict: reject"), "quotes 20 to 160 characters"),
    (example(PROMPTS["t1"], "Verdict: reject") + "\nAlways be brief.", "an edit of its own"),
])
def test_an_example_no_train_task_supports_is_refused(content: str, why: str) -> None:
    kept, refused = examples_hygiene([Edit("add", content)])
    assert kept == [] and why in refused[0].reason, refused[0].reason


def test_a_block_holds_a_few_examples_at_most() -> None:
    rules = [example(PROMPTS[i], v) for i, v in (("t1", "Verdict: reject"),
                                                 ("t2", "Verdict: approve"),
                                                 ("t3", "Verdict: reject"))]
    kept, refused = examples_hygiene([Edit("add", example(PROMPTS["t4"], "Verdict: approve")),
                                      Edit("add", example(PROMPTS["t4"], "verdict approve"))],
                                     rules)
    assert len(kept) == 1 and "at most 4 worked examples" in refused[0].reason


# -- the skeleton gitsleep offers passes the guards a template from the optimizer passes ----


def offered_template(tasks: dict[str, Task], failing: list[Check]) -> str | None:
    prompt = reflect.build_prompt(reflect.Evidence("skill", DOC, [], [], tasks, []), 2,
                                  counts=reflect.Counter({c: 2 for c in failing}))
    lead = "this one is derived from the failing checks:\n"
    if lead not in prompt:
        return None
    return str(json.loads(prompt.split(lead, 1)[1].split("\n", 1)[0])["content"])


def test_the_offered_skeleton_keeps_a_varying_value_typed_and_passes_hygiene() -> None:
    offered = offered_template(TASKS, [SUMMARY, REJECT, APPROVE])
    assert offered == "## Summary\n<write the summary here>\nVerdict: <reject|approve>"
    kept, refused = hygiene([Edit("template", offered)])
    assert refused == [] and kept[0].content == offered


def test_the_offered_skeleton_leaves_out_a_value_no_typed_line_can_hold() -> None:
    kinds = ("feat", "fix", "docs")
    checks = [Check("regex", rf"(?m)\A\s*{k}(\([^)]*\))?!?: \S") for k in kinds]
    tasks = {f"t{i}": Task(f"t{i}", f"Commit {i}.", "train", Judge("rule", (SUMMARY, c)))
             for i, c in enumerate(checks * 2)}
    offered = offered_template(tasks, [SUMMARY, *checks])
    assert offered == "## Summary\n<write the summary here>"
