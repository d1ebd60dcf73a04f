"""`replace_history` against a storage another client keeps locked.

Nothing here may hang: PostgreSQL bounds the wait with `command_timeout`, and a cancelled
SQLite write that still waits for another connection's lock gives up, writing nothing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from support.items import user
from support.sqlite_rows import trace_sqlite_calls, writer_meets_the_lock
from turnstore import SessionStorageError, SQLiteSession
from turnstore.extensions.memory import SQLAlchemySession
from turnstore.memory.sqlalchemy.session import create_engine_for_url


@pytest.mark.parametrize("which", ["postgres_url", "pgbouncer_url"])
async def test_replace_behind_a_held_row_lock_raises_within_command_timeout(
    request: pytest.FixtureRequest, which: str
) -> None:
    url = request.getfixturevalue(which)
    sid = f"locked-{uuid.uuid4().hex}"
    # 3 s: the locked replace must give up; every other call, on a loaded machine, must not.
    session = SQLAlchemySession.from_url(sid, url, create_tables=True, command_timeout=3)
    locker = create_engine_for_url(url)  # handles ?pgbouncer=true
    try:
        await session.add_items([user("a"), user("b")])
        snapshot = await session.snapshot_history()
        async with locker.connect() as conn:
            transaction = await conn.begin()
            await conn.execute(
                text("SELECT 1 FROM agent_sessions WHERE session_id = :sid FOR UPDATE"),
                {"sid": sid},
            )
            with pytest.raises(SessionStorageError, match="command_timeout"):
                await session.replace_history(snapshot, [user("S")])
            await transaction.rollback()
        assert await session.get_items() == [user("a"), user("b")]
        assert await session.replace_history(snapshot, [user("S")]) is True
        assert await session.get_items() == [user("S")]
        await session.clear_session()
    finally:
        await locker.dispose()
        await session.aclose()


async def test_cancelled_sqlite_replace_behind_another_writer_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "locked.db"
    seen = trace_sqlite_calls(monkeypatch)
    async with SQLiteSession("s", path) as session:
        await session.add_items([user("a"), user("b")])
        snapshot = await session.snapshot_history()
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
            met = asyncio.create_task(writer_meets_the_lock(seen))
            task = asyncio.create_task(session.replace_history(snapshot, [user("S")]))
            await met
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert await session.get_items() == [user("a"), user("b")]
        assert await session.replace_history(snapshot, [user("S")]) is True
        assert await session.get_items() == [user("S")]
