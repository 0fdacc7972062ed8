"""`harvest --branch`: the harvested tasks as one commit on `gitsleep-harvest/<skill>`.

The commit goes through `gitsleep.git_forge.publish_sequence`, the same claim -> commit -> note ->
push -> PR order consolidate uses, so harvest keeps every one of its git safety rules: the
branch must be gitsleep's by proof (a note under `refs/notes/gitsleep-harvest`, or this
clone's reflog), a person's commits that only this clone has stop it (exit 4) instead of
being pushed, and the push is a fast-forward with a lease. Unlike consolidate it appends:
it builds on the newest tip, so a review pushed to the branch is kept and only new tasks
are added. The commit is made in a private worktree (the user's checkout, index and HEAD
are never touched); the task file there must not be, or sit behind, a symlink.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitsleep.flows.harvest.mine import prompt_key
from gitsleep.flows.harvest.pipeline import append_to, jsonl_target, plain_target, render
from gitsleep.flows.harvest.select import harvested_before
from gitsleep.flows.prepare import Setup
from gitsleep.git_forge import publish_sequence as sequence
from gitsleep.git_forge.publish_sequence import Claimed, forge_call
from gitsleep.inputs.tasks import parse_task_file


def branch_name(setup: Setup, skill: str) -> str:
    return sequence.harvest_branch(setup.config.branch_prefix, skill)


def commit_on_branch(setup: Setup, skill: str, relative: str,
                     records: list[dict[str, Any]]) -> dict[str, Any]:
    """Commit the new records on the harvest branch; push and open a PR when possible."""
    branch = branch_name(setup, skill)
    # the checkout: `claim`'s advice (another prefix) would not help
    checkout = (f"harvest --branch commits on {branch}, which is the branch checked out here, "
                "and never moves the checkout's own branch: check out another branch (e.g. "
                "main) with `git switch main`, and re-run")
    done: dict[str, Any] = {"branch": branch, "commit": None, "pushed": False, "pr_url": None,
                            "duplicates": 0, "deleted": 0}
    with sequence.publishing(setup.repo, branch, sequence.harvest_lock(skill),
                             notes_ref=sequence.HARVEST_NOTES_REF, keep_reviews=True,
                             refuse_checkout=checkout) as claimed:
        state = claimed.state
        start = claimed.append_start()
        with claimed.worktree(start) as tree:
            target = jsonl_target(Path(tree), relative, f" on {branch}")
            fresh = _not_in(target, relative, records)
            before = harvested_before(setup.repo, [start], [relative])
            new = [r for r in fresh if r["id"] not in before]
            done["duplicates"] = len(records) - len(fresh)
            done["deleted"] = len(fresh) - len(new)
            if new:
                _append_and_commit(setup, claimed, Path(tree), skill, relative, new, done)
        # an earlier run's commit whose push failed: push it now, even with nothing new
        unpushed = start == state.local_tip and state.local_tip != state.remote_tip
        if claimed.remote and (done["commit"] or unpushed):
            claimed.push(fast_forward=True)
            done["pushed"] = True
            done["pr_url"] = _open_pr(setup, claimed, skill, len(new))
    return done


def _append_and_commit(setup: Setup, claimed: Claimed, tree: Path, skill: str,
                       relative: str, new: list[dict[str, Any]], done: dict[str, Any]) -> None:
    """Append the new tasks in the worktree and commit them with harvest's note."""
    append_to(plain_target(tree, relative), render(new))
    message = (f"gitsleep: harvest {len(new)} task(s) for {skill} (review pending)\n\n"
               f"Mined from local agent sessions by `gitsleep harvest` and masked "
               f"(secrets, home paths, e-mail addresses). Every task is marked "
               f'"review": "pending": read it, remove the mark to accept it, or '
               f"delete it.")
    note = sequence.JsonNote({"kind": "harvest", "skill": skill,
                              "tasks": [r["id"] for r in new]})
    done["commit"] = claimed.commit(tree, [relative], setup.redactor.redact(message), note)
    done["tasks"] = len(new)


def _not_in(target: Path, relative: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records whose id and prompt the branch's task file does not hold yet."""
    if not target.is_file():
        return records
    there, _ = parse_task_file(target, relative)
    ids = {t.id for t in there}
    prompts = {prompt_key(t.prompt) for t in there}
    return [r for r in records if r["id"] not in ids and prompt_key(r["prompt"]) not in prompts]


def _open_pr(setup: Setup, claimed: Claimed, skill: str, count: int) -> str | None:
    branch, base = claimed.branch, claimed.base_name
    hub, why_not = claimed.forge(setup.env)
    if hub is None:
        setup.say(f"harvest: no pull request: {why_not}")
        return None
    body = (f"{count or 'New'} task(s) for `{skill}` mined from local agent sessions by "
            "`gitsleep harvest`, masked before commit.\n\n"
            'Every task is marked `"review": "pending"` and is left out of `eval` and '
            "`consolidate` until the mark is removed. Review each one: keep it by deleting the "
            "mark, fix its prompt or checks, or delete it (a deleted task is not harvested "
            "again). `gitsleep validate` lists what is still pending.")
    try:
        found = forge_call(setup.redactor.redact, lambda: hub.find_open_pr(branch) or hub.create_pr(
            head=branch, base=setup.config.pr.base or base,
            title=f"gitsleep: harvested tasks for {skill} (review needed)",
            body=setup.redactor.redact(body), labels=list(setup.config.pr.labels), draft=False))
    finally:
        hub.close()
    return str(found.url)
