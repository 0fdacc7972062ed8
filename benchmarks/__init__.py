"""gitsleep's benchmark suite: calls against the floor, re-run cost, parallelism, overhead.

Run it with `.venv/bin/python -m benchmarks.run` from the repository root; see
`benchmarks/README.md` for what each number means.
"""
