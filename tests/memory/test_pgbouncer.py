"""SQLAlchemySession through a real PgBouncer in transaction pooling mode (127.0.0.1:6432).

The shared behaviour runs as `TestPgBouncerConformance`; the 8-process load test and the CLI
round trip run through PgBouncer too (tests/memory/test_backends_load.py, tests/cli).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from load_worker import run_writers, sql_tables
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from support.backends import SQLStorage, drop_tables, unique_tables
from turnstore import Session
from turnstore.extensions.memory import SQLAlchemySession
from turnstore.memory.sqlalchemy.engine import storage_error
from turnstore.memory.sqlalchemy.pgbouncer import behind_pooler, split_pgbouncer_flag
from turnstore.memory.sqlalchemy.session import create_engine_for_url
from turnstore.testing import SessionConformanceTests

pytestmark = pytest.mark.services


def without_flag(url: str) -> str:
    return make_url(url).difference_update_query(["pgbouncer"]).render_as_string(False)


@pytest.mark.parametrize(
    ("query", "flag"),
    [("", None), ("?pgbouncer=true", True), ("?pgbouncer=False", False), ("?pgbouncer=1", True)],
)
def test_the_url_flag_is_taken_out_before_the_driver_sees_it(query: str, flag: bool | None) -> None:
    url, found = split_pgbouncer_flag(make_url(f"postgresql+asyncpg://u@h:6432/db{query}"))
    assert found is flag
    assert "pgbouncer" not in url.query
    assert url.render_as_string(False) == "postgresql+asyncpg://u@h:6432/db"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql+asyncpg://u@h/db?pgbouncer=maybe", "must be true or false"),
        ("mysql+aiomysql://u@h/db?pgbouncer=true", "applies to PostgreSQL URLs"),
        ("postgresql+psycopg://u@h/db?pgbouncer=true", "asyncpg driver"),
    ],
)
def test_a_bad_flag_is_a_clear_error(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SQLAlchemySession.from_url("s", url)


def test_the_prepared_statement_error_points_to_the_pgbouncer_section() -> None:
    # What asyncpg raises behind PgBouncer without the flag; the hint names a real section
    # (tests/test_docstring_links.py checks every quoted section title against docs/*.md).
    cause = Exception('prepared statement "__asyncpg_stmt_1__" already exists')
    error = storage_error("add_items", "s", DBAPIError("INSERT ...", {}, cause))
    message = str(error)
    assert "add ?pgbouncer=true to the URL" in message
    assert 'the "PostgreSQL behind PgBouncer" section of the documentation' in message


@pytest.fixture
async def tables(postgres_url: str) -> AsyncIterator[tuple[str, str]]:
    names = sql_tables(f"pgb{uuid.uuid4().hex[:10]}")  # the load worker's naming
    yield names
    engine = create_engine_for_url(postgres_url)
    await drop_tables(engine, names)
    await engine.dispose()


async def prepared_statements(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        result = await conn.execute(text("SELECT count(*) FROM pg_prepared_statements"))
        return int(result.scalar_one())


@pytest.mark.parametrize("query", ["", "?pgbouncer=false"])
async def test_postgresql_directly_keeps_its_prepared_statements(
    postgres_url: str, tables: tuple[str, str], query: str
) -> None:
    session = SQLAlchemySession.from_url(
        "s",
        postgres_url + query,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
        pool_size=1,
        max_overflow=0,
    )
    try:
        for n in range(3):
            await session.add_items([{"n": n}])
            await session.get_items(2)
        assert behind_pooler(session.engine) is False
        # The one pooled connection still holds the named statements it prepared and cached.
        assert await prepared_statements(session.engine) >= 3
    finally:
        await session.aclose()


@pytest.mark.parametrize("flagged", [True, False], ids=["flag", "detected"])
async def test_through_pgbouncer_nothing_is_left_prepared(
    pgbouncer_url: str, tables: tuple[str, str], flagged: bool
) -> None:
    url = pgbouncer_url if flagged else without_flag(pgbouncer_url)
    session = SQLAlchemySession.from_url(
        "s", url, create_tables=True, sessions_table=tables[0], messages_table=tables[1]
    )
    try:
        assert behind_pooler(session.engine) is (True if flagged else None)
        await session.add_items([{"n": 1}, {"n": 2}])
        assert await session.pop_item() == {"n": 2}
        assert await session.get_items() == [{"n": 1}]
        assert behind_pooler(session.engine) is True
        assert session.engine.url.query == {}
    finally:
        await session.aclose()


async def test_concurrent_processes_through_pgbouncer_detected_without_the_flag(
    pgbouncer_url: str, tables: tuple[str, str]
) -> None:
    """6 processes adding and reading through PgBouncer, no URL flag: detected, nothing is lost."""
    namespace = tables[0].removesuffix("_s")
    url = without_flag(pgbouncer_url)
    await run_writers("pgbouncer", url, namespace, 6, 60)
    total = 0
    for n in range(4):
        async with SQLAlchemySession.from_url(
            f"shared-{n}", url, sessions_table=tables[0], messages_table=tables[1]
        ) as session:
            total += len(await session.get_items())
    assert total == 6 * 60 * 2


class TestPgBouncerConformance(SQLStorage, SessionConformanceTests):
    """The shared session contract on PostgreSQL through PgBouncer in transaction mode."""

    @pytest.fixture(autouse=True)
    async def _sql(self, pgbouncer_url: str, postgres_url: str) -> AsyncIterator[None]:
        self.engine = create_engine_for_url(pgbouncer_url, pool_size=10, max_overflow=50)
        self.tables = unique_tables("pgb")
        yield
        await self.engine.dispose()
        direct = create_engine_for_url(postgres_url)
        await drop_tables(direct, self.tables)
        await direct.dispose()

    async def make_session(self, session_id: str) -> Session:
        return self.sql_session(session_id)
