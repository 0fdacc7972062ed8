from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitsleep.base.errors import UsageError
from gitsleep.core import documents as d
from gitsleep.core.models import Edit
from tests.support.hostile_edits import INVISIBLE_CONTENTS, LINK_CONTENTS, SAFE_CONTENTS

SKILL = """---
name: brief-writer
description: Writes briefs.
metadata:
  owner: "docs team"   # trailing comment, odd spacing
---

# Brief writer

Write plainly.


Two blank lines above are hand-written and must stay.
"""

WITH_BLOCK = (
    "# Notes\n\nhand text\n\n"
    f"{d.START}\n## Learned rules\n\n- Always include \"Confidence:\"\n- Keep it short\n{d.END}\n"
    "\ntrailing hand text\n"
)


def add(content: str, target: str = "skill") -> Edit:
    return Edit("add", content=content, target=target)


def test_first_accepted_edit_creates_block_at_end_and_keeps_every_byte() -> None:
    new, outcomes = d.apply_edits(SKILL, [add('Always include "Confidence:"')])
    assert [o.status for o in outcomes] == ["applied"]
    assert new.startswith(SKILL)
    assert d.learned_rules(new) == ['Always include "Confidence:"']
    assert d.outside_block(new).startswith(SKILL)
    assert new.endswith(d.END + "\n")


def test_no_applicable_edit_leaves_document_untouched() -> None:
    new, outcomes = d.apply_edits(SKILL, [Edit("delete", anchor="nothing here")])
    assert new == SKILL
    assert outcomes[0].status == "unmatched"
    assert "no rule" in outcomes[0].reason


def test_document_without_trailing_newline() -> None:
    text = "# Title\nlast line without newline"
    new, _ = d.apply_edits(text, [add("rule one")])
    assert new.startswith(text + "\n")
    assert d.learned_rules(new) == ["rule one"]


def test_crlf_document_keeps_crlf_everywhere() -> None:
    text = SKILL.replace("\n", "\r\n")
    new, _ = d.apply_edits(text, [add("rule one"), add("rule two")])
    assert new.startswith(text)
    assert "\n" not in new.replace("\r\n", "")
    assert d.learned_rules(new) == ["rule one", "rule two"]


def test_block_stays_where_it_is_and_outside_bytes_survive() -> None:
    new, outcomes = d.apply_edits(
        WITH_BLOCK,
        [
            add("New rule"),
            Edit("replace", anchor="Keep it short", content="Keep answers under 300 characters"),
            Edit("delete", anchor='always include "confidence:"'),
        ],
    )
    assert [o.status for o in outcomes] == ["applied"] * 3
    assert d.outside_block(new) == d.outside_block(WITH_BLOCK)
    assert new.endswith("\ntrailing hand text\n")
    assert d.learned_rules(new) == ["Keep answers under 300 characters", "New rule"]


def test_anchor_matching_several_rules_is_unmatched() -> None:
    text = WITH_BLOCK.replace("- Keep it short", "- Keep it short\n- Keep it shorter")
    new, outcomes = d.apply_edits(text, [Edit("delete", anchor="keep it")])
    assert new == text
    assert outcomes[0].status == "unmatched"
    assert "2 rules" in outcomes[0].reason


def test_exact_anchor_wins_over_substring_matches() -> None:
    text = WITH_BLOCK.replace("- Keep it short", "- Keep it short\n- Keep it shorter")
    new, outcomes = d.apply_edits(text, [Edit("delete", anchor="Keep it short")])
    assert outcomes[0].status == "applied"
    assert "Keep it shorter" in d.learned_rules(new)


def test_anchor_cannot_reach_hand_written_text() -> None:
    new, outcomes = d.apply_edits(WITH_BLOCK, [Edit("replace", anchor="hand text", content="x")])
    assert new == WITH_BLOCK
    assert outcomes[0].status == "unmatched"


@pytest.mark.parametrize(
    "edit, reason",
    [
        (add(""), "empty"),
        (add("   \n  "), "empty"),
        (add(f"sneaky {d.END}"), "markers"),
        (add("<!-- gitsleep:learned:start -->"), "markers"),
        (add("a\n---\nb"), "fence"),
        (add("open <!-- comment"), "HTML comment"),
        (Edit("upsert", content="x"), "unknown op"),
        (add('always include "confidence:"'), "already"),
        # the same rule in other quotes, or with a full stop: a real night's merged bundle
        # kept 'Severity: <1-4>' beside "Severity: <1-4>"
        (add("Always include 'Confidence:'"), "already"),
        (add("Always include `Confidence:`."), "already"),
        (add("Always include \u201cConfidence:\u201d"), "already"),
        (add("Keep answers short\nkeep answers short."), "repeats a line"),
        (Edit("replace", anchor="Keep it short", content="Keep it short"), "identical"),
        (Edit("replace", anchor="", content="x"), "empty anchor"),
    ],
)
def test_unsafe_or_pointless_edits_are_unmatched(edit: Edit, reason: str) -> None:
    new, outcomes = d.apply_edits(WITH_BLOCK, [edit])
    assert new == WITH_BLOCK
    assert outcomes[0].status == "unmatched"
    assert reason in outcomes[0].reason


def test_multi_line_content_becomes_several_rules_all_or_nothing() -> None:
    new, outcomes = d.apply_edits(WITH_BLOCK, [add("## Impact\nSeverity: 2")])
    assert outcomes[0].status == "applied"
    assert d.learned_rules(new)[-2:] == ["## Impact", "Severity: 2"]
    # a heading inside a rule stays a bullet's text: it cannot add document structure
    assert "- ## Impact" in new
    again, outcomes = d.apply_edits(new, [add("Severity: 2\nbrand new")])
    assert again == new
    assert outcomes[0].status == "unmatched"


def test_control_characters_are_stripped_from_rules() -> None:
    new, outcomes = d.apply_edits(WITH_BLOCK, [add("bell\x07 and\x1b[31m colour")])
    assert outcomes[0].status == "applied"
    assert "\x07" not in new and "\x1b" not in new


def test_size_caps_make_edits_unmatched() -> None:
    text = WITH_BLOCK
    new, outcomes = d.apply_edits(text, [add("three")], max_lines=2)
    assert new == text and "limit 2" in outcomes[0].reason
    new, outcomes = d.apply_edits(text, [add("x" * 200)], max_chars=100)
    assert new == text and "100 characters" in outcomes[0].reason


@pytest.mark.parametrize(
    "text, fragment",
    [
        (f"a\n{d.START}\nb\n", "no <!-- gitsleep:learned:end -->"),
        (f"a\n{d.END}\nb\n", "end marker but no"),
        (f"{d.END}\n{d.START}\n", "comes before"),
        (f"{d.START}\n{d.START}\n{d.END}\n{d.END}\n", "nested"),
        (f"{d.START}\n{d.END}\n{d.START}\n{d.END}\n", "duplicated"),
        (f"text {d.START}\n{d.END}\n", "alone"),
        ("<!-- gitsleep:learned:begin -->\n", "malformed"),
    ],
)
def test_corrupt_blocks_are_reported_with_line_numbers(text: str, fragment: str) -> None:
    problems = d.block_problems(text, 40, 4000)
    assert problems, text
    line, message = problems[0]
    assert line >= 1
    assert fragment in message
    with pytest.raises(UsageError):
        d.apply_edits(text, [add("x")])


NEAR_MISSES = [
    "<!--gitsleep:learned:start-->", "<!-- GITSLEEP:LEARNED:START -->",
    "<!--  gitsleep : learned : end  -->", "<!-- Gitsleep:Learned:End -->",
    "<!-- gitsleep learned start -->", "<!-- gitsleep-learned-end -->",
]


@pytest.mark.parametrize("marker", NEAR_MISSES)
def test_a_near_miss_marker_is_one_problem_that_names_the_exact_spelling(marker: str) -> None:
    # validate and the reader agree: a near miss is neither passed over nor a block
    text = f"# Title\n\n{marker}\n- a rule\n"
    exact = d.END if "end" in marker.lower() else d.START
    assert d.block_problems(text, 40, 4000) == [
        (3, f"learned-block marker is not written exactly (spacing or case): "
            f"write it exactly as `{exact}`")]
    with pytest.raises(UsageError, match=r"^skills/x/SKILL\.md:3: learned-block marker is not"):
        d.find_block(text, where="skills/x/SKILL.md")
    with pytest.raises(UsageError, match=r"^skills/x/SKILL\.md:3: "):
        d.apply_edits(text, [add("x")], where="skills/x/SKILL.md")


def test_a_misspelled_pair_gives_one_line_per_marker_and_no_duplicate_report() -> None:
    text = ("# Brief writer\n\nWrite plainly.\n\n<!--gitsleep:learned:start-->\n- Be brief.\n"
            "<!--gitsleep:learned:end-->\n")
    assert [line for line, _ in d.block_problems(text, 40, 4000)] == [5, 7]
    assert all("write it exactly as" in message for _, message in d.structure_problems(text))


def test_apply_edits_never_returns_a_corrupt_document(monkeypatch: pytest.MonkeyPatch) -> None:
    # a later reader (with no file name to give) must never be the first to find a corrupt
    # block: apply_edits checks what it wrote and changes nothing when it is unsound
    monkeypatch.setattr(d, "_new_block", lambda nl: [d.START + nl, d.START + nl, d.END + nl])
    new, outcomes = d.apply_edits(SKILL, [add("rule one")], where="skills/x/SKILL.md")
    assert new == SKILL
    assert [o.status for o in outcomes] == ["unmatched"]
    assert "would leave the learned block unsound" in outcomes[0].reason


EXAMPLE = f"{d.START}\n- an example rule\n{d.END}\n"
CODE_EXAMPLES = {
    "backtick fence with info": f"```markdown\n{EXAMPLE}```\n",
    "tilde fence": f"~~~\n{EXAMPLE}~~~\n",
    "fence indented 3": f"   ```\n{EXAMPLE}   ```\n",
    "a shorter fence does not close": f"````md\n```\n{EXAMPLE}```\n````\n",
    "the other fence char does not close": f"~~~ text\n```\n{EXAMPLE}```\n~~~\n",
    "closing fence longer, trailing spaces": f"```\n{EXAMPLE}`````  \n",
    "indented code block": "".join("    " + line + "\n" for line in EXAMPLE.splitlines()),
    "tab-indented code block": "".join("\t" + line + "\n" for line in EXAMPLE.splitlines()),
    "near misses in a fence":
        "```\n<!--gitsleep:learned:start-->\n<!-- GITSLEEP:LEARNED:END -->\n```\n",
    "crlf fence": f"```markdown\r\n{EXAMPLE.replace(chr(10), chr(13) + chr(10))}```\r\n",
}


@pytest.mark.parametrize("example", CODE_EXAMPLES.values(), ids=list(CODE_EXAMPLES))
def test_markers_in_a_code_block_are_text_and_every_byte_of_it_survives(example: str) -> None:
    doc = f"# Writer\n\nThe block looks like this:\n\n{example}\nFinal hand-written line.\n"
    assert d.block_problems(doc, 40, 4000) == []
    assert d.find_block(doc) is None and d.learned_rules(doc) == []
    new, outcomes = d.apply_edits(doc, [add("rule one")])
    assert [o.status for o in outcomes] == ["applied"]
    assert new.startswith(doc) and new.rstrip("\r\n").endswith(d.END)
    assert d.learned_rules(new) == ["rule one"]
    again, _ = d.apply_edits(new, [add("rule two")])
    assert again.startswith(doc) and d.learned_rules(again) == ["rule one", "rule two"]


@pytest.mark.parametrize("example", CODE_EXAMPLES.values(), ids=list(CODE_EXAMPLES))
def test_a_code_example_beside_the_real_block_is_not_a_duplicate(example: str) -> None:
    doc = f"# Writer\n\n{example}\n{WITH_BLOCK}"
    assert d.block_problems(doc, 40, 4000) == []
    assert d.learned_rules(doc) == ['Always include "Confidence:"', "Keep it short"]
    new, outcomes = d.apply_edits(doc, [add("New rule"), Edit("delete", anchor="Keep it short")])
    assert [o.status for o in outcomes] == ["applied", "applied"]
    assert new.startswith(f"# Writer\n\n{example}\n")
    assert d.outside_block(new) == d.outside_block(doc)


@pytest.mark.parametrize("opening", ["```markdown", "~~~~", "````"])
def test_a_fence_left_open_is_closed_before_a_new_block_so_the_block_is_live(
    opening: str
) -> None:
    # an unclosed fence runs to the end: a block appended inside it would be text
    doc = f"# Writer\n\n{opening}\n{EXAMPLE}last code line"
    assert d.block_problems(doc, 40, 4000) == [] and d.find_block(doc) is None
    new, outcomes = d.apply_edits(doc, [add("rule one")])
    assert [o.status for o in outcomes] == ["applied"]
    run = opening.rstrip("markdown")
    assert new == f"{doc}\n{run}\n\n{d.START}\n{d.HEADING}\n\n- rule one\n{d.END}\n"
    assert d.learned_rules(new) == ["rule one"]
    again, _ = d.apply_edits(new, [add("rule two")])
    assert again.startswith(f"{doc}\n{run}\n\n") and d.learned_rules(again) == [
        "rule one", "rule two"]
    # after the real block, an open fence changes nothing the block needs
    assert d.block_problems(WITH_BLOCK + "```\ncode\n", 40, 4000) == []


def test_an_end_marker_hidden_by_an_open_fence_in_the_block_says_why() -> None:
    doc = WITH_BLOCK.replace("- Keep it short\n", "- Keep it short\n```\n")
    line, message = d.block_problems(doc, 40, 4000)[0]
    assert line == 5
    assert "no <!-- gitsleep:learned:end -->" in message
    assert "the code fence opened at line 10 never closes" in message


def test_an_indented_line_in_a_list_item_is_not_a_marker_either() -> None:
    doc = f"- item\n\n    {d.START}\n    {d.END}\n"
    assert d.block_problems(doc, 40, 4000) == [] and d.find_block(doc) is None


def test_block_size_problems() -> None:
    assert d.block_problems(WITH_BLOCK, 40, 4000) == []
    assert "over the limit of 1" in d.block_problems(WITH_BLOCK, 1, 4000)[0][1]
    assert "characters" in d.block_problems(WITH_BLOCK, 40, 10)[0][1]


def test_hand_edits_inside_a_wellformed_block_are_fine() -> None:
    text = WITH_BLOCK.replace("- Keep it short", "- Keep it short\nA note a human wrote here.")
    assert d.block_problems(text, 40, 4000) == []
    new, _ = d.apply_edits(text, [add("another")])
    assert "A note a human wrote here." in new


lines = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
docs = st.lists(lines, max_size=12).map(lambda ls: "\n".join(ls))
edits = st.lists(
    st.builds(
        Edit,
        op=st.sampled_from(["add", "replace", "delete", "bogus"]),
        content=st.one_of(lines, st.sampled_from([d.START, d.END, "---", "a\nb", "<!--"])),
        anchor=lines,
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(doc=docs, batch=edits)
def test_edits_never_change_bytes_outside_the_block(doc: str, batch: list[Edit]) -> None:
    if d.structure_problems(doc):
        with pytest.raises(UsageError):
            d.apply_edits(doc, batch)
        return
    before_outside = d.outside_block(doc)
    new, outcomes = d.apply_edits(doc, batch)
    assert len(outcomes) == len(batch)
    assert d.structure_problems(new) == []
    if d.find_block(doc) is None:
        assert new == doc or new.startswith(doc)
    else:
        assert d.outside_block(new) == before_outside
    # applying again on the result keeps the block sound
    d.apply_edits(new, [Edit("add", content="one more")])


FIXTURES = __import__("pathlib").Path(__file__).parents[1] / "fixtures" / "documents"


@pytest.mark.parametrize("name", ["pdf-skill.md", "agents-crlf.md"])
def test_real_world_documents_keep_every_byte_outside_the_block(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    text = raw.decode("utf-8")  # as run.read_document does: no newline translation
    new, outcomes = d.apply_edits(text, [add("Cite the source file"), add("Keep tables")])
    assert [o.status for o in outcomes] == ["applied", "applied"]
    if d.find_block(text) is not None:  # an existing block stays where it is
        assert d.outside_block(new) == d.outside_block(text)
        assert new.index(d.START) == text.index(d.START)
        assert new.endswith("See [REFERENCE.md](REFERENCE.md) for form filling.\n")
        assert d.learned_rules(new) == ['Quote page numbers as "p. N"', "Cite the source file",
                                        "Keep tables"]
    else:
        assert new.encode("utf-8").startswith(raw)
        assert "\r\n" in new[len(text):] and "\n" not in new[len(text):].replace("\r\n", "")
    again, _ = d.apply_edits(new, [Edit("delete", anchor="Cite the source file"),
                                   Edit("delete", anchor="Keep tables")])
    assert d.outside_block(again) == d.outside_block(new)


@pytest.mark.parametrize("content", INVISIBLE_CONTENTS + LINK_CONTENTS, ids=repr)
def test_invisible_characters_and_script_links_are_refused_not_cleaned(content: str) -> None:
    # the document layer is the last line: an edit that reached it unchecked changes nothing
    for edit in (add(content), Edit("replace", anchor="Keep it short", content=content)):
        new, outcomes = d.apply_edits(WITH_BLOCK, [edit])
        assert new == WITH_BLOCK
        assert outcomes[0].status == "unmatched"
        assert "invisible character" in outcomes[0].reason or " link;" in outcomes[0].reason


@pytest.mark.parametrize("content", SAFE_CONTENTS, ids=repr)
def test_rules_that_only_look_like_hostile_text_are_written(content: str) -> None:
    new, outcomes = d.apply_edits(WITH_BLOCK, [add(content)])
    assert outcomes[0].status == "applied", outcomes[0].reason
    assert d.learned_rules(new)[-1] == content


@pytest.mark.timeout(60)
@pytest.mark.parametrize("content", [
    "](" + " " * 200_000, "a=" + " " * 200_000, "[x]:" + " " * 200_000, "<" * 200_000,
    "[x]\n" * 50_000, "j\t" * 100_000, "a=" * 100_000, "\u200b" * 200_000,
], ids=lambda c: repr(c[:6]))
def test_the_hostile_text_checks_take_linear_time(content: str) -> None:
    # whitespace runs after a link start were quadratic in a first version (minutes here)
    new, outcomes = d.apply_edits(WITH_BLOCK, [add(content + "x")])
    assert new == WITH_BLOCK and outcomes[0].status == "unmatched"


def test_creating_the_block_adds_only_a_separator_as_the_docs_say() -> None:
    """Docs/learned-block.md promised a missing final newline was kept;
    creating the block ends the last line and adds one blank line (in the document's
    line endings), the original bytes stay a prefix, and once the block exists a document
    that ends without a final newline keeps ending that way."""
    apply_edits = d.apply_edits
    original = "# T\r\nrules"
    created, _ = apply_edits(original, [Edit("add", "Be brief.")])
    assert created.startswith(original + "\r\n\r\n<!-- gitsleep:learned:start -->\r\n")
    no_newline = created.rstrip("\r\n")
    edited, _ = apply_edits(no_newline, [Edit("add", "Be kind.")])
    assert edited.endswith("- Be kind.\r\n<!-- gitsleep:learned:end -->")
    text = (Path(__file__).resolve().parents[2] / "docs" / "learned-block.md").read_text()
    assert "a missing final newline)" not in text
    assert "a line break when the document has no final\nnewline, one blank line" in text
