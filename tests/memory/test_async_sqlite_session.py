"""AsyncSQLiteSession: the OpenAI Agents SDK's class name and constructor on SQLiteSession."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnstore import Session, SessionClosedError, SQLiteSession
from turnstore.extensions.memory import AsyncSQLiteSession
from turnstore.testing import SessionConformanceTests


class TestAsyncSQLiteSessionConformance(SessionConformanceTests):
    @pytest.fixture(autouse=True)
    def _db_file(self, tmp_path: Path) -> None:
        self.db_path = tmp_path / "async.db"

    async def make_session(self, session_id: str) -> Session:
        return AsyncSQLiteSession(session_id, self.db_path)


async def test_the_sdk_positional_constructor_and_a_shared_file(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    # The SDK's signature: table names and settings may be given by position.
    ours = AsyncSQLiteSession("s", db, "my_sessions", "my_messages", {"limit": 1})
    await ours.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert await ours.get_items() == [{"role": "user", "content": "b"}]
    # Not a second engine: SQLiteSession reads the same tables in the same file.
    plain = SQLiteSession("s", db, sessions_table="my_sessions", messages_table="my_messages")
    assert len(await plain.get_items()) == 2
    await plain.aclose()
    await ours.aclose()
    with pytest.raises(SessionClosedError, match="AsyncSQLiteSession is closed"):
        await ours.get_items()
