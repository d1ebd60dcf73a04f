"""End to end: Runner + OpenAIResponsesCompactionSession on the fake server, real client."""

from __future__ import annotations

import asyncio
import gc
import warnings
from pathlib import Path

import pytest
from openai import AsyncOpenAI

from support.tools import lookup
from turnstore import (
    Agent,
    ModelSettings,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
    SQLiteSession,
    UserError,
)
from turnstore.agent import DEFAULT_MODEL
from turnstore.testing import (
    FakeCompactionAPI,
    FakeOpenAIServer,
    text_response,
    tool_call_response,
)


async def test_runner_compacts_after_ten_answers_and_counts_the_usage(
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    compaction_api: FakeCompactionAPI,
    client: AsyncOpenAI,
) -> None:
    agent = Agent(name="Assistant", model="gpt-4.1")
    config = RunConfig(openai_client=client)
    async with SQLiteSession("user_1", tmp_path / "chats.db") as store:
        session = OpenAIResponsesCompactionSession("user_1", store, client=client)
        fake_openai.enqueue(
            *(text_response(f"answer {n}", response_id=f"resp_{n}") for n in range(1, 12))
        )
        results = [
            await Runner.run(agent, f"question {n}", session=session, run_config=config)
            for n in range(1, 10)
        ]
        # Nine answers stored: no compaction yet; each run made one model call of 5 tokens.
        assert compaction_api.bodies == []
        assert [r.usage.total_tokens for r in results] == [5] * 9
        results.append(await Runner.run(agent, "question 10", session=session, run_config=config))
        # The tenth answer reaches the threshold: the runner compacted after saving the turn,
        # using the stored response chain, and added the compaction's tokens to the run.
        assert compaction_api.bodies == [
            {"model": DEFAULT_MODEL, "previous_response_id": "resp_10"}
        ]
        last = results[-1].usage
        assert (last.requests, last.input_tokens, last.output_tokens) == (2, 3 + 40, 2 + 8)
        assert last.total_tokens == 5 + 48
        # Like the API: the chain's user messages stay, then one compaction item.
        items = await session.get_items()
        assert [item["content"][0]["text"] for item in items[:-1]] == [
            f"question {n}" for n in range(1, 11)
        ]
        assert items[-1] == {
            "type": "compaction",
            "id": items[-1]["id"],
            "encrypted_content": "compacted:resp_10",
        }
        archived = await store.get_archived_items()
        assert len(archived) == 20
        assert archived[0]["content"] == "question 1"
        # The next run sends the compacted history, then the new question.
        await Runner.run(agent, "question 11", session=session, run_config=config)
        model_input = fake_openai.requests_to("/v1/responses")[-1].body["input"]
        assert [item.get("type") for item in model_input[9:11]] == ["message", "compaction"]
        assert model_input[11]["content"] == "question 11"


async def test_unstored_responses_are_compacted_from_input_and_tool_pairs_stay_whole(
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    compaction_api: FakeCompactionAPI,
    client: AsyncOpenAI,
) -> None:
    agent = Agent(
        name="Assistant", model="o3", tools=[lookup], model_settings=ModelSettings(store=False)
    )
    config = RunConfig(openai_client=client)
    async with SQLiteSession("user_2", tmp_path / "chats.db") as store:
        session = OpenAIResponsesCompactionSession(
            "user_2",
            store,
            client=client,
            model="o3",
            should_trigger_compaction=lambda context: (
                len(context["compaction_candidate_items"]) >= 3
            ),
        )
        fake_openai.enqueue(
            tool_call_response("lookup", {"key": "Paris"}, call_id="call_p"),
            text_response("It is sunny in Paris."),
        )
        result = await Runner.run(agent, "Weather in Paris?", session=session, run_config=config)
        # Turn 1 saved the call with its output (2 candidates: no compaction); turn 2 saved the
        # answer (3 candidates): compaction with the stored items as input, since store=False.
        [body] = compaction_api.bodies
        assert body["model"] == "o3"
        assert [item.get("type", "message") for item in body["input"]] == [
            "message",
            "function_call",
            "function_call_output",
            "message",
        ]
        assert body["input"][1]["call_id"] == body["input"][2]["call_id"] == "call_p"
        assert result.usage.requests == 3
        assert result.usage.total_tokens == 5 + 5 + 48
        items = await session.get_items()
        assert [item.get("type") for item in items] == ["message", "compaction"]
        assert items[0]["role"] == "user"
        assert len(await store.get_archived_items()) == 4


async def test_a_tool_turn_waits_for_the_response_that_saw_its_outputs(
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    compaction_api: FakeCompactionAPI,
    client: AsyncOpenAI,
) -> None:
    agent = Agent(name="Assistant", model="gpt-4.1", tools=[lookup])  # responses are stored
    async with SQLiteSession("user_3", tmp_path / "chats.db") as store:
        session = OpenAIResponsesCompactionSession(
            "user_3",
            store,
            client=client,
            should_trigger_compaction=lambda context: bool(context["compaction_candidate_items"]),
        )
        fake_openai.enqueue(
            tool_call_response("lookup", {"key": "Oslo"}, call_id="call_o", response_id="r_1"),
            text_response("Sunny in Oslo.", response_id="r_2"),
        )
        result = await Runner.run(
            agent, "Weather in Oslo?", session=session, run_config=RunConfig(openai_client=client)
        )
        # After turn 1 the stored output of call_o is not in r_1's chain: no compaction then.
        # After turn 2, r_2's chain holds the call, its output and the answer.
        assert compaction_api.bodies == [{"model": DEFAULT_MODEL, "previous_response_id": "r_2"}]
        assert result.usage.requests == 3
        archived = await store.get_archived_items()
        assert [item.get("type", "message") for item in archived] == [
            "message",
            "function_call",
            "function_call_output",
            "message",
        ]


def test_run_sync_works_until_the_first_compaction_then_every_run_fails(
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    compaction_api: FakeCompactionAPI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compaction session is bound at its first compaction, not at its first run: repeated
    `run_sync` calls work before it, and every run after it fails (running_agents.md)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    checks: list[int] = []

    def third_answer(context: object) -> bool:
        checks.append(1)
        return len(checks) == 3

    agent = Agent(name="Assistant", model="gpt-4.1")
    store = SQLiteSession("user_1", tmp_path / "chats.db")
    session = OpenAIResponsesCompactionSession(
        "user_1", store, should_trigger_compaction=third_answer
    )
    fake_openai.enqueue(*(text_response(f"answer {n}") for n in range(1, 4)))
    for n in range(1, 4):
        assert Runner.run_sync(agent, f"question {n}", session=session).final_output == (
            f"answer {n}"
        )
    assert len(compaction_api.bodies) == 1  # the third run compacted
    for n in range(4, 6):
        with pytest.raises(UserError, match="another event loop"):
            Runner.run_sync(agent, f"question {n}", session=session)
    assert len(compaction_api.bodies) == 1
    asyncio.run(session.aclose())
    store.close()
    del session
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.mark.parametrize("client_from", ["environment", "argument"])
def test_run_sync_on_a_new_loop_fails_before_storing_once_the_client_was_used(
    client_from: str,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    compaction_api: FakeCompactionAPI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each `run_sync` starts a new loop; the client the first compaction used belongs to the
    first one. The second run fails as it starts: nothing stored, nothing sent to the model."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    client = (
        AsyncOpenAI(api_key="sk-test", base_url=fake_openai.base_url)
        if client_from == "argument"
        else None
    )
    agent = Agent(name="Assistant", model="gpt-4.1")
    store = SQLiteSession("user_1", tmp_path / "chats.db")
    session = OpenAIResponsesCompactionSession(
        "user_1", store, client=client, should_trigger_compaction=lambda context: True
    )
    fake_openai.enqueue(text_response("answer 1"), text_response("answer 2"))
    Runner.run_sync(agent, "question 1", session=session)
    assert len(compaction_api.bodies) == 1  # the first run compacted
    stored = asyncio.run(store.get_items())
    model_calls = len(fake_openai.requests_to("/v1/responses"))
    with pytest.raises(UserError, match="another event loop"):
        Runner.run_sync(agent, "question 2", session=session)
    assert asyncio.run(store.get_items()) == stored
    assert len(fake_openai.requests_to("/v1/responses")) == model_calls
    assert len(compaction_api.bodies) == 1
    asyncio.run(session.aclose())
    store.close()
    # The client's connections belong to the first loop, which `run_sync` closed: nothing can
    # close them any more (why the run refuses). Let them go here rather than in a later test.
    del session, client
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
