"""The shared session contract, run on OpenAIResponsesCompactionSession wrapping file SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from turnstore import OpenAIResponsesCompactionSession, Session, SQLiteSession
from turnstore.testing import SessionConformanceTests


class TestCompactionOverSQLite(SessionConformanceTests):
    @pytest.fixture(autouse=True)
    def _database(self, tmp_path: Path) -> None:
        self.db_path = tmp_path / "conformance.db"

    async def make_session(self, session_id: str) -> Session:
        store = SQLiteSession(session_id, self.db_path)
        return OpenAIResponsesCompactionSession(session_id, store, model="gpt-4.1")

    async def close_session(self, session: Session) -> None:
        assert isinstance(session, OpenAIResponsesCompactionSession)
        underlying = session.underlying_session
        assert isinstance(underlying, SQLiteSession)
        await underlying.aclose()

    async def corrupt_latest_row(self, session: Session) -> None:
        with sqlite3.connect(self.db_path) as conn:
            conn.execute(
                "UPDATE agent_messages SET message_data = 'not json{' WHERE id = "
                "(SELECT max(id) FROM agent_messages WHERE session_id = ?)",
                (session.session_id,),
            )
        conn.close()
