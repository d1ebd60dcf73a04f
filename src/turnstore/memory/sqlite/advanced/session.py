"""AdvancedSQLiteSession: `SQLiteSession` with conversation branches and token usage per turn.

Every operation is one job on the database's thread (`database.py`), so it keeps
`SQLiteSession`'s guarantees: no SQLite call on the event loop, one transaction per write,
committed writes survive a crash. How branches share history
without copying it: `schema.py`; the operations on them: `branches.py`; what is derived from the
items (turns, tools, usage): `items.py`; the turn and usage methods: `analytics.py`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ....exceptions import BranchDeletedError
from ...codec import check_limit, decode_snapshot, encode_items
from ...session import HistorySnapshot
from ...settings import SessionSettingsLike, resolve_session_limit
from ..session import SQLiteSession
from .analytics import BranchAnalytics
from .branches import Branches, ItemDecoder, check_branch_id
from .items import is_user
from .schema import MAIN, AdvancedSQLiteSchema

if TYPE_CHECKING:
    from ....items import TResponseInputItem

__all__ = ["AdvancedSQLiteSession"]

_LOGGER = logging.getLogger("turnstore.memory.sqlite.advanced")
"""The default logger of branch operations (the package's name, as before it was a package)."""


class AdvancedSQLiteSession(BranchAnalytics, SQLiteSession):
    """A `SQLiteSession` with conversation branches and token usage per turn.

    A drop-in for the OpenAI Agents SDK's `AdvancedSQLiteSession` (same constructor and
    methods). A *turn* starts at each user message. `create_branch_from_turn(n)` starts a branch
    holding the turns before turn `n` and switches to it; `get_items`, `add_items` and
    `pop_item` work on the current branch (`main` at first). A branch shares the history it
    came from: nothing is copied, and writes on one branch never show on another.

    Usage: `Runner` records each run's token usage against the turn it answered, by itself;
    `store_run_usage(result)` does the same for a run result of turnstore or of the SDK.

    Args:
        session_id: Identifies the conversation inside the database.
        db_path: `":memory:"` (the default) or a file path, created on first use.
        create_tables: Accepted for compatibility with the SDK; the tables are always created
            on first use when missing (never in the constructor).
        logger: Where branch operations are logged (default: the
            `turnstore.memory.sqlite.advanced` logger).
        sessions_table: Name of the table of sessions.
        messages_table: Name of the table of items; the branch and usage tables are named
            after it (`<messages_table>_branches`, `_branch_items`, `_turn_usage`).
        session_settings: Default settings for runs that use this session.

    Raises:
        TypeError: As `SQLiteSession`, or `create_tables` is not a bool.
        ValueError: As `SQLiteSession`.

    Example:
        ```python
        from turnstore.extensions.memory import AdvancedSQLiteSession

        session = AdvancedSQLiteSession(session_id="u1", db_path="chat.db")
        await session.add_items([{"role": "user", "content": "Hi"}])
        await session.create_branch_from_turn(1, "retry")
        print(await session.list_branches())
        ```
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        create_tables: bool = False,
        logger: logging.Logger | None = None,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        if not isinstance(create_tables, bool):
            raise TypeError(f"create_tables must be a bool, not {type(create_tables).__name__}")
        super().__init__(
            session_id,
            db_path,
            sessions_table=sessions_table,
            messages_table=messages_table,
            session_settings=session_settings,
        )
        self._schema: AdvancedSQLiteSchema = AdvancedSQLiteSchema(sessions_table, messages_table)
        self._logger = logger if logger is not None else _LOGGER
        self._current_branch_id = MAIN
        self._item_decoder: ItemDecoder | None = None

    @property
    def current_branch_id(self) -> str:
        """The branch that `get_items`, `add_items` and `pop_item` work on."""
        return self._current_branch_id

    def set_item_decoder(self, decoder: ItemDecoder | None) -> None:
        """Read the stored items through `decoder` for turns, search, branches and usage.

        For a wrapper that stores items in a form this session cannot read
        ([`EncryptedSession`][turnstore.extensions.memory.EncryptedSession] sets its own).
        These then work on what the decoder returns: turn numbers, turn listings and search,
        tool counts, `list_branches`' `user_turns`, branching from a turn and usage recording.
        `get_items`, `pop_item` and the atomic replacement still return and take the items as
        stored.

        Args:
            decoder: Gets each stored item and returns the item it stands for, or `None` to
                skip it; what it raises fails the read. It runs on the database's threads.
                `None` reads the items as stored again.
        """
        self._item_decoder = decoder

    # --- plumbing -----------------------------------------------------------------------------

    async def _on_branch(
        self, work: Callable[[Branches, str], Any], branch_id: str | None = None, *, write: bool
    ) -> Any:
        """Run `work(branches, branch)` on a database thread, on `branch_id` or the current branch.

        A current branch that another session object deleted with `delete_branch` raises
        `BranchDeletedError` (nothing is read or written: a write never lands on another branch);
        after another object cleared the session (`clear_session`, the command line's `clear`,
        a prune), the session is back on `main`, as a new one would be, with a warning. An
        explicit `branch_id` that does not exist raises `ValueError`.
        """
        if branch_id is not None:
            check_branch_id(branch_id)
        self._check_open()
        captured = self._current_branch_id
        schema, session_id, decoder = self._schema, self.session_id, self._item_decoder

        def run(conn: sqlite3.Connection) -> tuple[str, Any]:
            branches = Branches(conn, schema, session_id, decoder)
            if branch_id is not None:
                if not branches.exists(branch_id):
                    raise ValueError(f"Branch '{branch_id}' does not exist")
                return branch_id, work(branches, branch_id)
            if branches.deleted_by_delete_branch(captured):
                raise BranchDeletedError(
                    f"the current branch {captured!r} of session {session_id!r} was deleted by "
                    "another session object; nothing was read or written. Switch to another "
                    "branch (switch_to_branch('main')) and retry"
                )
            name = captured if branches.exists(captured) else MAIN
            return name, work(branches, name)

        name, result = await (self._write(run) if write else self._read(run))
        if branch_id is None and name != captured and self._current_branch_id == captured:
            self._logger.warning(
                "Session %r was cleared by another session object: its branch '%s' is gone; "
                "back on 'main'",
                session_id,
                captured,
            )
            self._current_branch_id = name
        return result

    # --- the Session protocol, on the current branch -------------------------------------------

    async def get_items(
        self, limit: int | None = None, branch_id: str | None = None
    ) -> list[TResponseInputItem]:
        """Return the latest `limit` items of the current branch (or `branch_id`), oldest first.

        Args:
            limit: As `SQLiteSession.get_items`.
            branch_id: Read this branch instead of the current one.

        Returns:
            The items of the branch: those it shares with the branch it came from, then its own.

        Raises:
            TypeError: `limit` is not an int, or `branch_id` is not a str.
            ValueError: `limit` is negative, or `branch_id` does not exist.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        count = check_limit(resolve_session_limit(limit, self.session_settings))
        if count == 0:
            if branch_id is not None:
                check_branch_id(branch_id)
            self._check_open()
            return []
        items: list[TResponseInputItem] = await self._on_branch(
            lambda branches, name: branches.read(name, count), branch_id, write=False
        )
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the current branch in one transaction: all of them or none.

        On `main` this is `SQLiteSession.add_items`.

        Raises:
            TypeError: As `SQLiteSession.add_items`; nothing is stored.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed; nothing is stored.
        """
        if self._current_branch_id == MAIN:
            await super().add_items(items)
            return
        encoded = encode_items(items)
        self._check_open()
        if not encoded:
            return
        schema, session_id = self._schema, self.session_id

        def add(branches: Branches, name: str) -> None:
            conn = branches.conn
            schema.touch(conn, [session_id])
            if name == MAIN:
                conn.executemany(schema.insert, [(session_id, data) for data in encoded])
                return
            ids = [conn.execute(schema.insert, (session_id, data)).lastrowid for data in encoded]
            conn.executemany(
                schema.insert_branch_item, [(row_id, session_id, name) for row_id in ids]
            )

        await self._on_branch(add, write=True)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item of the current branch, atomically.

        Other branches keep the item when they share it; the turn's usage goes with the turn's
        user message. Corrupt rows are skipped and left in place.

        Returns:
            The removed item, or `None` when the branch has no valid item.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        schema, session_id = self._schema, self.session_id

        def pop(branches: Branches, name: str) -> Any:
            found = branches.newest(name)
            if found is None:
                return None
            row_id, item, own = found
            if is_user(branches.readable(item)):
                turn = branches.count_users(name, row_id)
                branches.conn.execute(schema.delete_turn_usage, (session_id, name, turn))
            shared = branches.needed_below(name) > row_id
            if own and not shared:
                branches.conn.execute(schema.delete_row, (row_id,))
                branches.conn.execute(schema.delete_branch_item, (row_id,))
            else:
                if shared:
                    branches.detach(name)
                branches.set_fork(name, branches.rows[name].parent, row_id)
            return item

        item: TResponseInputItem | None = await self._on_branch(pop, write=True)
        return item

    async def clear_session(self) -> None:
        """Remove every branch, item, archived item and usage row of this session, atomically.

        The names of deleted branches stay reserved; the current branch becomes `main`.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        await super().clear_session()
        self._current_branch_id = MAIN

    # --- atomic replacement, on the current branch -----------------------------------------------

    async def snapshot_history(self) -> HistorySnapshot:
        """Read the current branch's items and the ids of their rows, in one read transaction.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """

        def read(branches: Branches, name: str) -> HistorySnapshot:
            view, params = branches.schema.view(branches.chain(name), branches.sid)
            rows = branches.conn.execute(branches.schema.select_view(view), params)
            return decode_snapshot(rows.fetchall(), f"session {branches.sid!r}")

        snapshot: HistorySnapshot = await self._on_branch(read, write=False)
        return snapshot

    async def replace_history(
        self,
        snapshot: HistorySnapshot,
        new_items: list[TResponseInputItem],
        *,
        archive: bool = True,
    ) -> bool:
        """Replace the snapshot's rows of the current branch by `new_items`, atomically.

        As `SQLiteSession.replace_history`, on the current branch only: afterwards the branch
        owns its whole history (`new_items`, then the rows added after the snapshot) and shares
        nothing; the branches that shared the replaced rows keep them.

        Raises:
            TypeError: An item of `new_items` is not a JSON-serialisable mapping.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed; nothing changed.
        """
        HistorySnapshot.check(snapshot)
        encoded = encode_items(new_items)
        schema, session_id = self._schema, self.session_id
        through = snapshot.rows[-1] if snapshot.rows else 0

        def replace(branches: Branches, name: str) -> bool:
            conn = branches.conn
            view, params = schema.view(branches.chain(name), session_id, created_at=True)
            rows = conn.execute(
                schema.select_view(view, "id, message_data, created_at"), params
            ).fetchall()
            if tuple(row[0] for row in rows if row[0] <= through) != snapshot.rows:
                return False
            if archive:
                conn.executemany(
                    schema.archive_row,
                    [(session_id, data, at) for row_id, data, at in rows if row_id <= through],
                )
            if branches.needed_below(name) > 0:
                branches.detach(name)
            else:
                branches.delete_own_rows(name)
            if name in branches.rows:
                branches.set_fork(name, None, None)
            fresh = [(data, None) for data in encoded]
            fresh += [(data, at) for row_id, data, at in rows if row_id > through]
            for data, at in fresh:
                if at is None:
                    row_id = conn.execute(schema.insert, (session_id, data)).lastrowid
                else:
                    row_id = conn.execute(schema.insert_with_time, (session_id, data, at)).lastrowid
                if name != MAIN:
                    conn.execute(schema.insert_branch_item, (row_id, session_id, name))
            schema.touch(conn, [session_id])
            branches.collect()
            return True

        replaced: bool = await self._on_branch(replace, write=True)
        return replaced

    # --- branches -------------------------------------------------------------------------------

    async def create_branch_from_turn(
        self, turn_number: int, branch_name: str | None = None
    ) -> str:
        """Start a branch holding the current branch's turns before `turn_number`; switch to it.

        Nothing is copied: the new branch reads the shared turns where they are.

        Args:
            turn_number: The turn (counted from 1 on the current branch) that the new branch
                replaces; see `get_conversation_turns`.
            branch_name: The new branch's id (default `branch_from_turn_<n>_<unix time>`). A name
                used before in this session, deleted branches included, is refused.

        Returns:
            The id of the new branch, now the current one.

        Raises:
            TypeError: `turn_number` is not an int, or `branch_name` is not a str.
            ValueError: The branch has no turn `turn_number`, or `branch_name` is blank, holds
                a NUL character, or was used before.
        """
        if isinstance(turn_number, bool) or not isinstance(turn_number, int):
            raise TypeError(f"turn_number must be an int, not {type(turn_number).__name__}")
        if branch_name is not None:
            check_branch_id(branch_name)
            if not branch_name.strip():
                raise ValueError("Branch name cannot be empty")

        def create(branches: Branches, source: str) -> tuple[str, str]:
            at = branches.nth_user(source, turn_number) if turn_number >= 1 else None
            if at is None:
                raise ValueError(
                    f"Turn {turn_number} does not contain a user message in branch '{source}'"
                )
            name = branch_name
            if name is None:
                base = f"branch_from_turn_{turn_number}_{int(time.time())}"
                name, suffix = base, 1
                while branches.used(name):
                    suffix += 1
                    name = f"{base}_{suffix}"
            elif branches.used(name):
                raise ValueError(
                    f"Branch ID '{name}' has already been used. Choose a new branch ID."
                )
            branches.add(name, source, at)
            return name, source

        name, source = await self._on_branch(create, write=True)
        self._current_branch_id = name
        self._logger.debug("Created branch '%s' from turn %s of '%s'", name, turn_number, source)
        return str(name)

    async def create_branch_from_content(
        self, search_term: str, branch_name: str | None = None
    ) -> str:
        """Start a branch at the first turn whose user message contains `search_term`.

        Raises:
            TypeError: `search_term` or `branch_name` has the wrong type.
            ValueError: No turn matches, or `branch_name` is refused (see
                `create_branch_from_turn`).
        """
        matches = await self.find_turns_by_content(search_term)
        if not matches:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(int(matches[0]["turn"]), branch_name)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Make `branch_id` the current branch.

        Raises:
            TypeError: `branch_id` is not a str.
            ValueError: The branch does not exist.
        """
        await self._on_branch(lambda branches, name: None, branch_id, write=False)
        old, self._current_branch_id = self._current_branch_id, branch_id
        self._logger.info("Switched from branch '%s' to '%s'", old, branch_id)

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete a branch, its usage, and the items no other branch shares.

        Its id stays reserved in this session. Branches started from it keep their history.

        Args:
            branch_id: The branch to delete; not `main`.
            force: Allow deleting the current branch (the session then switches to `main`).

        Raises:
            TypeError: `branch_id` is not a str.
            ValueError: `branch_id` is blank, `main`, the current branch without `force`, or
                does not exist.
        """
        check_branch_id(branch_id)
        if not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")
        current = branch_id == self._current_branch_id
        if current and not force:
            raise ValueError(
                f"Cannot delete current branch '{branch_id}'. "
                "Use force=True or switch branches first"
            )
        schema = self._schema

        def delete(branches: Branches, name: str) -> None:
            conn, sid = branches.conn, branches.sid
            conn.execute(schema.mark_deleted, (sid, name))
            conn.execute(schema.delete_branch_usage, (sid, name))
            branches.rows[name].deleted = True
            branches.collect()

        await self._on_branch(delete, branch_id, write=True)
        if current and self._current_branch_id == branch_id:
            self._current_branch_id = MAIN
        self._logger.info("Deleted branch '%s'", branch_id)

    async def list_branches(self) -> list[dict[str, Any]]:
        """List the branches of this session, `main` first, then in order of creation.

        Returns:
            One dict per branch: `branch_id`, `message_count` (items it holds, shared ones
            included), `user_turns`, `is_current`, `created_at` (`main` is listed once it holds
            an item or another branch exists).
        """
        current = self._current_branch_id
        schema = self._schema

        def listing(branches: Branches, _name: str) -> list[dict[str, Any]]:
            names = [n for n in branches.rows if n != MAIN and branches.exists(n)]
            # After another object cleared the session, the next operation is on `main`.
            shown = current
            if not branches.exists(current) and not branches.deleted_by_delete_branch(current):
                shown = MAIN
            out = []
            for name in [MAIN, *names]:
                count = branches.count_rows(name)
                if name == MAIN and count == 0 and not names:
                    continue
                row = branches.rows.get(name)
                created = row.created_at if row is not None else None
                if created is None:
                    found = branches.conn.execute(schema.select_created, (branches.sid,)).fetchone()
                    created = found[0] if found else None
                out.append(
                    {
                        "branch_id": name,
                        "message_count": count,
                        "user_turns": branches.count_users(name),
                        "is_current": name == shown,
                        "created_at": created,
                    }
                )
            return out

        # Through `main`, which always exists: the branches can be listed (to pick one to switch
        # to) even when another object deleted the current one.
        branches: list[dict[str, Any]] = await self._on_branch(listing, MAIN, write=False)
        return branches
