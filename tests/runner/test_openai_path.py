"""The real `openai` client path, end to end against the fake Responses server."""

from __future__ import annotations

import pytest
from openai import AsyncOpenAI

from support.sessions import MemorySession
from turnstore import (
    Agent,
    ModelCallError,
    ModelSettings,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    TextDeltaEvent,
    UserError,
    function_tool,
)
from turnstore.testing import (
    FakeOpenAIServer,
    FakeReply,
    response_body,
    text_response,
    tool_call_response,
)


@function_tool
def get_weather(city: str) -> str:
    """Return the weather in a city.

    Args:
        city: The city name.
    """
    return f"Sunny in {city}"


async def test_session_memory_over_http(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(
        text_response("San Francisco"), text_response("California", response_id="resp_ca")
    )
    client = fake_openai.async_client()
    agent = Agent(name="Assistant", instructions="Be brief.", model="gpt-4.1")
    session = SQLiteSession("http")
    config = RunConfig(openai_client=client)
    try:
        first = await Runner.run(agent, "Golden Gate city?", session=session, run_config=config)
        second = await Runner.run(agent, "Which state?", session=session, run_config=config)
    finally:
        await client.close()
    assert (first.final_output, second.final_output) == ("San Francisco", "California")
    bodies = [r.body for r in fake_openai.requests_to("/v1/responses")]
    assert bodies[0]["instructions"] == "Be brief."
    assert bodies[0]["model"] == "gpt-4.1"
    assert bodies[1]["input"][0] == {"role": "user", "content": "Golden Gate city?"}
    assert bodies[1]["input"][1]["content"][0]["text"] == "San Francisco"
    assert bodies[1]["input"][2] == {"role": "user", "content": "Which state?"}
    assert second.last_response_id == "resp_ca"
    assert second.usage.requests == 1
    assert second.usage.total_tokens == 5
    await session.aclose()


async def test_tool_call_round_trip_and_usage(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(
        tool_call_response("get_weather", {"city": "Oslo"}, call_id="call_a", input_tokens=10),
        text_response("It is sunny.", response_id="resp_final", input_tokens=20, output_tokens=7),
    )
    client = fake_openai.async_client()
    agent = Agent(
        name="Weather", model=OpenAIResponsesModel("gpt-4.1", client=client), tools=[get_weather]
    )
    try:
        result = await Runner.run(agent, "Weather in Oslo?")
    finally:
        await client.close()
    assert result.final_output == "It is sunny."
    assert result.last_response_id == "resp_final"
    assert result.usage.requests == 2
    assert result.usage.input_tokens == 30
    assert result.usage.output_tokens == 9
    first, second = (r.body for r in fake_openai.requests_to("/v1/responses"))
    tool = first["tools"][0]
    assert tool["name"] == "get_weather"
    assert tool["strict"] is True
    assert tool["parameters"]["properties"]["city"]["description"] == "The city name."
    assert second["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": "Sunny in Oslo",
    }
    assert second["input"][-2]["type"] == "function_call"


async def test_o3_reasoning_effort_reaches_the_request(fake_openai: FakeOpenAIServer) -> None:
    body = response_body(
        [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "id": "msg_r",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "42", "annotations": []}],
            },
        ],
        model="o3",
    )
    body["usage"]["output_tokens_details"]["reasoning_tokens"] = 64
    fake_openai.enqueue(body)
    client = fake_openai.async_client()
    agent = Agent(
        name="Thinker",
        model="o3",
        model_settings=ModelSettings(reasoning={"effort": "high"}, max_output_tokens=500),
    )
    session = SQLiteSession("o3")
    try:
        result = await Runner.run(
            agent, "Answer?", session=session, run_config=RunConfig(openai_client=client)
        )
    finally:
        await client.close()
    sent = fake_openai.requests_to("/v1/responses")[0].body
    assert sent["model"] == "o3"
    assert sent["reasoning"] == {"effort": "high"}
    assert sent["max_output_tokens"] == 500
    assert "temperature" not in sent
    assert result.final_output == "42"
    assert result.usage.reasoning_tokens == 64
    stored = await session.get_items()
    assert stored[1] == {"type": "reasoning", "id": "rs_1", "summary": []}
    await session.aclose()


async def test_streaming_over_sse(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(
        tool_call_response("get_weather", {"city": "Rome"}),
        text_response("Sunny in Rome today."),
    )
    client = fake_openai.async_client()
    agent = Agent(name="Weather", tools=[get_weather])
    session = SQLiteSession("stream")
    result = Runner.run_streamed(
        agent, "Rome?", session=session, run_config=RunConfig(openai_client=client)
    )
    deltas: list[str] = []
    types: list[str] = []
    try:
        async for event in result.stream_events():
            types.append(event.type)
            if isinstance(event, TextDeltaEvent):
                deltas.append(event.delta)
    finally:
        await client.close()
    assert "".join(deltas) == "Sunny in Rome today."
    assert len(deltas) > 1
    assert types[-1] == "run_complete"
    assert types.count("run_item") == 3  # function call, its output, the message
    assert result.final_output == "Sunny in Rome today."
    assert result.is_complete
    assert all(r.body["stream"] is True for r in fake_openai.requests_to("/v1/responses"))
    assert [i.get("type") for i in await session.get_items()] == [
        None,
        "function_call",
        "function_call_output",
        "message",
    ]
    await session.aclose()


async def test_client_from_environment(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "gpt-test-default")
    fake_openai.enqueue(text_response("from env"))
    result = await Runner.run(Agent(name="A"), "hi")
    assert result.final_output == "from env"
    request = fake_openai.requests_to("/v1/responses")[0]
    assert request.headers["authorization"] == "Bearer sk-env"
    assert request.body["model"] == "gpt-test-default"


async def test_api_error_is_mapped_and_completed_turns_stay(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(
        tool_call_response("get_weather", {"city": "Oslo"}),
        FakeReply(status=500),
    )
    client = fake_openai.async_client()
    session = SQLiteSession("err")
    agent = Agent(name="W", tools=[get_weather])
    try:
        with pytest.raises(ModelCallError) as info:
            await Runner.run(
                agent, "Oslo?", session=session, run_config=RunConfig(openai_client=client)
            )
    finally:
        await client.close()
    assert info.value.__cause__ is not None
    assert [i.get("type") for i in await session.get_items()] == [
        None,
        "function_call",
        "function_call_output",
    ]
    await session.aclose()


async def test_a_model_object_brings_its_own_client_over_run_configs(
    fake_openai: FakeOpenAIServer,
) -> None:
    # `RunConfig.openai_client` serves models given by name; this one would reach nothing.
    unused = AsyncOpenAI(api_key="sk-unused", base_url="http://127.0.0.1:9/v1", max_retries=0)
    fake_openai.enqueue(text_response("own client"))
    client = fake_openai.async_client()
    agent = Agent(name="A", model=OpenAIResponsesModel("gpt-4.1", client=client))
    try:
        result = await Runner.run(agent, "hi", run_config=RunConfig(openai_client=unused))
    finally:
        await client.close()
        await unused.close()
    assert result.final_output == "own client"
    assert len(fake_openai.requests_to("/v1/responses")) == 1


def test_run_sync_against_the_server(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    fake_openai.enqueue(text_response("sync ok"), text_response("again"))
    # A model object without a client makes one per call from the environment.
    agent = Agent(name="A", model=OpenAIResponsesModel("gpt-4.1"))
    session = SQLiteSession("sync")
    assert Runner.run_sync(agent, "hi", session=session).final_output == "sync ok"
    assert Runner.run_sync(agent, "again?", session=session).final_output == "again"
    second = fake_openai.requests_to("/v1/responses")[1].body
    assert [item.get("role") for item in second["input"]] == ["user", "assistant", "user"]
    session.close()  # no event loop runs here: the plain close waits for the thread


async def test_run_sync_inside_a_loop_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="event loop is running"):
        Runner.run_sync(Agent(name="A"), "hi")


async def test_previous_response_id_chains_without_resending_history(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.enqueue(
        text_response("Hello.", response_id="resp_0"),
        tool_call_response("get_weather", {"city": "Oslo"}, call_id="c1", response_id="resp_a"),
        text_response("Sunny.", response_id="resp_b"),
    )
    client = fake_openai.async_client()
    agent = Agent(
        name="W", tools=[get_weather], model_settings=ModelSettings(tool_choice="required")
    )
    try:
        await client.responses.create(model="o3", input="Hi")  # the server keeps resp_0
        result = await Runner.run(
            agent,
            "Oslo?",
            previous_response_id="resp_0",
            run_config=RunConfig(openai_client=client),
        )
    finally:
        await client.close()
    _, first, second = (r.body for r in fake_openai.requests_to("/v1/responses"))
    assert first["previous_response_id"] == "resp_0"
    assert first["input"] == [{"role": "user", "content": "Oslo?"}]
    assert first["tool_choice"] == "required"
    assert second["previous_response_id"] == "resp_a"
    assert second["input"] == [
        {"type": "function_call_output", "call_id": "c1", "output": "Sunny in Oslo"}
    ]
    assert "tool_choice" not in second  # a forced choice is not forced again
    assert result.last_response_id == "resp_b"
    assert len(result.to_input_list()) == 4
    # The server kept the chain: the last call continued it from the first message on.
    chain = fake_openai.response_chain("resp_b")
    assert [item.get("role") or item["type"] for item in chain] == [
        "user",  # Hi
        "assistant",  # Hello.
        "user",  # Oslo?
        "function_call",
        "function_call_output",
        "assistant",  # Sunny.
    ]


async def test_conversation_id_is_sent_and_only_new_items_travel(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.enqueue(
        tool_call_response("get_weather", {"city": "Oslo"}, call_id="c1"),
        text_response("Sunny."),
    )
    client = fake_openai.async_client()
    agent = Agent(name="W", tools=[get_weather])
    try:
        await Runner.run(
            agent, "Oslo?", conversation_id="conv_9", run_config=RunConfig(openai_client=client)
        )
    finally:
        await client.close()
    first, second = (r.body for r in fake_openai.requests_to("/v1/responses"))
    assert first["conversation"] == second["conversation"] == "conv_9"
    assert "previous_response_id" not in second
    assert [item["type"] for item in second["input"]] == ["function_call_output"]


async def test_store_false_reaches_request_and_compaction_args(
    fake_openai: FakeOpenAIServer,
) -> None:

    class Compacting(MemorySession):
        def __init__(self) -> None:
            super().__init__()
            self.args: list[dict[str, object]] = []

        async def run_compaction(self, args: object = None) -> None:
            self.args.append(dict(args or {}))  # type: ignore[call-overload]

    fake_openai.enqueue(text_response("ok", response_id="resp_s"))
    client = fake_openai.async_client()
    session = Compacting()
    agent = Agent(
        name="A",
        model_settings=ModelSettings(store=False, include=["reasoning.encrypted_content"]),
    )
    try:
        await Runner.run(agent, "hi", session=session, run_config=RunConfig(openai_client=client))
    finally:
        await client.close()
    body = fake_openai.requests_to("/v1/responses")[0].body
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert session.args == [{"response_id": "resp_s", "store": False}]


async def test_missing_api_key_fails_before_the_session_is_touched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session = MemorySession()
    with pytest.raises(ModelCallError, match="OPENAI_API_KEY"):
        await Runner.run(Agent(name="A", model="gpt-4.1"), "hi", session=session)
    assert session.calls == []
