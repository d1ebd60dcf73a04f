"""Fixtures for the translation pipeline: a copy of the fixture site and the echo translator."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from translation_support import (
    FAST_RETRY,
    FIXTURES,
    MODEL_TIMEOUT,
    REPO,
    InProcess,
    Outcome,
    RunSite,
)

from docs_i18n.planning import Options
from docs_i18n.report import Reporter
from docs_i18n.runner import translate
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A repository root holding a copy of the fixture docs and the real i18n/ prompts."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "docs", root / "docs")
    (root / "i18n").mkdir()
    shutil.copytree(REPO / "i18n" / "prompts", root / "i18n" / "prompts")
    shutil.copy(REPO / "i18n" / "glossary.yml", root / "i18n" / "glossary.yml")
    return root


@pytest.fixture
def run_main(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> InProcess:
    """Run the command line on `site` in this process (see `InProcess`)."""
    return InProcess(site, capsys, monkeypatch)


@pytest.fixture
def echo(fake_openai: FakeOpenAIServer) -> EchoTranslator:
    """The echo translator answering on the fake server."""
    return EchoTranslator().install(fake_openai)


@pytest.fixture
def run_site(site: Path, fake_openai: FakeOpenAIServer) -> RunSite:
    """Run a translation of `site` in process, against the fake server, with fast retries."""

    async def _run(**overrides: Any) -> Outcome:
        timeout = overrides.pop("timeout", MODEL_TIMEOUT)
        options = Options(
            root=site,
            languages=overrides.pop("languages", ["ja", "ko", "zh"]),
            retry=overrides.pop("retry", FAST_RETRY),
            timeout=timeout,
            **overrides,
        )
        stream = io.StringIO()
        reporter = Reporter(stream, bar=False)
        async with fake_openai.async_client(timeout=timeout) as client:
            code = await translate(options, client, reporter)
        return Outcome(
            code,
            reporter,
            stream.getvalue()
            + reporter.summary(options.model, options.review_model if options.review else None),
        )

    return _run
