"""Shared constants and types of the translation tests (a uniquely named module, so that
`from translation_support import ...` never picks up another folder's conftest)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import translate_docs
from docs_i18n.report import Reporter
from docs_i18n.translator import RetryPolicy

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRIPT = REPO / "scripts" / "translate_docs.py"

FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)
MODEL_TIMEOUT = 30.0
"""Seconds a test's client waits for the fake model: the echo translator works out each reply in
the server's thread, which a loaded machine can hold for seconds; a reply that never comes still
fails the test."""


class Outcome:
    """What a run returned and printed."""

    def __init__(self, code: int, reporter: Reporter, output: str) -> None:
        self.code = code
        self.reporter = reporter
        self.output = output


RunSite = Callable[..., Coroutine[Any, Any, Outcome]]


class InProcess:
    """The command line (`translate_docs.main`) called in this process on one site, as the
    script would run in a child: `OPENAI_*` variables only from `env`, stdout and stderr captured,
    the exit status returned.

    For cases about what a run does (its output, exit status and files), where a child process
    adds only its start-up time (the interpreter and the imports, openai's above all). Cases about
    the process itself (the environment a child is given, Ctrl-C, a kill, two runs at once) start
    the script as a child instead.
    """

    def __init__(
        self, site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.site = site
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def __call__(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        with self.monkeypatch.context() as patch:
            for name in [k for k in os.environ if k.startswith("OPENAI_")]:
                patch.delenv(name)
            for name, value in env.items():
                patch.setenv(name, value)
            self.capsys.readouterr()
            argv = ["--root", str(self.site), *args]
            code = translate_docs.main(argv)
            out, err = self.capsys.readouterr()
        return subprocess.CompletedProcess([str(SCRIPT), *argv], code, out, err)
