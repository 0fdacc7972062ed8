from __future__ import annotations

import logging

import pytest

from gitsleep.base import logs
from gitsleep.base.redact import Redactor


def test_log_records_are_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    secret = "my-very-secret-credential-value"
    logs.setup_logging(0)
    logs.use_redactor(Redactor([secret]))
    logging.getLogger("urllib3.connectionpool").warning(
        "Retrying https://x-access-token:%s@github.com/o/r with Bearer ghp_%s", secret, "a" * 36
    )
    err = capsys.readouterr().err
    assert "Retrying" in err
    assert secret not in err and "ghp_" + "a" * 36 not in err


def test_verbosity_sets_the_level() -> None:
    logs.setup_logging(-1)
    assert logging.getLogger().level == logging.WARNING
    logs.setup_logging(2)
    assert logging.getLogger().level == logging.DEBUG
    logs.setup_logging(0)
