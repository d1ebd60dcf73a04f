"""The shared session contract on the sessions the other test modules do not cover: the
compaction wrapper over each storage backend, and OpenAIConversationsSession against the fake
Conversations API (with the real `openai` client)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from turnstore import (
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    RedisSession,
    Session,
    SQLAlchemySession,
    SQLiteSession,
)
from turnstore.testing import FakeConversationsAPI, FakeOpenAIServer, SessionConformanceTests


class _CompactionOver(SessionConformanceTests):
    """The wrapper over a storage session; corrupt rows are reached through the wrapped one."""

    async def make_underlying(self, session_id: str) -> Any:
        raise NotImplementedError

    async def make_session(self, session_id: str) -> Session:
        store = await self.make_underlying(session_id)
        return OpenAIResponsesCompactionSession(session_id, store, model="gpt-4.1")

    async def close_session(self, session: Session) -> None:
        assert isinstance(session, OpenAIResponsesCompactionSession)
        await session.close()
        await session.underlying_session.close()  # type: ignore[attr-defined]


class TestCompactionOverMemorySQLite(_CompactionOver):
    shared_storage = False

    async def make_underlying(self, session_id: str) -> Any:
        return SQLiteSession(session_id)

    async def corrupt_latest_row(self, session: Session) -> None:
        store = session.underlying_session  # type: ignore[attr-defined]

        def corrupt(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE agent_messages SET message_data = 'not json{' WHERE id = "
                "(SELECT max(id) FROM agent_messages WHERE session_id = ?)",
                (session.session_id,),
            )

        await store._write(corrupt)

    async def stored_row_count(self, session: Session) -> int:
        store = session.underlying_session  # type: ignore[attr-defined]

        def count(conn: sqlite3.Connection) -> int:
            query = "SELECT count(*) FROM agent_messages WHERE session_id = ?"
            return int(conn.execute(query, (session.session_id,)).fetchone()[0])

        return int(await store._read(count))


@pytest.mark.services
class TestCompactionOverPostgres(_CompactionOver):
    @pytest.fixture(autouse=True)
    async def _engine(self, postgres_url: str) -> AsyncIterator[None]:
        from sqlalchemy.ext.asyncio import create_async_engine

        self.engine = create_async_engine(postgres_url, pool_size=10, max_overflow=50)
        tag = uuid.uuid4().hex[:10]
        self.tables = (f"c{tag}_sessions", f"c{tag}_messages")
        yield
        from sqlalchemy import text

        async with self.engine.begin() as conn:
            await conn.execute(text(f"DROP TABLE IF EXISTS {self.tables[1]}"))
            await conn.execute(text(f"DROP TABLE IF EXISTS {self.tables[0]}"))
        await self.engine.dispose()

    async def make_underlying(self, session_id: str) -> Any:
        return SQLAlchemySession(
            session_id,
            engine=self.engine,
            create_tables=True,
            sessions_table=self.tables[0],
            messages_table=self.tables[1],
        )

    async def corrupt_latest_row(self, session: Session) -> None:
        from sqlalchemy import text

        m = self.tables[1]
        async with self.engine.begin() as conn:
            await conn.execute(
                text(
                    f"UPDATE {m} SET message_data = 'not json{{' WHERE id = "
                    f"(SELECT max(id) FROM {m} WHERE session_id = :s)"
                ),
                {"s": session.session_id},
            )

    async def stored_row_count(self, session: Session) -> int:
        from sqlalchemy import text

        async with self.engine.connect() as conn:
            query = text(f"SELECT count(*) FROM {self.tables[1]} WHERE session_id = :s")
            return int((await conn.execute(query, {"s": session.session_id})).scalar_one())


@pytest.mark.services
class TestCompactionOverMariaDB(TestCompactionOverPostgres):
    @pytest.fixture(autouse=True)
    async def _engine(self, mysql_url: str) -> AsyncIterator[None]:  # type: ignore[override]
        from sqlalchemy.ext.asyncio import create_async_engine

        self.engine = create_async_engine(mysql_url, pool_size=10, max_overflow=50)
        tag = uuid.uuid4().hex[:10]
        self.tables = (f"c{tag}_sessions", f"c{tag}_messages")
        yield
        from sqlalchemy import text

        async with self.engine.begin() as conn:
            await conn.execute(text(f"DROP TABLE IF EXISTS {self.tables[1]}"))
            await conn.execute(text(f"DROP TABLE IF EXISTS {self.tables[0]}"))
        await self.engine.dispose()

    async def corrupt_latest_row(self, session: Session) -> None:
        from sqlalchemy import text

        m = self.tables[1]
        async with self.engine.begin() as conn:
            newest = (
                await conn.execute(
                    text(f"SELECT max(id) FROM {m} WHERE session_id = :s"),
                    {"s": session.session_id},
                )
            ).scalar_one()
            await conn.execute(
                text(f"UPDATE {m} SET message_data = 'not json{{' WHERE id = :i"), {"i": newest}
            )


@pytest.mark.services
class TestCompactionOverRedis(_CompactionOver):
    @pytest.fixture(autouse=True)
    async def _client(self, redis_url: str) -> AsyncIterator[None]:
        from redis.asyncio import Redis

        self.client = Redis.from_url(redis_url, max_connections=100)
        self.prefix = f"test:{uuid.uuid4().hex[:10]}"
        yield
        keys = [key async for key in self.client.scan_iter(match=f"{self.prefix}:*")]
        if keys:
            await self.client.delete(*keys)
        await self.client.aclose()

    async def make_underlying(self, session_id: str) -> Any:
        return RedisSession(session_id, redis_client=self.client, key_prefix=self.prefix)

    async def corrupt_latest_row(self, session: Session) -> None:
        await self.client.lset(f"{self.prefix}:items:{session.session_id}", -1, "not json{")

    async def stored_row_count(self, session: Session) -> int:
        return int(await self.client.llen(f"{self.prefix}:items:{session.session_id}"))


class TestConversationsSession(SessionConformanceTests):
    """OpenAIConversationsSession: one conversation per session id, on the fake API.

    Each suite id names a conversation made on the fake server beforehand (the real API assigns
    conversation ids itself).
    """

    # Two objects on one conversation cannot pop atomically: the Conversations API reads and
    # deletes in two requests, so the shared-history test (which pops from both) cannot apply.
    shared_storage = False

    @pytest.fixture(autouse=True)
    async def _api(self, fake_openai: FakeOpenAIServer) -> AsyncIterator[None]:
        self.api = FakeConversationsAPI().install(fake_openai)
        async with fake_openai.async_client() as client:
            self.client: AsyncOpenAI = client
            yield

    async def make_session(self, session_id: str) -> Session:
        if session_id:
            self.api.conversations.setdefault(session_id, [])
        return OpenAIConversationsSession(conversation_id=session_id or None, client=self.client)

    def comparable(self, item: Any) -> Any:
        # The API gives each stored item an id and a status.
        return {key: value for key, value in item.items() if key not in ("id", "status")}

    async def test_same_id_shares_history_across_objects(self, new_session: Any) -> None:
        pytest.skip(
            "the Conversations API has no atomic pop (a read, then a delete): two objects on one "
            "conversation popping at once can race"
        )

    async def corrupt_latest_row(self, session: Session) -> None:
        pytest.skip(
            "the Conversations API stores only items it accepted: no corrupt item can be read"
        )

    @pytest.mark.parametrize("hostile", ["x'; DROP TABLE agent_messages; --"])
    async def test_ids_that_look_like_sql_injection(self, new_session: Any, hostile: str) -> None:
        pytest.skip(
            "conversation ids are assigned by the server: there is no caller-chosen id to attack"
        )
