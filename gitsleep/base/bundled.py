"""The package's own bundled files (the examples), installed or in a source checkout; where
a repository's configured paths lead is `repo_paths.py`."""

from __future__ import annotations

from pathlib import Path


def examples_dir() -> Path:
    """The bundled `examples/` folder: inside the wheel, or beside the package in a checkout."""
    here = Path(__file__).resolve().parents[1]  # the gitsleep package
    for candidate in (here / "_examples", here.parent / "examples"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("gitsleep's bundled examples are missing from this install")
