"""The tables of `SQLiteSession`: identifiers, schema version, and the SQL run on them.

Layout (version 1; the default names shown, every name configurable through the first two):

```text
agent_sessions          session_id TEXT PRIMARY KEY, created_at, updated_at
agent_messages          id INTEGER PRIMARY KEY AUTOINCREMENT, session_id, message_data (JSON),
                        created_at
                        index idx_agent_messages_session_id (session_id, id)
agent_messages_archive  rows replaced by compaction: id, session_id, message_data,
                        created_at (of the original row), archived_at
                        index idx_agent_messages_archive_session_id (session_id, id)
```

The first two tables have the same shape as the OpenAI Agents SDK's `SQLiteSession`, so a file it
wrote is adopted in place. `PRAGMA user_version` records the schema version of the file: a later
release migrates a file in place from that number, and this release refuses (with
`SessionSchemaError`) a file whose version is newer than it understands.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from ...exceptions import SessionSchemaError

__all__ = [
    "NOW",
    "SCHEMA_VERSION",
    "SQLiteSchema",
    "forget_touched",
    "quote_identifier",
    "sqlite_time",
    "stamp_touched",
    "table_columns",
]

SCHEMA_VERSION = 1
"""The schema version this release writes and reads (`PRAGMA user_version`)."""

NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
"""SQLite's clock to the millisecond (`2026-12-01 15:00:00.123`, UTC), for `updated_at`.

`CURRENT_TIMESTAMP` keeps whole seconds only (`2026-12-01 15:00:00`): a session written at
15:00:00.9 would read as idle to a prune whose cutoff is 15:00:00.5. Rows written by earlier
releases and by the OpenAI Agents SDK still hold such stamps: `idle_before` reads them as
"some time in that second".
"""


def sqlite_time(value: datetime) -> str:
    """A UTC datetime as SQLite text to the millisecond, as `NOW` writes it (truncated)."""
    value = value.astimezone(UTC) if value.tzinfo is not None else value
    # Not strftime("%Y"): the C library writes year 900 as "900", which reads back as no time.
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}"
    )


_touched = threading.local()
"""On the database thread: the sessions its open transaction wrote to, by `stamp_session` SQL."""


def forget_touched() -> None:
    """On the database thread, as a transaction begins: no session is waiting for its stamp."""
    _touched.__dict__.pop("stamps", None)


def stamp_touched(conn: sqlite3.Connection) -> None:
    """On the database thread, just before `COMMIT`: stamp every session `touch` recorded."""
    for sql, session_ids in _touched.__dict__.pop("stamps", {}).items():
        conn.executemany(sql, [(sid,) for sid in sorted(session_ids)])


def quote_identifier(name: str) -> str:
    """Quote an identifier for SQLite (double quotes, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of a table (none when it does not exist; any case of its name)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({quote_identifier(table)})")}


@dataclass(frozen=True, slots=True)
class SQLiteSchema:
    """The SQL for one (sessions table, messages table) pair, every identifier quoted."""

    sessions_table: str
    messages_table: str

    @property
    def archive_table(self) -> str:
        """The table that keeps rows replaced by compaction."""
        return f"{self.messages_table}_archive"

    # --- the side tables: every writer of the file clears a session's rows from them ----------

    @property
    def branches_table(self) -> str:
        """The table of `AdvancedSQLiteSession`'s branches (name, parent, fork point)."""
        return f"{self.messages_table}_branches"

    @property
    def items_table(self) -> str:
        """The table that says which branch wrote a row (rows of `main` are absent)."""
        return f"{self.messages_table}_branch_items"

    @property
    def usage_table(self) -> str:
        """The table of `AdvancedSQLiteSession`'s token usage per (branch, user turn)."""
        return f"{self.messages_table}_turn_usage"

    @property
    def side_tables(self) -> dict[str, str]:
        """The tables beside the messages table that hold a session's rows, when present.

        The compaction archive, and the branches, branch rows and usage that an
        `AdvancedSQLiteSession` adds (its schema creates them); each with the column that only
        it holds.
        """
        return {
            self.archive_table: "archived_at",
            self.branches_table: "fork_before",
            self.items_table: "message_id",
            self.usage_table: "user_turn_number",
        }

    def existing_side_tables(self, conn: sqlite3.Connection) -> list[str]:
        """The side tables the file has, each checked by a column only it holds.

        A table of another pair that happens to carry a side table's name (a messages table
        named `<messages>_archive` or `<messages>_branches`) is left out, so deleting a session
        never touches it.
        """
        return [
            table
            for table, marker in self.side_tables.items()
            if marker in table_columns(conn, table)
        ]

    def delete_side_rows(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Delete a session's rows from the side tables the file has, in the caller's transaction.

        So a session cleared by any tool (a plain `SQLiteSession`, the command line) leaves no
        branch or usage behind.
        """
        for table in self.existing_side_tables(conn):
            conn.execute(self.delete_rows_of(table), (session_id,))

    def clear_session(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Delete a session's items, archived items and row, and its rows in the side tables."""
        for statement in self.delete_session:
            conn.execute(statement, (session_id,))
        self.clear_side_rows(conn, session_id)

    def clear_side_rows(self, conn: sqlite3.Connection, session_id: str) -> None:
        """What `clear_session` does to the side tables: here, delete the session's rows."""
        self.delete_side_rows(conn, session_id)

    @staticmethod
    def delete_rows_of(table: str) -> str:
        """Delete a session's rows from `table` (one `?`: the session id)."""
        return f"DELETE FROM {quote_identifier(table)} WHERE session_id = ?"

    # --- what the command line's store reads and writes ---------------------------------------

    def missing_tables(self, conn: sqlite3.Connection) -> list[str]:
        """The sessions and messages tables that the file lacks."""
        names = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                (self.sessions_table, self.messages_table),
            )
        }
        return [name for name in (self.sessions_table, self.messages_table) if name not in names]

    @property
    def select_info(self) -> str:
        """Sessions as a store lists them: (session_id, created_at, updated_at, item count).

        Completed by a `WHERE` on `s.session_id`.
        """
        return (
            f"SELECT s.session_id, s.created_at, s.updated_at, "
            f"(SELECT count(*) FROM {quote_identifier(self.messages_table)} m "
            f"WHERE m.session_id = s.session_id) FROM {quote_identifier(self.sessions_table)} s"
        )

    @property
    def select_by_activity(self) -> str:
        """A page of `select_info`, most recently active first (prefix twice, limit, offset)."""
        return (
            f"{self.select_info} WHERE substr(s.session_id, 1, length(?)) = ? "
            "ORDER BY s.updated_at DESC, s.session_id LIMIT ? OFFSET ?"
        )

    @property
    def select_after_id(self) -> str:
        """A page of `select_info` by id after `?` (twice; NULL: from the start), prefix, limit."""
        return (
            f"{self.select_info} WHERE (? IS NULL OR s.session_id > ?) "
            "AND substr(s.session_id, 1, length(?)) = ? ORDER BY s.session_id LIMIT ?"
        )

    @property
    def select_one_info(self) -> str:
        """`select_info` of one session."""
        return f"{self.select_info} WHERE s.session_id = ?"

    @property
    def select_totals(self) -> str:
        """(sessions, latest activity, items) of the whole table pair."""
        return (
            f"SELECT count(*), max(updated_at), "
            f"(SELECT count(*) FROM {quote_identifier(self.messages_table)}) "
            f"FROM {quote_identifier(self.sessions_table)}"
        )

    @property
    def select_records(self) -> str:
        """Every row of a session, oldest first: (id, message_data, created_at)."""
        return (
            f"SELECT id, message_data, created_at FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? ORDER BY id"
        )

    def delete_idle(self, conn: sqlite3.Connection, cutoff: datetime) -> int:
        """Delete every session idle since before `cutoff`, its rows in every table included.

        Runs in the caller's write transaction: no session can be written between the check
        and the delete. Returns how many sessions were deleted.
        """
        params = self.idle_cutoff(cutoff)
        where = self.idle_before
        sessions = quote_identifier(self.sessions_table)
        idle = f"(SELECT session_id FROM {sessions} WHERE {where})"
        for table in (self.messages_table, *self.existing_side_tables(conn)):
            table_name = quote_identifier(table)
            conn.execute(f"DELETE FROM {table_name} WHERE session_id IN {idle}", params)
        return int(conn.execute(f"DELETE FROM {sessions} WHERE {where}", params).rowcount)

    def check_session(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Raise when this layout cannot hold the session's rows; this one holds every session.

        Called in the transaction of each read and write of an item, before anything is written.
        """

    def create(self, conn: sqlite3.Connection) -> None:
        """Create the tables if missing, check them, and record the schema version.

        Runs inside a write transaction, so a failure leaves nothing behind.

        Raises:
            SessionSchemaError: The file's schema is newer than this release, or an existing
                table with one of our names lacks the columns we need.
        """
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise SessionSchemaError(
                f"the database's schema version is {version}, newer than {SCHEMA_VERSION} which "
                "this release of turnstore understands: upgrade turnstore, or use "
                "another file"
            )
        s = quote_identifier(self.sessions_table)
        m = quote_identifier(self.messages_table)
        a = quote_identifier(self.archive_table)
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {s} (session_id TEXT PRIMARY KEY, "
            "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {m} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "session_id TEXT NOT NULL, message_data TEXT NOT NULL, "
            "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            f"FOREIGN KEY (session_id) REFERENCES {s} (session_id) ON DELETE CASCADE)"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {a} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TIMESTAMP, "
            "archived_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
        )
        # Only an archive table has `archived_at`: a pair whose archive table is another pair's
        # messages table (messages_table="chat" beside messages_table="chat_archive"), or whose
        # messages table is another pair's archive, is refused, so no pair reaches another's rows.
        for table, needed, role in (
            (self.sessions_table, {"session_id", "updated_at"}, "sessions"),
            (self.messages_table, {"id", "session_id", "message_data", "created_at"}, "messages"),
            (
                self.archive_table,
                {"id", "session_id", "message_data", "created_at", "archived_at"},
                "archive",
            ),
        ):
            columns = table_columns(conn, table)
            missing = needed - columns
            if missing:
                raise SessionSchemaError(
                    f"table {table!r} exists but is not a session {role} table (missing "
                    f"columns: {', '.join(sorted(missing))}); it may belong to another table "
                    "pair on this file: choose other table names"
                )
            if role != "archive" and "archived_at" in columns:
                raise SessionSchemaError(
                    f"table {table!r} is the compaction archive of another table pair on this "
                    f"file, so it cannot be a {role} table: choose other table names"
                )
        conn.execute(
            "CREATE INDEX IF NOT EXISTS "
            f"{quote_identifier(f'idx_{self.messages_table}_session_id')} ON {m} (session_id, id)"
        )
        conn.execute(
            "CREATE INDEX IF NOT EXISTS "
            f"{quote_identifier(f'idx_{self.archive_table}_session_id')} ON {a} (session_id, id)"
        )
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # --- statements (identical strings, so sqlite3's statement cache reuses them) -------------

    @property
    def touch_session(self) -> str:
        """Create the session's row, or bump its `updated_at` (to the millisecond).

        A write job calls `touch` instead, which also stamps the row again
        just before the transaction commits.
        """
        return (
            f"INSERT INTO {quote_identifier(self.sessions_table)} "
            f"(session_id, created_at, updated_at) VALUES (?, {NOW}, {NOW}) "
            f"ON CONFLICT (session_id) DO UPDATE SET updated_at = {NOW}"
        )

    @property
    def stamp_session(self) -> str:
        """Set an existing session's `updated_at` to now (one `?`: the session id)."""
        return (
            f"UPDATE {quote_identifier(self.sessions_table)} SET updated_at = {NOW} "
            "WHERE session_id = ?"
        )

    @property
    def set_session_times(self) -> str:
        """Create or update a session's row with the times of an export.

        Three `?`: the session id, `created_at`, `updated_at`. A `NULL` time is now for a new
        row and left as it is in an existing one.
        """
        return (
            f"INSERT INTO {quote_identifier(self.sessions_table)} "
            f"(session_id, created_at, updated_at) VALUES (?1, coalesce(?2, {NOW}), "
            f"coalesce(?3, {NOW})) ON CONFLICT (session_id) DO UPDATE SET "
            "created_at = coalesce(?2, created_at), updated_at = coalesce(?3, updated_at)"
        )

    def touch(self, conn: sqlite3.Connection, session_ids: Iterable[str]) -> None:
        """Record a write to these sessions: create their rows now, stamp them at the commit.

        The row is created (or bumped) at once, and `stamp_touched`, which the database thread
        runs as the last statement before `COMMIT`, sets `updated_at` again: a session's last
        activity is when its write committed, not when its transaction began, so a prune whose
        cutoff falls while the write's transaction is open keeps the session.
        """
        ids = list(session_ids)
        conn.executemany(self.touch_session, [(sid,) for sid in ids])
        touched: dict[str, set[str]] = _touched.__dict__.setdefault("stamps", {})
        touched.setdefault(self.stamp_session, set()).update(ids)

    @property
    def idle_before(self) -> str:
        """`WHERE` condition: last written before the cutoff (two `?`: `idle_cutoff` values).

        A millisecond stamp is compared with the cutoff; a whole-second stamp (19 characters,
        from `CURRENT_TIMESTAMP`: an earlier release, or the SDK writing the same file) may
        stand for any moment of its second, so it is idle only when that whole second is
        before the cutoff.
        """
        return "updated_at < ? AND (length(updated_at) > 19 OR updated_at < ?)"

    @staticmethod
    def idle_cutoff(cutoff: datetime) -> tuple[str, str]:
        """The two parameters of `idle_before` for a cutoff: to the millisecond, to the second."""
        text = sqlite_time(cutoff)
        return text, text[:19]

    @property
    def insert(self) -> str:
        """Insert one message (session_id, message_data)."""
        return (
            f"INSERT INTO {quote_identifier(self.messages_table)} (session_id, message_data) "
            "VALUES (?, ?)"
        )

    @property
    def insert_with_time(self) -> str:
        """Insert one message keeping its original `created_at`."""
        return (
            f"INSERT INTO {quote_identifier(self.messages_table)} "
            "(session_id, message_data, created_at) VALUES (?, ?, ?)"
        )

    @property
    def select_all(self) -> str:
        """Every row of a session, oldest first: (id, message_data)."""
        return (
            f"SELECT id, message_data FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? ORDER BY id"
        )

    @property
    def select_chunk(self) -> str:
        """Up to `?` (id, message_data) rows after id `?`, oldest first; uses the index.

        The rows come back as stored: SQLite never concatenates them (its `group_concat` fails
        with "string or blob too big" once a session holds about 1 GB).
        """
        return (
            f"SELECT id, message_data FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?"
        )

    @property
    def select_latest(self) -> str:
        """Up to `?` (id, message_data) rows before id `?`, newest first; uses the index."""
        return (
            f"SELECT id, message_data FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?"
        )

    @property
    def stored_rows(self) -> tuple[tuple[str, str], ...]:
        """Every row of a session in the messages and archive tables, each with its update.

        Pairs of (`SELECT id, message_data ... WHERE session_id = ?`,
        `UPDATE ... SET message_data = ? WHERE id = ?`), for rewriting every stored item in place.
        """
        return tuple(
            (
                f"SELECT id, message_data FROM {quote_identifier(table)} WHERE session_id = ? "
                "ORDER BY id",
                f"UPDATE {quote_identifier(table)} SET message_data = ? WHERE id = ?",
            )
            for table in (self.messages_table, self.archive_table)
        )

    @property
    def select_created(self) -> str:
        """When a session was created: (created_at,)."""
        return (
            f"SELECT created_at FROM {quote_identifier(self.sessions_table)} WHERE session_id = ?"
        )

    @property
    def archive_row(self) -> str:
        """Archive one row: (session_id, message_data, created_at of the original)."""
        return (
            f"INSERT INTO {quote_identifier(self.archive_table)} "
            "(session_id, message_data, created_at) VALUES (?, ?, ?)"
        )

    @property
    def delete_row(self) -> str:
        """Delete one row by id."""
        return f"DELETE FROM {quote_identifier(self.messages_table)} WHERE id = ?"

    @property
    def newest_first(self) -> str:
        """A session's rows newest first (read lazily by pop)."""
        return (
            f"SELECT id, message_data FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? ORDER BY id DESC"
        )

    @property
    def delete_session(self) -> tuple[str, ...]:
        """Delete a session's items, archived items and row (three statements, one `?`)."""
        return tuple(
            self.delete_rows_of(table)
            for table in (self.messages_table, self.archive_table, self.sessions_table)
        )

    @property
    def delete_messages(self) -> str:
        """Delete every item of a session."""
        return self.delete_rows_of(self.messages_table)

    @property
    def select_archived(self) -> str:
        """A session's archived rows, oldest first: (id, message_data)."""
        return (
            f"SELECT id, message_data FROM {quote_identifier(self.archive_table)} "
            "WHERE session_id = ? ORDER BY id"
        )

    @property
    def select_ids_through(self) -> str:
        """The ids of a session's rows with id <= `?`, oldest first."""
        return (
            f"SELECT id FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? AND id <= ? ORDER BY id"
        )

    @property
    def select_after(self) -> str:
        """A session's rows with id > `?`, oldest first: (message_data, created_at)."""
        return (
            f"SELECT message_data, created_at FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? AND id > ? ORDER BY id"
        )

    @property
    def archive_through(self) -> str:
        """Copy a session's rows with id <= `?` to the archive, oldest first."""
        return (
            f"INSERT INTO {quote_identifier(self.archive_table)} "
            "(session_id, message_data, created_at) "
            "SELECT session_id, message_data, created_at "
            f"FROM {quote_identifier(self.messages_table)} "
            "WHERE session_id = ? AND id <= ? ORDER BY id"
        )
