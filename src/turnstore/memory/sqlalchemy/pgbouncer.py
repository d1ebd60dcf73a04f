"""PostgreSQL behind PgBouncer (or another pooler) in transaction pooling mode.

A pooler in transaction mode hands each transaction to whichever server connection is free, so
a prepared statement that asyncpg (or SQLAlchemy's statement cache) names on one server
connection is missing on the next, and two clients that both name theirs
`__asyncpg_stmt_1__` collide on a shared one ("prepared statement ... already exists").

In pooler mode the engine's connections therefore:

- keep no statement cache (asyncpg's `statement_cache_size=0`, SQLAlchemy's
  `prepared_statement_cache_size=0`);
- prepare every statement unnamed (`prepared_statement_name_func` returns `""`): PostgreSQL
  replaces the unnamed statement with the next one, so no name can collide and nothing is left
  behind on the pooler's server connections (unique names, the other known workaround, leave
  one statement per transaction on some server connection until it is closed), and asyncpg
  sends the unnamed statement again with its execution, so it never runs on a server
  connection that has not seen it.

Talking to PostgreSQL directly, none of this applies: statements stay cached and named.

The mode comes from the URL's `pgbouncer` parameter (`true` or `false`), which is taken out of
the URL before the driver sees it; without it, the engine finds out on its first connection by
comparing the backend process id PostgreSQL reports (`pg_backend_pid()`) with the one announced
in the connection handshake: a pooler answers the handshake itself with an id of its own.
"""

from __future__ import annotations

import weakref
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "POOLER_CONNECT_ARGS",
    "behind_pooler",
    "split_pgbouncer_flag",
    "watch_for_pooler",
]

_PARAMETER = "pgbouncer"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _unnamed_statement() -> str:
    return ""


POOLER_CONNECT_ARGS: dict[str, Any] = {
    "statement_cache_size": 0,
    "prepared_statement_cache_size": 0,
    "prepared_statement_name_func": _unnamed_statement,
}
"""The asyncpg connection arguments that make an engine safe behind a transaction pooler."""

# What each engine made by `watch_for_pooler` found out: True (pooler), False (direct), or
# missing (no connection yet).
_FOUND: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def split_pgbouncer_flag(url: URL) -> tuple[URL, bool | None]:
    """Take the `pgbouncer` parameter out of a URL.

    Args:
        url: The parsed URL.

    Returns:
        The URL without the parameter, and `True`/`False` as it says, or `None` when absent.

    Raises:
        ValueError: The value is not true/false, or the URL is not a PostgreSQL URL with the
            asyncpg driver.
    """
    if _PARAMETER not in url.query:
        return url, None
    raw = url.query[_PARAMETER]
    value = raw if isinstance(raw, str) else ",".join(raw)
    if value.lower() in _TRUE:
        flag = True
    elif value.lower() in _FALSE:
        flag = False
    else:
        raise ValueError(f"pgbouncer must be true or false in the URL, got {value!r}")
    if flag and url.get_backend_name() != "postgresql":
        raise ValueError(
            f"pgbouncer=true applies to PostgreSQL URLs, not {url.get_backend_name()!r}"
        )
    if flag and url.get_driver_name() != "asyncpg":
        raise ValueError(
            f"pgbouncer=true is supported with the asyncpg driver (postgresql+asyncpg://), "
            f"not {url.get_driver_name()!r}"
        )
    return url.difference_update_query([_PARAMETER]), flag


def watch_for_pooler(engine: AsyncEngine, flag: bool | None) -> None:
    """Make an asyncpg engine's connections safe behind a transaction pooler.

    Args:
        engine: An engine this package created (never one a caller passed in).
        flag: `True`: always use the pooler settings; `False`: never; `None`: find out on the
            first connection and remember it for the engine's life.
    """
    if engine.dialect.name != "postgresql" or engine.dialect.driver != "asyncpg":
        return
    if flag is False:
        _FOUND[engine.sync_engine] = False
        return
    sync_engine = engine.sync_engine
    if flag:
        _FOUND[sync_engine] = True

    def do_connect(dialect: Any, conn_rec: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        found = _FOUND.get(sync_engine)
        if found is None:
            # Connect with the safe settings (correct either way), then decide.
            probe = dialect.dbapi.connect(*cargs, **{**cparams, **POOLER_CONNECT_ARGS})
            try:
                found = _pooler_answered(probe)
            except BaseException:
                probe.close()
                raise
            _FOUND[sync_engine] = found
            if found:
                cparams.update(POOLER_CONNECT_ARGS)
                return probe
            probe.close()  # PostgreSQL itself: connect again with the statement cache on
            return None
        if found:
            cparams.update(POOLER_CONNECT_ARGS)
        return None

    event.listen(sync_engine, "do_connect", do_connect)


def behind_pooler(engine: AsyncEngine) -> bool | None:
    """Tell whether an engine made here talks to a transaction pooler.

    Args:
        engine: The engine.

    Returns:
        `True` or `False` once known, `None` before the first connection (or for an engine this
        package did not create).
    """
    return _FOUND.get(engine.sync_engine)


def _pooler_answered(dbapi_connection: Any) -> bool:
    """True when the handshake's process id is not the server process's: a pooler answered."""
    announced = dbapi_connection.driver_connection.get_server_pid()
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("SELECT pg_backend_pid()")
        row = cursor.fetchone()
    finally:
        cursor.close()
        dbapi_connection.rollback()
    return bool(row is None or int(row[0]) != int(announced))
