"""Which sessions are about this skill, in this repository, in the time window.

A session that used the skill (Claude Code's Skill tool or `/name`, or a tool call that
read its SKILL.md) is kept first. Otherwise its first user turns are matched against the
skill: its name and headings are strong terms, the document's most frequent words weak
ones; a session is kept at KEEP_AT: one strong word or three weak ones.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from gitsleep.base.errors import UsageError
from gitsleep.flows.harvest.mine import ID_PREFIX
from gitsleep.flows.harvest.sessions import Session
from gitsleep.git_forge.gitrun import git_out

USED = 100  # the relevance of a session that used the skill
STRONG, WEAK = 3, 1
KEEP_AT = 3  # one strong term, or three weak ones
FREQUENT = 25  # weak terms taken from the document
TURNS_MATCHED = 3  # user turns read for terms
_WORD = re.compile(r"[a-z][a-z0-9]{3,}")
_ADDED_ID = re.compile(r'^\+.*?"id"\s*:\s*"(' + re.escape(ID_PREFIX) + r'[0-9a-f]{12})"',
                       re.MULTILINE)
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_STOP_TEXT = """
about above after again against also always answer because been before being below between
both each every from have having here into just like make more most much must never only
other over same should some such than that their them then there these they this those
through under until very want what when where which while with within without would your
yours write written uses using used user users need needs file files does done name
description skill skills
"""
STOPWORDS = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True)
class SkillTerms:
    name: str
    strong: frozenset[str]
    weak: frozenset[str]


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in STOPWORDS]


def skill_terms(name: str, document: str) -> SkillTerms:
    """The skill's name and heading words (strong) and its frequent words (weak)."""
    strong = set(words(name.replace("-", " ")))
    for heading in _HEADING.findall(document):
        strong.update(words(heading))
    counts = Counter(words(document))
    weak = [w for w, _ in counts.most_common() if w not in strong][:FREQUENT]
    return SkillTerms(name, frozenset(strong), frozenset(weak))


def used_skill(session: Session, name: str) -> bool:
    """Whether the session ran the skill (`plugin:name` counts as `name`)."""
    return any(used == name or used.rsplit(":", 1)[-1] == name for used in session.skills_used)


def relevance(session: Session, terms: SkillTerms) -> int:
    """USED for a session that used the skill, else STRONG per strong word and WEAK per
    weak word found in its first user turns (each word counted once)."""
    if used_skill(session, terms.name):
        return USED
    found = set()
    for turn in session.turns[:TURNS_MATCHED]:
        found.update(words(turn.user))
    return STRONG * len(found & terms.strong) + WEAK * len(found & terms.weak)


def inside(repo: Path) -> Callable[[str], bool]:
    """A test for a session's cwd: the repository or a folder in it."""
    root = os.path.normcase(str(repo.resolve()))

    def keep(cwd: str) -> bool:
        try:
            path = os.path.normcase(os.path.realpath(cwd))
        except (OSError, ValueError):
            path = os.path.normcase(os.path.normpath(cwd))
        return path == root or path.startswith(root.rstrip(os.sep) + os.sep)

    return keep


def parse_since(value: str | None, now: datetime | None = None) -> datetime | None:
    """`7d`, `12h`, `30m`, `2w` ago, or an ISO date/time; None keeps everything."""
    if not value:
        return None
    now = now or datetime.now(timezone.utc)
    match = re.fullmatch(r"\s*(\d{1,6})\s*([mhdw])\s*", value)
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        return now - timedelta(**{{"m": "minutes", "h": "hours", "d": "days",
                                    "w": "weeks"}[unit]: amount})
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since {value!r}: use a duration like 7d, 12h, 30m, 2w or a date "
                         "like 2026-11-01") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def harvested_before(repo: Path, revs: list[str], paths: list[str]) -> frozenset[str]:
    """The ids of harvested tasks ever added to `paths` in the history of `revs`.

    git remembers what harvest wrote, so no state file has to: a harvested task the task
    files no longer hold was deleted by a person in review, and must not come back as
    pending. Read with `--full-history`, so a task added and deleted on a merged branch
    counts too. Empty when there is no history (not a git repository, no commit yet).
    """
    if not revs or not paths:
        return frozenset()
    try:
        out = git_out(repo, "--literal-pathspecs", "log", "--full-history", "--no-merges",
                      "--format=", "--patch", "--unified=0", "--no-color", "--no-ext-diff",
                      "--no-textconv", "--no-renames", *revs, "--", *paths)
    except OSError:  # no such folder, or no git installed: nothing to remember
        return frozenset()
    return frozenset(_ADDED_ID.findall(out))
