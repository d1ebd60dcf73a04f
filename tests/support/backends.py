"""Conformance-suite hooks for the server backends, shared by every test module that runs the
suite on them (directly, or under the compaction wrapper)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from uuid import uuid4

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from turnstore import Session
from turnstore.extensions.memory import RedisSession, SQLAlchemySession
from turnstore.memory.sqlalchemy.schema import session_tables

if TYPE_CHECKING:
    from redis.asyncio import Redis, RedisCluster


async def delete_prefix(client: Redis | RedisCluster, prefix: str) -> None:
    """Delete every key under `prefix:` (a test's keys on the shared Redis or Redis Cluster)."""
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    for key in keys:  # one by one: on a cluster the keys live in different slots
        await client.delete(key)


def unique_prefix(label: str = "test") -> str:
    """A key prefix no other test uses, starting with `label`."""
    return f"{label}:{uuid4().hex[:10]}"


class RedisStorage:
    """RedisSession on the test Redis, under a key prefix of its own that is deleted afterwards.

    Mix it in before `SessionConformanceTests`: it provides `corrupt_latest_row` and
    `stored_row_count` for sessions made with `redis_session`.
    """

    client: Redis
    prefix: str

    @pytest.fixture(autouse=True)
    async def _redis(self, redis_url: str) -> AsyncIterator[None]:
        from redis.asyncio import Redis

        self.client = Redis.from_url(redis_url, max_connections=100)
        self.prefix = unique_prefix()
        yield
        await delete_prefix(self.client, self.prefix)
        await self.client.aclose()

    def redis_session(self, session_id: str) -> RedisSession:
        return RedisSession(session_id, redis_client=self.client, key_prefix=self.prefix)

    async def corrupt_latest_row(self, session: Session) -> None:
        await self.client.lset(f"{self.prefix}:items:{session.session_id}", -1, "not json{")

    async def stored_row_count(self, session: Session) -> int:
        return int(await self.client.llen(f"{self.prefix}:items:{session.session_id}"))


def unique_tables(label: str = "t") -> tuple[str, str]:
    """Names of a sessions table and a messages table no other test uses."""
    tag = uuid4().hex[:10]
    return f"{label}{tag}_sessions", f"{label}{tag}_messages"


async def drop_tables(engine: AsyncEngine, tables: tuple[str, str]) -> None:
    """Drop a test's two tables (messages first: it references sessions), quoted for the dialect."""
    quote = engine.dialect.identifier_preparer.quote
    async with engine.begin() as conn:
        for name in reversed(tables):
            await conn.execute(text(f"DROP TABLE IF EXISTS {quote(name)}"))


class SQLStorage:
    """SQLAlchemySession on the database of the fixture `sql_url` (PostgreSQL unless overridden),
    in tables of its own that are dropped afterwards.

    Mix it in before `SessionConformanceTests`: it provides `corrupt_latest_row` and
    `stored_row_count` for sessions made with `sql_session`.
    """

    engine: AsyncEngine
    tables: tuple[str, str]

    @pytest.fixture
    def sql_url(self, postgres_url: str) -> str:
        """The database's URL (override it for another database)."""
        return postgres_url

    @pytest.fixture(autouse=True)
    async def _sql(self, sql_url: str) -> AsyncIterator[None]:
        self.engine = create_async_engine(sql_url, pool_size=10, max_overflow=50)
        self.tables = unique_tables()
        yield
        await drop_tables(self.engine, self.tables)
        await self.engine.dispose()

    def sql_session(self, session_id: str) -> SQLAlchemySession:
        return SQLAlchemySession(
            session_id,
            engine=self.engine,
            create_tables=True,
            sessions_table=self.tables[0],
            messages_table=self.tables[1],
        )

    async def corrupt_latest_row(self, session: Session) -> None:
        # The newest id first, then the update: MySQL cannot update a table it selects from.
        messages = session_tables(*self.tables)[2]
        async with self.engine.begin() as conn:
            newest = (
                await conn.execute(
                    select(func.max(messages.c.id)).where(
                        messages.c.session_id == session.session_id
                    )
                )
            ).scalar_one()
            await conn.execute(
                update(messages).where(messages.c.id == newest).values(message_data="not json{")
            )

    async def stored_row_count(self, session: Session) -> int:
        messages = session_tables(*self.tables)[2]
        query = select(func.count()).where(messages.c.session_id == session.session_id)
        async with self.engine.connect() as conn:
            return int((await conn.execute(query)).scalar_one())
