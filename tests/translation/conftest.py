"""Fixtures for the translation pipeline: a copy of the fixture site and the echo translator."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_sessions.testing import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRIPT = REPO / "scripts" / "translate_docs.py"

sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from echo_translator import EchoTranslator  # noqa: E402

from docs_i18n.report import Reporter  # noqa: E402
from docs_i18n.runner import Options, translate  # noqa: E402
from docs_i18n.translator import RetryPolicy  # noqa: E402

FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)


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
def echo(fake_openai: FakeOpenAIServer) -> Iterator[EchoTranslator]:
    """The echo translator answering on the fake server."""
    return EchoTranslator().install(fake_openai)


class Outcome:
    """What a run returned and printed."""

    def __init__(self, code: int, reporter: Reporter, output: str) -> None:
        self.code = code
        self.reporter = reporter
        self.output = output


RunSite = Callable[..., Coroutine[Any, Any, Outcome]]


@pytest.fixture
def run_site(site: Path, fake_openai: FakeOpenAIServer) -> RunSite:
    """Run a translation of `site` in process, against the fake server, with fast retries."""
    import io

    async def _run(**overrides: Any) -> Outcome:
        timeout = overrides.pop("timeout", 5.0)
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
        return Outcome(code, reporter, stream.getvalue() + reporter.summary(options.model))

    return _run
