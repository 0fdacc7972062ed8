"""Logging that can never print a secret.

Libraries (urllib3's retries, PyGithub, gitsleep's own git layer) log through `logging`;
every record passes through the current `Redactor` before it reaches stderr. The redactor
starts from the environment's secrets and is replaced once the config names `api_key_env`.
"""

from __future__ import annotations

import logging
import sys

from gitsleep.base.redact import Redactor
from gitsleep.base.terminal import visible

_FORMAT = "gitsleep: %(levelname)s: %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    def __init__(self, redactor: Redactor) -> None:
        super().__init__(_FORMAT)
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return visible(self.redactor.redact(super().format(record)))  # shown, never run


_formatter = RedactingFormatter(Redactor.from_env())


def setup_logging(verbosity: int = 0) -> None:
    """One stderr handler on the root logger, redacting; -v shows INFO, -vv DEBUG."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 2 else
                  logging.INFO if verbosity == 1 else logging.WARNING)


def redact(text: str) -> str:
    """Mask secrets with the current redactor (for error lines printed outside logging)."""
    return _formatter.redactor.redact(text)


def use_redactor(redactor: Redactor) -> None:
    """Redact log records with this redactor from now on (it knows the config's key)."""
    _formatter.redactor = redactor
