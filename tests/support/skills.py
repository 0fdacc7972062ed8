"""Skill documents the workspace tests share."""

# A changelog skill with an empty learned block; `{rules}` takes the learned rules.
CHANGELOG_SKILL = """---
name: changelog
description: Keeps the changelog.
---

# Changelog skill

<!-- gitsleep:learned:start -->
## Learned rules
{rules}
<!-- gitsleep:learned:end -->
"""
