"""Engines for `SQLAlchemySession`: URLs, deadlock retries, and the driver's errors mapped."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    DisconnectionError,
    NoSuchModuleError,
    SQLAlchemyError,
)
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ..._extras import missing_extra
from ...exceptions import SessionStorageError
from .libpq import split_libpq_params
from .pgbouncer import split_pgbouncer_flag, watch_for_pooler
from .timeouts import DEFAULT_COMMAND_TIMEOUT, check_command_timeout

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "check_command_timeout",
    "create_engine_for_url",
    "discard_closed_connections",
    "retry_deadlocks",
    "retry_lost_read",
    "storage_error",
]

_T = TypeVar("_T")

_DEADLOCK_SQLSTATES = ("40P01", "40001")  # PostgreSQL: deadlock, serialization failure
_DEADLOCK_MYSQL_CODES = (1213,)  # InnoDB: deadlock found, try restarting the transaction
_DEADLOCK_ATTEMPTS = 8


def _is_deadlock(exc: DBAPIError) -> bool:
    orig = exc.orig
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if code in _DEADLOCK_SQLSTATES:
        return True
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and args[0] in _DEADLOCK_MYSQL_CODES


async def retry_deadlocks(transaction: Callable[[], Awaitable[_T]]) -> _T:
    """Run a transaction again when the database chose it as a deadlock victim.

    The database rolled the victim back whole, so running it again cannot apply it twice.
    (InnoDB can pick a victim among concurrent first writers of a new session.)

    Args:
        transaction: Runs the whole transaction once.

    Returns:
        What the transaction returned.
    """
    for attempt in range(_DEADLOCK_ATTEMPTS):
        try:
            return await transaction()
        except DBAPIError as exc:
            last = attempt == _DEADLOCK_ATTEMPTS - 1
            if last or exc.connection_invalidated or not _is_deadlock(exc):
                raise
            await asyncio.sleep(random.uniform(0, 0.002 * 2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


async def retry_lost_read(read: Callable[[], Awaitable[_T]]) -> _T:
    """Run a read again, once, when its connection turned out to be lost.

    A read changes nothing, so running it again on a new connection is always safe. (The pool
    hands out a connection the server closed while it sat idle, a restart or an operator's
    `pg_terminate_backend`, when the driver has not seen the close yet.) Writes are never run
    again this way: one that lost its connection during the commit may have been applied.

    Args:
        read: Runs the whole read once, on a connection of its own.

    Returns:
        What the read returned.
    """
    try:
        return await read()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
    return await read()  # SQLAlchemy invalidated the pool: this one gets a new connection


def _refuse_closed(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    is_closed = getattr(getattr(dbapi_connection, "driver_connection", None), "is_closed", None)
    if callable(is_closed) and is_closed():
        # The pool discards this connection and hands out another (or opens a new one).
        raise DisconnectionError("the server closed this pooled connection")


def discard_closed_connections(engine: AsyncEngine) -> None:
    """Make the engine's pool skip connections the driver already knows are closed.

    asyncpg notices at once when the server ends an idle connection (it reads the server's
    termination message and the end of the stream); without this check the pool would hand
    that connection to the next call, which would fail. The check is local: nothing is sent.
    Registered once per engine; harmless for drivers without `is_closed()`.

    Args:
        engine: Any async engine, also one the caller owns.
    """
    target = engine.sync_engine
    if not event.contains(target, "checkout", _refuse_closed):
        event.listen(target, "checkout", _refuse_closed)


def storage_error(operation: str, session_id: str, exc: BaseException) -> SessionStorageError:
    """Describe what the driver raised during `operation` as a `SessionStorageError`.

    Args:
        operation: The session method that failed, for example `"add_items"`.
        session_id: The session it ran on.
        exc: A `SQLAlchemyError` or an `OSError`.

    Returns:
        The error to raise (chain `exc` to it).
    """
    if isinstance(exc, OSError):
        return SessionStorageError(
            f"{operation} on session {session_id!r} could not reach the database: {exc}"
        )
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
            'URL, or see the "PostgreSQL behind PgBouncer" section of the documentation)'
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
            The libpq parameters hosted providers put in their URLs (`sslmode`, `sslrootcert`,
            `sslcert`, `sslkey`, `application_name`, `connect_timeout`, `options`, ...) are
            given to asyncpg with libpq's meaning (see `libpq.py`).
        **engine_kwargs: Passed to `create_async_engine`.

    Returns:
        The engine (no connection is opened yet).

    Raises:
        ValueError: The URL cannot be parsed, names a synchronous driver, has a `pgbouncer`
            value other than true/false (or `pgbouncer=true` without asyncpg), or a libpq
            parameter asyncpg cannot honour (or a value libpq does not define).
        ImportError: The driver is not installed.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(f"not a database URL: {url!r} ({exc})") from exc
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    parsed, pgbouncer = split_pgbouncer_flag(parsed)
    if parsed.drivername == "postgresql+asyncpg":
        parsed, libpq_args = _libpq_params(parsed)
        if libpq_args:
            # The caller's connect_args win, as asyncpg's keywords win over its URI.
            engine_kwargs["connect_args"] = {**libpq_args, **engine_kwargs.get("connect_args", {})}
    try:
        engine = create_async_engine(parsed, **engine_kwargs)
    except ModuleNotFoundError as exc:
        if parsed.drivername == "postgresql+asyncpg":
            raise missing_extra(f"the {parsed.drivername} driver", "postgres") from exc
        # A missing synchronous driver (psycopg2, MySQLdb) would be refused once installed:
        # name the async driver for this database instead of the missing module.
        backend = parsed.get_backend_name()
        use = _ASYNC_DRIVERS.get(backend, "postgresql+asyncpg://")
        raise ImportError(
            f"{parsed.drivername}:// selects the driver {exc.name}, which is not installed; "
            f"turnstore needs an async driver: use {use}"
        ) from exc
    except NoSuchModuleError as exc:
        raise ValueError(
            f"cannot use {parsed.render_as_string(hide_password=True)!r}: "
            f"{parsed.drivername}:// is not a storage turnstore supports. {STORAGE_FORMS}"
        ) from exc
    except (ArgumentError, SQLAlchemyError) as exc:
        raise ValueError(
            f"cannot use {parsed.render_as_string(hide_password=True)!r}: "
            f"{str(exc).rstrip('. ')}. "
            "Use an async driver, for example postgresql+asyncpg:// or mysql+aiomysql://"
        ) from exc
    watch_for_pooler(engine, pgbouncer)
    discard_closed_connections(engine)
    return engine


_ASYNC_DRIVERS = {
    "postgresql": "postgresql+asyncpg:// (pip install 'turnstore[postgres]')",
    "mysql": "mysql+aiomysql:// or mysql+asyncmy://",
    "mariadb": "mariadb+aiomysql:// or mariadb+asyncmy://",
    "sqlite": "sqlite+aiosqlite://, or the file's path for turnstore's own SQLite backend",
}
"""The async driver URL to use instead of a synchronous one, per database."""

STORAGE_FORMS = (
    "A storage is a SQLite file's path (or sqlite:///path), a SQLAlchemy URL with an async "
    "driver (postgresql://user@host/db, mysql+aiomysql://user@host/db) or a Redis URL "
    "(redis://host:6379/0, redis+cluster://host:7000)"
)
"""The forms of storage target turnstore accepts, for errors about a target it does not."""


def _libpq_params(url: URL) -> tuple[URL, dict[str, Any]]:
    try:
        return split_libpq_params(url)
    except ModuleNotFoundError as exc:  # asyncpg itself is missing: say which extra brings it
        raise missing_extra(f"the {url.drivername} driver", "postgres") from exc
