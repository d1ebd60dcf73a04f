"""Compaction on Redis: its atomic replacement, and the generic replace-and-restore path."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI
from redis.asyncio import Redis

from support.backends import delete_prefix, unique_prefix
from turnstore import OpenAIResponsesCompactionSession, SessionStorageError
from turnstore.extensions.memory import RedisSession
from turnstore.memory import SessionABC, is_atomic_replacement_session
from turnstore.testing import FakeCompactionAPI

from .conftest import call, output, turns

pytestmark = pytest.mark.services


@pytest.fixture
async def redis_session(redis_url: str) -> AsyncIterator[RedisSession]:
    client = Redis.from_url(redis_url)
    prefix = unique_prefix("test-compaction")
    yield RedisSession("chat", redis_client=client, key_prefix=prefix)
    await delete_prefix(client, prefix)
    await client.aclose()


async def test_compaction_replaces_the_history_on_redis(
    redis_session: RedisSession, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    session = OpenAIResponsesCompactionSession("chat", redis_session, client=client, model="o3")
    history = [*turns(10), call("c1")]
    await session.add_items(history)
    assert await session.run_compaction() is not None
    items = await redis_session.get_items()
    assert [i.get("type", "message") for i in items] == ["message"] * 10 + [
        "compaction",
        "function_call",
    ]
    assert compaction_api.bodies == [{"model": "o3", "input": history[:-1]}]
    await session.add_items([output("c1")])
    assert (await redis_session.get_items())[-2:] == [call("c1"), output("c1")]


class _NoAtomicReplacement(SessionABC):
    """Passes the four operations through and hides `replace_history`: the generic path."""

    def __init__(self, inner: RedisSession) -> None:
        self.inner = inner
        self.session_id = inner.session_id

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return await self.inner.get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()


async def test_a_failed_write_on_redis_restores_the_history(
    redis_session: RedisSession, client: AsyncOpenAI, compaction_api: FakeCompactionAPI
) -> None:
    generic = _NoAtomicReplacement(redis_session)
    assert not is_atomic_replacement_session(generic)
    session = OpenAIResponsesCompactionSession("chat", generic, client=client, model="o3")
    await session.add_items(turns(10))
    before = copy.deepcopy(await redis_session.get_items())
    # The write of the compacted items, after the history was cleared, fails (as if Redis went
    # away for a moment); the previous items must come back.
    original_add = redis_session.add_items
    calls = {"n": 0}

    async def add_failing_once(items: list[Any]) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("redis went away")
        await original_add(items)

    redis_session.add_items = add_failing_once  # type: ignore[method-assign]
    with pytest.raises(SessionStorageError, match="previous history was restored"):
        await session.run_compaction()
    assert await redis_session.get_items() == before
