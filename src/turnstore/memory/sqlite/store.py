"""The CLI's store for SQLite files written by `SQLiteSession`."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from ...exceptions import SessionSchemaError, SessionStorageError
from ..codec import encode_items, validate_table_names
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
from .advanced_branches import Branches, check_branch_id
from .advanced_schema import MAIN, AdvancedSQLiteSchema
from .schema import SQLiteSchema, quote_identifier, sqlite_time


class SQLiteStore(SessionStore):
    """A SQLite file written by `SQLiteSession`, read with the standard library off the loop."""

    backend = "sqlite"

    def __init__(self, path: str, sessions_table: str, messages_table: str, create: bool) -> None:

        sessions_table, messages_table = validate_table_names(sessions_table, messages_table)
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

    def _missing_tables(self, conn: sqlite3.Connection) -> list[str]:
        names = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                (self._sessions_table, self._messages_table),
            )
        }
        return [name for name in (self._sessions_table, self._messages_table) if name not in names]

    def _has_tables(self, conn: sqlite3.Connection) -> bool:
        return not self._missing_tables(conn)

    async def missing_tables(self) -> list[str]:
        """Return the sessions and messages tables that the file lacks."""
        result: list[str] = await self._call(self._missing_tables)
        return result

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
            return self._main_counts(conn, [self._info(row) for row in rows])

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
            return None if row is None else self._main_counts(conn, [self._info(row)])[0]

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
        """Return a session's items with the time each was added, oldest first.

        In a file of `AdvancedSQLiteSession`, the items of `main` (see `read_branch_records`).
        """
        return await self.read_branch_records(session_id, MAIN)

    # --- the branches of AdvancedSQLiteSession ------------------------------------------------

    def _refuse_sdk_branches(self, conn: sqlite3.Connection, session_id: str) -> None:
        sdk = self._advanced.sdk_branches(conn, session_id)
        if sdk:
            raise SessionSchemaError(
                f"session {session_id!r} in {self._path!r} has branches written by the OpenAI "
                f"Agents SDK's AdvancedSQLiteSession ({', '.join(map(repr, sdk))}), which "
                "turnstore does not read: their items would show up in 'main'"
            )

    def _branched(self, conn: sqlite3.Connection) -> bool:
        """Whether the file keeps `AdvancedSQLiteSession` branches (an older layout migrated)."""
        if not self._has_tables(conn):
            return False
        tables = self._advanced.existing_side_tables(conn)
        if self._advanced.items_table not in tables or self._advanced.branches_table not in tables:
            return False
        if not self._advanced.has_branch_column(conn):
            # As AdvancedSQLiteSession does on first use: add the column its reads search.
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._advanced.ensure_branch_column(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return True

    def _main_counts(self, conn: sqlite3.Connection, infos: list[SessionInfo]) -> list[SessionInfo]:
        """`infos` with each item count replaced by the items of `main`, in a branched file."""
        for info in infos:
            self._refuse_sdk_branches(conn, info.session_id)
        if not self._branched(conn):
            return infos
        conn.execute("BEGIN")
        try:
            return [
                dataclasses.replace(
                    info,
                    item_count=Branches(conn, self._advanced, info.session_id).count_rows(MAIN),
                )
                for info in infos
            ]
        finally:
            conn.execute("COMMIT")

    async def list_branches(self, session_id: str) -> list[str]:
        """The living branches of a session other than `main`, oldest first."""

        def work(conn: sqlite3.Connection) -> list[str]:
            if not self._branched(conn):
                return []
            branches = Branches(conn, self._advanced, session_id)
            return [name for name in branches.rows if name != MAIN and branches.exists(name)]

        result: list[str] = await self._call(work)
        return result

    async def read_branch_records(self, session_id: str, branch: str) -> list[SessionRecord]:
        """Return the items one branch reads (shared ones included), oldest first.

        Raises:
            ValueError: The session has no such branch.
            SessionSchemaError: The OpenAI Agents SDK's class branched the session.
        """
        check_branch_id(branch)

        def work(conn: sqlite3.Connection) -> list[SessionRecord]:
            if not self._has_tables(conn):
                return []
            self._refuse_sdk_branches(conn, session_id)
            if not self._branched(conn):
                if branch != MAIN:
                    raise ValueError(f"session {session_id!r} has no branch {branch!r}")
                rows = conn.execute(
                    f"SELECT id, message_data, created_at FROM {self._m} "
                    "WHERE session_id = ? ORDER BY id",
                    (session_id,),
                ).fetchall()
                return _records(session_id, rows, _parse_sqlite_time)
            conn.execute("BEGIN")
            try:
                branches = Branches(conn, self._advanced, session_id)
                if not branches.exists(branch):
                    raise ValueError(f"session {session_id!r} has no branch {branch!r}")
                rows = branches.read_rows(branch)
            finally:
                conn.execute("COMMIT")
            tag = None if branch == MAIN else branch
            return [
                SessionRecord(session_id, item, _parse_sqlite_time(created), tag)
                for _row_id, item, created in rows
            ]

        result: list[SessionRecord] = await self._call(work)
        return result

    async def write_records(
        self, session_id: str, records: list[SessionRecord], *, replace: bool = False
    ) -> None:
        """As `SessionStore.write_records`; records of a branch go back to that branch.

        A branch that the session does not have is created holding its records (it shares no
        history with another: each branch's records hold its whole history); records for a
        branch it has are appended to it. One transaction for the whole session.

        Raises:
            ValueError: A branch's name is taken by a branch the session deleted.
        """
        if all(record.branch is None for record in records):
            await super().write_records(session_id, records, replace=replace)
            return
        encoded = encode_items([record.item for record in records])
        now = datetime.now().astimezone()
        rows = [
            (record.branch or MAIN, data, sqlite_time(_utc(record.created_at or now)))
            for record, data in zip(records, encoded, strict=True)
        ]
        for name, _data, _stamp in rows:
            check_branch_id(name)
        advanced = self._advanced
        items = quote_identifier(advanced.items_table)

        def work(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                advanced.create(conn)
                if replace:
                    conn.execute(self._schema.delete_messages, (session_id,))
                    advanced.delete_side_rows(conn, session_id)
                self._refuse_sdk_branches(conn, session_id)
                conn.execute(self._schema.touch_session, (session_id,))
                branches = Branches(conn, advanced, session_id)
                for name in dict.fromkeys(name for name, _d, _s in rows if name != MAIN):
                    if name not in branches.rows:
                        conn.execute(
                            f"INSERT INTO {quote_identifier(advanced.branches_table)} "
                            "(session_id, branch_id) VALUES (?, ?)",
                            (session_id, name),
                        )
                    elif not branches.exists(name):
                        raise ValueError(
                            f"session {session_id!r} deleted a branch named {name!r}, and its "
                            "name stays reserved: import with --replace, or into another session"
                        )
                for name, data, stamp in rows:
                    row_id = conn.execute(
                        self._schema.insert_with_time, (session_id, data, stamp)
                    ).lastrowid
                    if name != MAIN:
                        conn.execute(
                            f"INSERT INTO {items} (message_id, session_id, branch_id) "
                            "VALUES (?, ?, ?)",
                            (row_id, session_id, name),
                        )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        await self._call(work)

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
