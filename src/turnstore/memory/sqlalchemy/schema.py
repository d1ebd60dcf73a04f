"""The tables of `SQLAlchemySession`, on PostgreSQL, MySQL/MariaDB (and SQLite, for tests).

Layout (the default names shown; both are configurable):

```text
agent_sessions   session_id VARCHAR(255) PRIMARY KEY, created_at, updated_at
agent_messages   id BIGINT autoincrement PRIMARY KEY, session_id (FK, ON DELETE CASCADE),
                 message_data TEXT (LONGTEXT on MySQL), created_at
                 index idx_agent_messages_session_id (session_id, id)
```
"""

from __future__ import annotations

import zlib
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Column,
    ColumnElement,
    DateTime,
    ForeignKey,
    FunctionElement,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    bindparam,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    type_coerce,
    update,
)
from sqlalchemy.dialects import mysql as _mysql
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.ext.compiler import compiles

from ..sqlite.schema import sqlite_time

__all__ = [
    "CREATE_ATTEMPTS",
    "MAX_SESSION_ID_LENGTH",
    "create_missing_tables",
    "idle_before",
    "insert_messages",
    "lock_session_row",
    "now",
    "session_tables",
    "touch_session",
]

MAX_SESSION_ID_LENGTH = 255
"""The longest session id the `session_id` columns hold (`VARCHAR(255)`)."""

# On MySQL/MariaDB: full Unicode, and session ids compared byte for byte (the default collations
# would make "A" and "a" the same session; trailing spaces are still ignored there).
_MYSQL_TABLE: dict[str, Any] = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


class _Now(FunctionElement[datetime]):
    """The database's clock at full precision (see `now`)."""

    type = DateTime(timezone=True)
    inherit_cache = True


def now() -> _Now:
    """The database's clock at full precision, for `created_at` and `updated_at`.

    `CURRENT_TIMESTAMP` keeps whole seconds on MySQL/MariaDB (`NOW()`) and on SQLite: a
    session written at 15:00:00.9 would read as idle to a prune whose cutoff is 15:00:00.5.
    PostgreSQL's `now()` has microseconds; MySQL/MariaDB get `CURRENT_TIMESTAMP(6)`
    (microseconds, in the `DATETIME(6)` columns this release creates); SQLite gets its clock to
    the millisecond, written as SQLAlchemy writes datetimes there (`2026-12-01 15:00:00.123000`)
    so that text comparisons with a bound datetime hold.
    """
    return _Now()


@compiles(_Now)
def _now_default(element: _Now, compiler: Any, **kw: Any) -> str:
    return "CURRENT_TIMESTAMP"


@compiles(_Now, "mysql")
@compiles(_Now, "mariadb")
def _now_mysql(element: _Now, compiler: Any, **kw: Any) -> str:
    return "CURRENT_TIMESTAMP(6)"


@compiles(_Now, "sqlite")
def _now_sqlite(element: _Now, compiler: Any, **kw: Any) -> str:
    return "strftime('%Y-%m-%d %H:%M:%f000', 'now')"


class _Clock(_Now):
    """The database's clock when the statement runs (see `touch_session`)."""

    inherit_cache = True


@compiles(_Clock, "postgresql")
def _clock_postgresql(element: _Clock, compiler: Any, **kw: Any) -> str:
    # now() is the time the transaction began; clock_timestamp() the time it is read.
    return "clock_timestamp()"


async def touch_session(conn: AsyncConnection, s: Table, session_id: str) -> None:
    """Stamp a session's `updated_at`: the last statement of every write transaction.

    A session's last activity is when its write commits, not when its transaction began: a
    prune whose cutoff falls while the write is open then keeps the session (a prune that
    waited for the row's lock reads the new stamp). The stamp is the database's clock when
    this statement runs (`clock_timestamp()` on PostgreSQL, whose `now()` is the start of
    the transaction; elsewhere the clock of `now`, which is read per statement).

    Args:
        conn: A connection inside the write's transaction, holding the session row's lock.
        s: The sessions table.
        session_id: The session written to.
    """
    await conn.execute(update(s).where(s.c.session_id == session_id).values(updated_at=_Clock()))


def _timestamp(name: str) -> Column[Any]:
    return Column(
        name,
        DateTime(timezone=True).with_variant(_mysql.DATETIME(fsp=6), "mysql", "mariadb"),
        nullable=False,
        server_default=now(),
    )


def idle_before(s: Table, dialect: str, cutoff: datetime) -> ColumnElement[bool]:
    """The condition "last written before `cutoff`" on the sessions table `s`.

    Stamps written at full precision (see `now`) are compared with the cutoff. Tables made by
    earlier releases hold whole-second stamps on MySQL/MariaDB (`DATETIME`) and on SQLite
    (`CURRENT_TIMESTAMP` text): such a stamp may stand for any moment of its second, so the
    session is idle only when that whole second is before the cutoff.

    Args:
        s: The sessions table.
        dialect: The engine's dialect name.
        cutoff: The cutoff (UTC).
    """
    column = s.c.updated_at
    whole_second = cutoff.replace(microsecond=0)
    if dialect in ("mysql", "mariadb"):
        return and_(column < cutoff, or_(func.microsecond(column) > 0, column < whole_second))
    if dialect == "sqlite":
        as_text = type_coerce(column, String)
        stamp = sqlite_time(whole_second)[:19]
        return and_(column < cutoff, or_(func.length(as_text) > 19, as_text < stamp))
    return column < cutoff


@lru_cache(maxsize=64)
def session_tables(sessions_table: str, messages_table: str) -> tuple[MetaData, Table, Table]:
    """Return the metadata and the two tables for one (sessions, messages) name pair.

    Args:
        sessions_table: The table with one row per session (already validated).
        messages_table: The table with one row per item (already validated).

    Returns:
        `(metadata, sessions, messages)`.
    """
    metadata = MetaData()
    sessions = Table(
        sessions_table,
        metadata,
        Column("session_id", String(MAX_SESSION_ID_LENGTH), primary_key=True),
        _timestamp("created_at"),
        _timestamp("updated_at"),
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
        _timestamp("created_at"),
        # get_items(limit) walks this index backwards: O(limit), not O(history).
        Index(f"idx_{messages_table}_session_id", "session_id", "id"),
        **_MYSQL_TABLE,
    )
    return metadata, sessions, messages


CREATE_ATTEMPTS = 3
"""How often creating the tables is tried when another process creates them at the same time."""


async def create_missing_tables(
    engine: AsyncEngine, sessions_table: str, messages_table: str
) -> None:
    """Create the two tables and their index, if missing, in one transaction.

    Another process creating them at the same moment is not an error: the creation is tried
    again (up to `CREATE_ATTEMPTS` times) and then finds them.

    Args:
        engine: The engine to create them with.
        sessions_table: The table with one row per session.
        messages_table: The table with one row per item.
    """
    for attempt in range(CREATE_ATTEMPTS):
        try:
            await _create_tables(engine, sessions_table, messages_table)
            return
        except DBAPIError as exc:
            # Another process created them between our check and our CREATE: check again.
            text_ = str(exc.orig).lower()
            last = attempt == CREATE_ATTEMPTS - 1
            if last or ("already exists" not in text_ and "duplicate" not in text_):
                raise


async def _create_tables(engine: AsyncEngine, sessions_table: str, messages_table: str) -> None:
    metadata, _, _ = session_tables(sessions_table, messages_table)
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Concurrent CREATE TABLE IF NOT EXISTS can collide in PostgreSQL's catalog:
            # serialise creators, across processes too, for this transaction.
            lock_key = zlib.crc32(f"{sessions_table}/{messages_table}".encode())
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_key})
        await conn.run_sync(metadata.create_all, checkfirst=True)


async def lock_session_row(
    conn: AsyncConnection, s: Table, session_id: str, *, create: bool
) -> bool:
    """Lock a session's row in the sessions table until the transaction ends.

    Args:
        conn: A connection inside a transaction.
        s: The sessions table.
        session_id: The session.
        create: Create the row (and bump its `updated_at`) if it is missing.

    Returns:
        Whether the row exists (always `True` with `create`).
    """
    sid = session_id
    dialect = conn.dialect.name
    if create and dialect in ("postgresql", "sqlite", "mysql", "mariadb"):
        # One upsert: create the row, or bump the `updated_at` of the existing one.
        row = {"session_id": sid, "created_at": now(), "updated_at": now()}
        if dialect in ("mysql", "mariadb"):
            await conn.execute(
                mysql_insert(s).values(row).on_duplicate_key_update(updated_at=now())
            )
            return True
        values = (pg_insert if dialect == "postgresql" else sqlite_insert)(s).values(row)
        await conn.execute(
            values.on_conflict_do_update(
                index_elements=[s.c.session_id], set_={"updated_at": now()}
            )
        )
        return True
    if dialect == "sqlite":
        # SQLite has no SELECT ... FOR UPDATE (and its driver begins a transaction only at the
        # first write): a write that changes nothing takes the database's write lock for the
        # rest of the transaction, so a concurrent writer waits as it would for a row lock.
        result = await conn.execute(
            update(s).where(s.c.session_id == sid).values(session_id=s.c.session_id)
        )
        return bool(result.rowcount)
    locked = select(s.c.session_id).where(s.c.session_id == sid).with_for_update()
    if (await conn.execute(locked)).first() is not None:
        if create:
            await conn.execute(update(s).where(s.c.session_id == sid).values(updated_at=now()))
        return True
    if not create:
        return False
    try:
        async with conn.begin_nested():
            await conn.execute(insert(s).values(session_id=sid, created_at=now(), updated_at=now()))
    except IntegrityError:  # another writer created it first: wait for its lock
        await conn.execute(locked)
    return True


async def insert_messages(
    conn: AsyncConnection,
    m: Table,
    session_id: str,
    data: list[str],
    created_at: list[Any] | None = None,
) -> None:
    """Insert rows into the messages table, in order, as part of the caller's transaction.

    On PostgreSQL the rows go as ONE statement whose parameters are arrays
    (`INSERT ... SELECT ... FROM unnest($1, $2) WITH ORDINALITY ORDER BY ordinality`), whatever
    their number: the driver sends one message and then only waits for the answer, so a
    connection that dies meanwhile fails the call at once. (asyncpg's `executemany` streams one
    message per row and, when the socket's buffer is full, waits for the transport to resume
    writing: a connection killed at that moment never resumes it, and the call hung until
    `command_timeout`.) Elsewhere the driver's `executemany` sends the rows.

    Args:
        conn: A connection inside a transaction.
        m: The messages table.
        session_id: The session the rows belong to.
        data: The encoded items, oldest first.
        created_at: Their `created_at` values (same length as `data`), or `None` for now.
    """
    if not data:
        return
    if created_at is not None and len(created_at) != len(data):
        raise ValueError("created_at must hold one value per row")
    if conn.dialect.name != "postgresql":
        rows: list[dict[str, Any]] = [{"session_id": session_id, "message_data": d} for d in data]
        if created_at is not None:
            for row, at in zip(rows, created_at, strict=True):
                row["created_at"] = at
        await conn.execute(insert(m), rows)
        return
    arrays: list[Any] = [bindparam("data", data, type_=ARRAY(Text))]
    columns = ["data"]
    if created_at is not None:
        arrays.append(bindparam("created_at", created_at, type_=ARRAY(DateTime(timezone=True))))
        columns.append("at")
    rows_in = (
        func.unnest(*arrays).table_valued(*columns, with_ordinality="ord").render_derived(name="r")
    )
    names = ["session_id", "message_data"]
    picked: list[Any] = [literal(session_id, String()), rows_in.c.data]
    if created_at is not None:
        names.append("created_at")
        picked.append(rows_in.c.at)
    await conn.execute(insert(m).from_select(names, select(*picked).order_by(rows_in.c.ord)))
