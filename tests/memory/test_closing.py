"""Closing: `close()` has the SDK's shape, `aclose()` and `async with` release, a leak warns.

Each session's `close()` is a plain method where the OpenAI Agents SDK's class has a plain one
and a coroutine elsewhere (`EncryptedSession`'s is its wrapped session's); every session and store
has `aclose()`, which `async with` calls. A session or store garbage-collected without being
closed warns with a `ResourceWarning`, and its finalizer releases nothing itself: the pooled
connections stay as they were, no task is started.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import inspect
import threading
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from support.backends import drop_tables, unique_prefix, unique_tables
from support.items import user
from turnstore import (
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    SessionClosedError,
    SQLiteSession,
)
from turnstore.admin import open_session_store
from turnstore.extensions.memory import (
    AdvancedSQLiteSession,
    AsyncSQLiteSession,
    EncryptedSession,
    RedisSession,
    SQLAlchemySession,
)
from turnstore.testing import FakeConversationsAPI, FakeOpenAIServer

Maker = Callable[[], Awaitable[Any]]


def _sqlite_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("turnstore-sqlite-")}


def _resource_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


@asynccontextmanager
async def _makers(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[dict[str, Maker]]:
    """A maker per session class; each builds a session that owns what it uses."""
    tables = unique_tables("close")
    engines: list[Any] = []

    async def sqlite() -> Any:
        return SQLiteSession(f"s-{uuid.uuid4().hex}", tmp_path / "chats.db")

    async def advanced() -> Any:
        return AdvancedSQLiteSession(session_id=f"s-{uuid.uuid4().hex}", db_path=tmp_path / "a.db")

    async def async_sqlite() -> Any:
        return AsyncSQLiteSession(f"s-{uuid.uuid4().hex}", tmp_path / "chats.db")

    async def redis() -> Any:
        url = request.getfixturevalue("redis_url")
        return RedisSession.from_url(f"s-{uuid.uuid4().hex}", url, key_prefix=unique_prefix())

    async def sqlalchemy() -> Any:
        url = request.getfixturevalue("postgres_url")
        session = SQLAlchemySession.from_url(
            f"s-{uuid.uuid4().hex}",
            url,
            create_tables=True,
            sessions_table=tables[0],
            messages_table=tables[1],
        )
        engines.append(session.engine)
        return session

    async def conversations() -> Any:
        fake: FakeOpenAIServer = request.getfixturevalue("fake_openai")
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        FakeConversationsAPI().install(fake)
        return OpenAIConversationsSession()

    async def compaction() -> Any:
        return OpenAIResponsesCompactionSession(
            "s", SQLiteSession("s"), should_trigger_compaction=lambda context: False
        )

    async def encrypted() -> Any:
        pytest.importorskip("cryptography")
        return EncryptedSession("s", SQLiteSession("s", tmp_path / "e.db"), "a secret key")

    try:
        yield {
            "SQLiteSession": sqlite,
            "AdvancedSQLiteSession": advanced,
            "AsyncSQLiteSession": async_sqlite,
            "RedisSession": redis,
            "SQLAlchemySession": sqlalchemy,
            "OpenAIConversationsSession": conversations,
            "OpenAIResponsesCompactionSession": compaction,
            "EncryptedSession": encrypted,
        }
    finally:
        for engine in engines:
            await drop_tables(engine, tables)
            await engine.dispose()


async def _close_wrapped(session: Any) -> None:
    """Close what a wrapper session leaves open (the compaction session's wrapped session)."""
    if isinstance(session, OpenAIResponsesCompactionSession):
        await session.underlying_session.aclose()  # type: ignore[attr-defined]


# The SDK class each one stands in for, and whether our close() is a coroutine. Where the SDK's
# class has a close(), ours has its shape; where it has none, ours is a coroutine.
CLOSE_SHAPES = [
    ("SQLiteSession", "agents.memory.sqlite_session", False),
    ("AdvancedSQLiteSession", "agents.extensions.memory.advanced_sqlite_session", False),
    ("AsyncSQLiteSession", "agents.extensions.memory.async_sqlite_session", True),
    ("RedisSession", "agents.extensions.memory.redis_session", True),
    ("SQLAlchemySession", "agents.extensions.memory.sqlalchemy_session", True),  # SDK: no close
    ("OpenAIConversationsSession", "agents.memory.openai_conversations_session", True),  # none
    (
        "OpenAIResponsesCompactionSession",  # SDK: no close
        "agents.memory.openai_responses_compaction_session",
        True,
    ),
]


@pytest.mark.parametrize(("name", "sdk_module", "coroutine"), CLOSE_SHAPES)
async def test_close_is_sync_or_awaitable_as_in_the_sdk_class(
    request: pytest.FixtureRequest, tmp_path: Path, name: str, sdk_module: str, coroutine: bool
) -> None:
    sdk_close = getattr(getattr(importlib.import_module(sdk_module), name), "close", None)
    if sdk_close is not None:
        assert inspect.iscoroutinefunction(sdk_close) is coroutine
    async with _makers(request, tmp_path) as makers:
        session = await makers[name]()
        result = session.close()
        if coroutine:
            assert inspect.isawaitable(result)
            await result
        else:
            assert result is None
        with pytest.raises(SessionClosedError):
            await session.get_items()
        await _close_wrapped(session)


# backends.md#closing: EncryptedSession's close() is the wrapped session's, so it is plain over
# these two and a coroutine over every other session; closing it closes the wrapped session.
PLAIN_CLOSE = {"SQLiteSession", "AdvancedSQLiteSession"}


@pytest.mark.parametrize("wrapped", [name for name, _, _ in CLOSE_SHAPES])
async def test_encrypted_close_is_its_wrapped_sessions_close(
    request: pytest.FixtureRequest, tmp_path: Path, wrapped: str
) -> None:
    pytest.importorskip("cryptography")
    async with _makers(request, tmp_path) as makers:
        underlying = await makers[wrapped]()
        session = EncryptedSession("s", underlying, "a secret key")
        result = session.close()
        if wrapped in PLAIN_CLOSE:
            assert result is None
        else:
            assert inspect.isawaitable(result)
            await result
        for closed in (session, underlying):
            with pytest.raises(SessionClosedError):
                await closed.get_items()
        await _close_wrapped(underlying)


ALL_SESSIONS = [*(name for name, _, _ in CLOSE_SHAPES), "EncryptedSession"]


@pytest.mark.parametrize("name", ALL_SESSIONS)
async def test_aclose_releases_a_used_session_and_closing_again_is_harmless(
    request: pytest.FixtureRequest, tmp_path: Path, name: str
) -> None:
    threads_before = _sqlite_threads()
    async with _makers(request, tmp_path) as makers:
        session = await makers[name]()
        await session.add_items([user("hi")])
        await session.clear_session()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await session.aclose()
            await session.aclose()
            with pytest.raises(SessionClosedError):
                await session.get_items()
            if isinstance(session, SQLAlchemySession):
                assert session.engine.pool.checkedin() == 0  # the engine was disposed
            if isinstance(session, RedisSession):
                pool = session.client.connection_pool
                assert not any(c.is_connected for c in pool._available_connections)
            await _close_wrapped(session)
            del session
            gc.collect()
        assert _resource_warnings(caught) == []
    assert _sqlite_threads() <= threads_before  # every thread the session started has stopped


@pytest.mark.parametrize("name", ALL_SESSIONS)
async def test_async_with_closes_the_session(
    request: pytest.FixtureRequest, tmp_path: Path, name: str
) -> None:
    async with _makers(request, tmp_path) as makers:
        async with await makers[name]() as session:
            await session.add_items([user("hi")])
            await session.clear_session()
        with pytest.raises(SessionClosedError):
            await session.get_items()
        await _close_wrapped(session)


# --- a forgotten close warns, and the finalizer does no work ----------------------------------


async def test_a_forgotten_sqlite_session_warns_and_its_threads_stop(tmp_path: Path) -> None:
    threads_before = _sqlite_threads()
    session = SQLiteSession("forgotten", tmp_path / "chats.db")
    await session.add_items([user("hi")])
    started = _sqlite_threads() - threads_before
    assert started
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del session
        gc.collect()
    [message] = _resource_warnings(caught)
    assert message.startswith("SQLiteSession 'forgotten' on ")
    assert "was never closed" in message
    for thread in started:  # nothing signals them: once no session holds it, they exit
        await asyncio.to_thread(thread.join)


async def test_a_forgotten_redis_session_warns_and_its_finalizer_closes_nothing(
    redis_url: str,
) -> None:
    session = RedisSession.from_url("forgotten", redis_url, key_prefix=unique_prefix())
    await session.add_items([user("hi")])
    await session.clear_session()
    client = session.client
    connections = list(client.connection_pool._available_connections)
    assert connections
    assert all(c.is_connected for c in connections)
    tasks_before = asyncio.all_tasks()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del session
        gc.collect()
    assert [m.split(" was never closed")[0] for m in _resource_warnings(caught)] == [
        "RedisSession 'forgotten' (made by from_url)"
    ]
    assert asyncio.all_tasks() == tasks_before  # no release was started
    assert all(c.is_connected for c in connections)  # and nothing was closed
    await client.aclose()


async def test_a_forgotten_sqlalchemy_session_warns_and_its_engine_stays(
    postgres_url: str,
) -> None:
    tables = unique_tables("close")
    session = SQLAlchemySession.from_url(
        "forgotten",
        postgres_url,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
    )
    await session.add_items([user("hi")])
    engine = session.engine
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del session
            gc.collect()
        [message] = _resource_warnings(caught)
        assert message.startswith("SQLAlchemySession 'forgotten' (made by from_url) was never")
        assert engine.pool.checkedin() == 1  # the finalizer disposed of nothing
    finally:
        await drop_tables(engine, tables)
        await engine.dispose()


async def test_a_forgotten_openai_session_with_a_client_of_its_own_warns(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    FakeConversationsAPI().install(fake_openai)
    session = OpenAIConversationsSession()
    await session.add_items([user("hi")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del session
        gc.collect()
    # The client's own unclosed sockets warn too (as they would without this session).
    [message] = [m for m in _resource_warnings(caught) if "was never closed" in m]
    assert message.startswith("OpenAIConversationsSession")


async def test_a_forgotten_session_on_a_client_passed_in_owns_nothing_and_does_not_warn(
    redis_url: str, tmp_path: Path
) -> None:
    client = Redis.from_url(redis_url)
    session = RedisSession("s", redis_client=client, key_prefix=unique_prefix())
    await session.add_items([user("hi")])
    await session.clear_session()
    conversations = OpenAIConversationsSession()  # never used: it built no client
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del session, conversations
        gc.collect()
    assert _resource_warnings(caught) == []
    await client.aclose()


# --- stores -------------------------------------------------------------------------------------


def _store_target(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> str:
    if backend == "sqlite":
        return str(tmp_path / "store.db")
    return str(request.getfixturevalue(f"{backend}_url"))


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
async def test_a_store_closes_with_aclose_and_async_with_and_warns_when_forgotten(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    target = _store_target(request, tmp_path, backend)
    threads_before = _sqlite_threads()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = open_session_store(target, create=True, key_prefix=unique_prefix())
        assert await store.list_sessions(prefix="no-such-") == []
        await store.aclose()
        await store.aclose()
        async with open_session_store(target, create=True, key_prefix=unique_prefix()) as store:
            assert await store.list_sessions(prefix="no-such-") == []
        del store
        gc.collect()
        assert _resource_warnings(caught) == []
        forgotten = open_session_store(target, create=True, key_prefix=unique_prefix())
        del forgotten
        gc.collect()
    [message] = _resource_warnings(caught)
    assert message.startswith("the session store on ")
    assert "was never closed" in message
    for thread in _sqlite_threads() - threads_before:
        await asyncio.to_thread(thread.join)


# --- after close() every call is refused, however and wherever it was called ----------------------


def test_sqlite_close_from_sync_code_then_every_call_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    session = SQLiteSession("s", path)
    asyncio.run(session.add_items([user("x")]))
    session.close()  # plain call, no loop running: closed (and its threads joined) now
    session.close()
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())
    with pytest.raises(SessionClosedError):
        asyncio.run(session.snapshot_history())
    reader = SQLiteSession("s", path)
    assert asyncio.run(reader.get_items()) == [user("x")]
    reader.close()


def test_sqlite_close_from_another_thread_while_in_use(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    session = SQLiteSession("s", path)

    async def use() -> None:
        await session.add_items([user("before")])
        closer = threading.Thread(target=session.close)
        closer.start()
        await asyncio.to_thread(closer.join)
        with pytest.raises(SessionClosedError):
            await session.add_items([user("after")])

    asyncio.run(use())
    reader = SQLiteSession("s", path)
    assert asyncio.run(reader.get_items()) == [user("before")]
    reader.close()


@pytest.mark.parametrize("which", ["postgres", "pgbouncer", "redis", "cluster"])
async def test_pooled_close_awaited_then_every_call_is_refused(
    request: pytest.FixtureRequest, which: str
) -> None:
    url = request.getfixturevalue(f"{which}_url" if which != "cluster" else "redis_cluster_url")
    sid = f"closing-{uuid.uuid4().hex}"
    if which in ("postgres", "pgbouncer"):
        session: Any = SQLAlchemySession.from_url(sid, url, create_tables=True)
    else:
        session = RedisSession.from_url(sid, url)
    await session.add_items([user("x")])
    await session.clear_session()
    await session.close()
    await session.close()
    for call in (
        session.get_items(),
        session.add_items([user("y")]),
        session.pop_item(),
        session.clear_session(),
        session.snapshot_history(),
    ):
        with pytest.raises(SessionClosedError):
            await call
