"""One real night of the bundled example with the offline simulator, for the tests of what
a night writes (no git: its tasks have no workspace)."""

from __future__ import annotations

from gitsleep.backends.offline import OfflineBackend
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import EpochResult
from gitsleep.flows.prepare import read_inputs
from gitsleep.inputs.config import load_config
from tests.support.gitrepo import EXAMPLES


def example_night(name: str = "brief-writer") -> EpochResult:
    root = EXAMPLES / name
    config = load_config(root / ".gitsleep.yml")
    skill = config.skills[0]
    tasks, documents = read_inputs(root, skill)
    settings = config.epoch_settings(skill=skill.name)
    return run_epoch(tasks, documents, settings, OfflineBackend(), skill=skill.name)
