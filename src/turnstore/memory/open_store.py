"""Opening the storage a file path or URL names, as a `SessionStore` of the right backend.

Apart from `store.py` (the base the backends' stores build on), so that the import graph has no
cycle. The PostgreSQL and Redis stores import their extras only when opened.
"""

from __future__ import annotations

import os

from .._extras import import_extra
from .redis.urls import is_redis_url
from .sqlalchemy.timeouts import DEFAULT_COMMAND_TIMEOUT, check_command_timeout
from .store import SessionStore

__all__ = ["open_session_store"]


def open_session_store(
    target: str | os.PathLike[str],
    *,
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
    key_prefix: str = "agent_sessions",
    create: bool = False,
    command_timeout: float | None = DEFAULT_COMMAND_TIMEOUT,
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
        command_timeout: For SQLAlchemy, the most seconds one call (a listing, a read, one
            session's import) may spend in the database before it fails with
            `SessionStorageError`, as `SQLAlchemySession`'s `command_timeout`; `None` for no
            limit. Checked for every target.

    Returns:
        The store. Nothing is connected until the first call.

    Raises:
        ValueError: The target is not a path or a supported URL, or `command_timeout` is not
            positive.
        TypeError: `command_timeout` is not a number or `None`.
        FileNotFoundError: The SQLite file does not exist and `create` is false, or its
            directory does not exist.
        IsADirectoryError: The SQLite path is a directory.
        ImportError: The extra the backend needs is not installed.

    Example:
        ```python
        from turnstore.admin import open_session_store

        async with open_session_store("postgresql://postgres@localhost/app") as store:
            for info in await store.list_sessions(limit=10):
                print(info.session_id, info.item_count, info.last_activity)
        ```
    """
    from .sqlite.store import SQLiteStore

    check_command_timeout(command_timeout)
    text = os.fspath(target)
    if not isinstance(text, str) or not text:
        raise ValueError("the storage target must be a file path or a URL, got an empty value")
    if is_redis_url(text):
        import_extra("redis", "redis", f"a {text.partition('://')[0]}:// URL")
        from .redis.store import RedisStore

        return RedisStore(text, key_prefix)
    if text.startswith("sqlite"):
        if not text.startswith("sqlite:///"):
            raise ValueError(f"a SQLite URL looks like sqlite:///path/to/file.db, got {text!r}")
        return SQLiteStore(text[len("sqlite:///") :], sessions_table, messages_table, create)
    if "://" in text:
        import_extra("sqlalchemy", "postgres", f"a {text.partition('://')[0]}:// URL")
        from .sqlalchemy.store import SQLAlchemyStore

        return SQLAlchemyStore(text, sessions_table, messages_table, create, command_timeout)
    return SQLiteStore(text, sessions_table, messages_table, create)
