"""The branch operations of `AdvancedSQLiteSession`, run on the database's thread.

Each function takes the connection of the thread it runs on; the writer's run inside its
transaction, so each operation is atomic. See `schema.py` for the layout.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...codec import MAX_LIMIT, decode_item
from ..reads import decode_checked, read_all, read_latest
from .items import is_user
from .schema import CLEARED, DELETED, MAIN, SEGMENT_PREFIX, AdvancedSQLiteSchema, Chain

__all__ = ["Branches", "ItemDecoder", "check_branch_id"]

ItemDecoder = Callable[[Any], Any]
"""What a stored item stands for, or `None` to skip it (see `set_item_decoder`)."""


@dataclass(slots=True)
class _Branch:
    parent: str | None
    fork_before: int | None
    deleted: bool
    created_at: Any
    cleared: bool = False


class Branches:
    """The branch rows of one session as one transaction sees them, and what to do with them."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        schema: AdvancedSQLiteSchema,
        sid: str,
        decoder: ItemDecoder | None = None,
    ) -> None:
        self.conn = conn
        self.schema = schema
        self.sid = sid
        self.decoder = decoder
        schema.check_session(conn, sid)
        self.rows: dict[str, _Branch] = {
            name: _Branch(parent, before, bool(deleted), created, deleted == CLEARED)
            for name, parent, before, deleted, created in conn.execute(
                schema.select_branches, (sid,)
            )
        }

    # --- names and chains -------------------------------------------------------------------

    def exists(self, branch_id: str) -> bool:
        """Whether a branch can be read, written and switched to (`main` always can)."""
        row = self.rows.get(branch_id)
        return branch_id == MAIN or (row is not None and not row.deleted)

    def deleted_by_delete_branch(self, branch_id: str) -> bool:
        """Whether `delete_branch` deleted this branch (not `clear_session`, not unknown)."""
        row = self.rows.get(branch_id)
        return row is not None and row.deleted and not row.cleared

    def used(self, branch_id: str) -> bool:
        """Whether a name is taken: a living branch, `main`, or a deleted branch (reserved)."""
        return branch_id == MAIN or branch_id in self.rows

    def chain(self, branch_id: str) -> Chain:
        """The branch and its ancestors, each with the id its rows are seen below."""
        chain: Chain = []
        below = MAX_LIMIT
        name: str | None = branch_id
        while name is not None and len(chain) <= len(self.rows):
            chain.append((name, below))
            row = self.rows.get(name)
            if row is None:
                break
            if row.fork_before is not None:
                below = min(below, row.fork_before)
            name = row.parent
        return chain

    def children(self, branch_id: str) -> list[str]:
        """The branches forked from this one, living or not."""
        return [name for name, row in self.rows.items() if row.parent == branch_id]

    def living(self, branch_id: str, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether a branch exists or some living branch reads through it."""
        if branch_id in _seen:
            return False
        if self.exists(branch_id):
            return True
        seen = _seen | {branch_id}
        return any(self.living(child, seen) for child in self.children(branch_id))

    def needed_below(self, branch_id: str) -> int:
        """The rows of a branch below this id are read by a living sub-branch (0: none)."""
        bounds = [
            self.rows[child].fork_before or MAX_LIMIT
            for child in self.children(branch_id)
            if self.living(child)
        ]
        return max(bounds, default=0)

    # --- reading a view -----------------------------------------------------------------------

    def plain(self, branch_id: str) -> bool:
        """Whether the view is simply every row of the session (`main`, never branched)."""
        if branch_id != MAIN or MAIN in self.rows:
            return False
        return self.conn.execute(self.schema.has_branch_items, (self.sid,)).fetchone() is None

    def read(self, branch_id: str, limit: int | None) -> list[Any]:
        """The valid items of a branch, oldest first; the latest `limit` when given."""
        if self.plain(branch_id):
            if limit is None:
                return read_all(self.conn, self.schema, self.sid)
            return read_latest(self.conn, self.schema, self.sid, limit)
        chain = self.chain(branch_id)
        if limit is None:
            view, params = self.schema.view(chain, self.sid)
            rows = self.conn.execute(self.schema.in_order(view), params).fetchall()
            return self._decode(rows)
        window = limit
        while True:
            view, params = self.schema.view(chain, self.sid, newest=window)
            cursor = self.conn.execute(self.schema.select_newest(view), [*params, window])
            fetched = cursor.fetchall()
            fetched.reverse()
            items = self._decode(fetched)
            if len(items) >= limit or len(fetched) < window:
                return items[-limit:] if limit else []
            window *= 2

    def read_rows(self, branch_id: str) -> list[tuple[int, Any, Any]]:
        """(id, item, created_at) of every valid row of a branch, oldest first."""
        view, params = self.schema.view(self.chain(branch_id), self.sid, created_at=True)
        out: list[tuple[int, Any, Any]] = []
        rows = self.conn.execute(self.schema.in_order(view), params)
        for row_id, data, _valid, created in rows:
            item = self.readable(decode_item(data, where=f"row {row_id} of session {self.sid!r}"))
            if item is not None:
                out.append((row_id, item, created))
        return out

    def readable(self, item: Any) -> Any:
        """What a decoded item says, read through the session's item decoder when it has one."""
        if item is None or self.decoder is None:
            return item
        return self.decoder(item)

    def count_users(self, branch_id: str, through: int = MAX_LIMIT) -> int:
        """How many turns (user messages) a branch's view holds up to row `through`.

        Counted as `get_items` decodes the rows: rows SQLite finds invalid are decoded here
        (every row, through the item decoder, when the session has one).
        """
        if self.decoder is not None:
            decoded = self.read_rows(branch_id)
            return sum(1 for row_id, item, _ in decoded if row_id <= through and is_user(item))
        view, params = self.schema.view(self.chain(branch_id), self.sid)
        (count,) = self.conn.execute(self.schema.count_users(view), [*params, through]).fetchone()
        rows = self.conn.execute(self.schema.invalid_rows(view), [*params, through])
        return int(count) + sum(1 for row_id, data in rows if self._user(row_id, data))

    def count_rows(self, branch_id: str) -> int:
        """How many rows a branch's view holds (corrupt rows included)."""
        view, params = self.schema.view(self.chain(branch_id), self.sid)
        (count,) = self.conn.execute(self.schema.count_view(view), params).fetchone()
        return int(count)

    def nth_user(self, branch_id: str, turn: int) -> int | None:
        """The row id of the user message that starts turn `turn` of a branch (as `count_users`)."""
        if self.decoder is not None:
            users = [row_id for row_id, item, _ in self.read_rows(branch_id) if is_user(item)]
            return users[turn - 1] if 1 <= turn <= len(users) else None
        view, params = self.schema.view(self.chain(branch_id), self.sid)
        seen = 0
        for row_id, data, valid in self.conn.execute(self.schema.user_rows(view), params):
            if valid == 1 or self._user(row_id, data):
                seen += 1
                if seen == turn:
                    return int(row_id)
        return None

    def _user(self, row_id: int, data: Any) -> bool:
        """Whether `get_items` reads a row that SQLite finds invalid as a user message."""
        return is_user(decode_item(data, where=f"row {row_id} of session {self.sid!r}"))

    def newest(self, branch_id: str) -> tuple[int, Any, bool] | None:
        """The newest valid row of a branch: (id, item, written on this branch).

        Reads a window of the newest rows of each branch of the chain through its index (never
        the whole view), doubling it while only corrupt rows are found.
        """
        chain = self.chain(branch_id)
        window = 4
        while True:
            view, params = self.schema.view(chain, self.sid, newest=window)
            rows = self.conn.execute(self.schema.select_newest(view), [*params, window])
            fetched = rows.fetchall()
            for row_id, data, _valid in fetched:
                item = decode_item(data, where=f"row {row_id} of session {self.sid!r}")
                if item is not None:
                    return row_id, item, self.owner(row_id) == branch_id
            if len(fetched) < window:
                return None
            window *= 2

    def owner(self, row_id: int) -> str:
        """The branch (or segment) that wrote a row."""
        found = self.conn.execute(self.schema.select_owner, (row_id,)).fetchone()
        return MAIN if found is None else str(found[0])

    # --- changing branches ----------------------------------------------------------------

    def ensure_row(self, branch_id: str) -> None:
        """Give `main` its row in the branches table (other branches always have one)."""
        if branch_id in self.rows:
            return
        self.conn.execute(self.schema.insert_branch, (self.sid, branch_id))
        self.rows[branch_id] = _Branch(None, None, False, None)

    def add(self, branch_id: str, parent: str, fork_before: int) -> None:
        """Create a branch that reads `parent` below row `fork_before`."""
        self.ensure_row(parent)
        self.conn.execute(self.schema.insert_fork, (self.sid, branch_id, parent, fork_before, 0))
        self.rows[branch_id] = _Branch(parent, fork_before, False, None)

    def set_fork(self, branch_id: str, parent: str | None, fork_before: int | None) -> None:
        """Point a branch at another parent and fork point."""
        self.ensure_row(branch_id)
        self.conn.execute(self.schema.update_fork, (parent, fork_before, self.sid, branch_id))
        row = self.rows[branch_id]
        row.parent, row.fork_before = parent, fork_before

    def detach(self, branch_id: str) -> None:
        """Move a branch's own rows and its sub-branches to a new internal segment.

        Afterwards the branch reads everything it read before through the segment and owns no
        row, so changing it (narrowing its fork point, replacing its history) leaves its
        sub-branches as they were.
        """
        self.ensure_row(branch_id)
        segment = f"{SEGMENT_PREFIX}{uuid.uuid4().hex}"
        row = self.rows[branch_id]
        self.conn.execute(
            self.schema.insert_fork, (self.sid, segment, row.parent, row.fork_before, DELETED)
        )
        self.rows[segment] = _Branch(row.parent, row.fork_before, True, None)
        if branch_id == MAIN:
            self.conn.execute(self.schema.move_main_rows, (self.sid, segment, self.sid))
        else:
            self.conn.execute(self.schema.move_branch_rows, (segment, self.sid, branch_id))
        self.conn.execute(self.schema.reparent, (segment, self.sid, branch_id))
        for child in self.children(branch_id):
            self.rows[child].parent = segment
        self.set_fork(branch_id, segment, None)

    def delete_own_rows(self, branch_id: str, from_id: int = 0) -> None:
        """Delete the rows a branch wrote with id >= `from_id` (`main`: rows of no branch)."""
        if branch_id == MAIN:
            self.conn.execute(self.schema.delete_main_rows_from, (self.sid, from_id))
            return
        for statement in self.schema.delete_branch_rows_from:
            self.conn.execute(statement, (self.sid, branch_id, from_id))

    def collect(self) -> None:
        """Delete the rows of deleted branches and segments that no living branch reads."""
        for name, row in list(self.rows.items()):
            if not row.deleted:
                continue
            below = self.needed_below(name)
            self.delete_own_rows(name, below)
            if below == 0 and name.startswith(SEGMENT_PREFIX):
                self.conn.execute(self.schema.delete_branch_row, (self.sid, name))
                del self.rows[name]

    def _decode(self, rows: list[Any]) -> list[Any]:
        return decode_checked(rows, self.sid)


def check_branch_id(branch_id: Any) -> None:
    """Refuse a branch id that is not a str, or holds NUL (reserved for segments)."""
    if not isinstance(branch_id, str):
        raise TypeError(f"a branch id must be a str, not {type(branch_id).__name__}")
    if "\x00" in branch_id:
        raise ValueError("a branch id cannot contain a NUL character")
