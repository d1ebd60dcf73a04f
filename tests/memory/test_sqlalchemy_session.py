"""SQLAlchemySession on a real PostgreSQL: what is specific to this backend.

The shared behaviour (ordering, limits, isolation, pop/clear, concurrency, cancellation, corrupt
rows, bad items) is the conformance suite's job: `TestPostgresConformance` runs it here.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from support.backends import SQLStorage, drop_tables, unique_tables
from turnstore import Session, SessionClosedError, SessionStorageError, UserError
from turnstore.extensions.memory import SQLAlchemySession
from turnstore.testing import SessionConformanceTests

pytestmark = pytest.mark.services


@pytest.fixture
async def engine(postgres_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(postgres_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def tables(engine: AsyncEngine) -> AsyncIterator[tuple[str, str]]:
    names = unique_tables()
    yield names
    await drop_tables(engine, names)


def make(engine: AsyncEngine, tables: tuple[str, str], session_id: str = "s") -> SQLAlchemySession:
    return SQLAlchemySession(
        session_id,
        engine=engine,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
    )


async def test_round_trip_and_created_at(engine: AsyncEngine, tables: tuple[str, str]) -> None:
    session = make(engine, tables)
    await session.add_items([{"role": "user", "content": "héllo 😀"}, {"type": "x", "n": 1}])
    assert await session.get_items() == [
        {"role": "user", "content": "héllo 😀"},
        {"type": "x", "n": 1},
    ]
    async with engine.connect() as conn:
        rows = (
            await conn.execute(text(f'SELECT created_at, id FROM "{tables[1]}" ORDER BY id'))
        ).all()
    assert len(rows) == 2
    assert all(row[0] is not None and row[0].tzinfo is not None for row in rows)
    assert rows[0][1] < rows[1][1]


async def test_order_is_by_id_not_by_timestamp(
    engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    session = make(engine, tables)
    await session.add_items([{"n": 1}, {"n": 2}, {"n": 3}])
    # Timestamps running backwards (a clock step) must not reorder the history.
    async with engine.begin() as conn:
        await conn.execute(
            text(f"UPDATE \"{tables[1]}\" SET created_at = now() - (id * interval '1 hour')")
        )
    assert await session.get_items() == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert await session.get_items(1) == [{"n": 3}]
    assert await session.pop_item() == {"n": 3}


async def test_without_create_tables_missing_tables_give_a_clear_error(
    engine: AsyncEngine,
) -> None:
    session = SQLAlchemySession(
        "s", engine=engine, sessions_table="nope_sessions", messages_table="nope_messages"
    )
    with pytest.raises(SessionStorageError, match="create_tables=True") as info:
        await session.get_items()
    assert info.value.__cause__ is not None


async def test_concurrent_create_tables_from_many_sessions(
    engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    sessions = [make(engine, tables, f"s{i}") for i in range(10)]
    await asyncio.gather(*(s.add_items([{"i": i}]) for i, s in enumerate(sessions)))
    for i, s in enumerate(sessions):
        assert await s.get_items() == [{"i": i}]


@pytest.mark.parametrize(
    "name", ["bad name", "1abc", "a;drop table x", "x" * 49, "", 'quo"te', "ñ" * 25, '"a b"']
)
def test_table_names_are_validated(engine: AsyncEngine, name: str) -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        SQLAlchemySession("s", engine=engine, messages_table=name)
    with pytest.raises(ValueError, match="plain identifier"):
        SQLAlchemySession("s", engine=engine, sessions_table=name)


async def test_quoted_and_non_ascii_table_names_work_on_postgresql(engine: AsyncEngine) -> None:
    sessions, messages = unique_tables()
    sessions, messages = f"ß{sessions}", f"ñ{messages}"
    try:
        session = SQLAlchemySession(
            "s",
            engine=engine,
            create_tables=True,
            sessions_table=f'"{sessions}"',
            messages_table=messages,
        )
        await session.add_items([{"role": "user", "content": "quoted"}])
        again = SQLAlchemySession(
            "s", engine=engine, sessions_table=sessions, messages_table=f'"{messages}"'
        )
        assert await again.get_items() == [{"role": "user", "content": "quoted"}]
    finally:
        await drop_tables(engine, (sessions, messages))


def test_bad_arguments(engine: AsyncEngine) -> None:
    with pytest.raises(TypeError, match="session_id"):
        SQLAlchemySession(123, engine=engine)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="session_id"):
        SQLAlchemySession("x" * 256, engine=engine)
    with pytest.raises(UserError, match="AsyncEngine"):
        SQLAlchemySession("s", engine="postgresql://x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must differ"):
        SQLAlchemySession("s", engine=engine, sessions_table="a", messages_table="a")


def test_from_url_errors() -> None:
    with pytest.raises(ValueError, match="not a database URL"):
        SQLAlchemySession.from_url("s", "not a url")
    with pytest.raises(ValueError, match="async driver"):
        SQLAlchemySession.from_url("s", "sqlite:///x.db")


async def test_from_url_passes_pool_settings_and_owns_the_engine(
    postgres_url: str, tables: tuple[str, str]
) -> None:
    plain = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    session = SQLAlchemySession.from_url(
        "s",
        plain,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
        pool_size=3,
        max_overflow=1,
        pool_timeout=7,
    )
    assert session.engine.url.drivername == "postgresql+asyncpg"
    assert session.engine.pool.size() == 3  # type: ignore[attr-defined]
    assert session.engine.pool._max_overflow == 1  # type: ignore[attr-defined]
    assert session.engine.pool._timeout == 7  # type: ignore[attr-defined]
    async with session:
        await session.add_items([{"a": 1}])
        assert await session.get_items() == [{"a": 1}]
    with pytest.raises(SessionClosedError):
        await session.get_items()
    with pytest.raises(SessionClosedError):
        await session.add_items([{"a": 2}])
    with pytest.raises(SessionClosedError):
        await session.pop_item()
    with pytest.raises(SessionClosedError):
        await session.clear_session()
    await session.aclose()  # twice is harmless


async def test_close_does_not_dispose_a_passed_engine(
    engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    first = make(engine, tables, "a")
    await first.add_items([{"a": 1}])
    await first.aclose()
    second = make(engine, tables, "a")
    assert await second.get_items() == [{"a": 1}]


async def test_get_items_with_limit_reads_only_the_tail(
    engine: AsyncEngine, tables: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    session = make(engine, tables)
    await session.add_items([{"n": 0}])
    async with engine.begin() as conn:
        await conn.execute(text(f"UPDATE \"{tables[1]}\" SET message_data = 'garbage{{'"))
    await session.add_items([{"n": i} for i in range(1, 6)])
    with caplog.at_level(logging.WARNING, logger="turnstore"):
        assert await session.get_items(3) == [{"n": 3}, {"n": 4}, {"n": 5}]
    assert not caplog.records  # the corrupt head row was never read
    with caplog.at_level(logging.WARNING, logger="turnstore"):
        assert await session.get_items(10) == [{"n": i} for i in range(1, 6)]
    assert "corrupt" in caplog.text


async def test_pops_from_two_engines_never_duplicate(
    postgres_url: str, engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    # Two engines stand for two processes: the row lock, not a Python lock, keeps pops apart.
    other = create_async_engine(postgres_url, poolclass=NullPool)
    try:
        a, b = make(engine, tables), make(other, tables)
        await a.add_items([{"n": i} for i in range(60)])
        popped = await asyncio.gather(*(s.pop_item() for s in [a, b] * 40))
        values = [p["n"] for p in popped if p is not None]  # type: ignore[typeddict-item]
        assert sorted(values) == list(range(60))
        assert popped.count(None) == 20
    finally:
        await other.dispose()


async def test_clear_while_writing_keeps_batches_whole(
    engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    session = make(engine, tables)
    other = make(engine, tables, "other")
    await other.add_items([{"keep": True}])
    batches = [[{"b": b, "i": i} for i in range(5)] for b in range(20)]
    await asyncio.gather(
        *(session.add_items(batch) for batch in batches),
        session.clear_session(),
        session.clear_session(),
    )
    items = await session.get_items()
    assert len(items) % 5 == 0
    for start in range(0, len(items), 5):
        assert len({item["b"] for item in items[start : start + 5]}) == 1  # type: ignore[typeddict-item]
    assert await other.get_items() == [{"keep": True}]


async def test_killed_connection_gives_a_clear_error_then_recovers(
    postgres_url: str, engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    session = make(engine, tables)
    await session.add_items([{"n": 1}])
    blocker = create_async_engine(postgres_url, poolclass=NullPool)
    try:
        async with blocker.connect() as lock_conn:
            # Hold the session's row lock so the next add_items waits inside PostgreSQL...
            await lock_conn.execute(
                text(f"SELECT 1 FROM \"{tables[0]}\" WHERE session_id = 's' FOR UPDATE")
            )
            add = asyncio.create_task(session.add_items([{"n": 2}, {"n": 3}]))
            victim = None
            for _ in range(1000):  # up to 20 s on a busy machine
                # pg_stat_activity is snapshotted once per transaction: take a fresh look.
                await lock_conn.execute(text("SELECT pg_stat_clear_snapshot()"))
                victim = (
                    await lock_conn.execute(
                        text(
                            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                            "AND query LIKE :q"
                        ),
                        {"q": f"%{tables[0]}%"},
                    )
                ).scalar()
                if victim is not None:
                    break
                await asyncio.sleep(0.02)
            assert victim is not None
            # ...then kill its connection on the server side, mid-operation.
            await lock_conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": victim})
            with pytest.raises(SessionStorageError, match="connection was lost") as info:
                await add
            assert info.value.__cause__ is not None
            await lock_conn.rollback()
    finally:
        await blocker.dispose()
    # The failed batch left nothing, and the next calls work on a fresh connection.
    assert await session.get_items() == [{"n": 1}]
    await session.add_items([{"n": 4}])
    assert await session.get_items() == [{"n": 1}, {"n": 4}]


async def _kill_mid_write(
    postgres_url: str, tables: tuple[str, str], command_timeout: float | None
) -> list[str]:
    """Kill the session's backend 5-15 ms into 3,000-item writes, 12 times; return outcomes."""
    import random

    app = f"turnstore-kill-{uuid.uuid4().hex[:8]}"
    engine = create_async_engine(
        postgres_url, connect_args={"server_settings": {"application_name": app}}
    )
    killer = create_async_engine(postgres_url, poolclass=NullPool)
    session = SQLAlchemySession(
        "s",
        engine=engine,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
        command_timeout=command_timeout,
    )
    outcomes: list[str] = []
    stored = 0
    try:
        await session.add_items([{"warm": True}])
        stored = 1
        batch = [{"role": "user", "content": f"item {i} " + "x" * 200} for i in range(3000)]
        for _ in range(12):
            add = asyncio.ensure_future(session.add_items(batch))
            await asyncio.sleep(random.uniform(0.005, 0.015))
            async with killer.connect() as conn:
                await conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = :app AND pid <> pg_backend_pid()"
                    ),
                    {"app": app},
                )
            done, _ = await asyncio.wait({add}, timeout=120)  # far past the bound: a hang
            if not done:
                outcomes.append("hung")
                add.cancel()
                break
            error = add.exception()
            if error is None:
                outcomes.append("stored")
            else:
                assert isinstance(error, SessionStorageError), repr(error)
                outcomes.append("error")
            # The session is usable after it, and the batch is stored whole or not at all.
            count = len(await session.get_items())
            assert (count - stored) in (0, 3000)
            stored = count
    finally:
        await session.aclose()
        await killer.dispose()
        await engine.dispose()
    return outcomes


@pytest.mark.slow
async def test_a_backend_killed_mid_write_raises_within_the_command_timeout(
    postgres_url: str, engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    outcomes = await _kill_mid_write(postgres_url, tables, command_timeout=5)
    assert "hung" not in outcomes
    assert len(outcomes) == 12


async def _terminate_when_seen(
    killer: AsyncEngine, query_prefix: str, running: asyncio.Future[object]
) -> None:
    """Terminate the backend whose query starts with `query_prefix` as soon as one shows up."""
    async with killer.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        while not running.done():  # each statement sees a fresh pg_stat_activity (autocommit)
            killed = (
                await conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE pid <> pg_backend_pid() AND state = 'active' AND query LIKE :q"
                    ),
                    {"q": f"{query_prefix}%"},
                )
            ).scalar()
            if killed:
                return
    raise AssertionError("the call ended before its backend could be killed")


@pytest.mark.timeout(30)  # far below the default 60 s command_timeout the session keeps
@pytest.mark.parametrize("through", ["postgres", "pgbouncer"])
async def test_a_connection_killed_while_a_large_batch_is_sent_fails_the_call_at_once(
    request: pytest.FixtureRequest, postgres_url: str, through: str
) -> None:
    url: str = request.getfixturevalue(f"{through}_url")
    tables = unique_tables("kw")
    killer = create_async_engine(postgres_url, poolclass=NullPool)  # a second, direct connection
    other = SQLAlchemySession(
        "other",
        engine=killer,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
    )
    await other.add_items([{"keep": True}])  # creates the tables
    # Default settings: the bound on the call is the 60 s command_timeout.
    session = SQLAlchemySession.from_url(
        "s", url, sessions_table=tables[0], messages_table=tables[1]
    )
    # 10 MB: far more than a socket buffer holds, so the driver is still sending (or the
    # server still inserting) when the kill arrives.
    batch = [{"role": "user", "content": f"item {i} " + "x" * 2000} for i in range(5000)]
    try:
        add = asyncio.ensure_future(session.add_items(batch))  # type: ignore[arg-type]
        await _terminate_when_seen(killer, f"INSERT INTO {tables[1]} ", add)
        with pytest.raises(SessionStorageError, match="connection was lost") as info:
            await add
        # The loss of the connection ended the call, not the command_timeout.
        cause = info.value.__cause__
        assert isinstance(cause, DBAPIError), repr(cause)
        assert cause.connection_invalidated
        # Nothing of the batch is stored, and the next calls work on a new connection.
        assert await session.get_items() == []
        await session.add_items([{"n": 1}])
        assert await session.get_items() == [{"n": 1}]
        assert await other.get_items() == [{"keep": True}]
    finally:
        await session.aclose()
        await drop_tables(killer, tables)
        await killer.dispose()


async def _terminate_idle(postgres_url: str, app: str) -> int:
    """Terminate the connections named `app` and wait until their backends are gone."""
    killer = create_async_engine(postgres_url, poolclass=NullPool)
    try:
        async with killer.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            select_app = "FROM pg_stat_activity WHERE application_name = :app"
            killed = (
                await conn.execute(
                    text(f"SELECT count(pg_terminate_backend(pid)) {select_app}"), {"app": app}
                )
            ).scalar()
            for _ in range(1000):  # up to 20 s on a busy machine
                left = await conn.execute(text(f"SELECT count(*) {select_app}"), {"app": app})
                if not left.scalar():
                    break
                await asyncio.sleep(0.02)
        return int(killed or 0)
    finally:
        await killer.dispose()


async def _until_the_driver_saw_the_close(engine: AsyncEngine) -> None:
    """Wait (up to 5 s) until every idle pooled asyncpg connection reports itself closed."""
    for _ in range(250):
        idle = list(engine.sync_engine.pool._pool._queue._queue)  # type: ignore[attr-defined]
        drivers = [r.dbapi_connection for r in idle if r.dbapi_connection is not None]
        if all(d.driver_connection.is_closed() for d in drivers):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the driver never saw the server close the pooled connection")


@pytest.fixture
async def named_engine(postgres_url: str) -> AsyncIterator[tuple[AsyncEngine, str]]:
    """An engine whose connections carry an application name of their own."""
    app = f"turnstore-idle-{uuid.uuid4().hex[:8]}"
    engine = create_async_engine(
        postgres_url, connect_args={"server_settings": {"application_name": app}}
    )
    yield engine, app
    await engine.dispose()


async def test_a_pooled_connection_the_server_closed_is_replaced_for_the_next_call(
    postgres_url: str, named_engine: tuple[AsyncEngine, str], tables: tuple[str, str]
) -> None:
    engine, app = named_engine
    session = make(engine, tables)
    await session.add_items([{"n": 1}])
    # The pool holds one idle connection now; the server ends it (a restart, an operator).
    assert await _terminate_idle(postgres_url, app) == 1
    # The backend leaves pg_stat_activity a moment before its socket closes: wait until the
    # driver has read the close (the promise is about connections the driver knows are closed).
    await _until_the_driver_saw_the_close(engine)
    # A write is never run twice, so it must not be handed the dead connection at all.
    await session.add_items([{"n": 2}])
    assert await session.get_items() == [{"n": 1}, {"n": 2}]


async def test_a_read_whose_connection_was_lost_unnoticed_runs_again_on_a_new_one(
    postgres_url: str, named_engine: tuple[AsyncEngine, str], tables: tuple[str, str]
) -> None:
    engine, app = named_engine
    session = make(engine, tables)
    await session.add_items([{"n": 1}])
    # Kill the idle pooled connection from another thread while this event loop is held up,
    # so the driver has not read the server's goodbye when the next call checks it out.
    killed: list[int] = []
    thread = threading.Thread(
        target=lambda: killed.append(asyncio.run(_terminate_idle(postgres_url, app)))
    )
    thread.start()
    thread.join()
    assert killed == [1]
    assert await session.get_items() == [{"n": 1}]
    assert (await session.snapshot_history()).items == [{"n": 1}]


def test_command_timeout_is_checked(engine: AsyncEngine) -> None:
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="command_timeout"):
            SQLAlchemySession("s", engine=engine, command_timeout=bad)
    with pytest.raises(TypeError, match="command_timeout"):
        SQLAlchemySession("s", engine=engine, command_timeout="5")  # type: ignore[arg-type]
    assert SQLAlchemySession("s", engine=engine).command_timeout == 60.0
    assert SQLAlchemySession("s", engine=engine, command_timeout=None).command_timeout is None


async def test_a_statement_past_the_command_timeout_is_a_storage_error(
    engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    session = make(engine, tables)
    await session.add_items([{"n": 1}])
    bounded = SQLAlchemySession(
        "s",
        engine=engine,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
        # Long enough for the calls after the blocked one on a loaded machine; the blocked
        # write waits for the row lock however long the bound is.
        command_timeout=2.0,
    )
    blocker = create_async_engine(str(engine.url.render_as_string(hide_password=False)))
    try:
        async with blocker.connect() as lock_conn:
            # Hold the session's row lock: the write waits inside PostgreSQL past its bound.
            await lock_conn.execute(
                text(f"SELECT 1 FROM \"{tables[0]}\" WHERE session_id = 's' FOR UPDATE")
            )
            with pytest.raises(SessionStorageError, match=r"command_timeout=2\.0"):
                await bounded.add_items([{"n": 2}])
            await lock_conn.rollback()
    finally:
        await blocker.dispose()
    assert await bounded.get_items() == [{"n": 1}]  # usable, and nothing half-written
    await bounded.add_items([{"n": 3}])
    assert await session.get_items() == [{"n": 1}, {"n": 3}]


async def test_unreachable_server_is_a_storage_error(tables: tuple[str, str]) -> None:
    async with SQLAlchemySession.from_url(
        "s", "postgresql+asyncpg://postgres@127.0.0.1:1/test", create_tables=True
    ) as session:
        with pytest.raises(SessionStorageError) as info:
            await session.add_items([{"a": 1}])
        assert info.value.__cause__ is not None


class TestPostgresConformance(SQLStorage, SessionConformanceTests):
    """The shared session contract on PostgreSQL through asyncpg."""

    async def make_session(self, session_id: str) -> Session:
        return self.sql_session(session_id)


class TestMariaDBConformance(TestPostgresConformance):
    """The shared session contract on MariaDB/MySQL through aiomysql (when one is running)."""

    @pytest.fixture
    def sql_url(self, mysql_url: str) -> str:
        return mysql_url

    async def test_ids_differing_in_case_are_distinct(self) -> None:
        sessions = [make(self.engine, self.tables, sid) for sid in ("a", "A", "ä")]
        for n, session in enumerate(sessions):
            await session.add_items([{"n": n}])
        for n, session in enumerate(sessions):
            assert await session.get_items() == [{"n": n}]


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import turnstore.memory

    for name in [m for m in sys.modules if m == "sqlalchemy" or m.startswith("sqlalchemy.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the extra were not installed
    monkeypatch.delitem(sys.modules, "turnstore.memory.sqlalchemy.session")
    with pytest.raises(ImportError, match=r"pip install 'turnstore\[postgres\]'"):
        turnstore.extensions.memory.SQLAlchemySession  # noqa: B018
    with pytest.raises(ImportError, match=r"pip install 'turnstore\[postgres\]'"):
        from turnstore.extensions.memory import SQLAlchemySession as _  # noqa: F401


def test_missing_driver_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "asyncpg", None)
    with pytest.raises(ImportError, match=r"pip install 'turnstore\[postgres\]'"):
        SQLAlchemySession.from_url("s", "postgresql://postgres@127.0.0.1/test")


async def test_interop_with_the_agents_sdk_and_our_runner(
    engine: AsyncEngine, tables: tuple[str, str]
) -> None:
    from turnstore.testing.interop import (
        check_agents_sdk_runner_remembers,
        check_history_interchange,
        check_runner_remembers,
    )

    def factory(session_id: str) -> SQLAlchemySession:
        return make(engine, tables, session_id)

    stored = await check_agents_sdk_runner_remembers(factory)
    assert [item.get("type") for item in stored].count("function_call") == 1
    await check_runner_remembers(factory)
    await check_history_interchange(factory)


@pytest.mark.parametrize(("sqlstate", "retried"), [("40P01", True), ("P0001", False)])
async def test_only_a_deadlock_victim_is_run_again(
    engine: AsyncEngine, tables: tuple[str, str], sqlstate: str, retried: bool
) -> None:
    """backends.md, Errors: a write is never retried, so never applied twice; only a
    transaction the database rolled back as a deadlock victim runs again (once stored)."""
    session = make(engine, tables)
    await session.add_items([{"n": 0}])  # creates the tables
    attempts, fail = f"{tables[1]}_attempts", f"{tables[1]}_fail"
    async with engine.begin() as conn:
        # The first insert from here on fails with `sqlstate`, as PostgreSQL fails a victim. A
        # sequence counts the attempts: a rollback does not undo `nextval`.
        await conn.execute(text(f'CREATE SEQUENCE "{attempts}"'))
        await conn.execute(
            text(
                f'CREATE FUNCTION "{fail}"() RETURNS trigger AS $$ BEGIN '
                f"IF nextval('\"{attempts}\"') = 1 THEN "
                f"RAISE EXCEPTION 'injected' USING ERRCODE = '{sqlstate}'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"
            )
        )
        await conn.execute(
            text(
                f'CREATE TRIGGER "{fail}" BEFORE INSERT ON "{tables[1]}" '
                f'FOR EACH STATEMENT EXECUTE FUNCTION "{fail}"()'
            )
        )
    try:
        if retried:
            await session.add_items([{"n": 1}, {"n": 2}])
            assert await session.get_items() == [{"n": 0}, {"n": 1}, {"n": 2}]
        else:
            with pytest.raises(SessionStorageError):
                await session.add_items([{"n": 1}, {"n": 2}])
            assert await session.get_items() == [{"n": 0}]
        async with engine.connect() as conn:
            tries = (await conn.execute(text(f'SELECT last_value FROM "{attempts}"'))).scalar()
        assert tries == (2 if retried else 1)
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP TRIGGER IF EXISTS "{fail}" ON "{tables[1]}"'))
            await conn.execute(text(f'DROP FUNCTION IF EXISTS "{fail}"()'))
            await conn.execute(text(f'DROP SEQUENCE IF EXISTS "{attempts}"'))
