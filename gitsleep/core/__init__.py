"""The core: one consolidation epoch, pure. Tasks and document text in, an `EpochResult` out.

Nothing here reaches git, the forge, click or the config loader, not even through what it
imports (`tests/test_layers.py` holds it to that). It reaches models only through
`gitsleep.backends.base`, and outside itself only for the error family, validation
problems, the secret masker and (until issue 39 moves it) the `command` check's runner.
You can run an epoch from a Python REPL with two strings and a list of tasks.
"""
