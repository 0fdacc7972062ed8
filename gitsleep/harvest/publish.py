"""`harvest --branch`: the harvested tasks as one commit on `gitsleep/harvest-<skill>`.

The commit is made in a private worktree (the user's checkout, index and HEAD are never
touched), on top of the branch when it exists, so a review already pushed there is kept
and only new tasks are appended. With a remote the branch is pushed with a lease; with a
token a pull request is opened, so accepting tasks is an ordinary code review.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitsleep.errors import GitError, GitsleepError
from gitsleep.harvest.mine import prompt_key
from gitsleep.harvest.pipeline import append_to, render
from gitsleep.setup import Setup
from gitsleep.tasks import parse_task_file


def branch_name(setup: Setup, skill: str) -> str:
    return f"{setup.config.branch_prefix}harvest-{skill}"


def commit_on_branch(setup: Setup, skill: str, relative: str,
                     records: list[dict[str, Any]]) -> dict[str, Any]:
    """Commit the new records on the harvest branch; push and open a PR when possible."""
    from gitsleep import gitops
    from gitsleep.lock import RepoLock

    repo = gitops.open_repo(setup.repo)
    base = gitops.resolve_base(repo, None)
    branch = branch_name(setup, skill)
    remote = base.remote or gitops.default_remote(repo, base.branch)
    done: dict[str, Any] = {"branch": branch, "commit": None, "pushed": False, "pr_url": None,
                            "duplicates": 0}
    with RepoLock(repo, f"harvest-{skill}"):
        remote_tip = gitops.fetch_branch(repo, remote, branch) if remote else None
        local = repo.git.rev_parse("--verify", "--quiet", f"refs/heads/{branch}",
                                   with_exceptions=False).strip() or None
        with gitops.temporary_worktree(repo, branch, local or remote_tip or base.sha) as tree:
            target = Path(tree) / relative
            new = _not_in(target, relative, records)
            done["duplicates"] = len(records) - len(new)
            if not new:
                return done
            append_to(target, render(new))
            message = (f"gitsleep: harvest {len(new)} task(s) for {skill} (review pending)\n\n"
                       f"Mined from local agent sessions by `gitsleep harvest` and masked "
                       f"(secrets, home paths, e-mail addresses). Every task is marked "
                       f'"review": "pending": read it, remove the mark to accept it, or '
                       f"delete it.")
            done["commit"] = gitops.commit_documents(repo, Path(tree), branch, [relative],
                                                     setup.redactor.redact(message))
        done["tasks"] = len(new)
        if remote:
            gitops.push(repo, remote, branch, remote_tip)
            done["pushed"] = True
            done["pr_url"] = _open_pr(setup, repo, remote, branch, base.branch or base.name,
                                      skill, len(new))
    return done


def _not_in(target: Path, relative: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records whose id and prompt the branch's task file does not hold yet."""
    if not target.is_file():
        return records
    there, _ = parse_task_file(target, relative)
    ids = {t.id for t in there}
    prompts = {prompt_key(t.prompt) for t in there}
    return [r for r in records if r["id"] not in ids and prompt_key(r["prompt"]) not in prompts]


def _open_pr(setup: Setup, repo: Any, remote: str, branch: str, base: str, skill: str,
             count: int) -> str | None:
    from gitsleep import forge

    url = repo.remotes[remote].url
    settings, why_not = forge.settings_from_env(setup.env, url)
    hub = forge.forge_from_env(setup.env, url) if settings is not None else None
    if hub is None:
        setup.say(f"harvest: no pull request: {why_not}")
        return None
    body = (f"{count} task(s) for `{skill}` mined from local agent sessions by "
            "`gitsleep harvest`, masked before commit.\n\n"
            'Every task is marked `"review": "pending"` and is left out of `eval` and '
            "`consolidate` until the mark is removed. Review each one: keep it by deleting the "
            "mark, fix its prompt or checks, or delete it. `gitsleep validate` lists what is "
            "still pending.")
    try:
        found = hub.find_open_pr(branch) or hub.create_pr(
            head=branch, base=setup.config.pr.base or base,
            title=f"gitsleep: harvested tasks for {skill} (review needed)",
            body=setup.redactor.redact(body), labels=list(setup.config.pr.labels), draft=False)
    except GitsleepError:
        raise
    except Exception as exc:  # noqa: BLE001 - a forge library error must be one line
        raise GitError(f"GitHub API error: {setup.redactor.redact(str(exc))[:300]}") from None
    return found.url
