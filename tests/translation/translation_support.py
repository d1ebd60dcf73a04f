"""Shared constants and types of the translation tests (a uniquely named module, so that
`from translation_support import ...` never picks up another folder's conftest)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from docs_i18n.report import Reporter
from docs_i18n.translator import RetryPolicy

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRIPT = REPO / "scripts" / "translate_docs.py"

FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)


class Outcome:
    """What a run returned and printed."""

    def __init__(self, code: int, reporter: Reporter, output: str) -> None:
        self.code = code
        self.reporter = reporter
        self.output = output


RunSite = Callable[..., Coroutine[Any, Any, Outcome]]
