"""SQLAlchemySession: history in PostgreSQL (or MySQL/MariaDB) through async SQLAlchemy 2.

Needs the `postgres` extra: `pip install 'turnstore[postgres]'`. The tables are in `schema.py`,
URLs, deadlock retries and error messages in `engine.py`; what it shares with `RedisSession`
(ownership of the engine, the event loop binding, the open check) in `memory/pooled.py`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from sqlalchemy import delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ...exceptions import SessionStorageError, UserError
from ..codec import decode_item, decode_rows, decode_snapshot, validate_table_names
from ..pooled import PooledSession
from ..session import HistorySnapshot
from ..settings import SessionSettingsLike, merge_kwargs
from .engine import (
    DEFAULT_COMMAND_TIMEOUT,
    check_command_timeout,
    create_engine_for_url,
    discard_closed_connections,
    retry_deadlocks,
    retry_lost_read,
    storage_error,
)
from .schema import (
    MAX_SESSION_ID_LENGTH,
    create_missing_tables,
    insert_messages,
    lock_session_row,
    session_tables,
    touch_session,
)

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = ["SQLAlchemySession", "create_engine_for_url"]

_T = TypeVar("_T")


class SQLAlchemySession(PooledSession):
    """A session stored in PostgreSQL (or MySQL/MariaDB) through async SQLAlchemy 2.

    Many processes and hosts can share one database. Writers of one session wait for each
    other, a batch is never interleaved with another, and `pop_item` never returns an item
    twice. Other sessions are not held up. The history keeps the order in which the items were
    added, whatever their timestamps. Each item also records when it was added (`created_at`).

    Errors of the driver are raised as [`SessionStorageError`][turnstore.SessionStorageError],
    with the original exception chained. A lost connection (a restarted server, a killed
    backend) fails a write at once, and the next call gets a new connection. A read that meets
    one runs once more on a new connection. A write that may have reached the database is never
    retried, so it is never applied twice. Only a transaction the database rolled back as a
    deadlock victim runs again.

    !!! warning "One event loop per session"
        The session belongs to the event loop it is first used on; another loop raises
        [`UserError`][turnstore.UserError]. Each `Runner.run_sync()` or `asyncio.run()` call
        starts a new loop, so create the session inside the loop that uses it.

    Args:
        session_id: Identifies the conversation (at most 255 characters).
        engine: An `AsyncEngine` with an async driver (`postgresql+asyncpg://...`,
            `mysql+asyncmy://...`). The caller keeps ownership: `close()` does not dispose it.
        create_tables: Create the two tables and their index on first use, if missing. Leave it
            `False` when your migrations create them.
        sessions_table: Name of the table with one row per session.
        messages_table: Name of the table with one row per item.
        session_settings: Default settings for runs that use this session (or a dict of them).
        command_timeout: The most seconds one operation (`get_items`, `add_items`, `pop_item`
            or `clear_session`) may spend in the database. 60 by default; `None` for no bound,
            which lets a database that stops answering hold the call forever. Past it, the
            call raises [`SessionStorageError`][turnstore.SessionStorageError], and the session
            stays usable. A connection the server ends fails the call at once.

    Raises:
        TypeError: `session_id` is not a string, or the settings are invalid.
        ValueError: A table name is not a plain identifier, `session_id` is too long, holds
            a lone surrogate, or (on PostgreSQL) a NUL character, or `command_timeout` is not a
            positive number.

    Example:
        ```python
        from turnstore import Runner
        from turnstore.extensions.memory import SQLAlchemySession

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
    # On SQLite engines: one write lock per engine and event loop (see `_write`).
    _sqlite_write_locks: ClassVar[
        weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, asyncio.Lock]]
    ] = weakref.WeakKeyDictionary()
    _storage_errors = (SQLAlchemyError, OSError)

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
        if not isinstance(engine, AsyncEngine):
            raise UserError(
                "engine must be a sqlalchemy.ext.asyncio.AsyncEngine (create_async_engine(...)), "
                f"not {type(engine).__name__}"
            )
        super().__init__(
            session_id, session_settings, nul_allowed=engine.dialect.name != "postgresql"
        )
        if len(session_id) > MAX_SESSION_ID_LENGTH:
            raise ValueError(
                f"session_id must be at most {MAX_SESSION_ID_LENGTH} characters, "
                f"got {len(session_id)}"
            )
        self._command_timeout = check_command_timeout(command_timeout)
        sessions_table, messages_table = validate_table_names(sessions_table, messages_table)
        discard_closed_connections(engine)
        self._engine = engine
        self._create_tables = create_tables
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        _, self._sessions, self._messages = session_tables(sessions_table, messages_table)
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

        The session belongs to the event loop it is first used on; another loop raises
        [`UserError`][turnstore.UserError].

        Args:
            session_id: Identifies the conversation.
            url: A SQLAlchemy URL with an async driver. `postgresql://` and `postgres://` mean
                `postgresql+asyncpg://`. Through PgBouncer in transaction mode, add
                `?pgbouncer=true` (or let the session find out by itself; `?pgbouncer=false`
                skips the check): see [PostgreSQL behind PgBouncer](../postgresql.md#pgbouncer).
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
        return cls._owning(
            session_id=session_id,
            engine=create_engine_for_url(url, **merge_kwargs(engine_kwargs, kwargs)),
            create_tables=create_tables,
            sessions_table=sessions_table,
            messages_table=messages_table,
            session_settings=session_settings,
            command_timeout=command_timeout,
        )

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine this session uses."""
        return self._engine

    @property
    def command_timeout(self) -> float | None:
        """The most seconds one operation may spend in the database, or `None` for no bound."""
        return self._command_timeout

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLAlchemySession({self.session_id!r}, {url!r})"

    # -- the storage steps (PooledSession) -----------------------------------------------------

    async def _release_client(self) -> None:
        await self._engine.dispose()

    def _storage_error(self, operation: str, exc: BaseException) -> SessionStorageError:
        return storage_error(operation, self.session_id, exc)

    def _timeout_error(self, operation: str, *, mutation: bool) -> SessionStorageError:
        outcome = (
            "it was rolled back, unless the database had already committed it"
            if mutation
            else "nothing was read"
        )
        return SessionStorageError(
            f"{operation} on session {self.session_id!r} failed: the database did not answer "
            f"within command_timeout={self._command_timeout} s; the connection was dropped "
            f"and {outcome}. The next call uses a new connection."
        )

    async def _prepare(self) -> None:
        await self._ensure_tables()

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
            await create_missing_tables(self._engine, *key)
            ready.add(key)

    async def _read(self, count: int | None) -> list[TResponseInputItem]:
        return await retry_lost_read(lambda: self._read_once(count))

    async def _read_once(self, count: int | None) -> list[TResponseInputItem]:
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

    async def _write(self, transaction: Callable[[], Awaitable[_T]]) -> _T:
        """Run a write transaction (again if it was a deadlock victim).

        On a SQLite engine the session's writes on one engine take turns: an in-memory SQLite
        engine is one connection that every session shares, so two transactions at once would
        be one transaction (a rollback or a commit of one would end the other's); and SQLite
        serialises writers anyway.
        """
        if self._engine.dialect.name != "sqlite":
            return await retry_deadlocks(transaction)
        per_loop = self._sqlite_write_locks.setdefault(
            self._engine.sync_engine, weakref.WeakKeyDictionary()
        )
        lock = per_loop.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            return await retry_deadlocks(transaction)

    async def _lock_session_row(self, conn: AsyncConnection, *, create: bool) -> bool:
        """Lock this session's row until the transaction ends; create it if asked."""
        return await lock_session_row(conn, self._sessions, self.session_id, create=create)

    async def _append(self, encoded: list[str]) -> None:
        await self._write(lambda: self._insert(encoded))

    async def _insert(self, rows: list[str]) -> None:
        sid = self.session_id
        async with self._engine.begin() as conn:
            await self._lock_session_row(conn, create=True)
            await insert_messages(conn, self._messages, sid, rows)
            await self._touch(conn)

    async def _pop_newest(self) -> TResponseInputItem | None:
        return await self._write(self._pop)

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
                    item = decode_item(data, where=f"row {row_id} of session {sid!r}")
                    if item is None:
                        continue
                    deleted = await conn.execute(delete(m).where(m.c.id == row_id))
                    if not deleted.rowcount:
                        # Another pop took this row between our read and our delete (a
                        # connection shared by both, as SQLite's in-memory engines do): it
                        # returns that item, this pop the next one.
                        continue
                    await self._touch(conn)
                    return item
                before = rows[-1][0]

    async def _touch(self, conn: AsyncConnection) -> None:
        await touch_session(conn, self._sessions, self.session_id)

    async def _clear(self) -> None:
        await self._write(self._delete_session)

    async def _delete_session(self) -> None:
        sid = self.session_id
        m = self._messages
        async with self._engine.begin() as conn:
            if not await self._lock_session_row(conn, create=False):
                # No session row: remove orphans written by another tool, if any.
                await conn.execute(delete(m).where(m.c.session_id == sid))
                return
            await conn.execute(delete(m).where(m.c.session_id == sid))
            await conn.execute(delete(self._sessions).where(self._sessions.c.session_id == sid))

    async def _snapshot(self) -> HistorySnapshot:
        return await retry_lost_read(self._snapshot_once)

    async def _snapshot_once(self) -> HistorySnapshot:
        m = self._messages
        where = f"session {self.session_id!r}"
        async with self._engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(m.c.id, m.c.message_data)
                    .where(m.c.session_id == self.session_id)
                    .order_by(m.c.id)
                )
            ).all()
        return decode_snapshot(rows, where)

    async def _replace(self, snapshot: HistorySnapshot, encoded: list[str]) -> bool:
        return await self._write(lambda: self._replace_rows(snapshot, encoded))

    async def _replace_rows(self, snapshot: HistorySnapshot, encoded: list[str]) -> bool:
        m = self._messages
        sid = self.session_id
        async with self._engine.begin() as conn:
            if not await self._lock_session_row(conn, create=False):
                if snapshot.rows:
                    return False  # cleared since the snapshot
                await self._lock_session_row(conn, create=True)
            mine = m.c.session_id == sid
            if snapshot.rows:
                through = snapshot.rows[-1]
                current = (
                    await conn.execute(
                        select(m.c.id).where(mine, m.c.id <= through).order_by(m.c.id)
                    )
                ).scalars()
                if tuple(current) != snapshot.rows:
                    return False
                later = (
                    await conn.execute(
                        select(m.c.message_data, m.c.created_at)
                        .where(mine, m.c.id > through)
                        .order_by(m.c.id)
                    )
                ).all()
            else:
                later = (
                    await conn.execute(
                        select(m.c.message_data, m.c.created_at).where(mine).order_by(m.c.id)
                    )
                ).all()
            await conn.execute(delete(m).where(mine))
            await insert_messages(conn, m, sid, encoded)
            if later:
                await insert_messages(
                    conn, m, sid, [d for d, _ in later], created_at=[at for _, at in later]
                )
            await self._touch(conn)
            return True
