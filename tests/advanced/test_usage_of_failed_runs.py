"""The Runner's usage per turn on AdvancedSQLiteSession around failed runs.

A run that fails (the model answers 400 after a tool round, or the run hits max_turns) answered
no turn: no usage may be recorded for it, and the next run's usage must land on its own turn
with only its own counts, on the branch it ran on (streamed as well).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.tools import lookup
from turnstore import Agent, RunConfig, Runner
from turnstore.exceptions import ModelCallError
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.testing import FakeOpenAIServer, text_response, tool_call_response
from turnstore.testing.fake_openai import FakeReply


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_failed_run_records_no_usage_and_the_next_run_only_its_own(
    fake_openai: FakeOpenAIServer, tmp_path: Path, streamed: bool
) -> None:
    fake_openai.enqueue(
        text_response("Hello", input_tokens=10, output_tokens=2),
        text_response("Hello again", input_tokens=5, output_tokens=1),
        tool_call_response("lookup", {"key": "Oslo"}, input_tokens=20, output_tokens=3),
        FakeReply(status=400, body={"error": {"message": "bad", "type": "invalid_request"}}),
        tool_call_response("lookup", {"key": "Rome"}, input_tokens=40, output_tokens=5),
        text_response("Sunny", input_tokens=7, output_tokens=1),
    )
    client = fake_openai.async_client()
    config = RunConfig(openai_client=client)
    agent = Agent(name="A", model="gpt-4.1", tools=[lookup])
    session = AdvancedSQLiteSession("u", tmp_path / "runs.db")

    async def run(text: str) -> None:
        if streamed:
            result = Runner.run_streamed(agent, text, session=session, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            await Runner.run(agent, text, session=session, run_config=config)

    try:
        await run("Hi")
        await session.create_branch_from_turn(1, "retry")
        await run("Hi again")
        with pytest.raises(ModelCallError):
            await run("Weather in Oslo?")
        assert await session.get_turn_usage(2) == {}
        await run("Weather in Rome?")
        assert [t["turn"] for t in await session.get_conversation_turns()] == [1, 2, 3]
        usage = await session.get_turn_usage()
        assert isinstance(usage, list)
        assert [(u["user_turn_number"], u["requests"], u["input_tokens"]) for u in usage] == [
            (1, 1, 5),
            (3, 2, 47),
        ]
        assert await session.get_session_usage("main") == {
            "requests": 1,
            "input_tokens": 10,
            "output_tokens": 2,
            "total_tokens": 12,
            "total_turns": 1,
        }
    finally:
        await session.aclose()
        await client.close()
