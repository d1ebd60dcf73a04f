"""`replace_history` against a storage another client keeps locked.

Nothing here may hang: PostgreSQL bounds the wait with `command_timeout`, and a cancelled
SQLite write that still waits for another connection's lock gives up, writing nothing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from turnstore import SessionStorageError, SQLiteSession
from turnstore.extensions.memory import SQLAlchemySession
from turnstore.memory.sqlalchemy.session import create_engine_for_url


def msg(text_: str) -> dict[str, Any]:
    return {"role": "user", "content": text_}


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
        await session.add_items([msg("a"), msg("b")])
        snapshot = await session.snapshot_history()
        async with locker.connect() as conn:
            transaction = await conn.begin()
            await conn.execute(
                text("SELECT 1 FROM agent_sessions WHERE session_id = :sid FOR UPDATE"),
                {"sid": sid},
            )
            with pytest.raises(SessionStorageError, match="command_timeout"):
                await session.replace_history(snapshot, [msg("S")])
            await transaction.rollback()
        assert await session.get_items() == [msg("a"), msg("b")]
        assert await session.replace_history(snapshot, [msg("S")]) is True
        assert await session.get_items() == [msg("S")]
        await session.clear_session()
    finally:
        await locker.dispose()
        await session.aclose()


async def test_cancelled_sqlite_replace_behind_another_writer_writes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    async with SQLiteSession("s", path) as session:
        await session.add_items([msg("a"), msg("b")])
        snapshot = await session.snapshot_history()
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
            task = asyncio.create_task(session.replace_history(snapshot, [msg("S")]))
            await asyncio.sleep(0.2)  # let the writer meet the lock (no timing is asserted)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert await session.get_items() == [msg("a"), msg("b")]
        assert await session.replace_history(snapshot, [msg("S")]) is True
        assert await session.get_items() == [msg("S")]
