"""Listing (newest activity first, prefix, paging) and retention on every storage backend.

One contract, `ListingContract`, runs against SQLite, PostgreSQL (directly and through
PgBouncer), Redis and a Redis Cluster through `open_session_store`, writing with the backends' own
sessions and ageing a session by setting its last-activity time in the raw storage.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from support.backends import (
    RedisStorage,
    SQLStorage,
    delete_prefix,
    drop_tables,
    unique_prefix,
    unique_tables,
)
from turnstore import SQLiteSession
from turnstore.admin import SessionRecord, SessionStore, open_session_store
from turnstore.extensions.memory import RedisSession
from turnstore.memory.redis.keys import ClusterLayout
from turnstore.memory.sqlalchemy.session import create_engine_for_url

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


class ListingContract:
    """What every store promises about listing and retention."""

    store: SessionStore

    def session(self, session_id: str) -> Any:
        raise NotImplementedError

    async def set_last_activity(self, session_id: str, when: datetime) -> None:
        raise NotImplementedError

    async def write(self, session_id: str, count: int = 1) -> None:
        session = self.session(session_id)
        try:
            await session.add_items([{"role": "user", "content": f"{i}"} for i in range(count)])
        finally:
            await session.aclose()

    async def test_newest_activity_first_with_counts_and_times(self) -> None:
        for index, session_id in enumerate(["a", "b", "c"]):
            await self.write(session_id, index + 1)
            await self.set_last_activity(session_id, LONG_AGO + timedelta(days=index))
        infos = await self.store.list_sessions()
        assert [info.session_id for info in infos] == ["c", "b", "a"]
        assert [info.item_count for info in infos] == [3, 2, 1]
        for info in infos:
            assert info.created_at is not None
            assert info.last_activity is not None
        assert infos[0].last_activity == LONG_AGO + timedelta(days=2)

    async def test_prefix_and_paging(self) -> None:
        ids = [f"user-1/{n}" for n in range(5)] + ["user-10/x", "user-2/y", "other"]
        for day, session_id in enumerate(ids):
            await self.write(session_id)
            await self.set_last_activity(session_id, LONG_AGO + timedelta(days=day))
        first = await self.store.list_sessions(prefix="user-1/", limit=2)
        second = await self.store.list_sessions(prefix="user-1/", limit=2, offset=2)
        third = await self.store.list_sessions(prefix="user-1/", limit=2, offset=4)
        assert [i.session_id for i in first + second + third] == [
            "user-1/4",
            "user-1/3",
            "user-1/2",
            "user-1/1",
            "user-1/0",
        ]
        assert await self.store.list_sessions(prefix="user-1/", offset=5) == []
        assert [i.session_id for i in await self.store.list_sessions(prefix="user-1")] == [
            "user-10/x",
            *(f"user-1/{n}" for n in range(4, -1, -1)),
        ]
        assert len(await self.store.list_sessions()) == len(ids)

    async def test_prefix_is_literal(self) -> None:
        for session_id in ["a%b", "a_b", "axb", "a\\b"]:
            await self.write(session_id)
        assert [i.session_id for i in await self.store.list_sessions(prefix="a%")] == ["a%b"]
        assert [i.session_id for i in await self.store.list_sessions(prefix="a_")] == ["a_b"]
        assert [i.session_id for i in await self.store.list_sessions(prefix="a\\")] == ["a\\b"]

    async def test_delete_idle_sessions_deletes_only_the_idle_ones(self) -> None:
        for session_id in ["old-1", "old-2", "fresh"]:
            await self.write(session_id, 2)
        await self.set_last_activity("old-1", LONG_AGO)
        await self.set_last_activity("old-2", datetime.now(UTC) - timedelta(days=31))
        assert await self.store.delete_idle_sessions(timedelta(days=30)) == 2
        assert [i.session_id for i in await self.store.list_sessions()] == ["fresh"]
        for session_id in ["old-1", "old-2"]:
            assert await self.store.get_info(session_id) is None
            assert await self.store.read_records(session_id) == []
        assert len(await self.store.read_records("fresh")) == 2
        assert await self.store.delete_idle_sessions(30 * 86400) == 0

    async def test_a_write_makes_a_session_active_again(self) -> None:
        await self.write("s")
        await self.set_last_activity("s", LONG_AGO)
        await self.write("s")
        assert await self.store.delete_idle_sessions(timedelta(days=1)) == 0
        info = await self.store.get_info("s")
        assert info is not None
        assert info.item_count == 2

    async def test_iter_sessions_walks_every_session_once(self) -> None:
        # More sessions than one page of the walk (500), half of them under a prefix.
        ids = [f"{'p' if n % 2 else 'q'}/{n}" for n in range(1_050)]
        gate = asyncio.Semaphore(16)

        async def write(session_id: str) -> None:
            async with gate:
                record = SessionRecord(session_id, {"role": "user", "content": "x"}, None)
                await self.store.write_records(session_id, [record])

        await asyncio.gather(*(write(session_id) for session_id in ids))
        listed = []
        for offset in range(0, 1_100, 250):
            listed += [
                i.session_id for i in await self.store.list_sessions(offset=offset, limit=250)
            ]
        walked = [info.session_id async for info in self.store.iter_sessions()]
        assert sorted(walked) == sorted(ids) == sorted(listed)
        if not isinstance(self, TestRedis | TestRedisCluster):
            assert walked == sorted(ids)  # SQL backends walk by session id
        under = [info async for info in self.store.iter_sessions(prefix="p/")]
        assert sorted(info.session_id for info in under) == [i for i in sorted(ids) if i[0] == "p"]
        assert {info.item_count for info in under} == {1}
        with pytest.raises(TypeError):
            [info async for info in self.store.iter_sessions(prefix=None)]  # type: ignore[arg-type]

    async def test_bad_arguments(self) -> None:
        with pytest.raises(TypeError, match="older_than"):
            await self.store.delete_idle_sessions("30d")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="negative"):
            await self.store.delete_idle_sessions(-1)
        with pytest.raises(TypeError, match="prefix"):
            await self.store.list_sessions(prefix=None)  # type: ignore[arg-type]

    async def test_empty_storage(self) -> None:
        assert await self.store.list_sessions(prefix="x") == []
        assert await self.store.delete_idle_sessions(0) == 0


class TestSQLite(ListingContract):
    @pytest.fixture(autouse=True)
    async def _store(self, tmp_path: Path) -> AsyncIterator[None]:
        self.path = str(tmp_path / "sessions.db")
        self.store = open_session_store(self.path, create=True)
        yield
        await self.store.aclose()

    def session(self, session_id: str) -> Any:
        return SQLiteSession(session_id, self.path)

    async def set_last_activity(self, session_id: str, when: datetime) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute(
                "UPDATE agent_sessions SET updated_at = ? WHERE session_id = ?",
                (when.strftime("%Y-%m-%d %H:%M:%S"), session_id),
            )
        conn.close()

    async def test_archived_items_go_with_the_session(self) -> None:
        await self.write("s", 3)
        with sqlite3.connect(self.path) as conn:
            conn.execute(
                "INSERT INTO agent_messages_archive (session_id, message_data) VALUES ('s', '{}')"
            )
        conn.close()
        await self.set_last_activity("s", LONG_AGO)
        assert await self.store.delete_idle_sessions(timedelta(days=1)) == 1
        with sqlite3.connect(self.path) as conn:
            counts = [
                conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("agent_sessions", "agent_messages", "agent_messages_archive")
            ]
        conn.close()
        assert counts == [0, 0, 0]


@pytest.mark.services
class TestPostgres(SQLStorage, ListingContract):
    @pytest.fixture(autouse=True)
    async def _store(self, _sql: None, sql_url: str) -> AsyncIterator[None]:
        self.url = sql_url
        self.store = open_session_store(
            sql_url, sessions_table=self.tables[0], messages_table=self.tables[1], create=True
        )
        yield
        await self.store.aclose()

    def session(self, session_id: str) -> Any:
        return self.sql_session(session_id)

    async def set_last_activity(self, session_id: str, when: datetime) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                text(f'UPDATE "{self.tables[0]}" SET updated_at = :when WHERE session_id = :sid'),
                {"when": when, "sid": session_id},
            )


@pytest.mark.services
class TestRedis(RedisStorage, ListingContract):
    @pytest.fixture(autouse=True)
    async def _store(self, _redis: None, redis_url: str) -> AsyncIterator[None]:
        self.store = open_session_store(redis_url, key_prefix=self.prefix)
        yield
        await self.store.aclose()

    def session(self, session_id: str) -> Any:
        return self.redis_session(session_id)

    async def set_last_activity(self, session_id: str, when: datetime) -> None:
        score = round(when.timestamp() * 1000)
        await self.client.zadd(f"{self.prefix}:index", {session_id: score}, xx=True)


@pytest.mark.services
class TestRedisCluster(ListingContract):
    """The contract on a 3-primary Redis Cluster: each hash slot has its own index."""

    @pytest.fixture(autouse=True)
    async def _store(self, redis_cluster_url: str) -> AsyncIterator[None]:
        from redis.asyncio.cluster import RedisCluster

        self.client = RedisCluster.from_url(redis_cluster_url.replace("+cluster://", "://", 1))
        self.prefix = unique_prefix("lcluster")
        self.store = open_session_store(redis_cluster_url, key_prefix=self.prefix)
        yield
        await self.store.aclose()
        await delete_prefix(self.client, self.prefix)
        await self.client.aclose()

    def session(self, session_id: str) -> Any:
        return RedisSession(session_id, redis_client=self.client, key_prefix=self.prefix)

    async def set_last_activity(self, session_id: str, when: datetime) -> None:
        index = ClusterLayout(self.prefix).index_key(session_id)
        score = round(when.timestamp() * 1000)
        assert await self.client.zadd(index, {session_id: score}, xx=True, ch=True) == 1


@pytest.mark.services
class TestPgBouncer(SQLStorage, ListingContract):
    """The contract on PostgreSQL through PgBouncer in transaction pooling mode."""

    @pytest.fixture(autouse=True)
    async def _sql(self, pgbouncer_url: str, postgres_url: str) -> AsyncIterator[None]:
        self.engine = create_engine_for_url(pgbouncer_url, pool_size=10, max_overflow=50)
        self.tables = unique_tables("lpgb")
        self.store = open_session_store(
            pgbouncer_url, sessions_table=self.tables[0], messages_table=self.tables[1], create=True
        )
        yield
        await self.store.aclose()
        await self.engine.dispose()
        direct = create_engine_for_url(postgres_url)
        await drop_tables(direct, self.tables)
        await direct.dispose()

    def session(self, session_id: str) -> Any:
        return self.sql_session(session_id)

    async def set_last_activity(self, session_id: str, when: datetime) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                text(f'UPDATE "{self.tables[0]}" SET updated_at = :when WHERE session_id = :sid'),
                {"when": when, "sid": session_id},
            )
