"""OpenAIResponsesCompactionSession with writes landing while `responses.compact` is in flight.

The fake compaction API holds its answer until the test has written to the session, on every
real backend: the atomic replacement keeps what was added meanwhile, and a pop, a clear or a
cancellation during the call leaves the stored history as it was.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from support.items import assistant, user
from turnstore import OpenAIResponsesCompactionSession
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer

HISTORY = [user("q1"), assistant("a1"), user("q2"), assistant("a2")]


class HeldCompaction:
    """A fake compaction API whose answer waits until `release()`."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.arrived = threading.Event()
        self.go = threading.Event()
        self.api = FakeCompactionAPI(output=self._output).install(server)

    def _output(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.arrived.set()
        self.go.wait(timeout=60)
        return FakeCompactionAPI.default_output(body)

    async def wait_for_call(self) -> None:
        assert await asyncio.to_thread(self.arrived.wait, 60)

    def release(self) -> None:
        self.go.set()


@pytest.fixture
def held() -> Iterator[tuple[FakeOpenAIServer, HeldCompaction]]:
    with FakeOpenAIServer() as server:
        hold = HeldCompaction(server)
        try:
            yield server, hold
        finally:
            hold.release()


def compaction_of(backend: Backend, server: FakeOpenAIServer) -> tuple[Any, Any]:
    """A store session and a compaction session over it; the client is closed with the store."""
    store = backend.session()
    client = server.async_client()
    session = OpenAIResponsesCompactionSession(
        store.session_id, store, client=client, model="gpt-4.1"
    )
    backend.made.append(_ClientCloser(client))
    return store, session


class _ClientCloser:
    """Closes an AsyncOpenAI client in the backend fixture's teardown."""

    _closed = True  # nothing to clear

    def __init__(self, client: Any) -> None:
        self.client = client

    async def aclose(self) -> None:
        await self.client.close()


async def test_items_added_during_the_call_stay_after_the_compacted_ones(
    backend: Backend, held: tuple[FakeOpenAIServer, HeldCompaction]
) -> None:
    server, hold = held
    store, session = compaction_of(backend, server)
    await session.add_items(HISTORY)
    task = asyncio.create_task(session.run_compaction({"force": True}))
    await hold.wait_for_call()
    await session.add_items([user("during, through the wrapper")])
    await backend.session(store.session_id).add_items([user("during, another object")])
    hold.release()
    usage = await task
    assert usage is not None
    items = await store.get_items()
    assert items[-2:] == [user("during, through the wrapper"), user("during, another object")]
    assert items[-3]["type"] == "compaction"
    assert all(item.get("role") != "assistant" for item in items)
    if backend.name == "sqlite":
        assert await store.get_archived_items() == HISTORY


async def test_a_pop_during_the_call_discards_the_result(
    backend: Backend, held: tuple[FakeOpenAIServer, HeldCompaction]
) -> None:
    server, hold = held
    store, session = compaction_of(backend, server)
    await session.add_items(HISTORY)
    task = asyncio.create_task(session.run_compaction({"force": True}))
    await hold.wait_for_call()
    assert await backend.session(store.session_id).pop_item() == assistant("a2")
    hold.release()
    usage = await task
    assert usage is not None  # billed, so reported
    assert await store.get_items() == HISTORY[:3]
    # The session still knows what is stored: a later forced compaction works.
    assert await session.run_compaction({"force": True}) is not None
    assert (await store.get_items())[-1]["type"] == "compaction"


async def test_a_clear_and_rewrite_during_the_call_discards_the_result(
    backend: Backend, held: tuple[FakeOpenAIServer, HeldCompaction]
) -> None:
    server, hold = held
    store, session = compaction_of(backend, server)
    await session.add_items(HISTORY)
    task = asyncio.create_task(session.run_compaction({"force": True}))
    await hold.wait_for_call()
    other = backend.session(store.session_id)
    await other.clear_session()
    await other.add_items(HISTORY)  # the same content, new rows
    hold.release()
    await task
    assert await store.get_items() == HISTORY


async def test_cancelled_during_the_call_changes_nothing(
    backend: Backend, held: tuple[FakeOpenAIServer, HeldCompaction]
) -> None:
    server, hold = held
    store, session = compaction_of(backend, server)
    await session.add_items(HISTORY)
    task = asyncio.create_task(session.run_compaction({"force": True}))
    await hold.wait_for_call()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    hold.release()
    assert await store.get_items() == HISTORY
    await session.add_items([user("after")])
    assert await session.get_items() == [*HISTORY, user("after")]


async def test_compaction_over_a_closed_store_raises_and_changes_nothing(
    backend: Backend,
) -> None:
    from turnstore import SessionClosedError

    with FakeOpenAIServer() as server:
        FakeCompactionAPI().install(server)
        store, session = compaction_of(backend, server)
        await session.add_items(HISTORY)
        await store.aclose()
        with pytest.raises(SessionClosedError):
            await session.run_compaction({"force": True})
    reader = backend.session(store.session_id)
    assert await reader.get_items() == HISTORY
