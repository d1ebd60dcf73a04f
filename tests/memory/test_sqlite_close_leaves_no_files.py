"""Closing a SQLite file's sessions and stores closes every connection to it, one at a time.

SQLite deletes a WAL database's `-wal` and `-shm` files when its last connection closes, but
only if that connection sees itself last: two connections closing at the same moment (the
reader threads of a database stop together) could each see the other still open, and both left
the files behind.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from turnstore import SQLiteSession
from turnstore.memory.sqlite import database
from turnstore.memory.sqlite.store import SQLiteStore


def _sqlite_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("turnstore-sqlite-")]


async def _use_both_readers(db: database.SQLiteDatabase) -> None:
    """Run one read on each reader thread at the same time: both hold a connection after it."""
    both = threading.Barrier(2, timeout=30)

    def count(conn: sqlite3.Connection) -> int:
        both.wait()
        (n,) = conn.execute("SELECT count(*) FROM agent_messages").fetchone()
        return int(n)

    jobs = [db.enqueue(count, write=False) for _ in range(2)]
    assert await asyncio.gather(*(job.future for job in jobs)) == [20, 20]


async def _filled(tmp_path: Path) -> Path:
    path = tmp_path / "chats.db"
    async with SQLiteSession("s", path) as session:
        await session.add_items([{"role": "user", "content": str(n)} for n in range(20)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db"]
    return path


async def test_each_close_of_a_session_or_store_leaves_only_the_database_file(
    tmp_path: Path,
) -> None:
    path = await _filled(tmp_path)
    for round_ in range(100):
        # Both reader threads (and, for a session, the writer) hold a connection; closing
        # stops them together.
        if round_ % 2:
            session = SQLiteSession("s", path)
            assert len(await session.get_items()) == 20
            db = session._db
            await _use_both_readers(db)
            await session.aclose()
        else:
            store = SQLiteStore(str(path), "agent_sessions", "agent_messages", False)
            assert await store.missing_tables() == []
            db = store._db
            await _use_both_readers(db)
            await store.aclose()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db"], round_
        assert db._connections == []
        assert _sqlite_threads() == []


class _Watched(sqlite3.Connection):
    """A connection that records how many connections are inside `close()` at once."""

    lock = threading.Lock()
    closing = 0
    most = 0

    def close(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.closing += 1
            cls.most = max(cls.most, cls.closing)
        try:
            time.sleep(0.02)  # widen the window in which another close could overlap
            super().close()
        finally:
            with cls.lock:
                cls.closing -= 1


async def test_the_threads_of_a_database_close_their_connections_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await _filled(tmp_path)
    connect: Any = functools.partial(sqlite3.connect, factory=_Watched)
    monkeypatch.setattr(database.sqlite3, "connect", connect)
    _Watched.most = 0
    for _ in range(3):
        session = SQLiteSession("s", path)
        assert len(await session.get_items()) == 20
        await _use_both_readers(session._db)
        opened = list(session._db._connections)
        assert len(opened) == 3  # the writer and both readers
        assert all(isinstance(conn, _Watched) for conn in opened)
        await session.aclose()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db"]
    assert _Watched.most == 1


def test_a_plain_close_from_synchronous_code_leaves_only_the_database_file(
    tmp_path: Path,
) -> None:
    path = asyncio.run(_filled(tmp_path))
    session = SQLiteSession("s", path)
    assert len(asyncio.run(session.get_items())) == 20
    session.close()  # as the SDK's: with no loop running it waits for the connections to close
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db"]
    assert _sqlite_threads() == []
