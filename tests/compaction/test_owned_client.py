"""A client a session builds from the environment is closed by `close()`; one passed in is not."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from turnstore import (
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    SessionClosedError,
    SQLiteSession,
)
from turnstore.testing import FakeCompactionAPI, FakeConversationsAPI, FakeOpenAIServer

USER = {"role": "user", "content": "hi"}


@pytest.fixture
def built(
    monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> list[openai.AsyncOpenAI]:
    """The fake APIs, the environment pointing at them, and every `AsyncOpenAI` built."""
    FakeConversationsAPI().install(fake_openai)
    FakeCompactionAPI().install(fake_openai)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    clients: list[openai.AsyncOpenAI] = []
    original = openai.AsyncOpenAI.__init__

    def spy(self: openai.AsyncOpenAI, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        clients.append(self)

    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", spy)
    return clients


async def test_conversations_session_closes_the_client_it_built(
    built: list[openai.AsyncOpenAI],
) -> None:
    async with OpenAIConversationsSession() as session:
        await session.add_items([USER])
        assert len(await session.get_items()) == 1
    assert len(built) == 1
    assert built[0].is_closed()
    # Like every session: closed means closed (a new object with the same id goes on).
    with pytest.raises(SessionClosedError):
        await session.get_items()
    await session.aclose()  # harmless
    assert len(built) == 1
    again = OpenAIConversationsSession(conversation_id=session.conversation_id)
    assert len(await again.get_items()) == 1
    await again.aclose()
    assert built[1].is_closed()


async def test_compaction_session_closes_the_client_it_built_not_the_wrapped_session(
    built: list[openai.AsyncOpenAI],
) -> None:
    async with SQLiteSession("s") as store:
        async with OpenAIResponsesCompactionSession("s", store) as session:
            await session.add_items([USER])
            assert await session.run_compaction({"force": True}) is not None
        assert len(built) == 1
        assert built[0].is_closed()
        assert await store.get_items() != []  # the wrapped session is still open


async def test_a_client_passed_in_stays_open(
    built: list[openai.AsyncOpenAI], fake_openai: FakeOpenAIServer
) -> None:
    async with fake_openai.async_client() as client:
        async with OpenAIConversationsSession(client=client) as conversations:
            await conversations.add_items([USER])
        async with (
            SQLiteSession("s") as store,
            OpenAIResponsesCompactionSession("s", store, client=client) as session,
        ):
            await session.add_items([USER])
            await session.run_compaction({"force": True})
        assert not client.is_closed()
        assert built == [client]


async def test_concurrent_first_calls_build_one_client(built: list[openai.AsyncOpenAI]) -> None:
    first = OpenAIConversationsSession()
    await first.add_items([USER])
    await first.aclose()
    built.clear()
    session = OpenAIConversationsSession(conversation_id=first.conversation_id)
    await asyncio.gather(*(session.get_items() for _ in range(5)))
    await session.aclose()
    assert built
    assert all(client.is_closed() for client in built)
