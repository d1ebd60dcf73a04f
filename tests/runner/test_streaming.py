"""Streamed runs: event order, early exit, errors, and one stream per result."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from support.tools import lookup
from turnstore import (
    Agent,
    ModelBehaviorError,
    RawResponseEvent,
    RunCompleteEvent,
    RunItemEvent,
    Runner,
    RunResultStreaming,
    SQLiteSession,
    TextDeltaEvent,
    UserError,
    function_tool,
)
from turnstore.testing import ScriptedModel, tool_call_response


def stalled_run(
    session_id: str, *, then: str | None = None
) -> tuple[RunResultStreaming, SQLiteSession]:
    """A streamed run on a new SQLite session whose one tool call never returns; `then` is the
    model's answer after it (never reached while the tool waits)."""
    never = asyncio.Event()

    @function_tool
    async def slow(key: str) -> str:
        """Slow."""
        await never.wait()
        return "late"

    model = ScriptedModel([tool_call_response("slow", {"key": "a"}), *([then] if then else [])])
    session = SQLiteSession(session_id)
    result = Runner.run_streamed(Agent(name="A", model=model, tools=[slow]), "go", session=session)
    return result, session


async def test_events_in_order_and_final_result() -> None:
    model = ScriptedModel([tool_call_response("lookup", {"key": "a"}), "final answer text"])
    session = SQLiteSession("st")
    result = Runner.run_streamed(
        Agent(name="A", model=model, tools=[lookup]), "go", session=session
    )
    assert result.final_output is None
    events = [event async for event in result.stream_events()]
    items = [e.item for e in events if isinstance(e, RunItemEvent)]
    assert [i.get("type") for i in items] == ["function_call", "function_call_output", "message"]
    text = "".join(e.delta for e in events if isinstance(e, TextDeltaEvent))
    assert text == "final answer text"
    assert any(isinstance(e, RawResponseEvent) for e in events)
    last = events[-1]
    assert isinstance(last, RunCompleteEvent)
    assert last.result.final_output == "final answer text"
    assert result.final_output == "final answer text"
    assert result.new_items == items
    assert len(await session.get_items()) == 4
    assert all(call.input for call in model.calls)
    with pytest.raises(UserError, match="once"):
        async for _ in result.stream_events():
            pass
    await session.aclose()


async def test_leaving_the_stream_early_cancels_and_keeps_the_items_already_done() -> None:
    result, session = stalled_run("st-early", then="never")
    async with contextlib.aclosing(result.stream_events()) as events:
        async for event in events:
            if isinstance(event, RunItemEvent) and event.item.get("type") == "function_call":
                break
    assert result._task is not None
    assert result._task.cancelled()
    # The function call was saved when the stream reported it done; its tool never returned.
    assert [i.get("type", "user") for i in await session.get_items()] == ["user", "function_call"]
    assert not result.is_complete
    await session.aclose()


async def test_errors_surface_after_earlier_events() -> None:
    model = ScriptedModel([tool_call_response("missing", {})])
    result = Runner.run_streamed(Agent(name="A", model=model), "go")
    seen: list[str] = []

    async def consume() -> None:
        async for event in result.stream_events():
            seen.append(event.type)

    with pytest.raises(ModelBehaviorError, match="'missing'"):
        await consume()
    assert "raw_response_event" in seen
    assert "run_complete" not in seen
    assert not result.is_complete


async def test_fields_are_complete_once_the_run_finishes() -> None:
    # RunResultStreaming's Attributes: empty before the stream is read, the run's whole result
    # (the same as RunCompleteEvent's) once it finishes.
    model = ScriptedModel([tool_call_response("lookup", {"key": "a"}), "final answer text"])
    result = Runner.run_streamed(Agent(name="A", model=model, tools=[lookup]), "go")
    before = (result.new_items, result.raw_responses, result.usage.requests, result.final_output)
    assert before == ([], [], 0, None)
    assert not result.is_complete
    events = [event async for event in result.stream_events()]
    done = events[-1]
    assert isinstance(done, RunCompleteEvent)
    assert [item.get("type") for item in result.new_items] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert (len(result.raw_responses), result.usage.requests) == (2, 2)
    assert result.final_output == "final answer text"
    assert result.is_complete
    assert result.new_items == done.result.new_items
    assert result.raw_responses == done.result.raw_responses
    assert result.usage == done.result.usage
    assert result.input == done.result.input == "go"


async def test_bad_input_fails_at_the_call() -> None:
    with pytest.raises(TypeError):
        Runner.run_streamed(Agent(name="A", model=ScriptedModel()), 5)  # type: ignore[arg-type]


async def test_cancel_stops_the_stream() -> None:
    result, session = stalled_run("st-cancel")

    async def consume() -> None:
        async for event in result.stream_events():
            if isinstance(event, RunItemEvent):
                result.cancel()

    with pytest.raises(asyncio.CancelledError):
        await consume()
    assert len(await session.get_items()) == 2
    await session.aclose()


async def test_events_held_in_a_variable_keep_the_run_going_until_closed() -> None:
    """running_agents.md: with `events = result.stream_events()`, `break` leaves the run going;
    closing `events` cancels it."""
    result, session = stalled_run("st-held", then="never")
    events = result.stream_events()
    async for event in events:
        if isinstance(event, RunItemEvent):
            break
    task = result._task
    assert task is not None
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()
    assert not task.cancelling()
    await events.aclose()
    await asyncio.wait_for(asyncio.wait((task,)), 10)
    assert task.cancelled()
    await session.aclose()


async def test_breaking_out_of_the_loop_cancels_the_run_at_once() -> None:
    result, session = stalled_run("st-break", then="never")
    async for event in result.stream_events():
        if isinstance(event, RunItemEvent):
            break
    task = result._task
    assert task is not None
    # Cancelled by the time the next statement runs, not later when the event loop gets round to
    # closing the abandoned generator.
    assert task.cancelling()
    await asyncio.wait_for(asyncio.wait((task,)), 10)
    assert task.cancelled()
    assert len(await session.get_items()) == 2
    await session.aclose()
