"""The core: one consolidation epoch, pure. Tasks and document text in, an `EpochResult` out.

Nothing here reaches git, the forge, click or the config loader, not even through what it
imports (`tests/test_layers.py` holds it to that). It reaches models only through its
port, `gitsleep.core.ports`, and outside itself only the base layer (`gitsleep.base`).
You can run an epoch from a Python REPL with two strings and a list of tasks.
"""
