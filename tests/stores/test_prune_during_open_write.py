"""A prune whose cutoff falls while a write is still open keeps that write's session.

Each test holds one write open at a known point after it has started (SQLite: its group
transaction, held by another job's callback; PostgreSQL: its transaction, stalled by a table lock
from a second connection; Redis: its script, held on the way to the server), takes a cutoff
inside that window, lets the write finish, then prunes with that cutoff through the store, as
`turnstore prune` does. The write committed after the cutoff: its session and items stay.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from support.backends import delete_prefix, drop_tables, unique_prefix, unique_tables
from support.proxy import HeldProxy
from turnstore import SQLiteSession
from turnstore.admin import SessionStore, open_session_store


def _item(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


async def _cutoff_inside(started: Awaitable[Any]) -> datetime:
    """Wait until the write is held open, then return a cutoff strictly after its start.

    The clock is read until it has moved on by a few milliseconds (every backend keeps at
    least milliseconds): the cutoff is then later than anything the write did before it was
    held, and earlier than what it does once released.
    """
    await started
    held_at = datetime.now(UTC)
    while datetime.now(UTC) - held_at < timedelta(milliseconds=3):
        await asyncio.sleep(0.001)
    cutoff = datetime.now(UTC)
    while datetime.now(UTC) - cutoff < timedelta(milliseconds=3):
        await asyncio.sleep(0.001)
    return cutoff


async def _prune_at(store: SessionStore, cutoff: datetime) -> int:
    # The cutoff of `delete_idle_sessions` is now minus `older_than`, taken with no await
    # between this line and it.
    return await store.delete_idle_sessions(datetime.now(UTC) - cutoff)


async def _check_kept(store: SessionStore, session_id: str, texts: list[str]) -> None:
    info = await store.get_info(session_id)
    assert info is not None, f"the prune deleted {session_id!r}, written after its cutoff"
    kept = [record.item["content"] for record in await store.read_records(session_id)]  # type: ignore[typeddict-item]
    assert kept == texts


async def test_sqlite_prune_keeps_a_session_whose_write_committed_after_the_cutoff(
    tmp_path: Path,
) -> None:
    # The writer commits queued writes together: the add_items below shares its transaction
    # with a job whose callback waits, so the transaction stays open after the add_items ran.
    path = str(tmp_path / "sessions.db")
    target = SQLiteSession("target", path)
    holder = SQLiteSession("holder", path)
    store = open_session_store(path, create=True)
    gates = [threading.Event(), threading.Event()]
    entered = [threading.Event(), threading.Event()]

    def waiting(step: int) -> Callable[[str], str | None]:
        def rewrite(data: str) -> None:
            entered[step].set()
            assert gates[step].wait(30), "the test never opened the gate"

        return rewrite

    try:
        await target.add_items([_item("old")])  # type: ignore[list-item]
        await holder.add_items([_item("h")])  # type: ignore[list-item]
        # The writer is busy with a first job, so the next two are queued and run together.
        first = asyncio.create_task(holder.rewrite_stored_items(waiting(0)))
        assert await asyncio.to_thread(entered[0].wait, 30)
        write = asyncio.create_task(target.add_items([_item("new")]))  # type: ignore[list-item]
        await asyncio.sleep(0)  # the task runs to its enqueue
        held = asyncio.create_task(holder.rewrite_stored_items(waiting(1)))
        await asyncio.sleep(0)
        gates[0].set()
        cutoff = await _cutoff_inside(asyncio.to_thread(entered[1].wait, 30))
        assert not write.done()
        gates[1].set()
        await asyncio.gather(first, write, held)
        await _prune_at(store, cutoff)
        await _check_kept(store, "target", ["old", "new"])
    finally:
        for gate in gates:
            gate.set()
        await target.aclose()
        await holder.aclose()
        await store.aclose()


@pytest.mark.services
async def test_postgres_prune_keeps_a_session_whose_write_committed_after_the_cutoff(
    postgres_url: str,
) -> None:
    # A second connection locks the messages table: the write has begun its transaction and
    # written its session row when its INSERT waits for that lock.
    from sqlalchemy import text

    from turnstore.extensions.memory import SQLAlchemySession
    from turnstore.memory.sqlalchemy.session import create_engine_for_url

    tables = unique_tables("held")
    engine = create_engine_for_url(postgres_url)
    store = open_session_store(
        postgres_url, sessions_table=tables[0], messages_table=tables[1], create=True
    )
    session = SQLAlchemySession(
        "target",
        engine=engine,
        create_tables=True,
        sessions_table=tables[0],
        messages_table=tables[1],
    )

    async def write_waits_for_the_lock() -> None:
        async with engine.connect() as conn:
            while True:
                waiting = await conn.execute(
                    text(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted "
                        "AND relation = CAST(:table AS regclass)"
                    ),
                    {"table": tables[1]},
                )
                if waiting.scalar_one():
                    return
                await asyncio.sleep(0.005)

    try:
        await session.add_items([_item("old")])  # type: ignore[list-item]
        async with engine.connect() as locker:
            await locker.execute(text(f'LOCK TABLE "{tables[1]}" IN SHARE MODE'))
            write = asyncio.create_task(session.add_items([_item("new")]))  # type: ignore[list-item]
            cutoff = await _cutoff_inside(asyncio.wait_for(write_waits_for_the_lock(), 30))
            assert not write.done()
            await locker.commit()
        await write
        await _prune_at(store, cutoff)
        await _check_kept(store, "target", ["old", "new"])
    finally:
        await session.aclose()
        await store.aclose()
        await drop_tables(engine, tables)
        await engine.dispose()


@pytest.fixture(params=["redis_url", "redis_cluster_url"])
async def held_redis(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, HeldProxy]]:
    """A Redis (or Redis Cluster) URL, and a proxy in front of it whose requests can be held."""
    url: str = request.getfixturevalue(request.param)
    proxy = HeldProxy(url)
    await proxy.start()
    yield url, proxy
    await proxy.close()


@pytest.mark.services
async def test_redis_prune_keeps_a_session_whose_write_ran_after_the_cutoff(
    held_redis: tuple[str, HeldProxy],
) -> None:
    # The session's requests pass through the proxy: its script is held on the way to the
    # server after `add_items` has started.
    from turnstore.extensions.memory import RedisSession
    from turnstore.memory.redis.session import create_client_for_url

    url, proxy = held_redis
    prefix = unique_prefix("held")
    client = proxy.client()
    session = RedisSession("target", redis_client=client, key_prefix=prefix)
    store = open_session_store(url, key_prefix=prefix)
    try:
        await session.add_items([_item("old")])  # type: ignore[list-item]
        proxy.hold()
        write = asyncio.create_task(session.add_items([_item("new")]))  # type: ignore[list-item]
        cutoff = await _cutoff_inside(asyncio.wait_for(proxy.held.wait(), 30))
        assert not write.done()
        proxy.release()
        await write
        await _prune_at(store, cutoff)
        await _check_kept(store, "target", ["old", "new"])
    finally:
        proxy.release()
        await session.aclose()
        await client.aclose()
        await store.aclose()
        cleaner = create_client_for_url(url)
        await delete_prefix(cleaner, prefix)
        await cleaner.aclose()
