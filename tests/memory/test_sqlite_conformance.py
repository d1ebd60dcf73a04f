"""The shared session contract, run on in-memory and file SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from support.sqlite_rows import corrupt_newest_row, count_rows
from turnstore import Session, SQLiteSession
from turnstore.testing import SessionConformanceTests


class TestInMemorySQLite(SessionConformanceTests):
    shared_storage = False

    async def make_session(self, session_id: str) -> Session:
        return SQLiteSession(session_id)

    async def corrupt_latest_row(self, session: Session) -> None:
        assert isinstance(session, SQLiteSession)

        # An in-memory database lives on the session's writer thread: corrupt it there.
        def corrupt(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE agent_messages SET message_data = 'not json{' WHERE id = "
                "(SELECT max(id) FROM agent_messages WHERE session_id = ?)",
                (session.session_id,),
            )

        await session._write(corrupt)

    async def stored_row_count(self, session: Session) -> int:
        assert isinstance(session, SQLiteSession)

        def count(conn: sqlite3.Connection) -> int:
            query = "SELECT count(*) FROM agent_messages WHERE session_id = ?"
            return int(conn.execute(query, (session.session_id,)).fetchone()[0])

        return int(await session._read(count))


class TestFileSQLite(SessionConformanceTests):
    @pytest.fixture(autouse=True)
    def _db_file(self, tmp_path: Path) -> None:
        self.db_path = str(tmp_path / "conformance.db")

    async def make_session(self, session_id: str) -> Session:
        return SQLiteSession(session_id, self.db_path)

    async def corrupt_latest_row(self, session: Session) -> None:
        import asyncio

        await asyncio.to_thread(corrupt_newest_row, self.db_path, session.session_id)

    async def stored_row_count(self, session: Session) -> int:
        import asyncio

        return await asyncio.to_thread(count_rows, self.db_path, session.session_id)
