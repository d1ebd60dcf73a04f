"""The shared session contract on the sessions the other test modules do not cover: the
compaction wrapper over each storage backend (PgBouncer and Redis Cluster included), and
OpenAIConversationsSession against the fake
Conversations API (with the real `openai` client)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI
from redis.asyncio import RedisCluster

from support.backends import (
    RedisStorage,
    SQLStorage,
    delete_prefix,
    drop_tables,
    unique_prefix,
    unique_tables,
)
from turnstore import (
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    Session,
    SQLiteSession,
)
from turnstore.extensions.memory import RedisSession
from turnstore.memory.redis.keys import ClusterLayout
from turnstore.memory.sqlalchemy.engine import create_engine_for_url
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
        await session.aclose()
        await session.underlying_session.aclose()  # type: ignore[attr-defined]


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
class TestCompactionOverPostgres(SQLStorage, _CompactionOver):
    async def make_underlying(self, session_id: str) -> Any:
        return self.sql_session(session_id)


@pytest.mark.services
class TestCompactionOverMariaDB(TestCompactionOverPostgres):
    @pytest.fixture
    def sql_url(self, mysql_url: str) -> str:
        return mysql_url


@pytest.mark.services
class TestCompactionOverRedis(RedisStorage, _CompactionOver):
    async def make_underlying(self, session_id: str) -> Any:
        return self.redis_session(session_id)


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


@pytest.mark.services
class TestCompactionOverPgBouncer(TestCompactionOverPostgres):
    """The wrapper over PostgreSQL reached through PgBouncer in transaction mode."""

    @pytest.fixture(autouse=True)
    async def _sql(self, pgbouncer_url: str, postgres_url: str) -> AsyncIterator[None]:
        self.engine = create_engine_for_url(pgbouncer_url, pool_size=10, max_overflow=50)
        self.tables = unique_tables("cpgb")
        yield
        await self.engine.dispose()
        direct = create_engine_for_url(postgres_url)
        await drop_tables(direct, self.tables)
        await direct.dispose()


@pytest.mark.services
class TestCompactionOverRedisCluster(_CompactionOver):
    """The wrapper over a 3-primary Redis Cluster."""

    @pytest.fixture(autouse=True)
    async def _client(self, redis_cluster_url: str) -> AsyncIterator[None]:
        self.client = RedisCluster.from_url(
            redis_cluster_url.replace("redis+cluster://", "redis://"), max_connections=100
        )
        self.prefix = unique_prefix("cctest")
        yield
        await delete_prefix(self.client, self.prefix)
        await self.client.aclose()

    async def make_underlying(self, session_id: str) -> Any:
        return RedisSession(session_id, redis_client=self.client, key_prefix=self.prefix)

    async def corrupt_latest_row(self, session: Session) -> None:
        key = ClusterLayout(self.prefix).items_key(session.session_id)
        await self.client.lset(key, -1, "not json{")
