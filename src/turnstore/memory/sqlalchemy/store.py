"""The CLI's store for the tables of `SQLAlchemySession`."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...exceptions import SessionStorageError
from .._store_helpers import parse_sqlite_time, utc
from ..closing import warn_if_unclosed
from ..codec import validate_table_names
from ..records import EncodedWrite, SessionInfo, SessionRecord, SessionStats
from ..session import Session
from ..store import SessionStore
from .timeouts import DEFAULT_COMMAND_TIMEOUT, check_command_timeout

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


class SQLAlchemyStore(SessionStore):
    """The tables of `SQLAlchemySession` on any SQLAlchemy URL.

    Every call is bounded by `command_timeout`, as the session's operations are: a database
    that stops answering (a lock held elsewhere, a connection killed mid-statement) ends the
    call with a `SessionStorageError` instead of a hang.
    """

    def __init__(
        self,
        url: str,
        sessions_table: str,
        messages_table: str,
        create: bool,
        command_timeout: float | None = DEFAULT_COMMAND_TIMEOUT,
    ) -> None:
        from .engine import create_engine_for_url
        from .schema import session_tables

        sessions_table, messages_table = validate_table_names(sessions_table, messages_table)
        self._command_timeout = check_command_timeout(command_timeout)
        self._engine: AsyncEngine = create_engine_for_url(url)
        self.target = self._engine.url.render_as_string(hide_password=True)
        self.backend = self._engine.dialect.name
        self._sessions_table = sessions_table
        self._messages_table = messages_table
        self._create = create
        _, self._s, self._m = session_tables(sessions_table, messages_table)
        self._unclosed = warn_if_unclosed(self, f"the session store on {self.target!r}")

    @asynccontextmanager
    async def _errors(self, *, missing_table_ok: bool) -> AsyncIterator[None]:
        """Bound the block by `command_timeout` and turn its failures into storage errors.

        Raises:
            _MissingTable: The table does not exist and `missing_table_ok` is true.
            SessionStorageError: Any other failure, or no answer within the timeout; the
                message names the URL (password hidden).
        """
        from sqlalchemy.exc import SQLAlchemyError

        try:
            async with asyncio.timeout(self._command_timeout):
                yield
        except TimeoutError as exc:
            raise SessionStorageError(
                f"{self.target}: the database did not answer within "
                f"command_timeout={self._command_timeout} s; nothing was committed by this call"
            ) from exc
        except SQLAlchemyError as exc:
            if missing_table_ok and _missing_table(exc):
                raise _MissingTable from exc
            raise SessionStorageError(f"{self.target}: {_first_line(exc)}") from exc
        except OSError as exc:
            raise SessionStorageError(f"cannot reach {self.target}: {exc}") from exc

    async def _call(self, work: Any) -> Any:
        """Run `work(conn)` on a connection; `None` when the tables do not exist."""
        try:
            async with self._errors(missing_table_ok=True), self._engine.connect() as conn:
                return await work(conn)
        except _MissingTable:
            return None

    async def missing_tables(self) -> list[str]:
        """Return the sessions and messages tables that the database lacks."""
        from sqlalchemy import inspect

        names = (self._sessions_table, self._messages_table)

        def work(sync_conn: Any) -> list[str]:
            inspector = inspect(sync_conn)
            return [name for name in names if not inspector.has_table(name)]

        async with self._errors(missing_table_ok=False), self._engine.connect() as conn:
            missing: list[str] = await conn.run_sync(work)
        return missing

    def _info_query(self) -> Any:
        from sqlalchemy import func, select

        s, m = self._s, self._m
        count = select(func.count(m.c.id)).where(m.c.session_id == s.c.session_id).scalar_subquery()
        return select(s.c.session_id, s.c.created_at, s.c.updated_at, count)

    @staticmethod
    def _info(row: Any) -> SessionInfo:
        return SessionInfo(row[0], int(row[3]), _maybe_utc(row[1]), _maybe_utc(row[2]))

    async def _list_sessions(self, offset: int, limit: int, prefix: str) -> list[SessionInfo]:
        """Return sessions, the most recently active first."""
        query = (
            self._info_query()
            .where(self._s.c.session_id.startswith(prefix, autoescape=True))
            .order_by(self._s.c.updated_at.desc(), self._s.c.session_id)
            .offset(offset)
            .limit(limit)
        )

        async def work(conn: Any) -> list[SessionInfo]:
            return [self._info(row) for row in await conn.execute(query)]

        return list(await self._call(work) or [])

    async def _sessions_after(
        self, after: str | None, limit: int, prefix: str
    ) -> list[SessionInfo]:
        """Sessions with an id greater than `after`, by id (the primary key's index)."""
        query = self._info_query().where(self._s.c.session_id.startswith(prefix, autoescape=True))
        if after is not None:
            query = query.where(self._s.c.session_id > after)
        query = query.order_by(self._s.c.session_id).limit(limit)

        async def work(conn: Any) -> list[SessionInfo]:
            return [self._info(row) for row in await conn.execute(query)]

        return list(await self._call(work) or [])

    async def _delete_idle_before(self, cutoff: datetime) -> int:
        """Delete every session idle for longer than `older_than`, in one transaction."""
        from sqlalchemy import delete, select

        from .schema import idle_before

        s, m = self._s, self._m
        is_idle = idle_before(s, self._engine.dialect.name, cutoff)
        idle = select(s.c.session_id).where(is_idle)
        try:
            async with self._errors(missing_table_ok=True), self._engine.begin() as conn:
                # Lock the idle sessions' rows first: a concurrent write to one of them waits,
                # and one written to just before is no longer idle when re-checked here.
                locked = (await conn.execute(idle.with_for_update())).scalars().all()
                if not locked:
                    return 0
                await conn.execute(delete(m).where(m.c.session_id.in_(idle.scalar_subquery())))
                deleted = await conn.execute(delete(s).where(is_idle))
                return int(deleted.rowcount)
        except _MissingTable:
            return 0

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
            return self._decode_records(
                session_id, (tuple(row) for row in await conn.execute(query)), _maybe_utc
            )

        return list(await self._call(work) or [])

    async def _write_encoded(self, write: EncodedWrite) -> None:
        session_id = write.session_id
        from sqlalchemy import delete, select, update

        from .engine import retry_deadlocks
        from .schema import insert_messages, touch_session

        session = self.session(session_id)

        keep_times = write.session_created is not None or write.last_activity is not None
        s = self._s

        async def transaction() -> None:
            async with self._engine.begin() as conn:
                existing = None
                # Before the row is created: an existing session's times are merged.
                if (
                    keep_times
                    and not write.replace
                    and await session._lock_session_row(conn, create=False)  # type: ignore[attr-defined]
                ):
                    query = select(s.c.created_at, s.c.updated_at).where(
                        s.c.session_id == session_id
                    )
                    row = (await conn.execute(query)).one()
                    existing = (_maybe_utc(row[0]), _maybe_utc(row[1]))
                await session._lock_session_row(conn, create=True)  # type: ignore[attr-defined]
                if write.replace:
                    await conn.execute(delete(self._m).where(self._m.c.session_id == session_id))
                await insert_messages(
                    conn, self._m, session_id, write.encoded, created_at=write.created
                )
                await touch_session(conn, s, session_id)
                if keep_times:
                    # The export's times, set after the touch (the write's last statement).
                    created, last = write.session_times(existing)
                    times = {"created_at": created, "updated_at": last}
                    await conn.execute(
                        update(s)
                        .where(s.c.session_id == session_id)
                        .values({k: v for k, v in times.items() if v is not None})
                    )

        try:
            async with self._errors(missing_table_ok=False):
                await session._ensure_tables()  # type: ignore[attr-defined]
                # InnoDB may pick one of several concurrent imports as a deadlock victim, as it
                # may a session's write: run it again, as the session does.
                await retry_deadlocks(transaction)
        finally:
            await session.close()  # type: ignore[attr-defined]

    def session(self, session_id: str) -> Session:
        """Return a `SQLAlchemySession` that shares the store's engine."""
        from .session import SQLAlchemySession

        return SQLAlchemySession(
            session_id,
            engine=self._engine,
            create_tables=self._create,
            sessions_table=self._sessions_table,
            messages_table=self._messages_table,
            command_timeout=self._command_timeout,
        )

    async def aclose(self) -> None:
        """Dispose of the store's engine."""
        if self._unclosed.detach() is not None:
            await self._engine.dispose()


class _MissingTable(Exception):
    """The store's tables do not exist yet: the store reads as empty."""


def _maybe_utc(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, str):
        return parse_sqlite_time(value)
    return None


_UNDEFINED_TABLE_SQLSTATE = "42P01"
"""PostgreSQL: undefined_table."""
_MYSQL_NO_SUCH_TABLE = 1146
"""MySQL/MariaDB: ER_NO_SUCH_TABLE."""


def _missing_table(exc: BaseException) -> bool:
    """Tell whether a database error means "this table does not exist", by its error code.

    Only that error reads as an empty store. A wrong database, a wrong role or password, a
    missing permission all have other codes (their text may also say "does not exist"), and
    are reported as errors.
    """
    orig = getattr(exc, "orig", None)
    if orig is None:
        return False
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):  # MySQL drivers: (error number, message)
        return bool(args[0] == _MYSQL_NO_SUCH_TABLE)
    for source in (orig, getattr(orig, "__cause__", None)):
        code = getattr(source, "sqlstate", None) or getattr(source, "pgcode", None)
        if code is not None:
            return bool(code == _UNDEFINED_TABLE_SQLSTATE)
    if isinstance(orig, sqlite3.OperationalError):
        # SQLite has no specific code for it (SQLITE_ERROR): its message is fixed.
        return str(orig).startswith("no such table")
    return False


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
