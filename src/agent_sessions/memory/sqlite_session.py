"""SQLiteSession: the embedded backend (temporary simple version; replaced by the writer-thread design)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from typing import Any

from ..items import TResponseInputItem
from .mutation import await_session_mutation
from .session import SessionABC
from .settings import SessionSettings, SessionSettingsLike, coerce_session_settings, resolve_session_limit

__all__ = ["SQLiteSession"]


class SQLiteSession(SessionABC):
    """A session stored in SQLite, in memory or in a file.

    Args:
        session_id: Identifies the conversation.
        db_path: `":memory:"` (default) or a file path.
        sessions_table: Name of the sessions table.
        messages_table: Name of the messages table.
        session_settings: Default settings for runs that use this session.
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings: SessionSettings | None = coerce_session_settings(session_settings)
        self._db_path = os.fspath(db_path)
        self._messages = messages_table
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self._db_path, check_same_thread=False, isolation_level=None)
            conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{self._messages}" (id INTEGER PRIMARY KEY, '
                "session_id TEXT NOT NULL, message_data TEXT NOT NULL)"
            )
            self._conn = conn
        return self._conn

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first."""
        n = resolve_session_limit(limit, self.session_settings)

        def read() -> list[Any]:
            conn = self._connect()
            rows = conn.execute(
                f'SELECT message_data FROM "{self._messages}" WHERE session_id=? ORDER BY id',
                (self.session_id,),
            ).fetchall()
            items = [json.loads(r[0]) for r in rows]
            return items if n is None else items[len(items) - n :] if n else []

        async with self._lock:
            return await asyncio.to_thread(read)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items."""
        data = [json.dumps(i) for i in items]

        def write() -> None:
            conn = self._connect()
            with conn:
                conn.executemany(
                    f'INSERT INTO "{self._messages}" (session_id, message_data) VALUES (?, ?)',
                    [(self.session_id, d) for d in data],
                )

        async with self._lock:
            await await_session_mutation(asyncio.to_thread(write))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item."""

        def pop() -> Any:
            conn = self._connect()
            row = conn.execute(
                f'DELETE FROM "{self._messages}" WHERE id = (SELECT max(id) FROM "{self._messages}" '
                "WHERE session_id=?) RETURNING message_data",
                (self.session_id,),
            ).fetchone()
            return None if row is None else json.loads(row[0])

        async with self._lock:
            result: TResponseInputItem | None = await await_session_mutation(asyncio.to_thread(pop))
            return result

    async def clear_session(self) -> None:
        """Remove every item of this session."""

        def clear() -> None:
            self._connect().execute(
                f'DELETE FROM "{self._messages}" WHERE session_id=?', (self.session_id,)
            )

        async with self._lock:
            await await_session_mutation(asyncio.to_thread(clear))
