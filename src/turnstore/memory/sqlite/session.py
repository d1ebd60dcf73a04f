"""SQLiteSession: conversation history in SQLite, in memory or in a file.

How it works (see `sqlite_database` for the threads and `sqlite_schema` for the tables): every
session object on one file shares that file's writer thread, which commits all pending
`add_items` calls in one transaction (group commit), and a few reader threads. The event loop
only encodes JSON, queues work and awaits it; no SQLite call runs on it, the constructor
included (the schema is created by the writer on first use).

For compaction (`OpenAIResponsesCompactionSession`), `SQLiteSession` also provides:

- `get_archived_items()`: the items that compaction replaced, oldest first (they live in the
  `<messages_table>_archive` table; `clear_session` removes them too).
- `_compaction_snapshot()`: a `CompactionSnapshot` of the history (the items, the id of the last
  row and the number of rows), taken in one read transaction. `snapshot.prefix(n)` narrows it to
  its first `n` items, so that only those rows are replaced and the later ones stay.
- `_replace_compacted(snapshot, new_items)`: in ONE write transaction, moves the snapshot's rows
  to the archive and puts `new_items` in their place, BEFORE any item added after the snapshot
  (those rows are re-inserted after the new ones, keeping their `created_at`). Returns `False`,
  changing nothing, when a row of the snapshot was popped or cleared in the meantime.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...exceptions import SessionClosedError
from ...items import TResponseInputItem
from ..closing import AsyncCloseable
from ..codec import check_session_id
from ..mutation import await_session_mutation
from ..session import SessionABC
from ..settings import (
    SessionSettings,
    SessionSettingsLike,
    coerce_session_settings,
    resolve_session_limit,
)
from .database import (
    Job,
    SQLiteDatabase,
    Work,
    acquire_database,
    release_database,
    release_later,
)
from .schema import SQLiteSchema, validate_identifier

__all__ = ["CompactionSnapshot", "SQLiteSession", "encode_items"]

logger = logging.getLogger("turnstore.memory.sqlite")

_T = TypeVar("_T")
_MAX_ID = 2**63 - 1


def encode_items(items: object) -> list[str]:
    """Encode a batch of items as JSON text, checking every item first.

    Args:
        items: A list (or tuple) of mappings.

    Returns:
        One JSON string per item.

    Raises:
        TypeError: `items` is not a list, or an item is not a mapping or not JSON-serialisable;
            the message names the item's index.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise TypeError(f"items must be a list of item dicts, not {type(items).__name__}")
    encoded: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"item {index} is a {type(item).__name__}, not a mapping (dict)")
        try:
            text = json.dumps(
                item if isinstance(item, dict) else dict(item),
                ensure_ascii=False,
                allow_nan=False,
                separators=(",", ":"),
            )
            text.encode("utf-8")  # a lone surrogate cannot be stored
        except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError: ValueError
            raise TypeError(f"item {index} is not JSON-serialisable: {exc}") from exc
        encoded.append(text)
    return encoded


def _decode(data: Any, session_id: str, row_id: int) -> Any:
    """Decode one stored row; log and return None when it is not a JSON object."""
    try:
        item = json.loads(data)
    except (TypeError, ValueError, RecursionError) as exc:
        logger.warning(
            "skipping row %s of session %r: its message_data is not valid JSON (%s)",
            row_id,
            session_id,
            exc,
        )
        return None
    if not isinstance(item, dict):
        logger.warning(
            "skipping row %s of session %r: its message_data is a JSON %s, not an object",
            row_id,
            session_id,
            type(item).__name__,
        )
        return None
    return item


@dataclass(frozen=True, slots=True)
class CompactionSnapshot:
    """The history as one read transaction saw it, for `SQLiteSession._replace_compacted`.

    Attributes:
        through_id: The id of the session's last row (0 when the session was empty).
        row_count: How many rows (corrupt ones included) had an id up to `through_id`.
        items: The valid items of those rows, oldest first.
        row_ids: The ids of those rows (corrupt ones included), oldest first.
        item_row_ids: The row id of each item of `items`.
    """

    through_id: int
    row_count: int
    items: list[TResponseInputItem]
    row_ids: tuple[int, ...] = ()
    item_row_ids: tuple[int, ...] = ()

    def prefix(self, count: int) -> CompactionSnapshot:
        """Narrow the snapshot to its first `count` items, for a partial replacement.

        Passing the result to `_replace_compacted` archives only the rows up to the row of item
        `count - 1` (corrupt rows before it included); the later rows stay, after the new items.

        Args:
            count: How many leading items to keep in the snapshot, `1 <= count <= len(items)`.

        Returns:
            A snapshot of those items and rows.

        Raises:
            ValueError: `count` is out of range, or the snapshot has no row ids.
        """
        if not 1 <= count <= len(self.items) or len(self.item_row_ids) != len(self.items):
            raise ValueError(f"cannot narrow a snapshot of {len(self.items)} items to {count}")
        through = self.item_row_ids[count - 1]
        rows = bisect.bisect_right(self.row_ids, through)
        return CompactionSnapshot(
            through, rows, self.items[:count], self.row_ids[:rows], self.item_row_ids[:count]
        )


class SQLiteSession(SessionABC, AsyncCloseable):
    """A session stored in SQLite: in memory by default, or in a file that survives restarts.

    Different session ids on one database are isolated; the same id on one file shares its
    history across session objects, threads and processes. Every session object on a file shares
    one writer thread, which commits concurrent `add_items` calls together (group commit); each
    call returns once its own items are committed, and a committed call survives a crash or
    SIGKILL of the process. Nothing touches SQLite on the event loop thread.

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

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        check_session_id(session_id)
        validate_identifier(sessions_table, "sessions_table")
        validate_identifier(messages_table, "messages_table")
        if sessions_table.lower() == messages_table.lower() or (
            sessions_table.lower() == f"{messages_table}_archive".lower()
        ):
            raise ValueError(
                f"sessions_table and messages_table must name different tables, got "
                f"{sessions_table!r} and {messages_table!r}"
            )
        path = os.fspath(db_path)
        if not isinstance(path, str):
            raise TypeError(
                f"db_path must be a str or a PathLike of str, not {type(path).__name__}"
            )
        self.session_id = session_id
        self.session_settings: SessionSettings | None = coerce_session_settings(session_settings)
        self.db_path = path
        self.sessions_table = sessions_table
        self.messages_table = messages_table
        self._schema = SQLiteSchema(sessions_table, messages_table)
        self._db: SQLiteDatabase = acquire_database(path)
        self._closed = False
        self._close_lock = threading.Lock()
        # A forgotten close() must not keep a :memory: database's thread alive forever. The
        # finalizer takes no lock (it may run inside any allocation, even one made while this
        # thread holds the registry lock): it only queues the release.
        self._finalizer = weakref.finalize(self, release_later, self._db)

    # --- lifecycle --------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the session; the last session on a database stops its threads.

        Operations already started finish first. Closing twice is harmless; any other operation
        after `close()` raises `SessionClosedError`.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._finalizer.detach() is None:
            return
        threads = release_database(self._db)
        if threads:
            await asyncio.to_thread(_join_all, threads)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"SQLiteSession {self.session_id!r} on {self.db_path!r} is closed"
            )

    # --- plumbing ---------------------------------------------------------------------------

    def _enqueue(self, work: Work, *, write: bool) -> Job:
        # Queued synchronously, so calls reach the writer in the order they were made and a
        # call made before close() is never refused by it.
        self._check_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        job = Job(work, future.get_loop(), future, write, self._schema, self._schema.create)
        if write:
            self._db.submit_write(job)
        else:
            self._db.submit_read(job)
        return job

    async def _read(self, work: Work) -> Any:
        if self._schema not in self._db.prepared:
            # The writer creates (or checks) the schema on first use; reads wait for it.
            await self._enqueue(_nothing, write=True).future
        return await self._enqueue(work, write=False).future

    async def _write(self, work: Work) -> Any:
        job = self._enqueue(work, write=True)
        # A cancelled caller waits for the write to commit, unless the write is still waiting
        # for a busy database: the writer then drops it (nothing written) within a busy slice.
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
        resolved = resolve_session_limit(limit, self.session_settings)
        if resolved is not None:
            if isinstance(resolved, bool) or not isinstance(resolved, int):
                raise TypeError(f"limit must be an int or None, not {type(resolved).__name__}")
            if resolved < 0:
                raise ValueError(f"limit must be >= 0 or None, got {resolved}")
        self._check_open()
        if resolved == 0:
            return []
        schema, session_id = self._schema, self.session_id
        if resolved is None:
            items: list[TResponseInputItem] = await self._read(
                lambda conn: _read_all(conn, schema, session_id)
            )
        else:
            n = min(resolved, _MAX_ID)  # SQLite integers are 64-bit; no session holds more
            items = await self._read(lambda conn: _read_latest(conn, schema, session_id, n))
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
        await self._write(_Insert(schema, session_id, [(session_id, data) for data in encoded]))

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
                item = _decode(data, session_id, row_id)
                if item is not None:
                    conn.execute(schema.delete_row, (row_id,))
                    return item
            return None

        item: TResponseInputItem | None = await self._write(pop)
        return item

    async def clear_session(self) -> None:
        """Remove this session's items, archived items and session row, atomically.

        Other sessions in the same tables are untouched.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        schema, session_id = self._schema, self.session_id

        def clear(conn: sqlite3.Connection) -> None:
            for table in (schema.messages_table, schema.archive_table, schema.sessions_table):
                conn.execute(f'DELETE FROM "{table}" WHERE session_id = ?', (session_id,))

        await self._write(clear)

    # --- compaction support -------------------------------------------------------------------

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
            rows = conn.execute(
                f'SELECT id, message_data FROM "{schema.archive_table}" '
                "WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
            return _decode_rows(rows, session_id)

        items: list[TResponseInputItem] = await self._read(read)
        return items

    async def _compaction_snapshot(self) -> CompactionSnapshot:
        """Read the whole history and what identifies it, in one read transaction.

        Returns:
            The snapshot to pass to `_replace_compacted`.
        """
        self._check_open()
        schema, session_id = self._schema, self.session_id

        def read(conn: sqlite3.Connection) -> CompactionSnapshot:
            rows = conn.execute(schema.select_all, (session_id,)).fetchall()
            through_id = rows[-1][0] if rows else 0
            items: list[Any] = []
            item_row_ids: list[int] = []
            for row_id, data in rows:
                item = _decode(data, session_id, row_id)
                if item is not None:
                    items.append(item)
                    item_row_ids.append(row_id)
            row_ids = tuple(row_id for row_id, _ in rows)
            return CompactionSnapshot(through_id, len(rows), items, row_ids, tuple(item_row_ids))

        snapshot: CompactionSnapshot = await self._read(read)
        return snapshot

    async def _replace_compacted(
        self, snapshot: CompactionSnapshot, new_items: list[TResponseInputItem]
    ) -> bool:
        """Replace the snapshot's rows by `new_items`, atomically, keeping later additions last.

        In one transaction: the session's rows with `id <= snapshot.through_id` move to the
        archive table; `new_items` are inserted; rows added after the snapshot are re-inserted
        after them (new ids, original `created_at`).

        Args:
            snapshot: What `_compaction_snapshot` returned.
            new_items: The compacted history that replaces the snapshot's items.

        Returns:
            `True` when replaced; `False` (nothing changed) when some row of the snapshot was
            popped or cleared since it was taken.

        Raises:
            TypeError: An item of `new_items` is not a JSON-serialisable mapping.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed; nothing changed.
        """
        encoded = encode_items(new_items)
        self._check_open()
        schema, session_id = self._schema, self.session_id
        m, a = f'"{schema.messages_table}"', f'"{schema.archive_table}"'
        through = snapshot.through_id

        def replace(conn: sqlite3.Connection) -> bool:
            (count,) = conn.execute(
                f"SELECT count(*) FROM {m} WHERE session_id = ? AND id <= ?", (session_id, through)
            ).fetchone()
            if count != snapshot.row_count:
                return False
            conn.execute(
                f"INSERT INTO {a} (session_id, message_data, created_at) "
                f"SELECT session_id, message_data, created_at FROM {m} "
                "WHERE session_id = ? AND id <= ? ORDER BY id",
                (session_id, through),
            )
            later = conn.execute(
                f"SELECT message_data, created_at FROM {m} WHERE session_id = ? AND id > ? "
                "ORDER BY id",
                (session_id, through),
            ).fetchall()
            conn.execute(f"DELETE FROM {m} WHERE session_id = ?", (session_id,))
            conn.executemany(schema.insert, [(session_id, data) for data in encoded])
            conn.executemany(
                schema.insert_with_time, [(session_id, data, at) for data, at in later]
            )
            conn.execute(schema.touch_session, (session_id,))
            return True

        replaced: bool = await self._write(replace)
        return replaced


class _Insert:
    """The write of one `add_items` call; the writer merges consecutive ones into one statement."""

    __slots__ = ("batch_key", "rows", "schema", "session_id")

    def __init__(self, schema: SQLiteSchema, session_id: str, rows: list[tuple[str, str]]) -> None:
        self.schema = schema
        self.session_id = session_id
        self.rows = rows
        self.batch_key = ("insert", schema)

    def __call__(self, conn: sqlite3.Connection) -> None:
        self.run_batch(conn, [self])

    def run_batch(self, conn: sqlite3.Connection, inserts: list[Any]) -> None:
        """Insert the rows of several calls (same tables) in their order, two statements in all."""
        rows = [row for insert in inserts for row in insert.rows]
        session_ids = list(dict.fromkeys(insert.session_id for insert in inserts))
        conn.executemany(self.schema.touch_session, [(sid,) for sid in session_ids])
        conn.executemany(self.schema.insert, rows)


def _nothing(conn: sqlite3.Connection) -> None:
    """A write job that only makes the writer prepare the schema."""


def _join_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join()


def _decode_rows(rows: Iterable[tuple[int, Any]], session_id: str) -> list[Any]:
    items: list[Any] = []
    for row_id, data in rows:
        item = _decode(data, session_id, row_id)
        if item is not None:
            items.append(item)
    return items


def _read_all(conn: sqlite3.Connection, schema: SQLiteSchema, session_id: str) -> list[Any]:
    # Rows come back as they are stored, a chunk at a time, and are joined in Python: SQLite never
    # concatenates them (its `group_concat` fails with "string or blob too big" once a session
    # holds about 1 GB, whatever the size of each row).
    items: list[Any] = []
    after = -1
    while True:
        rows = conn.execute(schema.select_after, (session_id, after, _CHUNK_ROWS)).fetchall()
        if not rows:
            break
        items += _decode_checked(rows, session_id)
        if len(rows) < _CHUNK_ROWS:
            break
        after = rows[-1][0]
    return items


def _read_latest(
    conn: sqlite3.Connection, schema: SQLiteSchema, session_id: str, limit: int
) -> list[Any]:
    # Newest first through the (session_id, id) index, so the cost follows `limit`, not the
    # history; when corrupt rows were skipped, fetch further back until `limit` valid items.
    chunks: list[list[Any]] = []
    found = 0
    before = _MAX_ID
    while found < limit:
        want = limit - found
        rows = conn.execute(schema.select_latest, (session_id, before, want)).fetchall()
        if not rows:
            break
        rows.reverse()
        chunk = _decode_checked(rows, session_id)
        chunks.append(chunk)
        found += len(chunk)
        if len(rows) < want:
            break
        before = rows[0][0]
    chunks.reverse()
    return [item for chunk in chunks for item in chunk]


_CHUNK_ROWS = 1000
"""Rows read and decoded at a time: large enough to be fast, small enough that the event loop
thread gets the GIL back between chunks."""

_JOIN_CHARS = 8_000_000
"""The most characters joined into one `json.loads` call (larger rows are decoded alone)."""


def _decode_checked(rows: list[Any], session_id: str) -> list[Any]:
    """Decode (id, message_data, valid) rows, oldest first, skipping corrupt ones.

    Consecutive rows that SQLite found to be valid JSON are joined (up to `_CHUNK_ROWS` rows and
    `_JOIN_CHARS` characters) into one JSON array and decoded with one `json.loads` call; a batch
    holding an invalid row, or whose result is not one object per row, is decoded row by row.
    """
    items: list[Any] = []
    start = 0
    while start < len(rows):
        end, size = start, 0
        while end < len(rows) and end - start < _CHUNK_ROWS:
            data = rows[end][1]
            size += len(data) if isinstance(data, str) else _JOIN_CHARS
            if end > start and size > _JOIN_CHARS:
                break
            end += 1
        chunk = rows[start:end]
        start = end
        if all(valid == 1 for _, _, valid in chunk):
            try:
                if len(chunk) == 1:
                    decoded = [json.loads(chunk[0][1])]
                else:
                    decoded = json.loads("[" + ",".join([data for _, data, _ in chunk]) + "]")
            except (TypeError, ValueError, RecursionError):
                decoded = None
            if (
                type(decoded) is list
                and len(decoded) == len(chunk)
                and all(type(item) is dict for item in decoded)
            ):
                items += decoded
                continue
        for row_id, data, _ in chunk:
            item = _decode(data, session_id, row_id)
            if item is not None:
                items.append(item)
    return items
