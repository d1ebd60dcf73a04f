"""The CLI's store for SQLite files written by `SQLiteSession`.

Every job runs through the file's `SQLiteDatabase` (`database.py`), the one way into a SQLite
file: the same thread, busy timeout, WAL set-up and fork gate as the sessions on that file. Its
SQL lives in `schema.py` and `advanced/schema.py`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from ...exceptions import SessionClosedError
from .._store_helpers import parse_sqlite_time, utc
from ..closing import warn_if_unclosed
from ..codec import encode_items, validate_table_names
from ..mutation import await_session_mutation
from ..records import EncodedWrite, SessionInfo, SessionRecord, SessionStats, session_times_of
from ..session import Session
from ..store import SessionStore
from .advanced.branches import Branches, check_branch_id
from .advanced.schema import MAIN, AdvancedSQLiteSchema
from .database import Work, acquire_database, release_now
from .schema import SQLiteSchema, sqlite_time

__all__ = ["SQLiteStore"]


class SQLiteStore(SessionStore):
    """A SQLite file written by `SQLiteSession`, read and written by the file's database thread."""

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
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        self._closed = False
        # Shared with every session on the file; nothing touches the file until the first job.
        self._db = acquire_database(path)
        self._finalizer = warn_if_unclosed(self, f"the session store on {path!r}")

    async def aclose(self) -> None:
        """Release the file's database (its thread stops when no session uses it either)."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        release = release_now(self._db)
        if release is not None:
            await release()

    async def _run(self, work: Work, *, write: bool) -> Any:
        """Run `work` as one transaction (a write transaction if `write`) on the file's thread."""
        if self._closed:
            raise SessionClosedError(f"the store on the SQLite file {self._path!r} is closed")
        job = self._db.enqueue(work, write=write)
        if write:
            # As a session's write: a cancelled caller waits for a started write to commit.
            return await await_session_mutation(job.future, on_cancel=job.abandon)
        return await job.future

    async def _read(self, work: Work) -> Any:
        """Run `work` as a read; first give an older branched file its branch column."""
        try:
            return await self._run(work, write=False)
        except _NoBranchColumn:
            # As AdvancedSQLiteSession does on first use: add the column its reads search.
            await self._run(self._add_branch_column, write=True)
            return await self._run(work, write=False)

    def _has_tables(self, conn: sqlite3.Connection) -> bool:
        return not self._schema.missing_tables(conn)

    async def missing_tables(self) -> list[str]:
        """Return the sessions and messages tables that the file lacks."""
        result: list[str] = await self._run(self._schema.missing_tables, write=False)
        return result

    @staticmethod
    def _info(row: tuple[Any, ...]) -> SessionInfo:
        return SessionInfo(
            row[0], int(row[3]), parse_sqlite_time(row[1]), parse_sqlite_time(row[2])
        )

    async def _list_sessions(self, offset: int, limit: int, prefix: str) -> list[SessionInfo]:
        """Return sessions, the most recently active first."""

        def work(conn: sqlite3.Connection) -> list[SessionInfo]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                self._schema.select_by_activity, (prefix, prefix, limit, offset)
            ).fetchall()
            return self._main_counts(conn, [self._info(row) for row in rows])

        result: list[SessionInfo] = await self._read(work)
        return result

    async def _sessions_after(
        self, after: str | None, limit: int, prefix: str
    ) -> list[SessionInfo]:
        """Sessions with an id greater than `after`, by id (the primary key's index)."""

        def work(conn: sqlite3.Connection) -> list[SessionInfo]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                self._schema.select_after_id, (after, after, prefix, prefix, limit)
            ).fetchall()
            return [self._info(row) for row in rows]

        result: list[SessionInfo] = await self._run(work, write=False)
        return result

    async def _delete_idle_before(self, cutoff: datetime) -> int:
        """Delete every session idle since before `cutoff`, in one transaction."""

        def work(conn: sqlite3.Connection) -> int:
            # One write transaction: no session can be written between the check and the
            # delete, and a write after it starts waits, then lands in a fresh session.
            if not self._has_tables(conn):
                return 0
            return self._schema.delete_idle(conn, cutoff)

        result: int = await self._run(work, write=True)
        return result

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist."""

        def work(conn: sqlite3.Connection) -> SessionInfo | None:
            if not self._has_tables(conn):
                return None
            row = conn.execute(self._schema.select_one_info, (session_id,)).fetchone()
            return None if row is None else self._main_counts(conn, [self._info(row)])[0]

        result: SessionInfo | None = await self._read(work)
        return result

    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""

        def work(conn: sqlite3.Connection) -> SessionStats:
            if not self._has_tables(conn):
                return SessionStats("sqlite", 0, 0, None)
            sessions, last, items = conn.execute(self._schema.select_totals).fetchone()
            return SessionStats("sqlite", sessions, items, parse_sqlite_time(last))

        result: SessionStats = await self._run(work, write=False)
        return result

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first.

        In a file of `AdvancedSQLiteSession`, the items of `main` (see `read_branch_records`).
        """
        return await self.read_branch_records(session_id, MAIN)

    # --- the branches of AdvancedSQLiteSession ------------------------------------------------

    def _has_branch_tables(self, conn: sqlite3.Connection) -> bool:
        if not self._has_tables(conn):
            return False
        tables = self._advanced.existing_side_tables(conn)
        return self._advanced.items_table in tables and self._advanced.branches_table in tables

    def _branched(self, conn: sqlite3.Connection) -> bool:
        """Whether the file keeps `AdvancedSQLiteSession` branches (a read).

        Raises:
            _NoBranchColumn: It does, in an older layout that `_add_branch_column` migrates.
        """
        if not self._has_branch_tables(conn):
            return False
        if not self._advanced.has_branch_column(conn):
            raise _NoBranchColumn
        return True

    def _add_branch_column(self, conn: sqlite3.Connection) -> None:
        """A write: add the branch column to a branched file that lacks it."""
        if self._has_branch_tables(conn) and not self._advanced.has_branch_column(conn):
            self._advanced.ensure_branch_column(conn)

    def _main_counts(self, conn: sqlite3.Connection, infos: list[SessionInfo]) -> list[SessionInfo]:
        """`infos` with each item count replaced by the items of `main`, in a branched file."""
        for info in infos:
            self._advanced.check_session(conn, info.session_id)
        if not self._branched(conn):
            return infos
        return [
            dataclasses.replace(
                info, item_count=Branches(conn, self._advanced, info.session_id).count_rows(MAIN)
            )
            for info in infos
        ]

    async def list_branches(self, session_id: str) -> list[str]:
        """The living branches of a session other than `main`, oldest first."""

        def work(conn: sqlite3.Connection) -> list[str]:
            if not self._branched(conn):
                return []
            branches = Branches(conn, self._advanced, session_id)
            return [name for name in branches.rows if name != MAIN and branches.exists(name)]

        result: list[str] = await self._read(work)
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
            self._advanced.check_session(conn, session_id)
            if not self._branched(conn):
                if branch != MAIN:
                    raise ValueError(f"session {session_id!r} has no branch {branch!r}")
                rows = conn.execute(self._schema.select_records, (session_id,)).fetchall()
                return self._decode_records(session_id, rows, parse_sqlite_time)
            branches = Branches(conn, self._advanced, session_id)
            if not branches.exists(branch):
                raise ValueError(f"session {session_id!r} has no branch {branch!r}")
            tag = None if branch == MAIN else branch
            return [
                SessionRecord(session_id, item, parse_sqlite_time(created), tag)
                for _row_id, item, created in branches.read_rows(branch)
            ]

        result: list[SessionRecord] = await self._read(work)
        return result

    def check_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """As `SessionStore.check_records`: a SQLite file keeps branches (names are checked)."""
        for name in {record.branch for record in records if record.branch is not None}:
            check_branch_id(name)

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
        write = EncodedWrite(
            session_id,
            encoded,
            [utc(record.created_at or now) for record in records],
            replace,
            *session_times_of(records),
        )
        rows = [
            (record.branch or MAIN, data, sqlite_time(at))
            for record, data, at in zip(records, encoded, write.created, strict=True)
        ]
        self.check_records(session_id, records)
        advanced = self._advanced

        def work(conn: sqlite3.Connection) -> None:
            advanced.create(conn)
            if replace:
                conn.execute(advanced.delete_messages, (session_id,))
                advanced.delete_side_rows(conn, session_id)
            self._advanced.check_session(conn, session_id)
            _touch(conn, advanced, write)
            branches = Branches(conn, advanced, session_id)
            for name in dict.fromkeys(name for name, _d, _s in rows if name != MAIN):
                if name not in branches.rows:
                    conn.execute(advanced.insert_branch, (session_id, name))
                elif not branches.exists(name):
                    raise ValueError(
                        f"session {session_id!r} deleted a branch named {name!r}, and its "
                        "name stays reserved: import with --replace, or into another session"
                    )
            for name, data, stamp in rows:
                row_id = conn.execute(
                    advanced.insert_with_time, (session_id, data, stamp)
                ).lastrowid
                if name != MAIN:
                    conn.execute(advanced.insert_branch_item, (row_id, session_id, name))

        await self._run(work, write=True)

    async def _write_encoded(self, write: EncodedWrite) -> None:
        session_id = write.session_id
        stamps = [sqlite_time(utc(at)) for at in write.created]
        schema = self._schema

        def work(conn: sqlite3.Connection) -> None:
            schema.create(conn)
            if write.replace:
                conn.execute(schema.delete_messages, (session_id,))
                schema.delete_side_rows(conn, session_id)
            _touch(conn, schema, write)
            conn.executemany(
                schema.insert_with_time,
                [
                    (session_id, data, stamp)
                    for data, stamp in zip(write.encoded, stamps, strict=True)
                ],
            )

        await self._run(work, write=True)

    def session(self, session_id: str) -> Session:
        """Return a `SQLiteSession` on the same file."""
        from .session import SQLiteSession

        return SQLiteSession(
            session_id,
            self._path,
            sessions_table=self._sessions_table,
            messages_table=self._messages_table,
        )


def _touch(conn: sqlite3.Connection, schema: SQLiteSchema, write: EncodedWrite) -> None:
    """Record a write to the session (its commit is its last activity), or the export's times.

    A write that carries the session's times (an import of an export) stores them instead.
    """
    session_id = write.session_id
    if write.session_created is None and write.last_activity is None:
        schema.touch(conn, [session_id])
        return
    existing = None
    if not write.replace:
        row = conn.execute(schema.select_one_info, (session_id,)).fetchone()
        if row is not None:
            existing = (parse_sqlite_time(row[1]), parse_sqlite_time(row[2]))
    created, last = write.session_times(existing)
    if last is None:
        schema.touch(conn, [session_id])  # stamped as the transaction commits
    conn.execute(
        schema.set_session_times,
        (
            session_id,
            None if created is None else sqlite_time(created),
            None if last is None else sqlite_time(last),
        ),
    )


class _NoBranchColumn(Exception):
    """A branched file lacks the messages table's `branch_id`: a write adds it first."""
