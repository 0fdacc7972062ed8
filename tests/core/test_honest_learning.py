"""Rules a reviewer would merge. A learned block never fixes a value the checks
leave to the task, never contradicts itself, answers that only echo the template do not
pass, rules that ask every answer for what few tasks want are flagged, and the PR shows
real answers. Plus a template gets the hostile-text rules of a rule."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gitsleep import report
from gitsleep.backends.offline import OfflineBackend, directive_for
from gitsleep.base.redact import Redactor
from gitsleep.core import documents as docs
from gitsleep.core import honesty, reflect, replay, skeleton
from gitsleep.core.calls import CallRunner
from gitsleep.core.check_text import rule_for_check
from gitsleep.core.epoch import run_epoch
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import (
    Answer,
    Check,
    Edit,
    EpochResult,
    EpochSettings,
    Judge,
    Task,
)
from gitsleep.core.ports import Backend, ModelCall
from tests.support.cli import consolidate_example, run_cli
from tests.support.gitrepo import git, isolate_git, make_repo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEVERITY = Check("regex", r"(?i)severity\s*[:=]\s*[1-4]")
VERDICT = Check("regex", r"Verdict:\s*(approve|reject)")
IMPACT = Check("section_present", "Impact")

# The block an accepted epoch committed on real models: one value the check
# leaves open, fixed twice, to two different values.
ISSUE_RULE = 'Every answer must have a line "Severity: 3".'
ISSUE_TEMPLATE = "## Impact\n<write the impact here>\nSeverity: 1"
ISSUE_BLOCK = (f"# Notes\n\n{docs.START}\n{docs.HEADING}\n\n- {ISSUE_RULE}\n\n"
               f"{docs.TEMPLATE_INTRO}\n```\n{ISSUE_TEMPLATE}\n```\n{docs.END}\n")


def hygiene(edits: list[Edit], failing: list[Check], rules: list[str] | None = None,
            task_checks: list[Check] | None = None):
    return check_hygiene(edits, failing_checks=failing, task_prompts=[],
                         current_rules=rules or [], task_checks=task_checks or [])


# -- 1. no constant where the check allows a choice -------------------------------------


def test_the_issue_block_parses_as_the_fixture_it_is() -> None:
    assert docs.learned_rules(ISSUE_BLOCK) == [ISSUE_RULE]
    assert docs.learned_template(ISSUE_BLOCK) == ISSUE_TEMPLATE


def test_a_choice_in_the_check_stays_a_typed_placeholder_in_rules_and_templates() -> None:
    assert rule_for_check(SEVERITY) == \
        'Every answer must have a line "Severity: <1-4>", with <1-4> chosen for each task.'
    assert rule_for_check(VERDICT) == ('Every answer must have a line "Verdict: '
                                       '<approve|reject>", with <approve|reject> chosen for '
                                       "each task.")
    assert skeleton.derive([IMPACT, SEVERITY]) == \
        "## Impact\n<write the impact here>\nSeverity: <1-4>"
    assert rule_for_check(Check("regex", r"Count:\s*\d+")) == \
        'Every answer must have a line "Count: <number>", with <number> chosen for each task.'


def test_one_label_whose_value_differs_per_task_is_one_typed_line_not_two() -> None:
    high, low = Check("regex", r"Severity:\s*[12]\b"), Check("regex", r"Severity:\s*[34]\b")
    assert skeleton.derive([IMPACT, high, low]) == \
        "## Impact\n<write the impact here>\nSeverity: <1-4>"
    prompt = reflect.build_prompt(reflect.Evidence("skill", "# Notes\n", [], [], {}, []), 4,
                                  counts=reflect.Counter({high: 3, low: 2}))
    assert "Severity: <1|2>" not in prompt and "Severity: <3|4>" not in prompt
    assert prompt.count("a line of the shape it wants: Severity: <1-4>") == 2
    assert "the rule must say which kind of task gets which" in prompt
    kept, rejected = hygiene([Edit("template", "## Impact\n<who>\nSeverity: <1-4>")],
                             [IMPACT, low])
    assert rejected == [] and kept[0].content.endswith("Severity: <1-4>")


def test_the_optimizer_is_asked_for_the_rule_that_says_how_to_choose() -> None:
    prompt = reflect.build_prompt(reflect.Evidence("skill", "# Notes\n", [], [], {}, []), 4,
                                  counts=reflect.Counter({SEVERITY: 3}))
    assert "Severity: 1" not in prompt
    assert "keep <1-4> and add a rule that says which value fits which task" in prompt
    assert "never fix one value for every answer" in reflect.SYSTEM


def test_a_typed_placeholder_is_kept_never_filled_with_the_low_end() -> None:
    kept, rejected = hygiene([Edit("add", "Severity: <1-4>"),
                              Edit("template", "## Impact\n<who>\nSeverity: <1-4>")],
                             [IMPACT, SEVERITY])
    assert rejected == []
    assert "<1-4>" in kept[0].content and "Severity: 1" not in kept[0].content
    assert kept[1].content == "## Impact\n<who>\nSeverity: <1-4>"


def test_the_issue_rule_and_template_each_fix_a_value_the_check_leaves_open() -> None:
    kept, rejected = hygiene([Edit("add", ISSUE_RULE), Edit("template", ISSUE_TEMPLATE)],
                             [IMPACT, SEVERITY])
    assert kept == []
    assert len(rejected) == 2
    for outcome in rejected:
        assert "accepts a choice" in outcome.reason and "Severity: <1-4>" in outcome.reason


def test_an_alternation_is_a_choice_too_and_a_rule_that_says_how_to_choose_is_kept() -> None:
    kept, rejected = hygiene(
        [Edit("add", 'Always include "Verdict: approve"'),
         Edit("add", 'Write "Verdict: reject" when the statement drops or deletes data, '
                     'else "Verdict: approve"')],
        [VERDICT])
    assert [o.edit.content for o in rejected] == ['Always include "Verdict: approve"']
    assert "accepts a choice" in rejected[0].reason
    assert len(kept) == 1 and "when the statement drops" in kept[0].content


def test_values_that_differ_between_tasks_are_a_choice_across_the_task_set() -> None:
    # no regex: one task wants approve, another reject, both by `contains`
    tasks = [Check("contains", "Verdict: approve"), Check("contains", "Verdict: reject")]
    kept, rejected = hygiene([Edit("add", 'Always include "Verdict: approve"')],
                             [tasks[0]], task_checks=tasks)
    assert kept == []
    assert "the tasks want different values" in rejected[0].reason


def test_the_simulated_optimizer_proposes_no_constant_for_a_choice() -> None:
    assert directive_for("regex", SEVERITY.arg) is None
    assert directive_for("regex", r"[Cc]onfidence\s*[:=]") == 'Always include "Confidence: medium"'


# -- 2. a learned block never contradicts itself ----------------------------------------


def test_the_issue_block_contradicts_itself() -> None:
    why = honesty.contradiction(docs.learned_rules(ISSUE_BLOCK),
                                docs.learned_template(ISSUE_BLOCK))
    assert "two values" in why and "Severity: 3" in why and "Severity: 1" in why
    assert honesty.contradiction(['Use "Severity: 1" for outages, "Severity: 4" for typos'],
                                 "## Impact\nSeverity: <1-4>") == ""


class Proposes(Backend):
    """The offline agent; the optimizer proposes the given edits once, then nothing."""

    name = "offline"
    simulated = True

    def writes_free_values(self, purpose: str) -> bool:  # as the simulator it wraps
        return self.inner.writes_free_values(purpose)

    def __init__(self, edits: list[dict]) -> None:
        self.inner = OfflineBackend()
        self.edits = edits
        self.asked = 0

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            self.asked += 1
            edits = self.edits if self.asked == 1 else []
            return Answer(json.dumps({"edits": edits}), None, 1, 1)
        return self.inner.complete(call)


def contains_tasks(wanted: str) -> list[Task]:
    judge = Judge("rule", (Check("contains", wanted),))
    return ([Task(f"t{i}", f"Triage report {i}.", "train", judge) for i in range(3)]
            + [Task(f"v{i}", f"Triage issue {i}.", "val", judge) for i in range(3)]
            + [Task(f"h{i}", f"Triage bug {i}.", "test", judge) for i in range(2)])


SETTINGS = EpochSettings(model="a", optimizer_model="o", judge_model="o", rounds=1,
                         proposals=1, workers=1)


def test_a_candidate_block_that_contradicts_itself_is_refused_before_any_scoring() -> None:
    # the checks leave no class open ("Severity:" alone), so hygiene keeps both edits; the
    # block they make together gives Severity two values and is never scored
    backend = Proposes([{"op": "add", "content": ISSUE_RULE},
                        {"op": "template", "content": ISSUE_TEMPLATE}])
    result = run_epoch(contains_tasks("Severity:"), {"skill": "# Notes\n", "memory": None},
                       SETTINGS, backend, skill="notes")
    assert result.trials == []  # nothing was scored on val
    assert [p.label for p in result.passes if p.split == "val"] == ["baseline"]
    refused = [o for o in result.unmatched if "refused before scoring" in o.reason]
    assert {o.edit.op for o in refused} == {"add", "template"}
    assert all("two values" in o.reason for o in refused)
    data = report.diagnostics(result, {}, redactor=Redactor([]))
    assert any("two values" in e["reason"] for e in data["edits"]["unmatched"])


def test_a_rule_that_supersedes_a_kept_one_replaces_it_through_the_gate() -> None:
    kept, rejected = hygiene([Edit("add", 'Always include "Status: red"')], [],
                             rules=['Always include "Status: green"', "Be brief."])
    assert rejected == []
    assert (kept[0].op, kept[0].anchor) == ("replace", 'Always include "Status: green"')
    after, outcomes = docs.apply_edits(
        f"# N\n\n{docs.START}\n{docs.HEADING}\n\n- Always include \"Status: green\"\n"
        f"- Be brief.\n{docs.END}\n", kept)
    assert [o.status for o in outcomes] == ["applied"]
    assert docs.learned_rules(after) == ['Always include "Status: red"', "Be brief."]


# -- 3. integrity in scoring --------------------------------------------------------------


class Echoes(Backend):
    """An agent that answers with the learned template as it stands, or a fixed text."""

    name = "scripted"

    def __init__(self, text: str | None = None) -> None:
        self.text = text

    def complete(self, call: ModelCall) -> Answer:
        if self.text is not None:
            return Answer(self.text, None, 1, 1)
        return Answer(docs.learned_template(call.messages[0][1]) or "nothing", None, 1, 1)


def score(documents: dict, backend: Backend, checks: tuple[Check, ...]):
    task = Task("v1", "Triage this.", "val", Judge("rule", checks))
    return replay.score_split(CallRunner(backend), [task], documents, SETTINGS,
                              label="x", split="val")


TEMPLATE_DOC = (f"# N\n\n{docs.START}\n{docs.HEADING}\n\n{docs.TEMPLATE_INTRO}\n```\n"
                f"## Impact\n<write the impact here>\nRisk level: <low|high>\n```\n{docs.END}\n")


def test_an_answer_that_repeats_a_template_placeholder_does_not_pass() -> None:
    checks = (IMPACT, Check("contains", "Risk level:"))
    result = score({"skill": TEMPLATE_DOC, "memory": None}, Echoes(), checks)
    sample = result.tasks[0].samples[0]
    assert sample.score is not None and sample.score.hard == 0.0 and result.mean == 0.0
    assert sample.score.reason.startswith("integrity: repeats the template placeholder")


# The rule the 1.5B optimizer wrote on incident-triage (thrifty seeds 0 and 2): its typed
# slot is for the agent to fill, and held-out answer test-06 copied it as it stands.
SLOT_RULE = 'Every answer must have a line "Severity: <1-4>", with <1-4> chosen for each task.'
SLOT_DOC = (f"# N\n\n{docs.START}\n{docs.HEADING}\n\n- {SLOT_RULE}\n"
            f"- Wrap the final answer in <answer> tags.\n{docs.END}\n")


def test_an_answer_that_repeats_a_rule_slot_does_not_pass() -> None:
    checks = (Check("contains", "Severity:"),)
    copied = score({"skill": SLOT_DOC, "memory": None},
                   Echoes("A login outage.\nSeverity: <1-4>"), checks)
    reason = copied.tasks[0].samples[0].score.reason
    assert copied.mean == 0.0 and reason.startswith("integrity: repeats the rule placeholder <1-4>")
    # filled, it passes; and a rule's own angle text that is no slot (<answer>) is no echo
    for filled in ("A login outage.\nSeverity: 2", "<answer>A login outage.\nSeverity: 2</answer>"):
        assert score({"skill": SLOT_DOC, "memory": None}, Echoes(filled), checks).mean == 1.0


@pytest.mark.parametrize(("answer", "why"), [
    ("## Impact\n## Next\nRisk level: high", "leaves the required section '## Impact' empty"),
    ("## Impact\nAll EU users.\nRisk level:", "leaves the required line 'Risk level': empty"),
])
def test_an_answer_with_a_required_part_left_empty_does_not_pass(answer: str, why: str) -> None:
    checks = (IMPACT, Check("contains", "Risk level:"))
    result = score({"skill": TEMPLATE_DOC, "memory": None}, Echoes(answer), checks)
    assert result.mean == 0.0
    assert why in (result.tasks[0].samples[0].score.reason or "")
    # the same answer with the parts filled passes, a sub-heading being content too
    for filled in ("## Impact\nAll EU users.\nRisk level: high",
                   "## Impact\n### Users\nAll EU users.\nRisk level: high"):
        good = score({"skill": TEMPLATE_DOC, "memory": None}, Echoes(filled), checks)
        assert good.mean == 1.0, filled


def test_an_answer_that_copies_a_bare_label_of_the_template_empty_does_not_pass() -> None:
    # a SQL-review template learned `Risk level:` with nothing after it
    doc = TEMPLATE_DOC.replace("Risk level: <low|high>", "Risk level:")
    checks = (Check("contains", "Risk level"),)
    assert score({"skill": doc, "memory": None},
                 Echoes("## Impact\nA GRANT.\nRisk level:"), checks).mean == 0.0
    assert score({"skill": doc, "memory": None},
                 Echoes("## Impact\nA GRANT.\nRisk level: high"), checks).mean == 1.0
    # a list under the label is its content
    assert score({"skill": doc, "memory": None},
                 Echoes("## Impact\nA GRANT.\nRisk level:\n- high: all tables"),
                 checks).mean == 1.0


def summary_night(backend: Backend) -> tuple[EpochResult, list[str]]:
    """One night on outage (train), incident (val) and event (held-out) summaries that want
    an `## Impact` section and a severity; the result and its progress lines."""
    judge = Judge("rule", (IMPACT, Check("regex", r"Severity:\s*[1-4]")))
    tasks = ([Task(f"t{i}", f"Summarise outage {i}.", "train", judge) for i in range(3)]
             + [Task(f"v{i}", f"Summarise incident {i}.", "val", judge) for i in range(2)]
             + [Task(f"h{i}", f"Summarise event {i}.", "test", judge) for i in range(2)])
    lines: list[str] = []
    result = run_epoch(tasks, {"skill": "# Notes\n", "memory": None}, SETTINGS, backend,
                       skill="notes", progress=lines.append)
    return result, lines


def test_integrity_failures_are_counted_in_progress_diagnostics_and_pr_body() -> None:
    # the template an agent copies verbatim, placeholder and all: the checks pass, the
    # integrity rule does not, so the candidate cannot win
    template = "## Impact\n<write the impact here>\nSeverity: <1-4>"
    backend = Proposes([{"op": "template", "content": template}])

    class Copies(Proposes):
        def complete(self, call: ModelCall) -> Answer:
            if call.purpose == "propose":
                return super().complete(call)
            copied = docs.learned_template(call.messages[0][1])
            return Answer(copied.replace("<1-4>", "2") if copied else "It broke.", None, 1, 1)

    backend = Copies([{"op": "template", "content": template}])
    result, lines = summary_night(backend)
    assert result.decision == "rejected"  # every copied answer failed integrity
    assert any("2 answer(s) failed integrity" in line for line in lines)
    counts = report.integrity_counts(result)
    assert counts == {"val (skill round 1 proposal 1)": 2}
    data = report.diagnostics(result, {}, redactor=Redactor([]))
    assert data["integrity_failures"] == counts
    assert [p["integrity_failures"] for p in data["passes"] if p["split"] == "val"] == [0, 2]
    body = report.pr_body(result, rerun="", redactor=Redactor([]))
    assert "repeated a placeholder of the learned template" in body
    assert "val (skill round 1 proposal 1): 2" in body
    message = report.commit_message(result, {}, Redactor([]))
    assert "Integrity: answers that repeated a template placeholder" in message


class CopiesOnHeldOut(Proposes):
    """Fills the learned template on train and val prompts ('outage', 'incident') and copies
    it verbatim, placeholder and all, on held-out ones ('event'): what the 0.5B agent did on
    incident-notes seed 0, where no train or val answer showed it."""

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            return super().complete(call)
        template = docs.learned_template(call.messages[0][1])
        if template is None:
            return Answer("It broke.", None, 1, 1)
        if "event" in call.messages[-1][1]:
            return Answer(template.replace("<1-4>", "2"), None, 1, 1)
        return Answer(template.replace("<write the impact here>", "Checkout was down.")
                      .replace("<1-4>", "2"), None, 1, 1)


def test_a_template_the_agent_copies_on_held_out_tasks_is_not_accepted() -> None:
    template = "## Impact\n<write the impact here>\nSeverity: <1-4>"
    backend = CopiesOnHeldOut([{"op": "template", "content": template}])
    result, lines = summary_night(backend)
    # val passed it (0.0 -> 1.0, no val answer copied it); held-out answers copied it
    assert [t.accepted for t in result.trials] == [True]
    assert result.decision == "rejected" and not result.pr_eligible
    assert result.applied == [] and result.documents["skill"][1] == "# Notes\n"
    assert "2 of 2 held-out answers repeat a placeholder of the learned template" \
        in result.reason
    assert [o.reason for o in result.rejected if o.edit.op == "template"] == [result.reason]
    assert any("2 answer(s) failed integrity" in line and "final" in line for line in lines)
    assert report.integrity_counts(result) == {"test (final)": 2}


IMPACT_RULE = 'Every answer must have a section headed "## Impact".'


class CopiesTheSlot(Backend):
    """The optimizer proposes, one per call: a bundle of the severity rule with its slot
    and a section rule; a template; nothing. The agent writes what the learned block asks,
    but repeats the rule's slot `<1-4>` on incidents 0 and 1 and copies the template on
    incident 1: the real incident-notes night at 8b234b6, whose bundle val refused for its
    copied slot while its section rules alone had lifted held-out the night before."""

    name = "scripted"

    def __init__(self) -> None:
        self.replies = [[{"op": "add", "content": SLOT_RULE},
                         {"op": "add", "content": IMPACT_RULE}],
                        [{"op": "template",
                          "content": "## Impact\n<write the impact here>\nSeverity: <1-4>"}]]

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            edits = self.replies.pop(0) if self.replies else []
            return Answer(json.dumps({"edits": edits}), None, 1, 1)
        document, prompt = call.messages[0][1], call.messages[-1][1]
        template = docs.learned_template(document)
        if template is not None:
            if "incident 1" in prompt:
                return Answer(template, None, 1, 1)
            return Answer(template.replace("<write the impact here>", "Checkout was down.")
                          .replace("<1-4>", "2"), None, 1, 1)
        rules = docs.learned_rules(document)
        answer = "It broke."
        if IMPACT_RULE in rules:
            answer += "\n## Impact\nCheckout was down."
        if SLOT_RULE in rules:
            copied = "incident 0" in prompt or "incident 1" in prompt
            answer += "\nSeverity: " + ("<1-4>" if copied else "2")
        return Answer(answer, None, 1, 1)


def test_a_bundle_refused_for_a_copied_slot_is_gated_again_without_that_edit() -> None:
    judge = Judge("rule", (IMPACT, Check("regex", r"Severity:\s*[1-4]")))
    tasks = ([Task(f"t{i}", f"Summarise outage {i}.", "train", judge) for i in range(3)]
             + [Task(f"v{i}", f"Summarise incident {i}.", "val", judge) for i in range(3)]
             + [Task(f"h{i}", f"Summarise event {i}.", "test", judge) for i in range(2)])
    result = run_epoch(tasks, {"skill": "# Notes\n", "memory": None},
                       replace(SETTINGS, proposals=3), CopiesTheSlot(), skill="notes")
    # both proposals are refused for integrity, the template scoring higher; the bundle
    # is gated again without the rule whose slot its answers repeat, and that passes
    assert [t.accepted for t in result.trials][:2] == [False, False]
    assert all("(integrity)" in t.reason for t in result.trials[:2])
    assert result.decision == "accepted", result.reason
    assert [o.edit.content for o in result.applied] == [IMPACT_RULE]
    assert any("without the edit its answers copy" in p.label for p in result.passes)


# -- 4. over-reach ------------------------------------------------------------------------


def commit_tasks() -> list[Task]:
    """18 commit-message tasks; 3 want a BREAKING CHANGE footer, none checks its absence."""
    breaking = Judge("rule", (Check("contains", "BREAKING CHANGE:"), Check("max_chars", 400)))
    plain = Judge("rule", (Check("max_chars", 400),))
    tasks = []
    for i in range(18):
        split = "train" if i < 8 else "val" if i < 13 else "test"
        judge = breaking if i % 6 == 0 else plain
        tasks.append(Task(f"c{i:02d}", f"Write the commit message for change {i}.", split,
                          judge))
    return tasks


def test_a_rule_every_answer_obeys_but_few_tasks_want_is_flagged_for_the_reviewer() -> None:
    tasks = commit_tasks()
    assert honesty.over_reach(['Always include "BREAKING CHANGE:"'], tasks) == [
        "asks every answer for 'BREAKING CHANGE:'; only 3 of 18 tasks want it; add tasks "
        "where 'BREAKING CHANGE:' must not appear"]
    guarded = [*tasks, Task("x", "Fix a typo.", "val",
                            Judge("rule", (Check("not_contains", "BREAKING CHANGE"),)))]
    assert honesty.over_reach(['Always include "BREAKING CHANGE:"'], guarded) == []
    result = run_epoch(tasks, {"skill": "# Commits\n", "memory": None},
                       EpochSettings(model="a", optimizer_model="o", judge_model="o"),
                       OfflineBackend(), skill="commits")
    assert result.decision == "accepted"
    assert any("only 3 of 18 tasks want it" in w for w in result.warnings)
    message = report.commit_message(result, {}, Redactor([]))
    assert "only 3 of 18 tasks want it; add tasks where 'BREAKING CHANGE:' must not" in message
    body = report.pr_body(result, rerun="", redactor=Redactor([]))
    assert "only 3 of 18 tasks want it" in body


def test_validate_gives_the_same_advice_for_judges_that_only_ask_for_presence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    advice = honesty.presence_only(commit_tasks())
    assert len(advice) == 1 and "3 of 18 tasks check contains 'BREAKING CHANGE:'" in advice[0][1]
    isolate_git(monkeypatch, tmp_path)
    lines = [json.dumps({"id": t.id, "split": t.split, "prompt": t.prompt,
                         "judge": {"kind": "rule", "checks": [
                             {"op": c.op, "arg": c.arg} for c in t.judge.checks]}})
             for t in commit_tasks()]
    work, _ = make_repo(tmp_path, {
        ".gitsleep.yml": "version: 1\nbackend: offline\nskills:\n  - name: commits\n"
                         "    skill: SKILL.md\n    tasks:\n      - path: tasks.jsonl\n",
        "SKILL.md": "---\nname: commits\ndescription: Writes commit messages.\n---\n# C\n",
        "tasks.jsonl": "\n".join(lines) + "\n"})
    result = run_cli(capsys, "--repo", str(work), "validate")
    assert result.code == 0  # advice, not an error
    assert "tasks.jsonl: GS140 warning: 3 of 18 tasks check contains 'BREAKING CHANGE:'" \
        in result.out
    assert "add tasks where 'BREAKING CHANGE:' must not appear" in result.out


# -- 5. the reviewer sees real answers ----------------------------------------------------


def test_the_pr_body_shows_held_out_answers_before_and_after_redacted_then_clipped() -> None:
    secret = "sk-proj-" + "A1b2C3d4" * 4
    tasks = contains_tasks("Owner:")
    result = run_epoch(tasks, {"skill": "# Notes\n", "memory": None},
                       EpochSettings(model="a", optimizer_model="o", judge_model="o"),
                       OfflineBackend(), skill="notes")
    assert result.decision == "accepted" and result.test.candidate == 1.0
    # plant a secret across the clip edge of one answer (what a real agent might echo)
    final = next(p for p in result.passes if p.split == "test" and p.final)
    sample = final.tasks[0].samples[0]
    sample.answer = "x" * (report.ANSWER_CHARS - 10) + secret + "\nOwner: me"
    body = report.pr_body(result, rerun="", redactor=Redactor([secret]))
    section = body.split("### Held-out answers before and after", 1)[1]
    assert "**h0**: 0.000 -> 1.000 (improved)" in section
    assert "Before:" in section and "After:" in section
    assert "Here is a response to the request: Triage bug 0." in section
    assert "Owner:" in section.split("After:", 1)[1]
    assert "sk-proj" not in body and "A1b2C3d4" not in body  # no fragment of the secret
    assert section.count("**h") == 2  # both changed held-out tasks, at most three


# -- a template gets the hostile-text rules of a rule -------------------


@pytest.mark.parametrize(("template", "why"), [
    ("## Impact\n[details](javascript:alert(1))", "javascript: link"),
    ("## Impact\n![x](data:text/html;base64,PHNjcmlwdD4=)", "data: link"),
    ("## Impact\n<who was affected>\u202e", "invisible character"),
    ("## Im\u200bpact\n<who was affected>", "invisible character"),
])
def test_a_template_with_hostile_text_is_rejected_like_a_rule(template: str, why: str) -> None:
    kept, rejected = hygiene([Edit("template", template)], [IMPACT])
    assert kept == []
    assert why in rejected[0].reason and rejected[0].reason.startswith("template contains")


# -- 6. the bundled example whose checks vary per task ------------------------------------


def test_the_varying_example_runs_offline_and_no_accepted_block_pins_a_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = EXAMPLES / "incident-triage"
    work, data = consolidate_example(tmp_path, monkeypatch, capsys, example)
    assert data["decision"] == "accepted"
    assert data["test"]["candidate"] > data["test"]["baseline"]
    git(work, "checkout", "--quiet", "gitsleep/incident-triage")
    skill = (work / "skills/incident-triage/SKILL.md").read_text()
    block = docs.learned_block_text(skill)
    checks = [Check("regex", r"Severity:\s*[12]\b"), Check("regex", r"Severity:\s*[34]\b")]
    for line in [*docs.learned_rules(skill), *(docs.learned_template(skill) or "").split("\n")]:
        assert honesty.pin_problem(line, checks, template=True) == "", line
    assert honesty.contradiction(docs.learned_rules(skill), docs.learned_template(skill)) == ""
    assert "Severity: 1" not in block and "Severity: 3" not in block
    # a constant passes only part of the tasks: the split is even in every split
    tasks = [json.loads(line) for name in ("tasks.jsonl", "held-out.jsonl")
             for line in (example / "evals/incident-triage" / name).read_text().splitlines()]
    high = [t for t in tasks if any("[12]" in str(c.get("arg")) for c in t["judge"]["checks"])]
    assert 0 < len(high) < len(tasks) and len(high) * 2 == len(tasks)
    shutil.rmtree(work / ".gitsleep", ignore_errors=True)
