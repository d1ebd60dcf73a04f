"""Streamed runs save each item as it is done: a cancel loses nothing produced, a resume adds
nothing twice. Through the real `openai` client against the fake server."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.tools import lookup, recording_lookup
from turnstore import (
    Agent,
    RunConfig,
    RunItemEvent,
    Runner,
    SQLiteSession,
    UserError,
    function_tool,
)
from turnstore.memory import await_session_mutation
from turnstore.testing import (
    FakeOpenAIServer,
    ScriptedModel,
    function_call_item,
    response_body,
    text_response,
    tool_call_response,
)


def _shape(items: list[Any]) -> list[str]:
    return [str(item.get("type") or item.get("role")) for item in items]


async def test_a_cancelled_stream_keeps_the_done_call_and_a_resume_completes_it_once(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    calls: list[str] = []

    lookup = recording_lookup(calls)

    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id="call_1"), text_response("done")
    )
    async with (
        fake_openai.async_client() as client,
        SQLiteSession("s", tmp_path / "chats.db") as session,
    ):
        agent = Agent(name="A", tools=[lookup])
        config = RunConfig(openai_client=client)
        result = Runner.run_streamed(agent, "look up a", session=session, run_config=config)

        async def consume() -> None:
            async with contextlib.aclosing(result.stream_events()) as events:
                async for event in events:
                    if isinstance(event, RunItemEvent):
                        assert event.item["type"] == "function_call"
                        result.cancel()  # after the first completed item

        consumer = asyncio.ensure_future(consume())
        await asyncio.wait((consumer,))
        assert consumer.cancelled() or isinstance(consumer.exception(), asyncio.CancelledError)
        # The call was saved as soon as the stream reported it done.
        assert _shape(await session.get_items()) == ["user", "function_call"]

        resumed = await Runner.run(agent, [], session=session, run_config=config)
        assert resumed.final_output == "done"
        history = await session.get_items()
        assert _shape(history) == ["user", "function_call", "function_call_output", "message"]
        assert history[2] == {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "value of a",
        }
        # Cancelled as the call was announced, the first run never ran the tool: the resume did.
        assert calls == ["a"]
        # The model got the completed turn: the call followed by its output.
        resumed_input = fake_openai.requests_to("/v1/responses")[-1].body["input"]
        assert _shape(resumed_input) == ["user", "function_call", "function_call_output"]


async def test_a_streamed_run_that_completes_saves_each_item_once(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id="call_1"), text_response("done")
    )
    async with (
        fake_openai.async_client() as client,
        SQLiteSession("s", tmp_path / "chats.db") as session,
    ):
        result = Runner.run_streamed(
            Agent(name="A", tools=[lookup]),
            "look up a",
            session=session,
            run_config=RunConfig(openai_client=client),
        )
        seen_at_event: list[int] = []
        async for event in result.stream_events():
            if isinstance(event, RunItemEvent):
                # Each item is stored by the time it is announced.
                seen_at_event.append(len(await session.get_items()))
        history = await session.get_items()
    assert _shape(history) == ["user", "function_call", "function_call_output", "message"]
    # Each item was stored by the time it was announced (a later one may be stored too: the
    # tool runs while the consumer reads).
    assert len(seen_at_event) == 3
    assert all(seen >= n for seen, n in zip(seen_at_event, [2, 3, 4], strict=True))
    assert result.new_items == history[1:]


async def test_a_reasoning_item_is_saved_with_the_item_it_precedes(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.enqueue(
        response_body(
            [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                function_call_item("lookup", {"key": "a"}, call_id="call_1"),
            ]
        ),
        text_response("done"),
    )
    writes: list[list[str]] = []

    class RecordingSession(SQLiteSession):
        """The real SQLite session, recording the shape of each write it is given."""

        async def add_items(self, items: list[Any]) -> None:
            writes.append(_shape(items))
            await super().add_items(items)

    async with (
        fake_openai.async_client() as client,
        RecordingSession("s", tmp_path / "chats.db") as session,
    ):
        result = Runner.run_streamed(
            Agent(name="A", tools=[lookup]),
            "go",
            session=session,
            run_config=RunConfig(openai_client=client),
        )
        async for _event in result.stream_events():
            pass
        history = await session.get_items()
    # The reasoning item waited for its function call: both were saved in one write, never
    # the reasoning item alone.
    assert ["reasoning", "function_call"] in writes
    assert ["reasoning"] not in writes
    assert _shape(history) == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ]


async def test_a_resume_runs_only_the_tools_whose_output_was_not_saved(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    ran: list[str] = []

    @function_tool
    async def fast(key: str) -> str:
        """Answer at once."""
        ran.append(f"fast {key}")
        return "quick"

    @function_tool
    async def slow(key: str) -> str:
        """Answer late the first time."""
        ran.append(f"slow {key}")
        if ran.count(f"slow {key}") == 1:
            await gate.wait()  # never set: the first run is cancelled while this waits
        return "late"

    fake_openai.enqueue(
        response_body(
            [
                function_call_item("slow", {"key": "s"}, call_id="call_slow"),
                function_call_item("fast", {"key": "f"}, call_id="call_fast"),
            ]
        ),
        text_response("done"),
    )
    async with (
        fake_openai.async_client() as client,
        SQLiteSession("s", tmp_path / "chats.db") as session,
    ):
        agent = Agent(name="A", tools=[slow, fast])
        config = RunConfig(openai_client=client)
        result = Runner.run_streamed(agent, "go", session=session, run_config=config)

        async def consume() -> None:
            async with contextlib.aclosing(result.stream_events()) as events:
                async for event in events:
                    item = event.item if isinstance(event, RunItemEvent) else {}
                    if item.get("type") == "function_call_output":
                        assert item["call_id"] == "call_fast"
                        result.cancel()  # the slow tool is still running

        consumer = asyncio.ensure_future(consume())
        await asyncio.wait((consumer,))
        assert consumer.cancelled() or isinstance(consumer.exception(), asyncio.CancelledError)
        assert [f"{i['type']}:{i['call_id']}" for i in (await session.get_items())[1:]] == [
            "function_call:call_slow",
            "function_call:call_fast",
            "function_call_output:call_fast",
        ]

        await Runner.run(agent, [], session=session, run_config=config)
        history = await session.get_items()
    assert ran == ["slow s", "fast f", "slow s"]  # the fast tool did not run again
    assert [item.get("call_id", item.get("type") or item.get("role")) for item in history] == [
        "user",
        "call_slow",
        "call_fast",
        "call_fast",
        "call_slow",
        "message",
    ]


class HeldOutputSession:
    """A real session on any backend whose first tool-output write is held back.

    The write waits until the run making it is cancelled (through `await_session_mutation`'s
    `on_cancel`, as a write queued behind a busy database does) or a read has ended, and then
    while a read is in progress. A run that read the history while an abandoned run's write was
    still pending therefore sees the history without that output, as a slower database would
    let it; a run that waits for the write reads it.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.session_settings = None
        self.write_held = asyncio.Event()
        self._release = asyncio.Event()
        self._reads = 0
        self._no_read = asyncio.Event()
        self._no_read.set()

    async def get_items(self, limit: int | None = None) -> list[Any]:
        self._reads += 1
        self._no_read.clear()
        try:
            return list(await self.inner.get_items(limit))
        finally:
            self._reads -= 1
            if not self._reads:
                self._no_read.set()
            self._release.set()

    async def add_items(self, items: list[Any]) -> None:
        outputs = [item for item in items if item.get("type") == "function_call_output"]
        if outputs and not self.write_held.is_set():
            self.write_held.set()
            await await_session_mutation(self._release.wait(), on_cancel=self._release.set)
        await self._no_read.wait()
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"], indirect=True)
@pytest.mark.parametrize("leave", ["cancel_then_break", "break"])
async def test_a_run_right_after_leaving_a_stream_waits_for_its_pending_write(
    fake_openai: FakeOpenAIServer, backend: Backend, leave: str
) -> None:
    finished: list[str] = []

    lookup = recording_lookup(finished)

    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id="call_1"), text_response("done")
    )
    session = HeldOutputSession(backend.session())
    agent = Agent(name="A", tools=[lookup])
    async with fake_openai.async_client() as client:
        config = RunConfig(openai_client=client)
        result = Runner.run_streamed(agent, "look up a", session=session, run_config=config)
        async for event in result.stream_events():
            if isinstance(event, RunItemEvent) and event.item["type"] == "function_call":
                await session.write_held.wait()  # the tool returned; its output is being saved
                if leave == "cancel_then_break":
                    result.cancel()
                break
        resumed = await Runner.run(agent, [], session=session, run_config=config)
    assert resumed.final_output == "done"
    history = await backend.session(session.session_id).get_items()
    assert _shape(history) == ["user", "function_call", "function_call_output", "message"]
    assert finished == ["a"]  # the resume found the output saved: the tool did not run again


class ReadSignalSession(SQLiteSession):
    """A `SQLiteSession` that tells another thread when its first read has returned."""

    def __init__(self, *args: Any, read: threading.Event, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._signal = read

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = await super().get_items(limit)
        self._signal.set()
        return items


async def test_a_resume_from_another_thread_waits_for_the_abandoned_runs_write(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    finished: list[str] = []

    lookup = recording_lookup(finished)

    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id="call_1"), text_response("done")
    )
    path = str(tmp_path / "threads.db")
    other_read = threading.Event()

    class HeldUntilTheOtherThreadReads(HeldOutputSession):
        # The abandoned run's output lands only once the other thread has read the history, or
        # after a second if that thread waits for it (as it must): without the wait, the other
        # thread always reads the history without the output.
        async def add_items(self, items: list[Any]) -> None:
            if any(item.get("type") == "function_call_output" for item in items):
                self.write_held.set()
                await asyncio.to_thread(other_read.wait, 1.0)
            await self.inner.add_items(items)

    agent = Agent(name="A", tools=[lookup])
    async with SQLiteSession("s", path) as inner, fake_openai.async_client() as client:
        session = HeldUntilTheOtherThreadReads(inner)
        result = Runner.run_streamed(
            agent, "look up a", session=session, run_config=RunConfig(openai_client=client)
        )
        async for event in result.stream_events():
            if isinstance(event, RunItemEvent) and event.item["type"] == "function_call":
                await session.write_held.wait()  # the tool returned; its output is being saved
                result.cancel()
                break

        def resume_in_another_thread() -> str:
            async def resume() -> str:
                async with (
                    ReadSignalSession("s", path, read=other_read) as own,
                    fake_openai.async_client() as own_client,
                ):
                    config = RunConfig(openai_client=own_client)
                    resumed = await Runner.run(agent, [], session=own, run_config=config)
                    return str(resumed.final_output)

            return asyncio.run(resume())

        assert await asyncio.to_thread(resume_in_another_thread) == "done"
        history = await inner.get_items()
    assert _shape(history) == ["user", "function_call", "function_call_output", "message"]
    assert finished == ["a"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"], indirect=True)
async def test_breaking_out_as_a_tool_returns_stops_the_run_before_it_saves_the_output(
    fake_openai: FakeOpenAIServer, backend: Backend
) -> None:
    started, go = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    @function_tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        started.set()
        await go.wait()
        finished.append(key)
        return f"value of {key}"

    fake_openai.enqueue(
        tool_call_response("lookup", {"key": "a"}, call_id="call_1"), text_response("done")
    )
    session = HeldOutputSession(backend.session())
    agent = Agent(name="A", tools=[lookup])
    async with fake_openai.async_client() as client:
        config = RunConfig(openai_client=client)
        result = Runner.run_streamed(agent, "look up a", session=session, run_config=config)
        async for event in result.stream_events():
            if isinstance(event, RunItemEvent) and event.item["type"] == "function_call":
                await started.wait()
                go.set()  # the tool can return now: leaving the loop must stop it first
                break
        await Runner.run(agent, [], session=session, run_config=config)
    history = await backend.session(session.session_id).get_items()
    assert _shape(history) == ["user", "function_call", "function_call_output", "message"]
    assert finished == ["a"]  # once, by the resume


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"], indirect=True)
async def test_aclose_returns_once_the_abandoned_run_has_saved_what_it_started(
    fake_openai: FakeOpenAIServer, backend: Backend
) -> None:
    finished: list[str] = []

    lookup = recording_lookup(finished)

    fake_openai.enqueue(tool_call_response("lookup", {"key": "a"}, call_id="call_1"))
    session = HeldOutputSession(backend.session())
    async with fake_openai.async_client() as client:
        result = Runner.run_streamed(
            Agent(name="A", tools=[lookup]),
            "look up a",
            session=session,
            run_config=RunConfig(openai_client=client),
        )
        events = result.stream_events()  # kept: leaving the loop does not drop it
        async for event in events:
            if isinstance(event, RunItemEvent) and event.item["type"] == "function_call":
                await session.write_held.wait()
                break
        await result.aclose()
        # The output the run had started to save is stored; nothing more will be.
        assert _shape(await backend.session(session.session_id).get_items()) == [
            "user",
            "function_call",
            "function_call_output",
        ]
        await result.aclose()  # again: nothing to do
        with pytest.raises(asyncio.CancelledError):  # the run it streamed was cancelled
            async for _event in events:
                pass
    assert finished == ["a"]


async def test_aclose_before_streaming_means_the_run_never_starts(tmp_path: Path) -> None:
    model = ScriptedModel(["never sent"])
    async with SQLiteSession("s", tmp_path / "chats.db") as session:
        result = Runner.run_streamed(Agent(name="A", model=model), "hi", session=session)
        await result.aclose()
        with pytest.raises(UserError, match="aclose"):
            async for _event in result.stream_events():
                pass
        assert await session.get_items() == []
    assert model.calls == []
