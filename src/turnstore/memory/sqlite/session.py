"""SQLiteSession: conversation history in SQLite, in memory or in a file.

How it works (see `database.py` for the thread, `schema.py` for the tables and all SQL,
`reads.py` for the reads): every session object on one file shares that file's one thread and
connection, which runs each call in one transaction (concurrent writes share one: group
commit). The event loop only encodes JSON, queues
work and awaits it; no SQLite call runs on it, the constructor included (the schema is created
by the thread on first use).

For compaction, `SQLiteSession` implements
[`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession] and keeps the replaced
rows in the `<messages_table>_archive` table (`get_archived_items()`; `clear_session` removes
them too).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...exceptions import SessionClosedError
from ..closing import AsyncCloseable, Release, warn_if_unclosed
from ..codec import (
    check_limit,
    check_session_id,
    decode_item,
    decode_rows,
    decode_snapshot,
    encode_items,
    validate_table_names,
)
from ..mutation import await_session_mutation
from ..session import HistorySnapshot, SessionABC
from ..settings import (
    SessionSettings,
    SessionSettingsLike,
    default_session_settings,
    resolve_session_limit,
)
from .database import Job, SQLiteDatabase, Work, acquire_database, release_now
from .reads import read_all, read_latest
from .schema import SQLiteSchema

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = ["SQLiteSession"]


class SQLiteSession(SessionABC, AsyncCloseable):
    """A session stored in SQLite: in memory by default, or in a file that survives restarts.

    Different session ids on one database are isolated; the same id on one file shares its
    history across session objects, threads and processes. Each call is atomic, and a write
    that has returned survives a crash or SIGKILL of the process. No call blocks the event
    loop.

    Args:
        session_id: Identifies the conversation inside the database.
        db_path: `":memory:"` (the default; the history lives as long as this object) or a file
            path (str or PathLike), created on first use.
        sessions_table: Name of the table of sessions; a plain identifier.
        messages_table: Name of the table of items; a plain identifier. Compaction archives
            replaced items in `<messages_table>_archive`.
        session_settings: Default settings for runs that use this session (a dict is accepted).

    Raises:
        TypeError: `session_id` is not a str, or `session_settings` has an unknown key.
        ValueError: A table name is not a plain identifier, or both names are the same, or
            `session_id` holds a lone surrogate (it cannot be stored as UTF-8).

    Example:
        ```python
        from turnstore import SQLiteSession

        async with SQLiteSession("user_42", "conversations.db") as session:
            await session.add_items([{"role": "user", "content": "Hello"}])
            print(await session.get_items(limit=10))
        ```
    """

    # How: every session object on a file shares one thread and one connection (database.py).
    # Concurrent writes share one transaction (group commit), yet each call stays atomic, and
    # a call returns once that transaction is committed (WAL, synchronous=NORMAL). No SQLite
    # call runs on the event loop thread, the constructor's included.

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        check_session_id(session_id)
        sessions_table, messages_table = validate_table_names(sessions_table, messages_table)
        path = os.fspath(db_path)
        if not isinstance(path, str):
            raise TypeError(
                f"db_path must be a str or a PathLike of str, not {type(path).__name__}"
            )
        self.session_id = session_id
        self.session_settings: SessionSettings | None = default_session_settings(session_settings)
        self.db_path = path
        self.sessions_table = sessions_table
        self.messages_table = messages_table
        self._schema = SQLiteSchema(sessions_table, messages_table)
        self._db: SQLiteDatabase = acquire_database(path)
        self._closed = False
        self._close_lock = threading.Lock()
        # A forgotten close() only warns: once no session holds the database, its idle thread
        # notices, closes the connection and exits by itself. The finalizer holds no reference
        # to the database, or the database would outlive the session.
        self._finalizer = warn_if_unclosed(
            self, f"{type(self).__name__} {session_id!r} on {path!r}"
        )

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the session. A plain method, as in the OpenAI Agents SDK.

        Operations already started finish first. Closing twice is harmless; any other
        operation after it raises `SessionClosedError`. Outside an event loop, `close()` returns
        once everything the session held is released. On an event loop it returns at once, so
        that it never blocks the loop: in async code, `await aclose()` to wait for the release.
        """
        self._release()

    async def aclose(self) -> None:
        """Close the session and wait, off the event loop, until its thread has stopped.

        Closing twice is harmless; any other operation after it raises `SessionClosedError`.
        `async with` calls it at the end of the block.
        """
        release = self._release()
        if release is not None:
            await release()

    def _release(self) -> Release | None:
        """Mark the session closed and drop its database; return what joins the thread."""
        with self._close_lock:
            if self._closed:
                return None
            self._closed = True
        self._finalizer.detach()
        return release_now(self._db)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"{type(self).__name__} is closed (session {self.session_id!r} on {self.db_path!r})"
            )

    # --- plumbing ---------------------------------------------------------------------------

    def _enqueue(self, work: Work, *, write: bool) -> Job:
        # Queued synchronously, so calls reach the thread in the order they were made and a
        # call made before close() is never refused by it.
        self._check_open()
        return self._db.enqueue(work, write=write, schema=self._schema)

    async def _read(self, work: Work) -> Any:
        return await self._enqueue(work, write=False).future

    async def _write(self, work: Work) -> Any:
        job = self._enqueue(work, write=True)
        # A cancelled caller waits for the write to commit, unless the write is still waiting
        # for a busy database: the thread then drops it (nothing written) within a busy wait.
        return await await_session_mutation(job.future, on_cancel=job.abandon)

    # --- the Session protocol -----------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the latest `limit` items, oldest first.

        Rows whose stored JSON cannot be decoded are skipped with a logged warning; `limit`
        counts valid items only.

        Args:
            limit: How many of the latest items to return. `None` uses
                `session_settings.limit`, or returns everything when that is unset too. `0`
                returns `[]`.

        Returns:
            The items in the order they were added.

        Raises:
            TypeError: `limit` is not an int.
            ValueError: `limit` is negative.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        count = check_limit(resolve_session_limit(limit, self.session_settings))
        self._check_open()
        if count == 0:
            return []
        schema, session_id = self._schema, self.session_id
        if count is None:
            items: list[TResponseInputItem] = await self._read(
                lambda conn: read_all(conn, schema, session_id)
            )
        else:
            items = await self._read(lambda conn: read_latest(conn, schema, session_id, count))
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history in one transaction: all of them or none.

        Every item is encoded before anything is written. The call returns once the items are
        committed; cancelling the caller after that point does not undo or repeat the write.

        Args:
            items: The items to append, in order. An empty list does nothing.

        Raises:
            TypeError: `items` is not a list, or an item is not a JSON-serialisable mapping (the
                message names its index); nothing is stored.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed; nothing is stored.
        """
        encoded = encode_items(items)
        self._check_open()
        if not encoded:
            return
        schema, session_id = self._schema, self.session_id
        rows = [(session_id, data) for data in encoded]

        def insert(conn: sqlite3.Connection) -> None:
            schema.check_session(conn, session_id)
            schema.touch(conn, [session_id])
            conn.executemany(schema.insert, rows)

        await self._write(insert)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, atomically.

        Two concurrent pops never return the same item. Corrupt rows are skipped (and left in
        place) with a logged warning.

        Returns:
            The removed item, or `None` when the session has no valid item.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        schema, session_id = self._schema, self.session_id

        def pop(conn: sqlite3.Connection) -> Any:
            for row_id, data in conn.execute(schema.newest_first, (session_id,)):
                item = decode_item(data, where=f"row {row_id} of session {session_id!r}")
                if item is not None:
                    conn.execute(schema.delete_row, (row_id,))
                    schema.touch(conn, [session_id])
                    return item
            return None

        item: TResponseInputItem | None = await self._write(pop)
        return item

    async def clear_session(self) -> None:
        """Remove this session's items, archived items and session row, atomically.

        Also its branches and usage per turn when an `AdvancedSQLiteSession` wrote them. Other
        sessions in the same tables are untouched.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        schema, session_id = self._schema, self.session_id
        await self._write(lambda conn: schema.clear_session(conn, session_id))

    # --- atomic replacement (AtomicReplacementSession) and the archive ----------------------

    async def get_archived_items(self) -> list[TResponseInputItem]:
        """Return the items that compaction replaced, oldest first.

        Returns:
            The archived items of this session (corrupt rows skipped with a warning).

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        self._check_open()
        schema, session_id = self._schema, self.session_id

        def read(conn: sqlite3.Connection) -> list[Any]:
            rows = conn.execute(schema.select_archived, (session_id,))
            return decode_rows(rows, f"the archive of session {session_id!r}")

        items: list[TResponseInputItem] = await self._read(read)
        return items

    async def snapshot_history(self) -> HistorySnapshot:
        """Read the whole history and the ids of its rows, in one read transaction.

        Returns:
            The snapshot to pass to `replace_history` (corrupt rows are in its `rows`, not in
            its `items`).

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        self._check_open()
        schema, session_id = self._schema, self.session_id

        def read(conn: sqlite3.Connection) -> HistorySnapshot:
            rows = conn.execute(schema.select_all, (session_id,)).fetchall()
            return decode_snapshot(rows, f"session {session_id!r}")

        snapshot: HistorySnapshot = await self._read(read)
        return snapshot

    async def replace_history(
        self,
        snapshot: HistorySnapshot,
        new_items: list[TResponseInputItem],
        *,
        archive: bool = True,
    ) -> bool:
        """Replace the snapshot's rows by `new_items`, atomically, keeping later additions last.

        In one transaction: the snapshot's rows move to the archive table
        (`<messages_table>_archive`, see `get_archived_items`); `new_items` are inserted; rows
        added after the snapshot are re-inserted after them (new ids, original `created_at`).

        Args:
            snapshot: What `snapshot_history` returned, possibly narrowed with `prefix`.
            new_items: The items that take the place of the snapshot's rows.
            archive: Move the replaced rows to the archive table (`False` deletes them, as
                `EncryptedSession.rotate` needs: old ciphertext must not stay behind).

        Returns:
            `True` when replaced; `False` (nothing changed) when some row of the snapshot was
            popped or cleared since it was taken.

        Raises:
            TypeError: An item of `new_items` is not a JSON-serialisable mapping.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed; nothing changed.
        """
        HistorySnapshot.check(snapshot)
        encoded = encode_items(new_items)
        self._check_open()
        schema, session_id = self._schema, self.session_id
        through = snapshot.rows[-1] if snapshot.rows else 0

        def replace(conn: sqlite3.Connection) -> bool:
            current = conn.execute(schema.select_ids_through, (session_id, through)).fetchall()
            if tuple(row_id for (row_id,) in current) != snapshot.rows:
                return False
            if archive:
                conn.execute(schema.archive_through, (session_id, through))
            later = conn.execute(schema.select_after, (session_id, through)).fetchall()
            conn.execute(schema.delete_messages, (session_id,))
            conn.executemany(schema.insert, [(session_id, data) for data in encoded])
            conn.executemany(
                schema.insert_with_time, [(session_id, data, at) for data, at in later]
            )
            schema.touch(conn, [session_id])
            return True

        replaced: bool = await self._write(replace)
        return replaced

    async def rewrite_stored_items(self, rewrite: Callable[[str], str | None]) -> int:
        """Rewrite every stored item of this session in place, in one transaction.

        Every row counts: the history, the archive, and, on an `AdvancedSQLiteSession`, the
        rows of every branch (they all live in the messages table). Row ids, order and
        `created_at` stay, so branches keep sharing what they shared. Used by
        [`EncryptedSession.rotate`][turnstore.extensions.memory.EncryptedSession.rotate].

        Args:
            rewrite: Called on the database thread with each row's stored JSON text; returns the
                new text, or `None` to leave the row as it is. If it raises, nothing changes
                and the exception propagates.

        Returns:
            How many rows were rewritten.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed; nothing changed.
        """
        self._check_open()
        schema, session_id = self._schema, self.session_id

        def run(conn: sqlite3.Connection) -> int:
            changed = 0
            for select, update in schema.stored_rows:
                rows = conn.execute(select, (session_id,)).fetchall()
                updates = []
                for row_id, data in rows:
                    new = rewrite(data) if isinstance(data, str) else None
                    if new is not None and new != data:
                        updates.append((new, row_id))
                conn.executemany(update, updates)
                changed += len(updates)
            return changed

        rewritten: int = await self._write(run)
        return rewritten
