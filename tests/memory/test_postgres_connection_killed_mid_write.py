"""A write whose PostgreSQL connection is killed in the middle of 3,000 items ends whole or not at
all, and in bounded time, directly and behind PgBouncer in transaction mode (where the backend
the session's statement runs on is found by its query, not by an application name)."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from support.backends import drop_tables
from turnstore import SessionStorageError
from turnstore.extensions.memory import SQLAlchemySession


@pytest.mark.slow
@pytest.mark.parametrize("through", ["postgres", "pgbouncer"])
async def test_a_write_whose_backend_is_killed_ends_whole_or_not_at_all(
    request: pytest.FixtureRequest, postgres_url: str, through: str
) -> None:
    url: str = request.getfixturevalue(f"{through}_url")
    tag = uuid.uuid4().hex[:10]
    tables = (f"kill{tag}_s", f"kill{tag}_m")
    killer = create_async_engine(postgres_url, poolclass=NullPool)  # straight to the server
    session = SQLAlchemySession.from_url(
        "s",
        url,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
        command_timeout=5,
    )
    batch = [{"role": "user", "content": f"item {i} " + "x" * 200} for i in range(3000)]
    outcomes: list[str] = []
    try:
        await session.add_items([{"warm": True}])
        stored = 1
        for _ in range(8):
            add = asyncio.ensure_future(session.add_items(batch))
            await asyncio.sleep(random.uniform(0.005, 0.015))
            async with killer.connect() as conn:
                await conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE pid <> pg_backend_pid() AND query LIKE :table"
                    ),
                    {"table": f"%{tables[1]}%"},
                )
            # Far past the 5 s bound: a write still running then is a hang.
            done, _ = await asyncio.wait({add}, timeout=60)
            if not done:
                add.cancel()
                outcomes.append("hung")
                break
            error = add.exception()
            assert error is None or isinstance(error, SessionStorageError), repr(error)
            outcomes.append("error" if error else "stored")
            count = len(await session.get_items())  # usable after it, on a new connection
            assert count - stored in (0, 3000)  # whole or nothing
            assert (count - stored == 3000) == (error is None)
            stored = count
    finally:
        await session.aclose()
        await killer.dispose()
        dropper = create_async_engine(postgres_url, poolclass=NullPool)
        await drop_tables(dropper, tables)
        await dropper.dispose()
    assert "hung" not in outcomes
    assert len(outcomes) == 8
