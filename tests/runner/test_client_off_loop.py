"""A client built from the environment is built off the event-loop thread.

`AsyncOpenAI()` loads certificates from disk; the runner and `OpenAIResponsesModel` must not do
that on the loop thread (the compaction and Conversations sessions already build theirs in a
worker thread).
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from turnstore import Agent, OpenAIResponsesModel, Runner, SQLiteSession
from turnstore.testing import FakeOpenAIServer, text_response


@pytest.fixture
def constructions(monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> list[bool]:
    """Record, for each `AsyncOpenAI()` built, whether it ran on an event-loop thread."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    on_loop: list[bool] = []
    original = openai.AsyncOpenAI.__init__

    def spy(self: openai.AsyncOpenAI, *args: Any, **kwargs: Any) -> None:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        original(self, *args, **kwargs)

    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", spy)
    return on_loop


async def test_runner_builds_its_client_off_the_loop(
    constructions: list[bool], fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(text_response("one"), text_response("two"))
    async with SQLiteSession("s") as session:
        result = await Runner.run(Agent(name="A"), "hi", session=session)
        assert result.final_output == "one"
        streamed = Runner.run_streamed(Agent(name="A"), "again", session=session)
        async for _ in streamed.stream_events():
            pass
        assert streamed.final_output == "two"
    assert constructions == [False, False]


async def test_model_without_client_builds_it_off_the_loop(
    constructions: list[bool], fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(text_response("one"))
    result = await Runner.run(Agent(name="A", model=OpenAIResponsesModel("gpt-4.1")), "hi")
    assert result.final_output == "one"
    assert constructions == [False]


async def test_a_missing_key_is_still_a_clear_error(
    constructions: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnstore import ModelCallError

    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelCallError, match="OPENAI_API_KEY"):
        await Runner.run(Agent(name="A"), "hi")
    with pytest.raises(ModelCallError, match="OPENAI_API_KEY"):
        await Runner.run(Agent(name="A", model=OpenAIResponsesModel("gpt-4.1")), "hi")
