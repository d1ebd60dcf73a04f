"""Looking after every session in one storage: list, inspect, export, import, clear, count.

[`open_session_store`][turnstore.open_session_store] opens a SQLite file, a SQLAlchemy URL
(PostgreSQL, MySQL/MariaDB) or a Redis URL as a [`SessionStore`][turnstore.SessionStore].
The `turnstore` command line is built on it. The PostgreSQL and Redis stores import their
extras only when opened.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import SessionStorageError
from ..items import TResponseInputItem
from .closing import AsyncCloseable
from .item_codec import decode_item, encode_items
from .session import Session

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "SessionInfo",
    "SessionRecord",
    "SessionStats",
    "SessionStore",
    "open_session_store",
]

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


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
    async def write_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """Append records to a session in one transaction, keeping their `created_at`.

        The write counts as the session's latest activity.

        Args:
            session_id: The session to append to (created if missing).
            records: The records, oldest first; a record without `created_at` gets the current
                time.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping; nothing was written.
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
            (`redis://host:6379/0`).
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
    text = os.fspath(target)
    if not isinstance(text, str) or not text:
        raise ValueError("the storage target must be a file path or a URL, got an empty value")
    if text.startswith(_REDIS_SCHEMES):
        return _RedisStore(text, key_prefix)
    if text.startswith("sqlite"):
        if not text.startswith("sqlite:///"):
            raise ValueError(f"a SQLite URL looks like sqlite:///path/to/file.db, got {text!r}")
        return _SQLiteStore(text[len("sqlite:///") :], sessions_table, messages_table, create)
    if "://" in text:
        return _SQLAlchemyStore(text, sessions_table, messages_table, create)
    return _SQLiteStore(text, sessions_table, messages_table, create)


# --- SQLite ------------------------------------------------------------------------------------


def _parse_sqlite_time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        return _utc(datetime.fromisoformat(str(value)))
    except ValueError:
        return None


class _SQLiteStore(SessionStore):
    """A SQLite file written by `SQLiteSession`, read with the standard library off the loop."""

    backend = "sqlite"

    def __init__(self, path: str, sessions_table: str, messages_table: str, create: bool) -> None:
        from .sqlite_schema import SQLiteSchema, quote_identifier, validate_identifier

        validate_identifier(sessions_table, "sessions_table")
        validate_identifier(messages_table, "messages_table")
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
        self._s = quote_identifier(sessions_table)
        self._m = quote_identifier(messages_table)
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        self._lock = asyncio.Lock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 30000")
        return conn

    def _has_tables(self, conn: sqlite3.Connection) -> bool:
        names = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                (self._sessions_table, self._messages_table),
            )
        }
        return len(names) == 2

    async def _call(self, work: Any) -> Any:
        def run() -> Any:
            conn = self._connect()
            try:
                return work(conn)
            finally:
                conn.close()

        try:
            async with self._lock:
                return await asyncio.to_thread(run)
        except sqlite3.Error as exc:
            raise SessionStorageError(f"SQLite file {self._path!r}: {exc}") from exc

    def _info_sql(self) -> str:
        return (
            f"SELECT s.session_id, s.created_at, s.updated_at, "
            f"(SELECT count(*) FROM {self._m} m WHERE m.session_id = s.session_id) "
            f"FROM {self._s} s"
        )

    @staticmethod
    def _info(row: tuple[Any, ...]) -> SessionInfo:
        return SessionInfo(
            row[0], int(row[3]), _parse_sqlite_time(row[1]), _parse_sqlite_time(row[2])
        )

    async def list_sessions(self, *, offset: int = 0, limit: int = 50) -> list[SessionInfo]:
        """Return sessions, the most recently active first."""
        _check_page(offset, limit)

        def work(conn: sqlite3.Connection) -> list[SessionInfo]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                f"{self._info_sql()} ORDER BY s.updated_at DESC, s.session_id LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
            return [self._info(row) for row in rows]

        result: list[SessionInfo] = await self._call(work)
        return result

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist."""

        def work(conn: sqlite3.Connection) -> SessionInfo | None:
            if not self._has_tables(conn):
                return None
            row = conn.execute(
                f"{self._info_sql()} WHERE s.session_id = ?", (session_id,)
            ).fetchone()
            return None if row is None else self._info(row)

        result: SessionInfo | None = await self._call(work)
        return result

    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""

        def work(conn: sqlite3.Connection) -> SessionStats:
            if not self._has_tables(conn):
                return SessionStats("sqlite", 0, 0, None)
            sessions, last = conn.execute(
                f"SELECT count(*), max(updated_at) FROM {self._s}"
            ).fetchone()
            (items,) = conn.execute(f"SELECT count(*) FROM {self._m}").fetchone()
            return SessionStats("sqlite", sessions, items, _parse_sqlite_time(last))

        result: SessionStats = await self._call(work)
        return result

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first."""

        def work(conn: sqlite3.Connection) -> list[SessionRecord]:
            if not self._has_tables(conn):
                return []
            rows = conn.execute(
                f"SELECT id, message_data, created_at FROM {self._m} "
                "WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            return _records(session_id, rows, _parse_sqlite_time)

        result: list[SessionRecord] = await self._call(work)
        return result

    async def write_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """Append records to a session in one transaction, keeping their `created_at`."""
        encoded = encode_items([record.item for record in records])
        if not encoded:
            return
        now = datetime.now(UTC)
        stamps = [_sqlite_time(record.created_at or now) for record in records]

        def work(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._schema.create(conn)
                conn.execute(self._schema.touch_session, (session_id,))
                conn.executemany(
                    self._schema.insert_with_time,
                    [
                        (session_id, data, stamp)
                        for data, stamp in zip(encoded, stamps, strict=True)
                    ],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        await self._call(work)

    def session(self, session_id: str) -> Session:
        """Return a `SQLiteSession` on the same file."""
        from .sqlite_session import SQLiteSession

        return SQLiteSession(
            session_id,
            self._path,
            sessions_table=self._sessions_table,
            messages_table=self._messages_table,
        )

    async def close(self) -> None:
        """Nothing to release: each call opens and closes its own connection."""


def _sqlite_time(value: datetime) -> str:
    value = _utc(value)
    return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def _records(
    session_id: str, rows: Iterable[tuple[Any, Any, Any]], parse_time: Any
) -> list[SessionRecord]:
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


# --- SQLAlchemy --------------------------------------------------------------------------------


class _SQLAlchemyStore(SessionStore):
    """The tables of `SQLAlchemySession` on any SQLAlchemy URL."""

    def __init__(self, url: str, sessions_table: str, messages_table: str, create: bool) -> None:
        from .sqlalchemy_session import _tables, create_engine_for_url, validate_table_name

        validate_table_name(sessions_table, argument="sessions_table")
        validate_table_name(messages_table, argument="messages_table")
        self._engine: AsyncEngine = create_engine_for_url(url)
        self.target = self._engine.url.render_as_string(hide_password=True)
        self.backend = self._engine.dialect.name
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        self._create = create
        _, self._s, self._m = _tables(sessions_table, messages_table)

    async def _call(self, work: Any) -> Any:
        from sqlalchemy.exc import SQLAlchemyError

        try:
            async with self._engine.connect() as conn:
                return await work(conn)
        except SQLAlchemyError as exc:
            if _missing_table(exc):
                return None
            raise SessionStorageError(f"{self.target}: {_first_line(exc)}") from exc
        except OSError as exc:
            raise SessionStorageError(f"cannot reach {self.target}: {exc}") from exc

    def _info_query(self) -> Any:
        from sqlalchemy import func, select

        s, m = self._s, self._m
        count = select(func.count(m.c.id)).where(m.c.session_id == s.c.session_id).scalar_subquery()
        return select(s.c.session_id, s.c.created_at, s.c.updated_at, count)

    @staticmethod
    def _info(row: Any) -> SessionInfo:
        return SessionInfo(row[0], int(row[3]), _maybe_utc(row[1]), _maybe_utc(row[2]))

    async def list_sessions(self, *, offset: int = 0, limit: int = 50) -> list[SessionInfo]:
        """Return sessions, the most recently active first."""
        _check_page(offset, limit)
        query = (
            self._info_query()
            .order_by(self._s.c.updated_at.desc(), self._s.c.session_id)
            .offset(offset)
            .limit(limit)
        )

        async def work(conn: Any) -> list[SessionInfo]:
            return [self._info(row) for row in await conn.execute(query)]

        return list(await self._call(work) or [])

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist."""
        query = self._info_query().where(self._s.c.session_id == session_id)

        async def work(conn: Any) -> SessionInfo | None:
            row = (await conn.execute(query)).first()
            return None if row is None else self._info(row)

        result: SessionInfo | None = await self._call(work)
        return result

    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""
        from sqlalchemy import func, select

        async def work(conn: Any) -> SessionStats:
            sessions, last = (
                await conn.execute(select(func.count(), func.max(self._s.c.updated_at)))
            ).one()
            items = (await conn.execute(select(func.count()).select_from(self._m))).scalar_one()
            return SessionStats(self.backend, sessions, items, _maybe_utc(last))

        result: SessionStats | None = await self._call(work)
        return result or SessionStats(self.backend, 0, 0, None)

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first."""
        from sqlalchemy import select

        m = self._m
        query = (
            select(m.c.id, m.c.message_data, m.c.created_at)
            .where(m.c.session_id == session_id)
            .order_by(m.c.id)
        )

        async def work(conn: Any) -> list[SessionRecord]:
            return _records(
                session_id, (tuple(row) for row in await conn.execute(query)), _maybe_utc
            )

        return list(await self._call(work) or [])

    async def write_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """Append records to a session in one transaction, keeping their `created_at`."""
        from sqlalchemy import insert
        from sqlalchemy.exc import SQLAlchemyError

        encoded = encode_items([record.item for record in records])
        if not encoded:
            return
        now = datetime.now(UTC)
        rows = [
            {"session_id": session_id, "message_data": data, "created_at": record.created_at or now}
            for data, record in zip(encoded, records, strict=True)
        ]
        session = self.session(session_id)
        try:
            await session._ensure_tables()  # type: ignore[attr-defined]
            async with self._engine.begin() as conn:
                await session._lock_session_row(conn, create=True)  # type: ignore[attr-defined]
                await conn.execute(insert(self._m), rows)
        except SQLAlchemyError as exc:
            raise SessionStorageError(f"{self.target}: {_first_line(exc)}") from exc

    def session(self, session_id: str) -> Session:
        """Return a `SQLAlchemySession` that shares the store's engine."""
        from .sqlalchemy_session import SQLAlchemySession

        return SQLAlchemySession(
            session_id,
            engine=self._engine,
            create_tables=self._create,
            sessions_table=self._sessions_table,
            messages_table=self._messages_table,
        )

    async def close(self) -> None:
        """Dispose of the store's engine."""
        await self._engine.dispose()


def _maybe_utc(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, str):
        return _parse_sqlite_time(value)
    return None


def _missing_table(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "does not exist" in text or "doesn't exist" in text or "no such table" in text


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- Redis -------------------------------------------------------------------------------------

# Drop an index entry whose list no longer exists (expired or emptied), atomically.
_PRUNE_SCRIPT = """
local removed = 0
for i, sid in ipairs(ARGV) do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    removed = removed + redis.call('ZREM', KEYS[#KEYS], sid)
  end
end
return removed
"""


class _RedisStore(SessionStore):
    """The keys of `RedisSession` under one prefix."""

    backend = "redis"

    def __init__(self, url: str, key_prefix: str) -> None:
        from .redis_session import create_client_for_url, index_key

        if not key_prefix:
            raise ValueError("key_prefix must not be empty")
        self._redis: Redis = create_client_for_url(url)
        self.target = _hide_password(url)
        self._prefix = key_prefix
        self._index = index_key(key_prefix)
        self._prune = self._redis.register_script(_PRUNE_SCRIPT)

    def _items_key(self, session_id: str) -> str:
        from .redis_session import items_key

        return items_key(self._prefix, session_id)

    async def _call(self, work: Any) -> Any:
        from redis.exceptions import RedisError

        try:
            return await work()
        except RedisError as exc:
            raise SessionStorageError(f"{self.target}: {type(exc).__name__}: {exc}") from exc

    async def _describe(self, entries: list[tuple[str, float]]) -> list[SessionInfo]:
        if not entries:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for session_id, _ in entries:
                pipe.llen(self._items_key(session_id))
                pipe.lindex(self._items_key(session_id), 0)
            replies = await pipe.execute()
        infos, gone = [], []
        for (session_id, score), count, first in zip(
            entries, replies[::2], replies[1::2], strict=True
        ):
            if not count:
                gone.append(session_id)
                continue
            infos.append(SessionInfo(session_id, count, _first_stamp(first), _from_ms(score)))
        if gone:
            await self._prune(keys=[*(self._items_key(g) for g in gone), self._index], args=gone)
        return infos

    async def list_sessions(self, *, offset: int = 0, limit: int = 50) -> list[SessionInfo]:
        """Return sessions, the most recently active first; expired ones are dropped."""
        _check_page(offset, limit)

        async def work() -> list[SessionInfo]:
            raw = await self._redis.zrevrange(
                self._index, offset, offset + limit - 1, withscores=True
            )
            return await self._describe(_scored(raw))

        result: list[SessionInfo] = await self._call(work)
        return result

    async def get_info(self, session_id: str) -> SessionInfo | None:
        """Return one session's entry, or `None` when it does not exist (or has expired)."""

        async def work() -> SessionInfo | None:
            score = await self._redis.zscore(self._index, session_id)
            if score is None:
                return None
            infos = await self._describe([(session_id, score)])
            return infos[0] if infos else None

        result: SessionInfo | None = await self._call(work)
        return result

    async def stats(self) -> SessionStats:
        """Return the number of sessions and items, and the last activity."""

        async def work() -> SessionStats:
            sessions = items = 0
            last: float | None = None
            start = 0
            while True:
                page = await self._redis.zrevrange(self._index, start, start + 499, withscores=True)
                infos = await self._describe(_scored(page))
                for info in infos:
                    sessions += 1
                    items += info.item_count
                    if info.last_activity is not None:
                        stamp = info.last_activity.timestamp()
                        last = stamp if last is None else max(last, stamp)
                if len(page) < 500:
                    break
                start += 500 - (len(page) - len(infos))
            return SessionStats(
                "redis", sessions, items, None if last is None else _from_ms(last * 1000)
            )

        result: SessionStats = await self._call(work)
        return result

    async def read_records(self, session_id: str) -> list[SessionRecord]:
        """Return a session's items with the time each was added, oldest first."""
        from .redis_session import decode_element

        async def work() -> list[SessionRecord]:
            raw = await self._redis.lrange(self._items_key(session_id), 0, -1)
            records = []
            for index, element in enumerate(raw):
                stamp, item = decode_element(element, where=f"session {session_id!r} #{index}")
                if item is not None:
                    records.append(SessionRecord(session_id, item, _from_ms(stamp)))
            return records

        result: list[SessionRecord] = await self._call(work)
        return result

    async def write_records(self, session_id: str, records: list[SessionRecord]) -> None:
        """Append records to a session in one transaction, keeping their `created_at`."""
        encoded = encode_items([record.item for record in records])
        if not encoded:
            return
        now = _to_ms(datetime.now(UTC))
        stamps = [now if r.created_at is None else _to_ms(r.created_at) for r in records]
        elements = [f"{stamp}|{data}" for stamp, data in zip(stamps, encoded, strict=True)]

        async def work() -> None:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.rpush(self._items_key(session_id), *elements)
                pipe.zadd(self._index, {session_id: now})
                await pipe.execute()

        await self._call(work)

    def session(self, session_id: str) -> Session:
        """Return a `RedisSession` that shares the store's client."""
        from .redis_session import RedisSession

        return RedisSession(session_id, redis_client=self._redis, key_prefix=self._prefix)

    async def close(self) -> None:
        """Close the store's client."""
        await self._redis.aclose()


def _scored(raw: Any) -> list[tuple[str, float]]:
    return [(_text(member), float(score)) for member, score in raw]


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _first_stamp(element: bytes | str | None) -> datetime | None:
    if element is None:
        return None
    stamp = _text(element).partition("|")[0]
    return _from_ms(int(stamp)) if stamp.isdigit() else None


def _hide_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"
