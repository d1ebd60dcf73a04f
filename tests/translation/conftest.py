"""Fixtures of the translation tests: a copy of the tool in a temporary repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from echo_translator import EchoTranslator
from translation_site import Site, fixture_pairs

from turnstore.testing import FakeOpenAIServer


@pytest.fixture
def model(fake_openai: FakeOpenAIServer) -> EchoTranslator:
    """The stand-in model, answering the fixtures' sections with their translations."""
    return EchoTranslator(fixture_pairs()).install(fake_openai)


@pytest.fixture
def site(tmp_path: Path, fake_openai: FakeOpenAIServer, model: EchoTranslator) -> Site:
    """An empty repository with the tool (add pages with `site.add`)."""
    (tmp_path / "docs").mkdir()
    return Site(tmp_path, fake_openai)
