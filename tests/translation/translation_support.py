"""Shared constants and types of the translation tests (a uniquely named module, so that
`from translation_support import ...` never picks up another folder's conftest)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRIPT = REPO / "scripts" / "translate_docs.py"

for _path in (str(REPO / "scripts"), str(Path(__file__).resolve().parent)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from docs_i18n.report import Reporter  # noqa: E402
from docs_i18n.translator import RetryPolicy  # noqa: E402

FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)


class Outcome:
    """What a run returned and printed."""

    def __init__(self, code: int, reporter: Reporter, output: str) -> None:
        self.code = code
        self.reporter = reporter
        self.output = output


RunSite = Callable[..., Coroutine[Any, Any, Outcome]]
