"""Cancelling a run during auto-compaction does not wait for the `responses.compact` call.

Only the replacement of the history is shielded from cancellation; the API call is not. The
fake compact endpoint holds its answer until the test releases it, so "the run finished before
the server answered" is an ordering of events, not a measurement.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from support.sessions import MemorySession
from turnstore import (
    Agent,
    OpenAIResponsesCompactionSession,
    RunConfig,
    Runner,
    SQLiteSession,
)
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer, text_response


class HeldCompaction:
    """A compact endpoint that answers only once `release` is set (or after 60 s)."""

    def __init__(self) -> None:
        self.seen = threading.Event()
        self.release = threading.Event()
        self.answered = threading.Event()

    def output(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.seen.set()
        self.release.wait(60)
        self.answered.set()
        return FakeCompactionAPI.default_output(body)


async def _cancel_during_compaction(
    session: OpenAIResponsesCompactionSession, held: HeldCompaction, client: AsyncOpenAI
) -> None:
    agent = Agent(name="A")
    task = asyncio.create_task(
        Runner.run(agent, "question", session=session, run_config=RunConfig(openai_client=client))
    )
    try:
        assert await asyncio.to_thread(held.seen.wait, 30), "no compact request arrived"
        task.cancel()
        # A safety bound, not a measurement: the server holds its answer for 60 s.
        done, _ = await asyncio.wait({task}, timeout=20)
        assert task in done, "the cancelled run waited for the compaction call"
        assert task.cancelled()
        assert not held.answered.is_set()  # cancelled before the server answered
    finally:
        held.release.set()


async def test_cancel_during_compaction_on_sqlite_leaves_history_unchanged(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    held = HeldCompaction()
    FakeCompactionAPI(output=held.output).install(fake_openai)
    fake_openai.enqueue(text_response("answer", response_id="resp_1"))
    async with (
        fake_openai.async_client() as client,
        SQLiteSession("u", tmp_path / "chats.db") as store,
    ):
        session = OpenAIResponsesCompactionSession(
            "u", store, client=client, should_trigger_compaction=lambda context: True
        )
        await _cancel_during_compaction(session, held, client)
        items = await store.get_items()
        assert items[0] == {"role": "user", "content": "question"}
        assert [item.get("type") for item in items] == [None, "message"]  # the turn, as saved
        assert await store.get_archived_items() == []  # nothing was replaced


async def test_cancel_during_compaction_on_another_session_leaves_history_unchanged(
    fake_openai: FakeOpenAIServer,
) -> None:
    held = HeldCompaction()
    FakeCompactionAPI(output=held.output).install(fake_openai)
    fake_openai.enqueue(text_response("answer", response_id="resp_1"))
    store = MemorySession()
    async with fake_openai.async_client() as client:
        session = OpenAIResponsesCompactionSession(
            "u", store, client=client, should_trigger_compaction=lambda context: True
        )
        await _cancel_during_compaction(session, held, client)
    assert [item.get("type") for item in store.items] == [None, "message"]
    assert "clear_session" not in store.methods
