"""Retrying a failed run from the stored history: `Runner.run(agent, [], session=session)`.

A run stores its input before the first model call, so a failed run leaves the input stored.
Retrying with the same input would store it twice; retrying with `[]` sends the stored history
and adds nothing to it. Real `openai` client, fake server, real SQLite file.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from turnstore import (
    Agent,
    ModelCallError,
    RunConfig,
    Runner,
    SQLiteSession,
    UserError,
)
from turnstore.testing import FakeOpenAIServer, FakeReply, text_response

QUESTION = {"role": "user", "content": "What is the capital of Norway?"}


async def test_retry_with_empty_input_stores_the_input_once(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(FakeReply(status=500), text_response("Oslo.", response_id="resp_ok"))
    db = tmp_path / "chats.db"
    agent = Agent(name="A")
    async with fake_openai.async_client() as client, SQLiteSession("u", db) as session:
        config = RunConfig(openai_client=client)
        with pytest.raises(ModelCallError):
            await Runner.run(agent, QUESTION["content"], session=session, run_config=config)
        assert await session.get_items() == [QUESTION]  # nothing the user said is lost
        result = await Runner.run(agent, [], session=session, run_config=config)
    assert result.final_output == "Oslo."
    assert result.input == []
    first, second = (r.body for r in fake_openai.requests_to("/v1/responses"))
    assert first["input"] == second["input"] == [QUESTION]
    async with SQLiteSession("u", db) as reopened:
        stored = await reopened.get_items()
    assert [item.get("role") for item in stored] == ["user", "assistant"]
    assert stored[0] == QUESTION
    assert stored[1]["content"][0]["text"] == "Oslo."


async def test_streamed_retry_with_empty_input(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(FakeReply(status=503), text_response("Oslo."))
    agent = Agent(name="A")
    async with (
        fake_openai.async_client() as client,
        SQLiteSession("u", tmp_path / "c.db") as session,
    ):
        config = RunConfig(openai_client=client)

        async def stream(input: str | list[object]) -> str | None:
            result = Runner.run_streamed(agent, input, session=session, run_config=config)  # type: ignore[arg-type]
            async with contextlib.aclosing(result.stream_events()) as events:
                async for _ in events:
                    pass
            return result.final_output

        with pytest.raises(ModelCallError):
            await stream(QUESTION["content"])
        assert await stream([]) == "Oslo."
        assert [item.get("role") for item in await session.get_items()] == ["user", "assistant"]


async def test_empty_input_with_nothing_stored_is_a_user_error(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    async with (
        fake_openai.async_client() as client,
        SQLiteSession("u", tmp_path / "c.db") as session,
    ):
        config = RunConfig(openai_client=client)
        with pytest.raises(UserError, match="session holds no history"):
            await Runner.run(Agent(name="A"), [], session=session, run_config=config)
        with pytest.raises(UserError, match="nothing to send"):
            await Runner.run(Agent(name="A"), [], run_config=config)
        assert await session.get_items() == []
    assert fake_openai.requests == []
