"""Server sessions under load from several processes, and a writer killed mid-write.

On PostgreSQL, PostgreSQL through PgBouncer (transaction pooling), Redis and a Redis Cluster:

- 8 processes x 160 `add_items` each (two-item batches over four shared sessions), started
  together once all are connected: no error, nothing lost or duplicated, every batch contiguous,
  each writer's order kept in every session, and the writers' batches interleaved (they raced).
- A writer killed with SIGKILL while writing large batches: every batch is whole or absent, and
  the session keeps working.

The connection-dropped-by-the-server cases live in test_sqlalchemy_session.py
(`pg_terminate_backend`) and test_redis_session.py (`CLIENT KILL`).
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import pytest
from load_worker import open_session, run_writers, spawn, sql_tables

from support.backends import delete_prefix, drop_tables

pytestmark = [pytest.mark.services, pytest.mark.slow]

PROCESSES = 8
CALLS = 160  # a multiple of 4: each shared session gets CALLS // 4 batches of each writer
KILL_BATCH = 200


FIXTURE_OF = {
    "postgres": "postgres_url",
    "pgbouncer": "pgbouncer_url",  # PostgreSQL through PgBouncer in transaction pooling mode
    "redis": "redis_url",
    "redis-cluster": "redis_cluster_url",  # a 3-primary Redis Cluster
}


@pytest.fixture(params=list(FIXTURE_OF))
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, str, str]]:
    kind: str = request.param
    namespace = f"load{uuid.uuid4().hex[:10]}"
    url: str = request.getfixturevalue(FIXTURE_OF[kind])
    yield kind, url, namespace
    if kind in ("postgres", "pgbouncer"):
        from turnstore.memory.sqlalchemy.session import create_engine_for_url

        engine = create_engine_for_url(url)
        await drop_tables(engine, sql_tables(namespace))
        await engine.dispose()
    else:
        from turnstore.memory.redis.session import create_client_for_url

        client = create_client_for_url(url)
        await delete_prefix(client, namespace)
        await client.aclose()


async def read(kind: str, url: str, namespace: str, session_id: str) -> list[Any]:
    session = open_session(kind, url, namespace, session_id)
    try:
        return list(await session.get_items())
    finally:
        await session.aclose()  # type: ignore[attr-defined]


async def test_eight_processes_lose_nothing_and_keep_order(
    backend: tuple[str, str, str],
) -> None:
    kind, url, namespace = backend
    # Create the tables once up front, so that the workers only race on writes.
    await read(kind, url, namespace, "warm-up")
    await run_writers(kind, url, namespace, PROCESSES, CALLS)

    seen: Counter[tuple[int, int, int]] = Counter()
    switches = 0  # batches that follow another writer's: the writers raced, not took turns
    for n in range(4):
        items = await read(kind, url, namespace, f"shared-{n}")
        writers = [item["w"] for item in items[::2]]
        switches += sum(a != b for a, b in pairwise(writers))
        assert len(items) == PROCESSES * CALLS // 4 * 2
        last_i: dict[int, int] = {}
        for pos in range(0, len(items), 2):
            first, second = items[pos], items[pos + 1]
            # A batch is contiguous: never interleaved with another writer's batch.
            assert (first["w"], first["i"], first["k"]) == (second["w"], second["i"], 0)
            assert second["k"] == 1
            # Each writer's batches appear in the order it wrote them.
            assert first["i"] > last_i.get(first["w"], -1)
            assert first["i"] % 4 == n
            last_i[first["w"]] = first["i"]
        seen.update((item["w"], item["i"], item["k"]) for item in items)
    expected = {(w, i, k) for w in range(PROCESSES) for i in range(CALLS) for k in range(2)}
    assert set(seen) == expected
    assert max(seen.values()) == 1  # nothing stored twice
    # Writers taking turns would switch PROCESSES - 1 times per session at most.
    assert switches > 4 * (PROCESSES - 1), f"the writers did not overlap ({switches} switches)"


async def test_sigkill_mid_write_leaves_no_partial_batch(backend: tuple[str, str, str]) -> None:
    kind, url, namespace = backend
    await read(kind, url, namespace, "warm-up")
    worker = await spawn(kind, url, namespace, "0", "kill", str(KILL_BATCH))
    assert worker.stdout is not None
    committed = -1
    try:
        # Let a few batches commit, then kill the writer while its next batch is in flight.
        while committed < 3:
            line = await asyncio.wait_for(worker.stdout.readline(), timeout=60)
            assert line, (await worker.stderr.read()).decode()  # type: ignore[union-attr]
            committed = int(line)
        await asyncio.sleep(0.01)
        worker.send_signal(signal.SIGKILL)
    finally:
        if worker.returncode is None:
            worker.kill()
        await worker.communicate()
    assert worker.returncode == -signal.SIGKILL

    # The server notices the dead client and rolls its transaction back.
    for _ in range(100):
        items = await read(kind, url, namespace, "victim")
        counts = Counter(item["b"] for item in items)
        if all(count == KILL_BATCH for count in counts.values()):
            break
        await asyncio.sleep(0.05)
    assert set(counts.values()) == {KILL_BATCH}, f"partial batch: {counts}"
    assert sorted(counts) == list(range(len(counts)))  # batches in order, none missing
    assert len(counts) >= committed + 1  # every acknowledged batch survived
    for pos, item in enumerate(items):
        assert (item["b"], item["k"]) == divmod(pos, KILL_BATCH)

    # The session still works.
    session = open_session(kind, url, namespace, "victim")
    try:
        await session.add_items([{"after": True}])
        assert (await session.get_items(1)) == [{"after": True}]
    finally:
        await session.aclose()  # type: ignore[attr-defined]
