"""SQLAlchemySession: history in PostgreSQL (or MySQL/MariaDB) through async SQLAlchemy 2.

Needs the `postgres` extra: `pip install 'turnstore[postgres]'`.
"""

from __future__ import annotations

import asyncio
import random
import re
import weakref
import zlib
from collections.abc import Awaitable, Callable, Mapping
from functools import lru_cache
from typing import Any, ClassVar, TypeVar

try:
    from sqlalchemy import (
        BigInteger,
        Column,
        DateTime,
        ForeignKey,
        Index,
        Integer,
        MetaData,
        String,
        Table,
        Text,
        delete,
        func,
        insert,
        select,
        text,
        update,
    )
    from sqlalchemy.dialects import mysql as _mysql
    from sqlalchemy.dialects.mysql import insert as mysql_insert
    from sqlalchemy.dialects.postgresql import insert as pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, SQLAlchemyError
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "SQLAlchemySession needs SQLAlchemy and asyncpg: pip install 'turnstore[postgres]'"
    ) from exc

from ...exceptions import SessionClosedError, SessionStorageError, UserError
from ...items import TResponseInputItem
from ..closing import AsyncCloseable, Release
from ..codec import check_limit, check_session_id, decode_item, decode_rows, encode_items
from ..loop_binding import LoopBinding
from ..mutation import await_session_mutation
from ..session import SessionABC
from ..settings import (
    SessionSettings,
    SessionSettingsLike,
    default_session_settings,
    merge_kwargs,
    resolve_session_limit,
)
from .pgbouncer import split_pgbouncer_flag, watch_for_pooler

__all__ = ["SQLAlchemySession", "create_engine_for_url", "validate_table_name"]

_T = TypeVar("_T")

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
MAX_SESSION_ID_LENGTH = 255

DEFAULT_COMMAND_TIMEOUT = 60.0
"""Seconds one `SQLAlchemySession` operation may spend in the database, unless set otherwise."""


def _check_command_timeout(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"command_timeout must be seconds or None, not {type(value).__name__}")
    if not (0 < value < float("inf")):
        raise ValueError(f"command_timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def validate_table_name(name: str, *, argument: str) -> str:
    """Check that a table name is a plain SQL identifier.

    Args:
        name: The proposed table name.
        argument: The argument's name, for the error message.

    Returns:
        `name`, unchanged.

    Raises:
        ValueError: `name` is not 1-48 ASCII letters, digits or underscores starting with a
            letter or underscore.
    """
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise ValueError(
            f"{argument} must be a plain identifier (letters, digits and _, not starting with a "
            f"digit, at most 48 characters), got {name!r}"
        )
    return name


# On MySQL/MariaDB: full Unicode, and session ids compared byte for byte (the default collations
# would make "A" and "a" the same session; trailing spaces are still ignored there).
_MYSQL_TABLE: dict[str, Any] = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


@lru_cache(maxsize=64)
def _tables(sessions_table: str, messages_table: str) -> tuple[MetaData, Table, Table]:
    metadata = MetaData()
    sessions = Table(
        sessions_table,
        metadata,
        Column("session_id", String(MAX_SESSION_ID_LENGTH), primary_key=True),
        Column(
            "created_at",
            DateTime(timezone=True),
            nullable=False,
            server_default=text("CURRENT_TIMESTAMP"),
        ),
        Column(
            "updated_at",
            DateTime(timezone=True),
            nullable=False,
            server_default=text("CURRENT_TIMESTAMP"),
        ),
        **_MYSQL_TABLE,
    )
    messages = Table(
        messages_table,
        metadata,
        # A monotonic id orders the history; timestamps never do.
        Column(
            "id",
            BigInteger().with_variant(Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        Column(
            "session_id",
            String(MAX_SESSION_ID_LENGTH),
            ForeignKey(f"{sessions_table}.session_id", ondelete="CASCADE"),
            nullable=False,
        ),
        # MySQL's TEXT holds 64 KB; an item may be megabytes.
        Column(
            "message_data",
            Text().with_variant(_mysql.LONGTEXT(), "mysql", "mariadb"),
            nullable=False,
        ),
        Column(
            "created_at",
            DateTime(timezone=True),
            nullable=False,
            server_default=text("CURRENT_TIMESTAMP"),
        ),
        # get_items(limit) walks this index backwards: O(limit), not O(history).
        Index(f"idx_{messages_table}_session_id", "session_id", "id"),
        **_MYSQL_TABLE,
    )
    return metadata, sessions, messages


class SQLAlchemySession(SessionABC, AsyncCloseable):
    """A session stored in PostgreSQL (or MySQL/MariaDB) through async SQLAlchemy 2.

    Many processes and hosts can share one database: each mutation of a session locks that
    session's row in the sessions table for the length of its transaction, so concurrent writers
    of one session are serialised (a batch is never interleaved with another), `pop_item` never
    returns the same item twice, and other sessions are not held up. The history is ordered by an
    autoincrement id, never by timestamps; each item also records when it was added
    (`created_at`).

    Errors of the driver are raised as [`SessionStorageError`][turnstore.SessionStorageError]
    with the original exception chained. A lost connection (a restarted server, a killed backend)
    fails the current call only: the pool replaces the connection for the next call. Nothing is
    retried automatically, so a write is never applied twice.

    Args:
        session_id: Identifies the conversation (at most 255 characters).
        engine: An `AsyncEngine` with an async driver (`postgresql+asyncpg://...`,
            `mysql+asyncmy://...`). The caller keeps ownership: `close()` does not dispose it.
        create_tables: Create the two tables and their index on first use, if missing. Leave it
            `False` when your migrations create them.
        sessions_table: Name of the table with one row per session.
        messages_table: Name of the table with one row per item.
        session_settings: Default settings for runs that use this session (or a dict of them).
        command_timeout: The most seconds one operation (`get_items`, `add_items`, `pop_item`,
            `clear_session`: each one transaction) may spend in the database, 60 by default;
            `None` for no bound. Past it the connection is dropped (a database that stops
            answering, or a connection killed mid-write, can otherwise leave the driver waiting
            forever) and the call raises [`SessionStorageError`][turnstore.SessionStorageError];
            the session stays usable.

    Raises:
        TypeError: `session_id` is not a string, or the settings are invalid.
        ValueError: A table name is not a plain identifier, `session_id` is too long, holds
            a lone surrogate, or (on PostgreSQL) a NUL character, or `command_timeout` is not a
            positive number.

    Example:
        ```python
        from turnstore import Runner, SQLAlchemySession

        async with SQLAlchemySession.from_url(
            "user-123",
            "postgresql+asyncpg://app:secret@db.internal/agents",
            create_tables=True,
            pool_size=20,
        ) as session:
            await Runner.run(agent, "Hello", session=session)
        ```
    """

    # The table pairs known to exist, per engine (forgotten with the engine).
    _ready_tables: ClassVar[weakref.WeakKeyDictionary[Any, set[tuple[str, str]]]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(
        self,
        session_id: str,
        *,
        engine: AsyncEngine,
        create_tables: bool = False,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
        command_timeout: float | None = DEFAULT_COMMAND_TIMEOUT,
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        self.command_timeout = _check_command_timeout(command_timeout)
        if len(session_id) > MAX_SESSION_ID_LENGTH:
            raise ValueError(
                f"session_id must be at most {MAX_SESSION_ID_LENGTH} characters, "
                f"got {len(session_id)}"
            )
        if not isinstance(engine, AsyncEngine):
            raise UserError(
                "engine must be a sqlalchemy.ext.asyncio.AsyncEngine (create_async_engine(...)), "
                f"not {type(engine).__name__}"
            )
        check_session_id(session_id, nul_allowed=engine.dialect.name != "postgresql")
        validate_table_name(sessions_table, argument="sessions_table")
        validate_table_name(messages_table, argument="messages_table")
        if sessions_table == messages_table:
            raise ValueError("sessions_table and messages_table must differ")
        self.session_id = session_id
        self.session_settings: SessionSettings | None = default_session_settings(session_settings)
        self._engine = engine
        self._owns_engine = False
        self._create_tables = create_tables
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        self._metadata, self._sessions, self._messages = _tables(sessions_table, messages_table)
        self._closed = False
        self._loop_binding = LoopBinding(f"SQLAlchemySession {session_id!r}")
        self._init_lock = asyncio.Lock()

    @classmethod
    def from_url(
        cls,
        session_id: str,
        url: str,
        *,
        create_tables: bool = False,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
        command_timeout: float | None = DEFAULT_COMMAND_TIMEOUT,
        engine_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> SQLAlchemySession:
        """Create a session with its own engine; `close()` disposes of that engine.

        Args:
            session_id: Identifies the conversation.
            url: A SQLAlchemy URL with an async driver. `postgresql://` and `postgres://` mean
                `postgresql+asyncpg://`. Through PgBouncer in transaction mode, add
                `?pgbouncer=true` (or let the session find out by itself; `?pgbouncer=false`
                skips the check): see the backends guide's "Scaling out" section.
            create_tables: Create the tables on first use, if missing.
            sessions_table: Name of the table with one row per session.
            messages_table: Name of the table with one row per item.
            session_settings: Default settings for runs that use this session.
            command_timeout: The most seconds one operation may spend in the database (see the
                class); `None` for no bound.
            engine_kwargs: Keyword arguments for the engine as one dict (the OpenAI Agents SDK's
                form); merged with `**kwargs`.
            **kwargs: Passed to `sqlalchemy.ext.asyncio.create_async_engine` as they
                are: pool settings (`pool_size`, `max_overflow`, `pool_timeout`, `pool_recycle`,
                `pool_pre_ping`, `poolclass`), `connect_args`, `echo`, and so on.

        Returns:
            A session that owns its engine.

        Raises:
            ValueError: The URL cannot be parsed or names a driver that is not async.
            TypeError: `engine_kwargs` is not a dict, or repeats a keyword given directly.
            ImportError: The driver the URL names is not installed.
        """
        engine = create_engine_for_url(url, **merge_kwargs(engine_kwargs, kwargs))
        session = cls(
            session_id,
            engine=engine,
            create_tables=create_tables,
            sessions_table=sessions_table,
            messages_table=messages_table,
            session_settings=session_settings,
            command_timeout=command_timeout,
        )
        session._owns_engine = True
        return session

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine this session uses."""
        return self._engine

    # -- the four operations -------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items (still oldest first); `0` returns `[]`.
                `None` uses `session_settings.limit`, else returns everything. A stored row that
                is not valid JSON is skipped with a logged warning and does not count.

        Returns:
            The items in the order they were added.

        Raises:
            ValueError: `limit` is negative.
            SessionClosedError: The session was closed.
            SessionStorageError: The database failed.
        """
        count = check_limit(resolve_session_limit(limit, self.session_settings))
        self._check_open()
        if count == 0:
            return []
        return await self._run("get_items", lambda: self._read(count))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history in one transaction: all of them or none.

        Args:
            items: The items to append, in order. Each must be a JSON-serialisable mapping;
                every item is checked before anything is written. An empty list does nothing.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping (the message names its index).
            SessionClosedError: The session was closed.
            SessionStorageError: The database failed; the batch was not stored (when the
                connection broke during the commit, the outcome is unknown).
        """
        rows = encode_items(items)
        self._check_open()
        if not rows:
            return
        await self._run(
            "add_items", lambda: _retry_deadlocks(lambda: self._insert(rows)), mutation=True
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, atomically.

        Returns:
            The removed item, or `None` when the session has no valid item. Corrupt rows are
            skipped (and left in place) with a logged warning.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: The database failed.
        """
        self._check_open()
        return await self._run("pop_item", lambda: _retry_deadlocks(self._pop), mutation=True)

    async def clear_session(self) -> None:
        """Remove every item of this session atomically; other sessions are untouched.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: The database failed.
        """
        self._check_open()
        await self._run("clear_session", lambda: _retry_deadlocks(self._clear), mutation=True)

    def _close_now(self) -> Release | None:
        """Close the session; dispose of the engine if `from_url` created it.

        Further operations raise [`SessionClosedError`][turnstore.SessionClosedError].
        Closing twice is harmless. A session belongs to the event loop it was first used on
        (its pooled connections do): another loop raises [`UserError`][turnstore.UserError],
        and `close()` there cannot release those connections, so close it on its own loop.
        """
        if self._closed:
            return None
        self._closed = True
        if not self._owns_engine:
            return None

        async def dispose() -> None:
            if not self._loop_binding.is_foreign():
                await self._engine.dispose()

        return dispose

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLAlchemySession({self.session_id!r}, {url!r})"

    # -- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"SQLAlchemySession {self.session_id!r} is closed; create a new session object"
            )
        self._loop_binding.check()

    async def _run(
        self, operation: str, call: Callable[[], Awaitable[_T]], *, mutation: bool = False
    ) -> _T:
        async def bounded() -> _T:
            # The bound is inside the shield of a mutation: it cancels the database work itself
            # (SQLAlchemy then drops that connection), not only the caller's wait for it.
            async with asyncio.timeout(self.command_timeout):
                await self._ensure_tables()
                return await call()

        try:
            if mutation:
                return await await_session_mutation(bounded())
            return await bounded()
        except TimeoutError as exc:
            outcome = (
                "nothing was read"
                if not mutation
                else "it was rolled back, unless the database had already committed it"
            )
            raise SessionStorageError(
                f"{operation} on session {self.session_id!r} failed: the database did not answer "
                f"within command_timeout={self.command_timeout} s; the connection was dropped "
                f"and {outcome}. The next call uses a new connection."
            ) from exc
        except SQLAlchemyError as exc:
            raise _storage_error(operation, self.session_id, exc) from exc
        except OSError as exc:
            raise SessionStorageError(
                f"{operation} on session {self.session_id!r} could not reach the database: {exc}"
            ) from exc

    async def _ensure_tables(self) -> None:
        if not self._create_tables:
            return
        key = (self._sessions_table, self._messages_table)
        ready = self._ready_tables.setdefault(self._engine.sync_engine, set())
        if key in ready:
            return
        async with self._init_lock:
            if key in ready:
                return
            for attempt in range(3):
                try:
                    await self._create_missing_tables()
                    break
                except DBAPIError as exc:
                    # Another process created them between our check and our CREATE: check again.
                    text_ = str(exc.orig).lower()
                    if attempt == 2 or ("already exists" not in text_ and "duplicate" not in text_):
                        raise
            ready.add(key)

    async def _create_missing_tables(self) -> None:
        async with self._engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Concurrent CREATE TABLE IF NOT EXISTS can collide in PostgreSQL's catalog:
                # serialise creators, across processes too, for this transaction.
                lock_key = zlib.crc32(f"{self._sessions_table}/{self._messages_table}".encode())
                await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_key})
            await conn.run_sync(self._metadata.create_all, checkfirst=True)

    async def _read(self, count: int | None) -> list[TResponseInputItem]:
        m = self._messages
        where = f"session {self.session_id!r}"
        async with self._engine.connect() as conn:
            if count is None:
                result = await conn.execute(
                    select(m.c.id, m.c.message_data)
                    .where(m.c.session_id == self.session_id)
                    .order_by(m.c.id)
                )
                return decode_rows(result, where)
            newest_first: list[TResponseInputItem] = []
            before: int | None = None
            while len(newest_first) < count:
                want = count - len(newest_first)
                stmt = (
                    select(m.c.id, m.c.message_data)
                    .where(m.c.session_id == self.session_id)
                    .order_by(m.c.id.desc())
                    .limit(want)
                )
                if before is not None:
                    stmt = stmt.where(m.c.id < before)
                rows = (await conn.execute(stmt)).all()
                newest_first += decode_rows(rows, where)
                if len(rows) < want:
                    break
                before = rows[-1][0]
            newest_first.reverse()
            return newest_first

    async def _lock_session_row(self, conn: AsyncConnection, *, create: bool) -> bool:
        """Lock this session's row until the transaction ends; create it if asked."""
        s = self._sessions
        sid = self.session_id
        dialect = conn.dialect.name
        if create:
            if dialect == "postgresql":
                pg = pg_insert(s).values(session_id=sid)
                await conn.execute(
                    pg.on_conflict_do_update(
                        index_elements=[s.c.session_id], set_={"updated_at": func.now()}
                    )
                )
                return True
            if dialect in ("mysql", "mariadb"):
                my = mysql_insert(s).values(session_id=sid)
                await conn.execute(my.on_duplicate_key_update(updated_at=func.now()))
                return True
            if dialect == "sqlite":
                lite = sqlite_insert(s).values(session_id=sid)
                await conn.execute(
                    lite.on_conflict_do_update(
                        index_elements=[s.c.session_id],
                        set_={"updated_at": func.current_timestamp()},
                    )
                )
                return True
        locked = select(s.c.session_id).where(s.c.session_id == sid).with_for_update()
        if (await conn.execute(locked)).first() is not None:
            if create:
                await conn.execute(
                    update(s).where(s.c.session_id == sid).values(updated_at=func.now())
                )
            return True
        if not create:
            return False
        try:
            async with conn.begin_nested():
                await conn.execute(insert(s).values(session_id=sid))
        except IntegrityError:  # another writer created it first: wait for its lock
            await conn.execute(locked)
        return True

    async def _insert(self, rows: list[str]) -> None:
        sid = self.session_id
        async with self._engine.begin() as conn:
            await self._lock_session_row(conn, create=True)
            await conn.execute(
                insert(self._messages), [{"session_id": sid, "message_data": d} for d in rows]
            )

    async def _pop(self) -> TResponseInputItem | None:
        m = self._messages
        sid = self.session_id
        async with self._engine.begin() as conn:
            if not await self._lock_session_row(conn, create=False):
                return None
            # Newest first; a corrupt row is skipped and left in place (never deleted), as on
            # every backend. The session row's lock keeps other writers out meanwhile.
            before: int | None = None
            while True:
                stmt = (
                    select(m.c.id, m.c.message_data)
                    .where(m.c.session_id == sid)
                    .order_by(m.c.id.desc())
                    .limit(20)
                )
                if before is not None:
                    stmt = stmt.where(m.c.id < before)
                rows = (await conn.execute(stmt)).all()
                if not rows:
                    return None
                for row_id, data in rows:
                    item = decode_item(data, where=f"session {sid!r} row {row_id}")
                    if item is None:
                        continue
                    await conn.execute(delete(m).where(m.c.id == row_id))
                    await conn.execute(
                        update(self._sessions)
                        .where(self._sessions.c.session_id == sid)
                        .values(updated_at=func.now())
                    )
                    return item
                before = rows[-1][0]

    async def _clear(self) -> None:
        sid = self.session_id
        async with self._engine.begin() as conn:
            if not await self._lock_session_row(conn, create=False):
                # No session row: remove orphans written by another tool, if any.
                await conn.execute(delete(self._messages).where(self._messages.c.session_id == sid))
                return
            await conn.execute(delete(self._messages).where(self._messages.c.session_id == sid))
            await conn.execute(delete(self._sessions).where(self._sessions.c.session_id == sid))


_DEADLOCK_SQLSTATES = ("40P01", "40001")  # PostgreSQL: deadlock, serialization failure
_DEADLOCK_MYSQL_CODES = (1213,)  # InnoDB: deadlock found, try restarting the transaction


def _is_deadlock(exc: DBAPIError) -> bool:
    orig = exc.orig
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if code in _DEADLOCK_SQLSTATES:
        return True
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and args[0] in _DEADLOCK_MYSQL_CODES


async def _retry_deadlocks(transaction: Callable[[], Awaitable[_T]]) -> _T:
    """Run a transaction again when the database chose it as a deadlock victim.

    The database rolled the victim back whole, so running it again cannot apply it twice.
    (InnoDB can pick a victim among concurrent first writers of a new session.)
    """
    for attempt in range(8):
        try:
            return await transaction()
        except DBAPIError as exc:
            if attempt == 7 or exc.connection_invalidated or not _is_deadlock(exc):
                raise
            await asyncio.sleep(random.uniform(0, 0.002 * 2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def _storage_error(operation: str, session_id: str, exc: SQLAlchemyError) -> SessionStorageError:
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        outcome = (
            "its outcome is unknown if the connection broke during the commit"
            if operation != "get_items"
            else "nothing was read"
        )
        return SessionStorageError(
            f"{operation} on session {session_id!r} failed: the database connection was lost "
            f"({type(exc.orig).__name__}); {outcome}. The next call uses a new connection."
        )
    detail = str(exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc)
    hint = ""
    lowered = detail.lower()
    if "prepared statement" in lowered:
        hint = (
            " (is the database behind PgBouncer in transaction mode? add ?pgbouncer=true to the "
            "URL, or create your engine with the settings in the backends guide)"
        )
    elif "does not exist" in lowered or "doesn't exist" in lowered or "no such table" in lowered:
        hint = " (are the tables created? pass create_tables=True or run your migrations)"
    first_line = detail.strip().splitlines()[0] if detail.strip() else type(exc).__name__
    return SessionStorageError(f"{operation} on session {session_id!r} failed: {first_line}{hint}")


def create_engine_for_url(url: str, **engine_kwargs: Any) -> AsyncEngine:
    """Create an async engine for a URL, with clear errors for the usual mistakes.

    Args:
        url: A SQLAlchemy URL; `postgresql://` and `postgres://` mean `postgresql+asyncpg://`.
            A `pgbouncer=true` or `pgbouncer=false` query parameter says whether PostgreSQL is
            reached through a transaction pooler; it is taken out before the driver sees it,
            and without it an asyncpg engine finds out on its first connection.
        **engine_kwargs: Passed to `create_async_engine`.

    Returns:
        The engine (no connection is opened yet).

    Raises:
        ValueError: The URL cannot be parsed, names a synchronous driver, or has a
            `pgbouncer` value other than true/false (or `pgbouncer=true` without asyncpg).
        ImportError: The driver is not installed.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(f"not a database URL: {url!r} ({exc})") from exc
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    parsed, pgbouncer = split_pgbouncer_flag(parsed)
    try:
        engine = create_async_engine(parsed, **engine_kwargs)
    except ModuleNotFoundError as exc:
        if parsed.drivername == "postgresql+asyncpg":
            raise ImportError(
                f"the {parsed.drivername} driver is not installed: "
                "pip install 'turnstore[postgres]'"
            ) from exc
        # A missing synchronous driver (psycopg2, MySQLdb) would be refused once installed:
        # point at an async driver instead of at the missing module.
        raise ImportError(
            f"the {parsed.drivername} driver is not installed ({exc.name}); use an async "
            "driver, for example postgresql+asyncpg:// (pip install 'turnstore[postgres]') "
            "or mysql+asyncmy://"
        ) from exc
    except (ArgumentError, SQLAlchemyError) as exc:
        raise ValueError(
            f"cannot use {parsed.render_as_string(hide_password=True)!r}: "
            f"{str(exc).rstrip('. ')}. "
            "Use an async driver, for example postgresql+asyncpg:// or mysql+asyncmy://"
        ) from exc
    watch_for_pooler(engine, pgbouncer)
    return engine
