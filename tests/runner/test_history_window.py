"""History that fits: what the model receives under item, turn and token limits, and trimming.

Through the real `openai` client against the fake server: the request body is what a model sees.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from turnstore import Agent, RunConfig, Runner, SQLiteSession, function_tool
from turnstore.extensions import ToolOutputTrimmer
from turnstore.testing import FakeOpenAIServer, text_response

BIG = "x" * 2_000


def _history() -> list[Any]:
    return [
        {"role": "user", "content": "search please"},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": BIG},
        {"type": "function_call_output", "call_id": "c2", "output": BIG},
        {"role": "assistant", "content": "found it"},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "welcome"},
    ]


def _shape(items: list[Any]) -> list[str]:
    return [
        f"{item['type']}:{item['call_id']}" if "call_id" in item else item.get("role", "?")
        for item in items
    ]


async def _sent(
    server: FakeOpenAIServer, tmp_path: Path, settings: dict[str, Any], **config: Any
) -> list[Any]:
    server.enqueue(text_response("ok"))
    db = tmp_path / "h.db"
    async with server.async_client() as client, SQLiteSession(uuid.uuid4().hex, db) as session:
        await session.add_items(_history())
        await Runner.run(
            Agent(name="A"),
            "next",
            session=session,
            run_config=RunConfig(openai_client=client, session_settings=settings, **config),
        )
        assert len(await session.get_items()) == 10  # nothing stored is lost to a window
    body = server.requests_to("/v1/responses")[-1].body
    return list(body["input"])


async def test_an_item_limit_that_cuts_a_call_sends_no_orphaned_output(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    sent = await _sent(fake_openai, tmp_path, {"limit": 6})
    # The latest 6 items start with call c2 and output c1, whose call was cut off.
    assert _shape(sent) == [
        "function_call:c2",
        "function_call_output:c2",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


async def test_a_turn_limit_sends_whole_turns_from_their_user_message(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    sent = await _sent(fake_openai, tmp_path, {"limit_turns": 1})
    assert _shape(sent) == ["user", "assistant", "user"]
    assert sent[0]["content"] == "thanks"
    sent = await _sent(fake_openai, tmp_path, {"limit_turns": 2})
    assert sent[0]["content"] == "search please"
    assert len(sent) == 9


async def test_a_token_budget_drops_the_old_large_outputs_and_starts_cleanly(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    # 560 estimated tokens hold the last three items (29) and output c2 (515), whose call
    # does not fit: the output is dropped, and the model's input starts with the answer.
    sent = await _sent(fake_openai, tmp_path, {"limit_tokens": 560})
    assert _shape(sent) == ["assistant", "user", "assistant", "user"]


async def test_the_trimmer_shortens_old_outputs_inside_the_window(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    trimmer = ToolOutputTrimmer(recent_turns=2, max_output_chars=100, preview_chars=10)
    sent = await _sent(fake_openai, tmp_path, {"limit_turns": 3}, call_model_input_filter=trimmer)
    # The window holds both turns; the outputs of the older one are trimmed, the calls kept.
    assert _shape(sent)[:5] == [
        "user",
        "function_call:c1",
        "function_call:c2",
        "function_call_output:c1",
        "function_call_output:c2",
    ]
    outputs = [item["output"] for item in sent if item.get("type") == "function_call_output"]
    assert all(output.startswith("[Trimmed: search output") for output in outputs)
    assert all(len(output) < 200 for output in outputs)


def _unpaired(items: list[Any]) -> list[str]:
    """The calls without an output and the outputs without a call in a model's input: the
    Responses API rejects a request holding any."""
    calls = {item["call_id"] for item in items if item.get("type") == "function_call"}
    outputs = {item["call_id"] for item in items if item.get("type") == "function_call_output"}
    return sorted(f"call {c}" for c in calls - outputs) + sorted(
        f"output {c}" for c in outputs - calls
    )


async def _resume_after_interrupted_turn(
    server: FakeOpenAIServer, tmp_path: Path, stored: list[Any], settings: dict[str, Any]
) -> tuple[list[Any], list[str]]:
    """Run on a history that ends with tool calls without output, under `settings`, then once
    more without limits; return the history and the tools run. Every request must be valid."""
    ran: list[str] = []

    @function_tool
    def search(query: str) -> str:
        """Search."""
        ran.append(query)
        return f"results for {query}"

    server.enqueue(text_response("resumed"), text_response("later"))
    agent = Agent(name="A", tools=[search])
    async with (
        server.async_client() as client,
        SQLiteSession(uuid.uuid4().hex, tmp_path / "h.db") as session,
    ):
        await session.add_items(stored)
        limited = RunConfig(openai_client=client, session_settings=settings)
        await Runner.run(agent, "and now?", session=session, run_config=limited)
        await Runner.run(
            agent, "thanks", session=session, run_config=RunConfig(openai_client=client)
        )
        history = await session.get_items()
    for request in server.requests_to("/v1/responses"):
        assert _unpaired(request.body["input"]) == []
    return history, ran


async def test_an_item_limit_inside_an_interrupted_parallel_turn_completes_every_call(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    interrupted = [
        {"role": "user", "content": "search both"},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": '{"query": "a"}'},
        {"type": "function_call", "call_id": "c2", "name": "search", "arguments": '{"query": "b"}'},
    ]
    history, ran = await _resume_after_interrupted_turn(
        fake_openai, tmp_path, interrupted, {"limit": 1}
    )
    # The window held call c2 only; call c1, outside it, got its output too.
    assert sorted(ran) == ["a", "b"]
    assert _shape(history) == [
        "user",
        "function_call:c1",
        "function_call:c2",
        "function_call_output:c1",
        "function_call_output:c2",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert _unpaired(history) == []


async def test_a_call_larger_than_the_token_budget_still_gets_its_output(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    interrupted = [
        {"role": "user", "content": "search this long text"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "search",
            "arguments": json.dumps({"query": BIG}),
        },
    ]
    history, ran = await _resume_after_interrupted_turn(
        fake_openai, tmp_path, interrupted, {"limit_tokens": 100}
    )
    assert ran == [BIG]
    assert _shape(history) == [
        "user",
        "function_call:c1",
        "function_call_output:c1",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    # Under the budget the model got neither the call nor its output, only the new input.
    first = fake_openai.requests_to("/v1/responses")[0].body["input"]
    assert _shape(first) == ["user"]
