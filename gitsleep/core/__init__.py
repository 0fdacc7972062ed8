"""The core: one consolidation epoch, pure. Tasks and document text in, an `EpochResult` out.

Nothing here imports git, the forge, click or the config loader (`tests/test_layers.py`
holds it to that). It reaches models only through `gitsleep.backends.base`, and outside
itself only for the error family, validation problems, the secret masker, the workspace
copier and the `command` check's runner. You can run an epoch from a Python REPL with two
strings and a list of tasks.
"""
