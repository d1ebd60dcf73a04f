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

from ...exceptions import SessionSchemaError
from .schema import SQLiteSchema, quote_identifier

__all__ = ["MAIN", "AdvancedSQLiteSchema", "Chain"]

MAIN = "main"
"""The branch every session starts on; it cannot be deleted."""

Chain = list[tuple[str, int]]
"""A branch and its ancestors, nearest first: (branch id, rows of it seen are below this id)."""

_VALID = "CASE WHEN typeof(m.message_data) = 'text' THEN json_valid(m.message_data) ELSE 0 END"

_IS_USER = "CASE WHEN valid = 1 THEN json_extract(message_data, '$.role') = 'user' ELSE 0 END"
"""1 when a row of a view is a user message (the start of a turn)."""


@dataclass(frozen=True, slots=True)
class AdvancedSQLiteSchema(SQLiteSchema):
    """`SQLiteSchema` plus the branch and usage tables of one (sessions, messages) pair."""

    @property
    def branches_table(self) -> str:
        """The table of branches (name, parent, fork point)."""
        return f"{self.messages_table}_branches"

    @property
    def items_table(self) -> str:
        """The table that says which branch wrote a row (rows of `main` are absent)."""
        return f"{self.messages_table}_branch_items"

    @property
    def usage_table(self) -> str:
        """The table of token usage per (branch, user turn)."""
        return f"{self.messages_table}_turn_usage"

    @property
    def side_tables(self) -> tuple[str, str, str, str]:
        """The tables beside the messages table that hold a session's rows, when present.

        The compaction archive, and the branches, branch rows and usage of this class.
        """
        return (self.archive_table, self.branches_table, self.items_table, self.usage_table)

    def existing_side_tables(self, conn: sqlite3.Connection) -> list[str]:
        """The side tables the file has, each checked by a column only it holds.

        A table of another pair that happens to carry a side table's name (a messages table
        named `<messages>_archive` or `<messages>_branches`) is left out, so deleting a session
        never touches it.
        """
        # Each side table is recognised by a column only it holds, so a table of another pair
        # with the same name (a messages table named `<messages>_archive`) is left out.
        # `PRAGMA table_info` finds a table whatever the case of its name, as SQLite does, and
        # lists no columns for a table that does not exist.
        markers = {
            self.archive_table: "archived_at",
            self.branches_table: "fork_before",
            self.items_table: "message_id",
            self.usage_table: "user_turn_number",
        }
        found = []
        for table in self.side_tables:
            columns = {
                row[1] for row in conn.execute(f"PRAGMA table_info({quote_identifier(table)})")
            }
            if markers[table] in columns:
                found.append(table)
        return found

    def delete_side_rows(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Delete a session's rows from the side tables the file has, in the caller's transaction.

        So a session cleared by any tool (a plain `SQLiteSession`, the command line) leaves no
        branch or usage behind.
        """
        for table in self.existing_side_tables(conn):
            conn.execute(
                f"DELETE FROM {quote_identifier(table)} WHERE session_id = ?", (session_id,)
            )

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
            columns = {
                row[1] for row in conn.execute(f"PRAGMA table_info({quote_identifier(table)})")
            }
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
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({m})")}
            if "branch_id" in columns:
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

    def sdk_branches(self, conn: sqlite3.Connection, session_id: str) -> list[str]:
        """The branches other than `main` that the OpenAI Agents SDK's class wrote in a session.

        The SDK's `AdvancedSQLiteSession` keeps its branches in a `message_structure` table
        (one row per message and branch) whose foreign key names the messages table. Its rows
        are not ours: this class would read them all as `main`.
        """
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_structure'"
        ).fetchone():
            return []
        targets = {
            str(row[2]).lower()
            for row in conn.execute("PRAGMA foreign_key_list(message_structure)")
        }
        columns = {row[1] for row in conn.execute("PRAGMA table_info(message_structure)")}
        if self.messages_table.lower() not in targets or "branch_id" not in columns:
            return []
        rows = conn.execute(
            "SELECT DISTINCT branch_id FROM message_structure WHERE session_id = ? "
            "AND branch_id <> ? ORDER BY branch_id LIMIT 5",
            (session_id, MAIN),
        )
        return [str(row[0]) for row in rows]

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
