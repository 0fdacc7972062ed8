"""mypy over the package, as configured in pyproject.toml (strict on every module), so
the README's one test command (and CI through it) checks types as well as behaviour."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # mypy --strict over the package

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes_on_the_package() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
