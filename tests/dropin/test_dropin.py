"""Drop-in parity with the OpenAI Agents SDK's sessions: close(), settings, keyword forms."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from openai import AsyncOpenAI

from support.backends import drop_tables, unique_prefix, unique_tables
from turnstore import (
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    SessionClosedError,
    SessionSettings,
    SQLiteSession,
)
from turnstore.extensions.memory import RedisSession, SQLAlchemySession
from turnstore.testing import FakeOpenAIServer


def _threads_of(session: SQLiteSession) -> list[threading.Thread]:
    return [session._db._thread]


def test_sync_close_from_sync_code_stops_the_threads(tmp_path: Path) -> None:
    session = SQLiteSession("s", tmp_path / "db.sqlite")
    asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
    threads = _threads_of(session)
    assert any(thread.is_alive() for thread in threads)
    session.close()  # as with the SDK's SQLiteSession: a plain call, nothing to await
    assert not any(thread.is_alive() for thread in threads)
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())
    session.close()  # twice is harmless


async def test_a_sync_close_on_the_loop_returns_at_once_and_the_threads_stop(
    tmp_path: Path,
) -> None:
    session = SQLiteSession("s", tmp_path / "db.sqlite")
    await session.add_items([{"role": "user", "content": "hi"}])
    threads = _threads_of(session)
    assert session.close() is None  # a plain method, as in the SDK: it only signals the threads
    with pytest.raises(SessionClosedError):
        await session.get_items()
    for thread in threads:  # they finish their queued jobs and exit on their own
        await asyncio.to_thread(thread.join)


async def test_aclose_waits_for_the_threads_and_closing_again_is_harmless(
    tmp_path: Path,
) -> None:
    session = SQLiteSession("s", tmp_path / "db.sqlite")
    await session.get_items()
    threads = _threads_of(session)
    await session.aclose()
    assert not any(thread.is_alive() for thread in threads)
    await session.aclose()
    session.close()


async def test_async_with_still_closes(tmp_path: Path) -> None:
    async with SQLiteSession("s", tmp_path / "db.sqlite") as session:
        await session.add_items([{"a": 1}])
    with pytest.raises(SessionClosedError):
        await session.get_items()


def test_session_settings_default_to_empty_settings(tmp_path: Path) -> None:
    session = SQLiteSession("s", tmp_path / "db.sqlite")
    assert session.session_settings == SessionSettings()
    assert OpenAIConversationsSession().session_settings == SessionSettings()
    session.close()


def test_unknown_settings_keys_raise_type_error() -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        SQLiteSession("s", session_settings={"limitt": 3})


@pytest.mark.services
async def test_sqlalchemy_sdk_keyword_form_and_awaited_close(postgres_url: str) -> None:
    sessions, messages = unique_tables()
    session = SQLAlchemySession.from_url(
        "s",
        url=postgres_url,
        engine_kwargs={"pool_size": 3},
        create_tables=True,
        sessions_table=sessions,
        messages_table=messages,
    )
    try:
        assert session.engine.pool.size() == 3
        await session.add_items([{"a": 1}])
        assert session.engine.pool.checkedin() == 1
    finally:
        await drop_tables(session.engine, (sessions, messages))
    await session.close()  # a coroutine: the engine is disposed when it returns
    with pytest.raises(SessionClosedError):
        await session.get_items()
    assert session.engine.pool.checkedin() == 0
    with pytest.raises(TypeError, match="'pool_size' is given both"):
        SQLAlchemySession.from_url(
            "s", url=postgres_url, engine_kwargs={"pool_size": 3}, pool_size=4
        )


@pytest.mark.services
async def test_redis_sdk_keyword_form_and_awaited_close(redis_url: str) -> None:
    prefix = unique_prefix()
    session = RedisSession.from_url(
        "s", url=redis_url, redis_kwargs={"max_connections": 4}, key_prefix=prefix
    )
    assert session.client.connection_pool.max_connections == 4
    await session.add_items([{"a": 1}])
    await session.clear_session()
    connections = list(session.client.connection_pool._available_connections)
    assert connections
    assert all(connection.is_connected for connection in connections)
    await session.close()  # a coroutine, as in the SDK: the client is closed when it returns
    with pytest.raises(SessionClosedError):
        await session.get_items()
    assert not any(connection.is_connected for connection in connections)
    await session.close()


@pytest.mark.services
def test_redis_close_of_an_unused_session_from_its_own_loop(redis_url: str) -> None:
    session = RedisSession.from_url("s", url=redis_url, key_prefix="test:unused")
    asyncio.run(session.close())
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())


async def test_openai_sessions_take_the_sdk_keywords(fake_openai: FakeOpenAIServer) -> None:
    client = AsyncOpenAI(api_key="sk-test", base_url=fake_openai.base_url, max_retries=0)
    conversations = OpenAIConversationsSession(conversation_id="conv_1", openai_client=client)
    assert await conversations._get_client() is client
    with pytest.raises(TypeError, match="not both"):
        OpenAIConversationsSession(client=client, openai_client=client)
    compaction = OpenAIResponsesCompactionSession(
        "s",
        SQLiteSession("s"),
        client=client,
        model="gpt-4.1",
        compaction_mode="input",
        should_trigger_compaction=lambda context: False,
    )
    assert compaction.compaction_mode == "input"
    await compaction.close()
    compaction.underlying_session.close()  # type: ignore[attr-defined]
    await client.close()
