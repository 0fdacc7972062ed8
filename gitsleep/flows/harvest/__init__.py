"""Harvest: tasks mined from the team's own agent sessions, for a person to review.

One module per source (`claude`, `codex`, `plain`), each streaming its files line by line
into `Session` digests (`sessions`); `select` keeps the sessions about the skill, the
repository and the time window; `mine` (rules) and `llm` (the optimizer model) turn them
into candidate tasks with judges; `privacy` masks what must never be written; `pipeline`
runs the order and counts every drop with its reason.
"""
