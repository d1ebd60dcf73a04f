"""Prune, walk and listing while an application writes, on every storage backend.

One contract, `RaceContract`, runs against a SQLite file, PostgreSQL, MariaDB, SQLAlchemy on a
SQLite engine (`sqlite+aiosqlite`), Redis and a Redis Cluster. A writer task runs beside each
store call: it writes to existing sessions (which moves them to the front of a newest-first
list), creates sessions and deletes others, as an application does during a backup or a prune.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import sys
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support.backends import delete_prefix, drop_tables, unique_prefix, unique_tables
from turnstore.admin import SessionRecord, SessionStore, open_session_store

STABLE = 600
"""Sessions that exist for the whole walk: more than one page of it (500 each)."""


def _item(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


class RaceContract:
    """What every store promises while an application writes to it."""

    store: SessionStore
    cli_args: list[str]

    async def seed(self, session_ids: list[str]) -> None:
        gate = asyncio.Semaphore(16)

        async def write(session_id: str) -> None:
            async with gate:
                await self.store.write_records(
                    session_id, [SessionRecord(session_id, _item("seed"), None)]
                )

        await asyncio.gather(*(write(session_id) for session_id in session_ids))

    async def churn(
        self, stable: list[str], stop: asyncio.Event, progress: asyncio.Event | None = None
    ) -> int:
        """Write to stable sessions, create sessions and delete them, until `stop`; return
        how many rounds were made. Each round sets `progress`."""
        rng = random.Random(7)
        created: list[str] = []
        writes = 0
        while not stop.is_set():
            target = rng.choice(stable)
            await self.store.write_records(target, [SessionRecord(target, _item("w"), None)])
            fresh = f"new/{writes:05d}"
            await self.store.write_records(fresh, [SessionRecord(fresh, _item("n"), None)])
            created.append(fresh)
            if len(created) > 3:
                session = self.store.session(created.pop(rng.randrange(len(created) - 1)))
                try:
                    await session.clear_session()
                finally:
                    await session.aclose()  # type: ignore[attr-defined]
            writes += 1
            if progress is not None:
                progress.set()
            await asyncio.sleep(0)
        return writes

    async def test_prune_never_deletes_an_item_written_after_its_cutoff(self) -> None:
        # An item is added every 20 ms while prunes with `older_than=0` run: each prune may
        # delete what was written before it started, never what was written after.
        session = self.store.session("busy")
        written: list[tuple[datetime, str]] = []
        stop = asyncio.Event()

        async def writer() -> None:
            n = 0
            while not stop.is_set():
                started = datetime.now(UTC)
                await session.add_items([_item(str(n))])  # type: ignore[list-item]
                written.append((started, str(n)))
                n += 1
                await asyncio.sleep(0.02)

        task = asyncio.create_task(writer())
        lost: list[str] = []
        try:
            for _ in range(40):
                await asyncio.sleep(0.035)
                pruned_at = datetime.now(UTC)  # no await before the cutoff is taken
                await self.store.delete_idle_sessions(0)
                done = list(written)  # committed before the read below starts
                kept = {item["content"] for item in await session.get_items()}  # type: ignore[typeddict-item]
                lost += [text for at, text in done if at > pruned_at and text not in kept]
        finally:
            stop.set()
            await task
            await session.aclose()  # type: ignore[attr-defined]
        assert lost == [], f"{len(lost)} items written after a prune's cutoff were deleted"
        assert len(written) > 40

    async def test_prune_keeps_a_session_written_just_after_the_cutoff(self) -> None:
        # Stored to the second, a write at 15:00:00.9 read as 15:00:00: idle for a cutoff of
        # 15:00:00.5. Each round writes a few milliseconds after a cutoff in the same second.
        for attempt in range(5):
            session_id = f"late-{attempt}"
            mark = datetime.now(UTC)
            await asyncio.sleep(0.005)
            await self.store.write_records(
                session_id, [SessionRecord(session_id, _item("x"), None)]
            )
            # A cutoff 1 ms before `mark` (no await between this line and the cutoff).
            older_than = datetime.now(UTC) - mark + timedelta(milliseconds=1)
            await self.store.delete_idle_sessions(older_than)  # deletes the earlier rounds'
            assert await self.store.get_info(session_id) is not None

    async def test_walk_yields_every_session_that_exists_throughout_exactly_once(self) -> None:
        stable = [f"s/{n:04d}" for n in range(STABLE)]
        await self.seed(stable)
        stop, progress = asyncio.Event(), asyncio.Event()
        writer = asyncio.create_task(self.churn(stable, stop, progress))
        walked: list[str] = []
        try:
            async for info in self.store.iter_sessions():
                walked.append(info.session_id)
                if len(walked) % 25 == 0:  # the writer writes between and within pages
                    progress.clear()
                    await asyncio.wait_for(progress.wait(), 30)
        finally:
            stop.set()
            writes = await writer
        counts = Counter(walked)
        missed = [session_id for session_id in stable if counts[session_id] == 0]
        assert missed == [], f"{len(missed)} of {STABLE} sessions missed ({writes} writes)"
        assert max(counts.values()) == 1
        assert writes > 20
        under = [info.session_id async for info in self.store.iter_sessions(prefix="s/00")]
        assert sorted(under) == [s for s in stable if s.startswith("s/00")]

    async def test_a_prefix_page_holds_each_session_once_under_creates_and_clears(self) -> None:
        # 50 sessions under the prefix among 630, the 481st to 530th newest: a page reads the
        # index past them (Redis reads it 500 entries at a time, so they straddle two reads)
        # while sessions are written, created and cleared in front of them.
        wanted = [f"p/{n:02d}" for n in range(50)]
        others = [f"o/{n:04d}" for n in range(580)]
        await self.seed(others[:100])
        await self.seed(wanted)
        await self.seed(others[100:])
        stop = asyncio.Event()
        writer = asyncio.create_task(self.churn(others, stop))
        try:
            pages = []
            for _ in range(10):
                await asyncio.sleep(0.01)
                pages.append([i.session_id for i in await self.store.list_sessions(prefix="p/")])
        finally:
            stop.set()
            await writer
        for page in pages:
            assert len(page) == len(set(page)), "a session appears twice in one page"
            assert sorted(page) == wanted

    async def test_export_all_under_a_writing_app_misses_no_session(self, tmp_path: Path) -> None:
        stable = [f"s/{n:04d}" for n in range(STABLE)]
        await self.seed(stable)
        stop = asyncio.Event()
        writer = asyncio.create_task(self.churn(stable, stop))
        out = tmp_path / "backup.jsonl"
        try:
            cli = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "turnstore.cli",
                *self.cli_args,
                "export",
                "--all",
                "-o",
                str(out),
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await cli.communicate()
        finally:
            stop.set()
            writes = await writer
        assert cli.returncode == 0, err.decode()
        exported = {json.loads(line)["session_id"] for line in out.read_text().splitlines()}
        missed = [session_id for session_id in stable if session_id not in exported]
        assert missed == [], f"export --all missed {len(missed)} sessions ({writes} writes)"


class TestSQLite(RaceContract):
    @pytest.fixture(autouse=True)
    async def _store(self, tmp_path: Path) -> AsyncIterator[None]:
        path = str(tmp_path / "sessions.db")
        self.cli_args = ["--db", path]
        self.path = path
        self.store = open_session_store(path, create=True)
        yield
        await self.store.aclose()

    async def seed(self, session_ids: list[str]) -> None:
        # One transaction, with the statements SQLiteSession runs: a commit per session costs
        # tens of milliseconds.
        from turnstore.memory.sqlite.schema import SQLiteSchema

        schema = SQLiteSchema("agent_sessions", "agent_messages")

        def work() -> None:
            conn = sqlite3.connect(self.path, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                schema.create(conn)
                conn.executemany(schema.touch_session, [(s,) for s in session_ids])
                conn.executemany(
                    schema.insert, [(s, '{"role":"user","content":"s"}') for s in session_ids]
                )
                conn.execute("COMMIT")
            finally:
                conn.close()

        await asyncio.to_thread(work)


class TestSQLAlchemyOnSQLite(RaceContract):
    """SQLAlchemy on a `sqlite+aiosqlite` engine, the OpenAI Agents SDK's own test setup."""

    @pytest.fixture(autouse=True)
    async def _store(self, tmp_path: Path) -> AsyncIterator[None]:
        pytest.importorskip("aiosqlite")
        from turnstore.memory.sqlalchemy.store import SQLAlchemyStore

        url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"
        self.store = SQLAlchemyStore(url, "agent_sessions", "agent_messages", True)
        self.url = url
        yield
        await self.store.aclose()

    async def seed(self, session_ids: list[str]) -> None:
        # One transaction: a commit per session takes about 30 ms on a SQLite file.
        from sqlalchemy import insert
        from sqlalchemy.ext.asyncio import create_async_engine

        from turnstore.memory.sqlalchemy.schema import create_missing_tables, session_tables

        _, sessions, messages = session_tables("agent_sessions", "agent_messages")
        engine = create_async_engine(self.url)
        try:
            await create_missing_tables(engine, "agent_sessions", "agent_messages")
            async with engine.begin() as conn:
                await conn.execute(insert(sessions), [{"session_id": s} for s in session_ids])
                await conn.execute(
                    insert(messages),
                    [
                        {"session_id": s, "message_data": '{"role":"user","content":"s"}'}
                        for s in session_ids
                    ],
                )
        finally:
            await engine.dispose()

    async def test_export_all_under_a_writing_app_misses_no_session(self, tmp_path: Path) -> None:
        pytest.skip("the command line opens sqlite targets with SQLiteStore, not SQLAlchemy")


class _ServerSQL(RaceContract):
    url_fixture: str

    @pytest.fixture(autouse=True)
    async def _store(self, request: pytest.FixtureRequest) -> AsyncIterator[None]:
        url: str = request.getfixturevalue(self.url_fixture)
        tables = unique_tables("race")
        self.cli_args = [
            "--db",
            url,
            "--sessions-table",
            tables[0],
            "--messages-table",
            tables[1],
        ]
        self.store = open_session_store(
            url, sessions_table=tables[0], messages_table=tables[1], create=True
        )
        yield
        await self.store.aclose()
        from turnstore.memory.sqlalchemy.session import create_engine_for_url

        engine = create_engine_for_url(url)
        await drop_tables(engine, tables)
        await engine.dispose()


@pytest.mark.services
class TestPostgres(_ServerSQL):
    url_fixture = "postgres_url"


@pytest.mark.services
class TestMariaDB(_ServerSQL):
    url_fixture = "mysql_url"


class _Redis(RaceContract):
    url_fixture: str

    @pytest.fixture(autouse=True)
    async def _store(self, request: pytest.FixtureRequest) -> AsyncIterator[None]:
        from turnstore.memory.redis.session import create_client_for_url

        url: str = request.getfixturevalue(self.url_fixture)
        prefix = unique_prefix("race")
        self.cli_args = ["--db", url, "--key-prefix", prefix]
        self.store = open_session_store(url, key_prefix=prefix)
        yield
        await self.store.aclose()
        client = create_client_for_url(url)
        await delete_prefix(client, prefix)
        await client.aclose()


@pytest.mark.services
class TestRedis(_Redis):
    url_fixture = "redis_url"


@pytest.mark.services
class TestRedisCluster(_Redis):
    url_fixture = "redis_cluster_url"


@pytest.mark.services
async def test_prune_reads_whole_second_stamps_of_earlier_mariadb_tables(mysql_url: str) -> None:
    # Tables made by the previous release have DATETIME columns (whole seconds): a stamp may
    # stand for any moment of its second, so a session written just after a cutoff in the same
    # second is kept. New tables have DATETIME(6).
    from sqlalchemy import text

    from turnstore.memory.sqlalchemy.session import create_engine_for_url

    sessions, messages = unique_tables("old")
    engine = create_engine_for_url(mysql_url)
    async with engine.begin() as conn:
        await conn.execute(
            text(
                f"CREATE TABLE {sessions} (session_id VARCHAR(255) PRIMARY KEY, "
                "created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, "
                "updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP) "
                "CHARSET utf8mb4 COLLATE utf8mb4_bin"
            )
        )
        await conn.execute(
            text(
                f"CREATE TABLE {messages} (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                "session_id VARCHAR(255) NOT NULL, message_data LONGTEXT NOT NULL, "
                "created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, "
                f"FOREIGN KEY (session_id) REFERENCES {sessions} (session_id) ON DELETE CASCADE, "
                "INDEX (session_id, id)) CHARSET utf8mb4 COLLATE utf8mb4_bin"
            )
        )
    store = open_session_store(mysql_url, sessions_table=sessions, messages_table=messages)
    try:
        for attempt in range(5):
            session_id = f"late-{attempt}"
            mark = datetime.now(UTC)
            await asyncio.sleep(0.005)
            await store.write_records(session_id, [SessionRecord(session_id, _item("x"), None)])
            older_than = datetime.now(UTC) - mark + timedelta(milliseconds=1)
            await store.delete_idle_sessions(older_than)
            assert await store.get_info(session_id) is not None
        async with engine.connect() as conn:
            fractions = await conn.execute(text(f"SELECT MICROSECOND(updated_at) FROM {sessions}"))
            assert {row[0] for row in fractions} == {0}  # whole seconds, as those tables keep
        await asyncio.sleep(1.01)
        assert await store.delete_idle_sessions(0) >= 1
        assert await store.list_sessions() == []
    finally:
        await store.aclose()
        await drop_tables(engine, (sessions, messages))
        await engine.dispose()
