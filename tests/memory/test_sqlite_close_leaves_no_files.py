"""Closing a SQLite file's sessions and stores closes its connection and stops its thread.

SQLite deletes a WAL database's `-wal` and `-shm` files when its last connection closes: once
the last session or store on a file is closed, only the database file is left.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from turnstore import SQLiteSession
from turnstore.memory.sqlite.store import SQLiteStore


def _sqlite_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("turnstore-sqlite-")]


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
    for round_ in range(40):
        if round_ % 2:
            session = SQLiteSession("s", path)
            assert len(await session.get_items()) == 20
            await session.aclose()
        else:
            store = SQLiteStore(str(path), "agent_sessions", "agent_messages", False)
            assert await store.missing_tables() == []
            await store.aclose()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db"], round_
        assert _sqlite_threads() == []


def test_a_plain_close_from_synchronous_code_leaves_only_the_database_file(
    tmp_path: Path,
) -> None:
    path = asyncio.run(_filled(tmp_path))
    session = SQLiteSession("s", path)
    assert len(asyncio.run(session.get_items())) == 20
    session.close()  # as the SDK's: with no loop running it waits for the connection to close
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db"]
    assert _sqlite_threads() == []
