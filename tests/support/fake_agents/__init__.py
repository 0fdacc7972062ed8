"""Small agent CLIs that each play one way a real agent behaves (or misbehaves).

Every script answers `--version` and otherwise reads the task from stdin (or its last
argument). Tests copy them into a temporary folder as executables; see `install`.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

HERE = Path(__file__).parent


def install(name: str, directory: Path) -> Path:
    """`<name>.py` as an executable program in `directory` that runs on this Python."""
    source = (HERE / f"{name}.py").read_text(encoding="utf-8")
    target = directory / name
    target.write_text(f"#!{sys.executable}\n{source}", encoding="utf-8")
    target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return target
