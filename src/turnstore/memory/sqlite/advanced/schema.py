"""The tables of `AdvancedSQLiteSession` beside `SQLiteSession`'s, and the SQL that reads a branch.

Layout (added to the tables of `schema.py`, named after the messages table):

```text
<messages>_branches      session_id, branch_id, parent_id, fork_before, deleted, created_at
                         primary key (session_id, branch_id)
<messages>_branch_items  message_id INTEGER PRIMARY KEY (a row of <messages>), session_id,
                         branch_id; index (session_id, branch_id, message_id)
<messages>_turn_usage    session_id, branch_id, user_turn_number, requests, input_tokens,
                         output_tokens, total_tokens, input_tokens_details (JSON),
                         output_tokens_details (JSON), created_at
                         primary key (session_id, branch_id, user_turn_number)
```

<messages> gains one column, `branch_id` (NULL on `main`): a copy of the `_branch_items` row's
branch, kept by triggers on that table (so every writer keeps it, whatever its release), with the
index (session_id, branch_id, id). It lets a read of one branch's newest rows, `main` included,
go straight to them through an index, however many rows other branches wrote after them. A file
written before the column existed gains it, filled from `_branch_items`, on first use.

A branch shares its parent's history without copying it: the rows a branch sees (its *view*) are
the rows its parent saw below `fork_before` (a message id), then the rows written on the branch.
Rows written on `main` have no `branch_items` row, so a session that never branched is stored
exactly as a `SQLiteSession` stores it (and an existing `SQLiteSession` file is its `main`). A
deleted branch keeps its row (`deleted = 1`, its name stays reserved) and the rows that a living
branch still reads through it; internal segments (names starting with NUL) hold history that a
`pop_item` or `replace_history` took out of one branch while its sub-branches still read it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ....exceptions import SessionSchemaError
from ..schema import SQLiteSchema, quote_identifier, table_columns

__all__ = ["CLEARED", "DELETED", "MAIN", "SEGMENT_PREFIX", "AdvancedSQLiteSchema", "Chain"]

MAIN = "main"
"""The branch every session starts on; it cannot be deleted."""

SEGMENT_PREFIX = "\x00"
"""Internal segments start with NUL, which a branch name may not contain."""

DELETED = 1
"""`deleted` of a branch that `delete_branch` deleted (and of internal segments)."""
CLEARED = 2
"""`deleted` of a branch that `clear_session` removed with the rest of the session."""

Chain = list[tuple[str, int]]
"""A branch and its ancestors, nearest first: (branch id, rows of it seen are below this id)."""

_VALID = "CASE WHEN typeof(m.message_data) = 'text' THEN json_valid(m.message_data) ELSE 0 END"

_USAGE_COLUMNS = (
    "requests, input_tokens, output_tokens, total_tokens, input_tokens_details, "
    "output_tokens_details"
)

_IS_USER = "CASE WHEN valid = 1 THEN json_extract(message_data, '$.role') = 'user' ELSE 0 END"
"""1 when a row of a view is a user message (the start of a turn)."""


@dataclass(frozen=True, slots=True)
class AdvancedSQLiteSchema(SQLiteSchema):
    """`SQLiteSchema` plus the branch and usage tables of one (sessions, messages) pair.

    The names of these tables are `SQLiteSchema`'s (`branches_table`, `items_table`,
    `usage_table`), so that any writer of the file clears a session's rows from them.
    """

    def create(self, conn: sqlite3.Connection) -> None:
        """Create the base tables, then the branch and usage tables, and check them.

        Raises:
            SessionSchemaError: As `SQLiteSchema.create`, or a table with one of the new names
                exists without the columns needed.
        """
        SQLiteSchema.create(self, conn)
        b = quote_identifier(self.branches_table)
        i = quote_identifier(self.items_table)
        u = quote_identifier(self.usage_table)
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {b} (session_id TEXT NOT NULL, branch_id TEXT NOT NULL, "
            "parent_id TEXT, fork_before INTEGER, deleted INTEGER NOT NULL DEFAULT 0, "
            "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (session_id, branch_id))"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {i} (message_id INTEGER PRIMARY KEY, "
            "session_id TEXT NOT NULL, branch_id TEXT NOT NULL)"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {u} (session_id TEXT NOT NULL, branch_id TEXT NOT NULL, "
            "user_turn_number INTEGER NOT NULL, requests INTEGER NOT NULL DEFAULT 0, "
            "input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, "
            "total_tokens INTEGER NOT NULL DEFAULT 0, input_tokens_details TEXT, "
            "output_tokens_details TEXT, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            "PRIMARY KEY (session_id, branch_id, user_turn_number))"
        )
        for table, needed in (
            (self.branches_table, {"session_id", "branch_id", "parent_id", "fork_before"}),
            (self.items_table, {"message_id", "session_id", "branch_id"}),
            (self.usage_table, {"session_id", "branch_id", "user_turn_number", "total_tokens"}),
        ):
            columns = table_columns(conn, table)
            if needed - columns:
                raise SessionSchemaError(
                    f"table {table!r} exists but is not an AdvancedSQLiteSession table (missing "
                    f"columns: {', '.join(sorted(needed - columns))}): choose other table names"
                )
        conn.execute(
            "CREATE INDEX IF NOT EXISTS "
            f"{quote_identifier(f'idx_{self.items_table}_branch')} "
            f"ON {i} (session_id, branch_id, message_id)"
        )
        self.ensure_branch_column(conn)

    @property
    def branch_index(self) -> str:
        """The index of the messages table by (session_id, branch_id, id)."""
        return f"idx_{self.messages_table}_branch"

    def _triggers(self) -> dict[str, str]:
        """The triggers that copy `_branch_items` rows into the messages table's `branch_id`."""
        m = quote_identifier(self.messages_table)
        i = quote_identifier(self.items_table)
        copy = f"UPDATE {m} SET branch_id = NEW.branch_id WHERE id = NEW.message_id;"
        return {
            f"{self.items_table}_after_insert": f"AFTER INSERT ON {i} BEGIN {copy} END",
            f"{self.items_table}_after_update": (
                f"AFTER UPDATE OF branch_id, message_id ON {i} BEGIN "
                f"UPDATE {m} SET branch_id = NULL WHERE id = OLD.message_id; {copy} END"
            ),
            f"{self.items_table}_after_delete": (
                f"AFTER DELETE ON {i} BEGIN "
                f"UPDATE {m} SET branch_id = NULL WHERE id = OLD.message_id; END"
            ),
        }

    def has_branch_column(self, conn: sqlite3.Connection) -> bool:
        """Whether the messages table's `branch_id` and the triggers that keep it exist."""
        present = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                (self.items_table,),
            )
        }
        return not set(self._triggers()) - present

    def ensure_branch_column(self, conn: sqlite3.Connection) -> None:
        """Add the messages table's `branch_id`, its index and triggers; idempotent.

        When a trigger is missing (a file written before they existed), the column is filled
        again from `_branch_items`, in the caller's transaction.
        """
        m = quote_identifier(self.messages_table)
        i = quote_identifier(self.items_table)
        triggers = self._triggers()
        if not self.has_branch_column(conn):
            if "branch_id" in table_columns(conn, self.messages_table):
                # Left by an interrupted layout: rows no branch wrote are main's.
                conn.execute(
                    f"UPDATE {m} SET branch_id = NULL WHERE branch_id IS NOT NULL "
                    f"AND id NOT IN (SELECT message_id FROM {i})"
                )
            else:
                # Adding a column rewrites no row; only the rows of branches are then updated.
                conn.execute(f"ALTER TABLE {m} ADD COLUMN branch_id TEXT")
            conn.execute(
                f"UPDATE {m} SET branch_id = "
                f"(SELECT b.branch_id FROM {i} b WHERE b.message_id = {m}.id) "
                f"WHERE id IN (SELECT message_id FROM {i})"
            )
            for name, body in triggers.items():
                conn.execute(f"CREATE TRIGGER IF NOT EXISTS {quote_identifier(name)} {body}")
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {quote_identifier(self.branch_index)} "
            f"ON {m} (session_id, branch_id, id)"
        )

    # --- reading a branch -----------------------------------------------------------------

    def view(
        self,
        chain: Chain,
        session_id: str,
        *,
        created_at: bool = False,
        newest: int | None = None,
    ) -> tuple[str, list[object]]:
        """The rows a branch sees, unordered: (id, message_data, valid[, created_at]).

        Args:
            chain: The branch and its ancestors (see `Chain`).
            session_id: The session.
            created_at: Also select each row's `created_at`.
            newest: Select at most this many of the newest rows of each branch of the chain
                (each through its index), for a read of the latest rows.

        Returns:
            The SQL (a UNION ALL, one SELECT per branch of the chain) and its parameters.
        """
        m = quote_identifier(self.messages_table)
        i = quote_identifier(self.items_table)
        extra = ", m.created_at AS created_at" if created_at else ""
        columns = f"m.id AS id, m.message_data AS message_data, {_VALID} AS valid{extra}"
        parts: list[str] = []
        params: list[object] = []
        for branch_id, below in chain:
            if branch_id == MAIN:
                parts.append(
                    f"SELECT {columns} FROM {m} m WHERE m.session_id = ? "
                    "AND m.branch_id IS NULL AND m.id < ?"
                )
                params += [session_id, below]
            else:
                parts.append(
                    f"SELECT {columns} FROM {i} b JOIN {m} m ON m.id = b.message_id "
                    "WHERE b.session_id = ? AND b.branch_id = ? AND b.message_id < ?"
                )
                params += [session_id, branch_id, below]
        if newest is not None:
            # Each branch through its own index: `main` by (session_id, branch_id, id) of the
            # messages table, others by (session_id, branch_id, message_id) of `_branch_items`.
            parts = [
                f"SELECT * FROM ({part} ORDER BY {'m.id' if name == MAIN else 'b.message_id'} "
                f"DESC LIMIT {int(newest)})"
                for part, (name, _) in zip(parts, chain, strict=True)
            ]
        return " UNION ALL ".join(parts), params

    def count_users(self, view: str) -> str:
        """How many valid rows of a view, with id <= `?`, are user messages (turns).

        Rows SQLite finds invalid are not counted: see `invalid_rows`.
        """
        return f"SELECT COUNT(*) FROM ({view}) WHERE id <= ? AND {_IS_USER}"

    def invalid_rows(self, view: str) -> str:
        """(id, message_data) of the rows of a view, with id <= `?`, that SQLite finds invalid.

        Python may still read one as an item (UTF-8 JSON stored as a BLOB, a `NaN`), so whether
        it starts a turn is decided where the items are decoded.
        """
        return f"SELECT id, message_data FROM ({view}) WHERE id <= ? AND valid = 0 ORDER BY id"

    def user_rows(self, view: str) -> str:
        """(id, message_data, valid) of the user messages and invalid rows of a view, by id."""
        return (
            f"SELECT id, message_data, valid FROM ({view}) WHERE valid = 0 OR {_IS_USER} "
            "ORDER BY id"
        )

    def check_session(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Refuse a session that the OpenAI Agents SDK's class branched, for reads and writes.

        The SDK's `AdvancedSQLiteSession` keeps its branches in a `message_structure` table
        (one row per message and branch) whose foreign key names the messages table. Its rows
        are not ours: this class would read them all as `main`, and an item it wrote to `main`
        would be readable by neither library.

        Raises:
            SessionSchemaError: The SDK wrote branches other than `main` in this session.
        """
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_structure'"
        ).fetchone():
            return
        targets = {
            str(row[2]).lower()
            for row in conn.execute("PRAGMA foreign_key_list(message_structure)")
        }
        columns = {row[1] for row in conn.execute("PRAGMA table_info(message_structure)")}
        if self.messages_table.lower() not in targets or "branch_id" not in columns:
            return
        rows = conn.execute(
            "SELECT DISTINCT branch_id FROM message_structure WHERE session_id = ? "
            "AND branch_id <> ? ORDER BY branch_id LIMIT 5",
            (session_id, MAIN),
        )
        sdk = [str(row[0]) for row in rows]
        if sdk:
            raise SessionSchemaError(
                f"session {session_id!r} has branches written by the OpenAI Agents SDK's "
                f"AdvancedSQLiteSession ({', '.join(map(repr, sdk))}), kept in its "
                "message_structure table, which turnstore does not read: it would show their "
                "items in 'main', and an item written to 'main' would be readable by neither "
                "library. Nothing was read or written. Open this session with the SDK's class, "
                "or use another session id or file"
            )

    @property
    def select_branches(self) -> str:
        """Every branch row of a session: (branch_id, parent, fork_before, deleted, created_at)."""
        return (
            "SELECT branch_id, parent_id, fork_before, deleted, created_at FROM "
            f"{quote_identifier(self.branches_table)} WHERE session_id = ? ORDER BY rowid"
        )

    @property
    def has_branch_items(self) -> str:
        """1 when some row of a session was written on a branch other than `main`."""
        return f"SELECT 1 FROM {quote_identifier(self.items_table)} WHERE session_id = ? LIMIT 1"

    # --- statements on branches (identical strings, so sqlite3's statement cache reuses them) --

    @staticmethod
    def in_order(view: str) -> str:
        """Every row of a view (all its columns), oldest first."""
        return f"{view} ORDER BY id"

    @staticmethod
    def select_view(view: str, columns: str = "id, message_data") -> str:
        """`columns` of every row of a view, oldest first (the view's parameters)."""
        return f"SELECT {columns} FROM ({view}) ORDER BY id"

    @staticmethod
    def select_newest(view: str) -> str:
        """The newest `?` rows of a view (built with `newest`), newest first."""
        return f"{view} ORDER BY id DESC LIMIT ?"

    @staticmethod
    def count_view(view: str) -> str:
        """How many rows a view holds."""
        return f"SELECT COUNT(*) FROM ({view})"

    @property
    def insert_branch(self) -> str:
        """A branch with no parent: (session_id, branch_id)."""
        return (
            f"INSERT INTO {quote_identifier(self.branches_table)} (session_id, branch_id) "
            "VALUES (?, ?)"
        )

    @property
    def insert_fork(self) -> str:
        """A branch of a parent: (session_id, branch_id, parent_id, fork_before, deleted)."""
        return (
            f"INSERT INTO {quote_identifier(self.branches_table)} "
            "(session_id, branch_id, parent_id, fork_before, deleted) VALUES (?, ?, ?, ?, ?)"
        )

    @property
    def update_fork(self) -> str:
        """Point a branch at a parent and fork point: (parent, fork_before, session, branch)."""
        return (
            f"UPDATE {quote_identifier(self.branches_table)} SET parent_id = ?, "
            "fork_before = ? WHERE session_id = ? AND branch_id = ?"
        )

    @property
    def reparent(self) -> str:
        """Give a branch's children another parent: (new parent, session, old parent)."""
        return (
            f"UPDATE {quote_identifier(self.branches_table)} SET parent_id = ? "
            "WHERE session_id = ? AND parent_id = ?"
        )

    @property
    def mark_deleted(self) -> str:
        """Mark a branch deleted by `delete_branch`: (session, branch)."""
        return (
            f"UPDATE {quote_identifier(self.branches_table)} SET deleted = {DELETED} "
            "WHERE session_id = ? AND branch_id = ?"
        )

    @property
    def delete_branch_row(self) -> str:
        """Forget a branch (an internal segment nothing reads): (session, branch)."""
        return (
            f"DELETE FROM {quote_identifier(self.branches_table)} "
            "WHERE session_id = ? AND branch_id = ?"
        )

    def clear_side_rows(self, conn: sqlite3.Connection, session_id: str) -> None:
        """What `clear_session` does to the branch and usage tables.

        The session's branch rows and usage go, and so do `main` and the internal segments;
        the other branches stay, marked cleared, so their names stay reserved.
        """
        b = quote_identifier(self.branches_table)
        conn.execute(self.delete_rows_of(self.items_table), (session_id,))
        conn.execute(self.delete_rows_of(self.usage_table), (session_id,))
        conn.execute(
            f"DELETE FROM {b} WHERE session_id = ? AND (branch_id = ? OR "
            "substr(branch_id, 1, 1) = ?)",
            (session_id, MAIN, SEGMENT_PREFIX),
        )
        conn.execute(
            f"UPDATE {b} SET deleted = {CLEARED}, parent_id = NULL, fork_before = NULL "
            "WHERE session_id = ?",
            (session_id,),
        )

    @property
    def insert_branch_item(self) -> str:
        """Record the branch that wrote a row: (message_id, session_id, branch_id)."""
        return (
            f"INSERT INTO {quote_identifier(self.items_table)} (message_id, session_id, "
            "branch_id) VALUES (?, ?, ?)"
        )

    @property
    def delete_branch_item(self) -> str:
        """Forget the branch of one row: (message_id,)."""
        return f"DELETE FROM {quote_identifier(self.items_table)} WHERE message_id = ?"

    @property
    def select_owner(self) -> str:
        """The branch that wrote a row: (message_id,) -> (branch_id,), no row for `main`."""
        return f"SELECT branch_id FROM {quote_identifier(self.items_table)} WHERE message_id = ?"

    @property
    def move_main_rows(self) -> str:
        """Give `main`'s own rows of a session to a segment: (session, segment, session)."""
        return (
            f"INSERT INTO {quote_identifier(self.items_table)} (message_id, session_id, "
            f"branch_id) SELECT m.id, ?, ? FROM {quote_identifier(self.messages_table)} m "
            "WHERE m.session_id = ? AND m.branch_id IS NULL"
        )

    @property
    def move_branch_rows(self) -> str:
        """Give a branch's own rows to a segment: (segment, session, branch)."""
        return (
            f"UPDATE {quote_identifier(self.items_table)} SET branch_id = ? "
            "WHERE session_id = ? AND branch_id = ?"
        )

    @property
    def delete_main_rows_from(self) -> str:
        """Delete `main`'s own rows of a session with id >= `?`: (session, from id)."""
        return (
            f"DELETE FROM {quote_identifier(self.messages_table)} WHERE session_id = ? "
            "AND branch_id IS NULL AND id >= ?"
        )

    @property
    def delete_branch_rows_from(self) -> tuple[str, str]:
        """Delete a branch's own rows with id >= `?`, then their branch records.

        Both statements take (session, branch, from id).
        """
        m = quote_identifier(self.messages_table)
        i = quote_identifier(self.items_table)
        selected = (
            f"SELECT message_id FROM {i} WHERE session_id = ? AND branch_id = ? AND message_id >= ?"
        )
        return (
            f"DELETE FROM {m} WHERE id IN ({selected})",
            f"DELETE FROM {i} WHERE message_id IN ({selected})",
        )

    # --- statements on usage ----------------------------------------------------------------

    @property
    def record_usage(self) -> str:
        """Set a turn's usage: (session, branch, turn, then the six `usage_row` values)."""
        return (
            f"INSERT OR REPLACE INTO {quote_identifier(self.usage_table)} (session_id, "
            f"branch_id, user_turn_number, {_USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )

    @property
    def delete_turn_usage(self) -> str:
        """Delete one turn's usage: (session, branch, turn)."""
        return (
            f"DELETE FROM {quote_identifier(self.usage_table)} WHERE session_id = ? "
            "AND branch_id = ? AND user_turn_number = ?"
        )

    @property
    def delete_branch_usage(self) -> str:
        """Delete a branch's usage: (session, branch)."""
        return (
            f"DELETE FROM {quote_identifier(self.usage_table)} "
            "WHERE session_id = ? AND branch_id = ?"
        )

    def select_usage_totals(self, *, one_branch: bool) -> str:
        """(requests, input, output, total tokens) of each turn of a session or one branch.

        Parameters: (session) or (session, branch). Summed by the caller: SQLite's SUM fails
        on counts that add up past 2**63 - 1.
        """
        where = "session_id = ? AND branch_id = ?" if one_branch else "session_id = ?"
        return (
            "SELECT requests, input_tokens, output_tokens, total_tokens FROM "
            f"{quote_identifier(self.usage_table)} WHERE {where}"
        )

    def select_turn_usage(self, *, one_turn: bool) -> str:
        """(turn, the six usage columns) of a branch's turns, by turn.

        Parameters: (session, branch) or (session, branch, turn).
        """
        turn = " AND user_turn_number = ?" if one_turn else ""
        return (
            f"SELECT user_turn_number, {_USAGE_COLUMNS} FROM "
            f"{quote_identifier(self.usage_table)} WHERE session_id = ? AND branch_id = ?{turn} "
            "ORDER BY user_turn_number"
        )
