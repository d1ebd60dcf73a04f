"""Looking after the sessions in one database or Redis: list, inspect, export, import, clear.

The base [`SessionStore`][turnstore.admin.SessionStore], which the per-backend stores
(`sqlite/store.py`, `sqlalchemy/store.py`, `redis/store.py`) extend; what it returns is in
`records.py`, the internal helpers they share in `_store_helpers.py`.
[`open_session_store`][turnstore.admin.open_session_store] (in `open_store.py`, so that this module
imports no backend) picks the backend. The `turnstore` command line is built on them.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from ._store_helpers import utc
from .closing import AsyncCloseable
from .codec import MAX_LIMIT, decode_item, encode_items
from .records import (
    MAIN_BRANCH,
    EncodedWrite,
    SessionInfo,
    SessionRecord,
    SessionStats,
    session_times_of,
)
from .session import Session

__all__ = [
    "SessionInfo",
    "SessionRecord",
    "SessionStats",
    "SessionStore",
]


class SessionStore(AsyncCloseable):
    """Every session in one database or Redis, for listing, export, import and clean-up.

    Get one with [`open_session_store`][turnstore.admin.open_session_store]; close it with
    `await store.aclose()` or `async with`.

    Attributes:
        target: The file or URL the store was opened on (passwords hidden).
        backend: `"sqlite"`, a SQLAlchemy dialect name, or `"redis"`.
    """

    target: str
    backend: str

    async def close(self) -> None:
        """Release the store's connections (the same as `aclose()`); closing twice is harmless."""
        await self.aclose()

    async def list_sessions(
        self, *, offset: int = 0, limit: int = 50, prefix: str = ""
    ) -> list[SessionInfo]:
        """Return sessions, the most recently active first.

        A page is a window by position: a session written between two calls moves to the front
        and shifts the later pages. To visit every session once, use `iter_sessions`.

        Args:
            offset: How many sessions to skip (for paging).
            limit: The most to return.
            prefix: Only sessions whose id starts with this text (case-sensitive; `""` for all).

        Returns:
            One entry per session, with its item count and its created and last-activity times.

        Raises:
            ValueError: `offset` is negative or `limit` is below 1.
            TypeError: `prefix` is not a string.
            SessionStorageError: The storage failed.

        Example:
            ```python
            page_2 = await store.list_sessions(prefix="user-42/", offset=20, limit=20)
            ```
        """
        offset, limit = _check_page(offset, limit)
        _check_prefix(prefix)
        return await self._list_sessions(offset, limit, prefix)

    @abstractmethod
    async def _list_sessions(self, offset: int, limit: int, prefix: str) -> list[SessionInfo]:
        """One page of sessions, most recently active first (`list_sessions` checked the page)."""

    async def iter_sessions(self, *, prefix: str = "") -> AsyncIterator[SessionInfo]:
        """Yield every session once, in session id order (on Redis, in no set order).

        Use it to walk a whole store, as the command line's `export --all` does. Every session
        that exists for the whole walk is yielded exactly once, however many sessions are
        written to, created or deleted meanwhile. A session created or deleted during the walk
        may or may not be yielded. For pages with the newest activity first, use
        `list_sessions`.

        Args:
            prefix: Only sessions whose id starts with this text (case-sensitive; `""` for all).

        Yields:
            One entry per session, as `list_sessions` returns them.

        Raises:
            TypeError: `prefix` is not a string.
            SessionStorageError: The storage failed.

        Example:
            ```python
            async for info in store.iter_sessions(prefix="user-42/"):
                print(info.session_id, info.item_count)
            ```
        """
        _check_prefix(prefix)
        seen: set[str] = set()
        async for info in self._iter_sessions(prefix):
            if info.session_id not in seen:
                seen.add(info.session_id)
                yield info

    async def _iter_sessions(self, prefix: str) -> AsyncIterator[SessionInfo]:
        """Every session, in pages of session ids after the last one yielded (keyset)."""
        after: str | None = None
        while True:
            infos = await self._sessions_after(after, _WALK_PAGE, prefix)
            for info in infos:
                yield info
            if len(infos) < _WALK_PAGE:
                return
            after = infos[-1].session_id

    async def _sessions_after(
        self, after: str | None, limit: int, prefix: str
    ) -> list[SessionInfo]:
        """Up to `limit` sessions whose id is greater than `after` (all when `None`), by id.

        A backend that walks otherwise (Redis) overrides `_iter_sessions` instead.
        """
        raise NotImplementedError(f"{type(self).__name__} does not list sessions by id")

    async def delete_idle_sessions(self, older_than: timedelta | float) -> int:
        """Delete every session not written to for longer than `older_than`.

        A session written after the cutoff is never deleted. The cutoff is this machine's clock,
        and a write's time is the storage's, so keep the two clocks in sync. A session's items
        (and, on SQLite, its archived items) go with it. On SQL backends this is one
        transaction; on Redis, atomic batches.

        Args:
            older_than: The idle time, as a `timedelta` or seconds (`0` deletes every session
                not written to since the call started).

        Returns:
            How many sessions were deleted.

        Raises:
            TypeError: `older_than` is not a `timedelta` or a number.
            ValueError: `older_than` is negative.
            SessionStorageError: The storage failed; on SQL backends nothing was deleted.

        Example:
            ```python
            from datetime import timedelta

            deleted = await store.delete_idle_sessions(timedelta(days=30))
            ```
        """
        # How "never deleted when written after the cutoff" holds (docs/architecture.md#mechanisms):
        # - A write's time is the storage's clock when the write ends, just before it commits
        #   (the last statement of its transaction; on Redis, inside its script), not when it
        #   began: a write still open when the cutoff passes keeps its session, however long.
        # - Times are kept and compared to the millisecond (SQLite, Redis) or the microsecond
        #   (PostgreSQL, MySQL/MariaDB). A whole-second time stored by an earlier release or by
        #   the OpenAI Agents SDK counts as the end of its second.
        # - SQLite and SQL databases: one transaction, so a write that comes while it runs waits,
        #   then lands in a new session. Redis: each batch of 500 sessions is one atomic script,
        #   which keeps a session written to since the batch was read.
        return await self._delete_idle_before(_idle_cutoff(older_than))

    async def find_idle_sessions(self, older_than: timedelta | float) -> list[SessionInfo]:
        """Return the sessions `delete_idle_sessions(older_than)` would delete now.

        For a dry run before deleting (the command line's `prune --dry-run`): nothing is
        changed. A session written to between this call and the deletion is not deleted.

        Args:
            older_than: The idle time, as a `timedelta` or seconds.

        Returns:
            The idle sessions, the most recently active first.

        Raises:
            TypeError: `older_than` is not a `timedelta` or a number.
            ValueError: `older_than` is negative.
            SessionStorageError: The storage failed.

        Example:
            ```python
            for info in await store.find_idle_sessions(timedelta(days=30)):
                print(info.session_id, info.last_activity)
            ```
        """
        cutoff = _idle_cutoff(older_than)
        return [
            info
            async for info in self.iter_sessions()
            if info.last_activity is not None and info.last_activity < cutoff
        ]

    async def missing_tables(self) -> list[str]:
        """Return the tables this store reads that do not exist in the storage.

        A SQL store reads a sessions table and a messages table, created by the first write of
        a session. Until then, or with a wrong database or table name, every read finds
        nothing: this tells such a database apart from an empty one. Redis has no tables.

        Returns:
            The missing table names (`[]` when both exist, and always for Redis).

        Raises:
            SessionStorageError: The storage failed.

        Example:
            ```python
            if missing := await store.missing_tables():
                raise SystemExit(f"{store.target} has no table {missing[0]}: wrong database?")
            ```
        """
        return []

    @abstractmethod
    async def _delete_idle_before(self, cutoff: datetime) -> int:
        """Delete the sessions last active before `cutoff`; return how many."""

    @abstractmethod
    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist.

        Args:
            session_id: The session's id.
        """

    @abstractmethod
    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""

    @abstractmethod
    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first.

        Corrupt rows are skipped with a logged warning, as in `get_items`.

        Args:
            session_id: The session's id.
        """

    async def list_branches(self, session_id: str) -> list[str]:
        """The branches of a session other than `main`, oldest first (`[]`: none).

        Only a SQLite file written by `AdvancedSQLiteSession` holds branches.

        Args:
            session_id: The session's id.
        """
        return []

    async def read_branch_records(self, session_id: str, branch: str) -> list[SessionRecord]:
        """Return the items of one branch of a session, oldest first, as `read_records` does.

        Args:
            session_id: The session's id.
            branch: `"main"`, or a branch that `list_branches` lists.

        Raises:
            ValueError: The session has no such branch.
        """
        if branch != MAIN_BRANCH:
            raise ValueError(
                f"session {session_id!r} has no branch {branch!r}: only 'main' exists here"
            )
        return await self.read_records(session_id)

    def check_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """Raise the `ValueError` that `write_records` would raise for these records' branches.

        Writes nothing: the command line's import checks every session of a file with it
        before its first write.

        Args:
            session_id: The session the records go to.
            records: The records.

        Raises:
            ValueError: A record belongs to a branch other than `main` and this storage keeps
                no branches (only a SQLite file does), or a branch name is not valid there.
        """
        branches = sorted({record.branch for record in records if record.branch is not None})
        if branches:
            raise ValueError(
                f"the records of session {session_id!r} belong to the branches "
                f"{', '.join(map(repr, branches))} of an AdvancedSQLiteSession, which only a "
                "SQLite file keeps: import them into a SQLite file, or leave out their lines "
                "(an export with --branch main has none)"
            )

    async def write_records(
        self, session_id: str, records: list[SessionRecord], *, replace: bool = False
    ) -> None:
        """Write records to a session in one transaction, keeping their times.

        Every item is encoded before anything is written. The write is atomic, so a failure
        leaves the session as it was.

        The write counts as the session's latest activity, unless the records carry the
        session's times (`session_created_at` and `session_last_activity`, as the first record
        of each session in an export does). A session that the write creates or replaces then
        gets those times. A session that it appends to keeps the earlier of the two creation
        times and the later of the two last-activity times. (On Redis, a session's creation
        time is that of its first item.)

        Args:
            session_id: The session to write to (created if missing).
            records: The records, oldest first; a record without `created_at` gets the current
                time.
            replace: Remove the session's items (and its compaction archive) in the same
                transaction first, instead of appending.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping; nothing was written.
            ValueError: A record belongs to a branch other than `main` and this storage keeps
                no branches (only a SQLite file does); nothing was written.
            SessionStorageError: The storage failed; nothing was written.
        """
        self.check_records(session_id, records)
        encoded = encode_items([record.item for record in records])
        if not encoded and not replace:
            return
        now = datetime.now(UTC)
        created = [record.created_at or now for record in records]
        session_created, last_activity = session_times_of(records)
        await self._write_encoded(
            EncodedWrite(session_id, encoded, created, replace, session_created, last_activity)
        )

    @abstractmethod
    async def _write_encoded(self, write: EncodedWrite) -> None:
        """Write what `write_records` encoded, atomically (one transaction or script)."""

    @staticmethod
    def _decode_records(
        session_id: str, rows: Iterable[tuple[Any, Any, Any]], parse_time: Any
    ) -> list[SessionRecord]:
        """(row id, JSON text, created_at) rows as records, corrupt rows skipped (SQL stores)."""
        records = []
        for row_id, data, created in rows:
            item = decode_item(data, where=f"row {row_id} of session {session_id!r}")
            if item is not None:
                records.append(SessionRecord(session_id, item, parse_time(created)))
        return records

    @abstractmethod
    def session(self, session_id: str) -> Session:
        """Return a session object for one id on this storage.

        Args:
            session_id: The session's id.

        Returns:
            A session that shares the store's connections (close it before the store).
        """


_MAX_PAGE = MAX_LIMIT // 2
_WALK_PAGE = 500
"""Sessions per page when `iter_sessions` walks a store page by page."""
"""The largest offset or page size passed to a storage: more sessions than any holds, and small
enough that offset + page size still fits the signed 64-bit integers SQLite, PostgreSQL and
Redis take (a larger value means the same as this one)."""


def _check_page(offset: int, limit: int) -> tuple[int, int]:
    """Check a page of `list_sessions` and return it capped at `_MAX_PAGE`."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}")
    return min(offset, _MAX_PAGE), min(limit, _MAX_PAGE)


def _check_prefix(prefix: str) -> None:
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")


def _idle_cutoff(older_than: timedelta | float) -> datetime:
    """The last-activity time before which a session counts as idle (UTC, milliseconds)."""
    if isinstance(older_than, timedelta):
        age = older_than
    elif isinstance(older_than, int | float) and not isinstance(older_than, bool):
        if older_than != older_than:  # NaN
            raise ValueError("older_than must be a number of seconds, got NaN")
        if older_than < 0:
            raise ValueError(f"older_than must not be negative, got {older_than!r}")
        try:
            age = timedelta(seconds=older_than)
        except OverflowError:  # more than timedelta holds (`inf` included): nothing is so idle
            return datetime.min.replace(tzinfo=UTC)
    else:
        raise TypeError(
            f"older_than must be a timedelta or seconds, not {type(older_than).__name__}"
        )
    if age < timedelta(0):
        raise ValueError(f"older_than must not be negative, got {older_than!r}")
    try:
        return utc(datetime.now(UTC) - age)
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)  # older than anything stored: deletes nothing
