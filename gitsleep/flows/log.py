"""What `gitsleep log` shows: every recorded epoch of each skill, read from git (commit
trailers and diagnostics notes, `gitsleep.git_forge.history`), and the table it prints."""

from __future__ import annotations

from pathlib import Path

from gitsleep.base.errors import UsageError
from gitsleep.core.scores import fmt_change
from gitsleep.git_forge import history, remote_notes
from gitsleep.git_forge.gitrun import git_out, git_run
from gitsleep.inputs.config import Config


def base_commit(repo: Path, base: str | None) -> str:
    """The commit whose history holds merged epochs: `base`, else HEAD. What is wrong is
    said in the user's words: no repository, no commit yet, or a `--base` they gave."""
    if git_run(repo, "rev-parse", "--git-dir").status != 0:
        raise UsageError(f"{repo} is not inside a git repository (run `git init`, or pass "
                         "--repo)")
    ref = base or "HEAD"
    sha = git_out(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    if sha:
        return sha
    if base is None:
        raise UsageError(f"the git repository at {repo} has no commits yet: commit your "
                         "skill documents first")
    raise UsageError(f"--base {base}: not a commit in {repo} (no such branch, tag or "
                     "commit; fetch it first?)")


def recorded(repo: Path, config: Config, skills: tuple[str, ...],
             base: str | None) -> history.History:
    """Every recorded epoch of `skills` (all when empty), oldest first, and what was
    skipped. A fresh clone has no notes: the remote's are fetched, read-only."""
    for name in skills:
        config.skill(name)  # an unknown skill is a usage error that names the known ones
    sha = base_commit(repo, base)
    remote_notes.fetch(repo)
    prefix = config.branch_prefix
    return history.read_history(repo, base=sha, branch_refs=history.branch_refs(repo, prefix),
                                skills=list(skills) or None)


def calls_cell(epoch: history.RecordedEpoch) -> str:
    """The model calls a night made; a night answered from the response cache says so,
    or its 0 reads as a night that did nothing."""
    if epoch.calls is None:
        return "?"
    if epoch.calls == 0 and epoch.cache_hits:
        return f"0 ({epoch.cache_hits} cached)"
    return str(epoch.calls)


def table(epochs: list[history.RecordedEpoch], prefix: str) -> list[str]:
    """Aligned plain-text rows, a header first; an epoch of several agents is followed by
    one indented line per agent with its own val and held-out."""
    rows = [["date (UTC)", "skill", "commit", "on", "decision", "val", "held-out", "edits",
             "calls", "cost"]]
    for e in epochs:
        where = f"{prefix}{e.skill}" if e.where == "branch" else e.where
        rows.append([
            history.utc_minute(e.date), e.skill, e.commit[:12], where,
            e.decision, fmt_change(*e.val), fmt_change(*e.test),
            "?" if e.applied is None else str(e.applied),
            calls_cell(e),
            "n/a" if e.usd is None else f"${e.usd:.2f}",
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    out = lines[:1]
    for epoch, line in zip(epochs, lines[1:], strict=True):
        out.append(line)
        out += [f"    {agent.line()}" for agent in epoch.agents]
        out += [f"    {epoch.trigger_line()}"] if epoch.triggers is not None else []
    return out


def lines(epochs: list[history.RecordedEpoch], prefix: str,
          skills: tuple[str, ...]) -> list[str]:
    """The text `log` prints: the table, or what to do when there is no epoch yet."""
    if epochs:
        return table(epochs, prefix)
    which = ", ".join(skills) if skills else "any skill"
    return [f"no recorded epoch for {which}: an accepted `gitsleep consolidate` records one"]
