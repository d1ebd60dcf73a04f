"""The CLI's store for SQLite files written by `SQLiteSession`."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from ...exceptions import SessionStorageError
from ..codec import validate_table_names
from ..session import Session
from ..store import (
    EncodedWrite,
    SessionInfo,
    SessionRecord,
    SessionStats,
    SessionStore,
    _parse_sqlite_time,
    _records,
    _utc,
)
from .advanced_schema import AdvancedSQLiteSchema
from .schema import SQLiteSchema, quote_identifier, sqlite_time


class SQLiteStore(SessionStore):
    """A SQLite file written by `SQLiteSession`, read with the standard library off the loop."""

    backend = "sqlite"

    def __init__(self, path: str, sessions_table: str, messages_table: str, create: bool) -> None:

        validate_table_names(sessions_table, messages_table)
        if path in ("", ":memory:"):
            raise ValueError("an in-memory SQLite database cannot be opened from another process")
        file = Path(path)
        if file.is_dir():
            raise IsADirectoryError(f"{path!r} is a directory: give the path of a SQLite file")
        if not file.parent.is_dir():
            raise FileNotFoundError(
                f"the directory {str(file.parent)!r} of the SQLite database {path!r} does not exist"
            )
        if not create and not file.is_file():
            raise FileNotFoundError(f"no SQLite database at {path!r}")
        self.target = path
        self._path = path
        self._schema = SQLiteSchema(sessions_table, messages_table)
        self._advanced = AdvancedSQLiteSchema(sessions_table, messages_table)
        self._s = quote_identifier(sessions_table)
        self._m = quote_identifier(messages_table)
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        self._lock = asyncio.Lock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 30000")
        return conn

    def _has_tables(self, conn: sqlite3.Connection) -> bool:
        names = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                (self._sessions_table, self._messages_table),
            )
        }
        return len(names) == 2

    async def _call(self, work: Any) -> Any:
        def run() -> Any:
            conn = self._connect()
            try:
                return work(conn)
            finally:
                conn.close()

        try:
            async with self._lock:
                return await asyncio.to_thread(run)
        except sqlite3.Error as exc:
            raise SessionStorageError(f"SQLite file {self._path!r}: {exc}") from exc

    def _info_sql(self) -> str:
        return (
            f"SELECT s.session_id, s.created_at, s.updated_at, "
            f"(SELECT count(*) FROM {self._m} m WHERE m.session_id = s.session_id) "
            f"FROM {self._s} s"
        )

    @staticmethod
    def _info(row: tuple[Any, ...]) -> SessionInfo:
        return SessionInfo(
            row[0], int(row[3]), _parse_sqlite_time(row[1]), _parse_sqlite_time(row[2])
        )

    async def _list_sessions(self, offset: int, limit: int, prefix: str) -> list[SessionInfo]:
        """Return sessions, the most recently active first."""

        def work(conn: sqlite3.Connection) -> list[SessionInfo]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                f"{self._info_sql()} WHERE substr(s.session_id, 1, length(?)) = ? "
                "ORDER BY s.updated_at DESC, s.session_id LIMIT ? OFFSET ?",
                (prefix, prefix, limit, offset),
            ).fetchall()
            return [self._info(row) for row in rows]

        result: list[SessionInfo] = await self._call(work)
        return result

    async def _sessions_after(
        self, after: str | None, limit: int, prefix: str
    ) -> list[SessionInfo]:
        """Sessions with an id greater than `after`, by id (the primary key's index)."""

        def work(conn: sqlite3.Connection) -> list[SessionInfo]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                f"{self._info_sql()} WHERE (? IS NULL OR s.session_id > ?) "
                "AND substr(s.session_id, 1, length(?)) = ? ORDER BY s.session_id LIMIT ?",
                (after, after, prefix, prefix, limit),
            ).fetchall()
            return [self._info(row) for row in rows]

        result: list[SessionInfo] = await self._call(work)
        return result

    def _existing_side_tables(self, conn: sqlite3.Connection) -> list[str]:
        """The side tables (see `AdvancedSQLiteSchema.side_tables`) that exist in the file."""
        return self._advanced.existing_side_tables(conn)

    async def _delete_idle_before(self, cutoff: datetime) -> int:
        """Delete every session idle since before `cutoff`, in one transaction."""
        params = self._schema.idle_cutoff(cutoff)
        where = self._schema.idle_before

        def work(conn: sqlite3.Connection) -> int:
            if not self._has_tables(conn):
                return 0
            # One write transaction: no session can be written between the check and the
            # delete, and a write after it starts waits, then lands in a fresh session.
            conn.execute("BEGIN IMMEDIATE")
            try:
                idle = f"(SELECT session_id FROM {self._s} WHERE {where})"
                for table in (self._m, *map(quote_identifier, self._existing_side_tables(conn))):
                    conn.execute(f"DELETE FROM {table} WHERE session_id IN {idle}", params)
                deleted = conn.execute(f"DELETE FROM {self._s} WHERE {where}", params).rowcount
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return int(deleted)

        result: int = await self._call(work)
        return result

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist."""

        def work(conn: sqlite3.Connection) -> SessionInfo | None:
            if not self._has_tables(conn):
                return None
            row = conn.execute(
                f"{self._info_sql()} WHERE s.session_id = ?", (session_id,)
            ).fetchone()
            return None if row is None else self._info(row)

        result: SessionInfo | None = await self._call(work)
        return result

    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""

        def work(conn: sqlite3.Connection) -> SessionStats:
            if not self._has_tables(conn):
                return SessionStats("sqlite", 0, 0, None)
            sessions, last = conn.execute(
                f"SELECT count(*), max(updated_at) FROM {self._s}"
            ).fetchone()
            (items,) = conn.execute(f"SELECT count(*) FROM {self._m}").fetchone()
            return SessionStats("sqlite", sessions, items, _parse_sqlite_time(last))

        result: SessionStats = await self._call(work)
        return result

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first."""

        def work(conn: sqlite3.Connection) -> list[SessionRecord]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                f"SELECT id, message_data, created_at FROM {self._m} "
                "WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            return _records(session_id, rows, _parse_sqlite_time)

        result: list[SessionRecord] = await self._call(work)
        return result

    async def _write_encoded(self, write: EncodedWrite) -> None:
        session_id = write.session_id
        stamps = [sqlite_time(_utc(at)) for at in write.created]

        def work(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._schema.create(conn)
                if write.replace:
                    tables = (self._schema.messages_table, *self._existing_side_tables(conn))
                    for table in tables:
                        conn.execute(
                            f"DELETE FROM {quote_identifier(table)} WHERE session_id = ?",
                            (session_id,),
                        )
                conn.execute(self._schema.touch_session, (session_id,))
                conn.executemany(
                    self._schema.insert_with_time,
                    [
                        (session_id, data, stamp)
                        for data, stamp in zip(write.encoded, stamps, strict=True)
                    ],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        await self._call(work)

    def session(self, session_id: str) -> Session:
        """Return a `SQLiteSession` on the same file."""
        from .session import SQLiteSession

        return SQLiteSession(
            session_id,
            self._path,
            sessions_table=self._sessions_table,
            messages_table=self._messages_table,
        )
