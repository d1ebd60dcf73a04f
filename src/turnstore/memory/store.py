"""Looking after every session in one storage: list, inspect, export, import, clear, count.

[`open_session_store`][turnstore.open_session_store] opens a SQLite file, a SQLAlchemy URL
(PostgreSQL, MySQL/MariaDB) or a Redis URL as a [`SessionStore`][turnstore.SessionStore].
The `turnstore` command line is built on it. The PostgreSQL and Redis stores import their
extras only when opened.
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..items import TResponseInputItem
from .closing import AsyncCloseable
from .codec import decode_item
from .redis.urls import is_redis_url
from .session import Session

if TYPE_CHECKING:
    pass

__all__ = [
    "SessionInfo",
    "SessionRecord",
    "SessionStats",
    "SessionStore",
    "open_session_store",
]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session, as a store lists it.

    Attributes:
        session_id: The session's id.
        item_count: How many items it holds.
        created_at: When it was first written to (or its oldest item, for Redis), if known.
        last_activity: When it was last written to, if known.
    """

    session_id: str
    item_count: int
    created_at: datetime | None
    last_activity: datetime | None


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Totals of one storage, from [`SessionStore.stats`][turnstore.SessionStore.stats].

    Attributes:
        backend: `"sqlite"`, the SQLAlchemy dialect name (`"postgresql"`, `"mysql"`, ...) or
            `"redis"`.
        sessions: How many sessions exist.
        items: How many items they hold together.
        last_activity: The most recent write to any session, if any.
    """

    backend: str
    sessions: int
    items: int
    last_activity: datetime | None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One stored item with its session and the time it was added: a line of an export.

    Attributes:
        session_id: The session the item belongs to.
        item: The item.
        created_at: When it was added (UTC, millisecond precision), if known.
    """

    session_id: str
    item: TResponseInputItem
    created_at: datetime | None

    def to_json(self) -> dict[str, Any]:
        """Return the record as a JSON-ready dict (`created_at` in ISO 8601)."""
        return {
            "session_id": self.session_id,
            "created_at": None if self.created_at is None else self.created_at.isoformat(),
            "item": self.item,
        }

    @classmethod
    def from_json(cls, data: Any, *, where: str = "record") -> SessionRecord:
        """Build a record from the dict that [`to_json`][turnstore.SessionRecord.to_json] made.

        Args:
            data: The decoded JSON value.
            where: Names the record in error messages (for example `"line 7"`).

        Returns:
            The record.

        Raises:
            ValueError: A field is missing or has the wrong type.
        """
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        session_id = data.get("session_id")
        item = data.get("item")
        stamp = data.get("created_at")
        if not isinstance(session_id, str) or not session_id:
            raise ValueError(f"{where}: 'session_id' must be a non-empty string")
        if not isinstance(item, dict):
            raise ValueError(f"{where}: 'item' must be a JSON object")
        created_at: datetime | None = None
        if stamp is not None:
            if not isinstance(stamp, str):
                raise ValueError(f"{where}: 'created_at' must be an ISO 8601 string or null")
            try:
                created_at = _utc(datetime.fromisoformat(stamp))
            except ValueError as exc:
                raise ValueError(f"{where}: 'created_at' is not ISO 8601: {stamp!r}") from exc
        return cls(session_id, item, created_at)  # type: ignore[arg-type]


def _utc(value: datetime) -> datetime:
    """Make a datetime UTC-aware, at millisecond precision (the finest every backend keeps)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _from_ms(ms: int | float | None) -> datetime | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(int(ms) / 1000, tz=UTC)


def _to_ms(value: datetime) -> int:
    return round(_utc(value).timestamp() * 1000)


class SessionStore(AsyncCloseable):
    """Every session in one storage, for listing, export, import and clean-up.

    Get one with [`open_session_store`][turnstore.open_session_store]; close it with
    `await store.close()` or `async with`.

    Attributes:
        target: The file or URL the store was opened on (passwords hidden).
        backend: `"sqlite"`, a SQLAlchemy dialect name, or `"redis"`.
    """

    target: str
    backend: str

    @abstractmethod
    async def list_sessions(self, *, offset: int = 0, limit: int = 50) -> list[SessionInfo]:
        """Return sessions, the most recently active first.

        Args:
            offset: How many sessions to skip (for paging).
            limit: The most to return.

        Returns:
            One entry per session.
        """

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

    @abstractmethod
    async def write_records(
        self, session_id: str, records: list[SessionRecord], *, replace: bool = False
    ) -> None:
        """Write records to a session in one transaction, keeping their `created_at`.

        Every item is encoded before anything is written; the write is atomic (one SQL
        transaction, or one Redis script), so a failure leaves the session as it was. The write
        counts as the session's latest activity.

        Args:
            session_id: The session to write to (created if missing).
            records: The records, oldest first; a record without `created_at` gets the current
                time.
            replace: Remove the session's items (and its compaction archive) in the same
                transaction first, instead of appending.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping; nothing was written.
            SessionStorageError: The storage failed; nothing was written.
        """

    @abstractmethod
    def session(self, session_id: str) -> Session:
        """Return a session object for one id on this storage.

        Args:
            session_id: The session's id.

        Returns:
            A session that shares the store's connections (close it before the store).
        """

    @abstractmethod
    async def close(self) -> None:
        """Release the store's connections."""


def open_session_store(
    target: str | os.PathLike[str],
    *,
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
    key_prefix: str = "agent_sessions",
    create: bool = False,
) -> SessionStore:
    """Open the storage that a file path or URL names.

    Args:
        target: A SQLite file path (or `sqlite:///path`), a SQLAlchemy URL such as
            `postgresql+asyncpg://user@host/db` (`postgresql://` works too), or a Redis URL
            (`redis://host:6379/0`, or `redis+cluster://host:7000` for a Redis Cluster).
        sessions_table: The sessions table (SQLite and SQLAlchemy).
        messages_table: The messages table (SQLite and SQLAlchemy).
        key_prefix: The key prefix (Redis).
        create: For SQLite, allow a file that does not exist yet (it is created on the first
            write); for SQLAlchemy, create missing tables on the first write.

    Returns:
        The store. Nothing is connected until the first call.

    Raises:
        ValueError: The target is not a path or a supported URL.
        FileNotFoundError: The SQLite file does not exist and `create` is false, or its
            directory does not exist.
        IsADirectoryError: The SQLite path is a directory.
        ImportError: The extra the backend needs is not installed.

    Example:
        ```python
        from turnstore import open_session_store

        async with open_session_store("postgresql://postgres@localhost/app") as store:
            for info in await store.list_sessions(limit=10):
                print(info.session_id, info.item_count, info.last_activity)
        ```
    """
    from .sqlite.store import SQLiteStore

    text = os.fspath(target)
    if not isinstance(text, str) or not text:
        raise ValueError("the storage target must be a file path or a URL, got an empty value")
    if is_redis_url(text):
        from .redis.store import RedisStore

        return RedisStore(text, key_prefix)
    if text.startswith("sqlite"):
        if not text.startswith("sqlite:///"):
            raise ValueError(f"a SQLite URL looks like sqlite:///path/to/file.db, got {text!r}")
        return SQLiteStore(text[len("sqlite:///") :], sessions_table, messages_table, create)
    if "://" in text:
        from .sqlalchemy.store import SQLAlchemyStore

        return SQLAlchemyStore(text, sessions_table, messages_table, create)
    return SQLiteStore(text, sessions_table, messages_table, create)


def _parse_sqlite_time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        return _utc(datetime.fromisoformat(str(value)))
    except ValueError:
        return None


def _records(
    session_id: str, rows: Iterable[tuple[Any, Any, Any]], parse_time: Any
) -> list[SessionRecord]:
    # Shared by the SQL stores: (row id, JSON text, created_at) rows to records.
    records = []
    for row_id, data, created in rows:
        item = decode_item(data, where=f"session {session_id!r} row {row_id}")
        if item is not None:
            records.append(SessionRecord(session_id, item, parse_time(created)))
    return records


def _check_page(offset: int, limit: int) -> None:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}")


def _hide_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"
