"""Usage per turn: recorded by our Runner by itself (real `openai` client, fake server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from support.tools import lookup
from turnstore import Agent, RunConfig, Runner
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.memory import is_usage_recording_session
from turnstore.testing import FakeOpenAIServer, text_response, tool_call_response


async def test_runner_records_usage_per_turn_on_each_branch(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(
        text_response("Hello", input_tokens=10, output_tokens=2),
        tool_call_response("lookup", {"key": "Oslo"}, input_tokens=20, output_tokens=3),
        text_response("Sunny", input_tokens=30, output_tokens=4),
        text_response("Other answer", input_tokens=7, output_tokens=1),
    )
    client = fake_openai.async_client()
    agent = Agent(name="A", model="gpt-4.1", tools=[lookup])
    config = RunConfig(openai_client=client)
    session = AdvancedSQLiteSession(session_id="u", db_path=tmp_path / "usage.db")
    assert is_usage_recording_session(session)
    try:
        await Runner.run(agent, "Hi", session=session, run_config=config)
        streamed = Runner.run_streamed(
            agent, "Weather in Oslo?", session=session, run_config=config
        )
        async for _ in streamed.stream_events():
            pass
        assert await session.get_turn_usage(1) == {
            "requests": 1,
            "input_tokens": 10,
            "output_tokens": 2,
            "total_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        second = await session.get_turn_usage(2)
        assert isinstance(second, dict)
        assert (second["requests"], second["input_tokens"], second["total_tokens"]) == (2, 50, 57)
        assert await session.get_tool_usage() == [("lookup", 1, 2)]
        by_turn = await session.get_conversation_by_turns()
        assert [entry["type"] for entry in by_turn[2]] == [
            "user",
            "function_call",
            "function_call_output",
            "assistant",
        ]
        # Branch from turn 2 and answer again: usage is kept per branch.
        await session.create_branch_from_turn(2, "again")
        await Runner.run(agent, "Weather, briefly?", session=session, run_config=config)
        assert [row["user_turn_number"] for row in await session.get_turn_usage()] == [2]
        assert await session.get_session_usage("again") == {
            "requests": 1,
            "input_tokens": 7,
            "output_tokens": 1,
            "total_tokens": 8,
            "total_turns": 1,
        }
        total = await session.get_session_usage()
        assert total is not None
        assert total["requests"] == 4
        assert total["total_turns"] == 3
        main = await session.get_turn_usage(branch_id="main")
        assert [row["user_turn_number"] for row in main] == [1, 2]
        # Popping a turn's user message drops that turn's usage on this branch only.
        await session.pop_item()
        await session.pop_item()
        assert await session.get_turn_usage(2) == {}
        assert len(await session.get_turn_usage(branch_id="main")) == 2
    finally:
        await session.aclose()
        await client.close()


class _SdkLikeResult:
    """What store_run_usage reads of the OpenAI Agents SDK's RunResult: its context wrapper."""

    def __init__(self, usage: Any) -> None:
        from agents.run_context import RunContextWrapper

        self.context_wrapper = RunContextWrapper(context=None, usage=usage)


async def test_store_run_usage_takes_the_sdk_result_and_ours(tmp_path: Path) -> None:
    from agents.usage import Usage as SdkUsage
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    from turnstore import RunResult, Usage

    async with AdvancedSQLiteSession(session_id="u", db_path=tmp_path / "u.db") as session:
        await session.store_run_usage(_SdkLikeResult(SdkUsage(requests=1, input_tokens=5)))
        assert await session.get_session_usage() is None  # no turn yet: nothing recorded
        await session.add_items([{"role": "user", "content": "q"}])
        sdk_usage = SdkUsage(
            requests=2,
            input_tokens=5,
            output_tokens=6,
            total_tokens=11,
            input_tokens_details=InputTokensDetails(cached_tokens=4, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=3),
        )
        await session.store_run_usage(_SdkLikeResult(sdk_usage))
        turn = await session.get_turn_usage(1)
        assert isinstance(turn, dict)
        assert turn["input_tokens_details"]["cached_tokens"] == 4
        assert turn["output_tokens_details"] == {"reasoning_tokens": 3}
        usage = Usage(requests=1, input_tokens=1, total_tokens=1)
        ours = RunResult(input="q", last_agent=Agent(name="A"), usage=usage)
        await session.store_run_usage(ours)
        assert await session.get_session_usage() == {
            "requests": 1,
            "input_tokens": 1,
            "output_tokens": 0,
            "total_tokens": 1,
            "total_turns": 1,
        }


_CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from turnstore.extensions.memory import AdvancedSQLiteSession

    async def main():
        session = AdvancedSQLiteSession(session_id="c", db_path=sys.argv[1])
        await session.add_items([{"role": "user", "content": f"q{n}"} for n in (1, 2)])
        await session.create_branch_from_turn(2, "kept")
        await session.add_items([{"role": "user", "content": "on kept"}])
        print("committed", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


async def test_a_killed_process_keeps_every_committed_branch(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == "committed"
    async with AdvancedSQLiteSession(session_id="c", db_path=db) as session:
        assert [b["branch_id"] for b in await session.list_branches()] == ["main", "kept"]
        await session.switch_to_branch("kept")
        assert [item["content"] for item in await session.get_items()] == ["q1", "on kept"]
