"""Benchmark: our SQLAlchemySession and RedisSession against the OpenAI Agents SDK's, and ours
scaled out (PostgreSQL through PgBouncer, a Redis Cluster) against ours on one server.

Both sides of a comparison run in the same process, on the same workloads; against the SDK, on
the same PostgreSQL and Redis servers with the same engine / client (so the same pool):

1. sequential single-item `add_items` on one session (items/s)
2. 50 sessions adding single items concurrently (items/s)
3. `get_items(20)` on a 100,000-item session (ms per call)
4. `get_items()` of the whole 100,000-item session (ms per call)

Run:  .venv/bin/python bench/bench_backends.py [--items 100000] [--sequential 500] [--only ...]
Needs PostgreSQL (TURNSTORE_POSTGRES_URL, default postgresql+asyncpg://postgres@127.0.0.1/test)
and Redis (TURNSTORE_REDIS_URL, default redis://127.0.0.1:6379/15); the scale-out part needs
PgBouncer (TURNSTORE_PGBOUNCER_URL, default ...@127.0.0.1:6432/test?pgbouncer=true) and a Redis
Cluster (TURNSTORE_REDIS_CLUSTER_URL, default redis+cluster://127.0.0.1:7001), as
.ci/scale-out-services starts them. Tables and keys it creates are dropped at the end. Against
the SDK, ratios > 1 mean ours is faster; scaled out, ratios > 1 mean faster than one server
(on one machine, scaling out adds a hop and buys no capacity: expect ratios below 1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from agents.extensions.memory import RedisSession as SDKRedisSession
from agents.extensions.memory import SQLAlchemySession as SDKSQLAlchemySession
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from turnstore.extensions.memory import RedisSession, SQLAlchemySession
from turnstore.memory.redis.session import create_client_for_url
from turnstore.memory.sqlalchemy.session import create_engine_for_url

POSTGRES_URL = os.environ.get(
    "TURNSTORE_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("TURNSTORE_REDIS_URL", "redis://127.0.0.1:6379/15")
PGBOUNCER_URL = os.environ.get(
    "TURNSTORE_PGBOUNCER_URL", "postgresql+asyncpg://postgres@127.0.0.1:6432/test?pgbouncer=true"
)
REDIS_CLUSTER_URL = os.environ.get("TURNSTORE_REDIS_CLUSTER_URL", "redis+cluster://127.0.0.1:7001")

Factory = Callable[[str], Any]


def message(n: int) -> dict[str, Any]:
    return {
        "role": "user" if n % 2 else "assistant",
        "content": f"message {n}: the quick brown fox jumps over the lazy dog. " * 3,
    }


async def timed(work: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


async def sequential_adds(factory: Factory, count: int) -> float:
    session = factory(f"seq-{uuid.uuid4().hex[:8]}")

    async def work() -> None:
        for n in range(count):
            await session.add_items([message(n)])

    await session.get_items(1)  # create tables / warm the pool outside the timing
    return count / await timed(work)


async def concurrent_adds(factory: Factory, sessions: int, each: int) -> float:
    objects = [factory(f"conc-{uuid.uuid4().hex[:8]}-{s}") for s in range(sessions)]

    async def writer(session: Any) -> None:
        for n in range(each):
            await session.add_items([message(n)])

    async def work() -> None:
        await asyncio.gather(*(writer(s) for s in objects))

    await objects[0].get_items(1)
    return sessions * each / await timed(work)


async def fill(factory: Factory, session_id: str, count: int) -> Any:
    session = factory(session_id)
    for start in range(0, count, 1000):
        await session.add_items([message(n) for n in range(start, min(count, start + 1000))])
    return session


async def tail_reads(session: Any, calls: int) -> float:
    async def work() -> None:
        for _ in range(calls):
            items = await session.get_items(20)
            assert len(items) == 20

    await session.get_items(20)
    return await timed(work) / calls * 1000


async def full_reads(session: Any, calls: int, expected: int) -> float:
    async def work() -> None:
        for _ in range(calls):
            items = await session.get_items()
            assert len(items) == expected

    return await timed(work) / calls * 1000


def report(rows: list[tuple[str, str, float, float, bool]], left: str, right: str) -> None:
    print(f"{'workload':<44} {left:>12} {right:>12} {'ratio':>7}")
    for name, unit, ours, peer, higher_is_better in rows:
        ratio = ours / peer if higher_is_better else peer / ours
        print(f"{name:<44} {ours:>9.1f} {unit:<2} {peer:>9.1f} {unit:<2} {ratio:>6.2f}x")


async def run_backend(
    label: str, ours: Factory, peer: Factory, args: argparse.Namespace
) -> list[tuple[str, str, float, float, bool]]:
    rows: list[tuple[str, str, float, float, bool]] = []
    print(f"\n== {label}: sequential adds", flush=True)
    a = await sequential_adds(ours, args.sequential)
    b = await sequential_adds(peer, args.sequential)
    rows.append((f"{label}: {args.sequential} sequential adds", "/s", a, b, True))
    print(f"== {label}: 50 concurrent sessions", flush=True)
    a = await concurrent_adds(ours, 50, args.concurrent_each)
    b = await concurrent_adds(peer, 50, args.concurrent_each)
    rows.append((f"{label}: 50 sessions x {args.concurrent_each} adds", "/s", a, b, True))
    print(f"== {label}: filling two {args.items}-item sessions", flush=True)
    big_ours = await fill(ours, f"big-{uuid.uuid4().hex[:8]}", args.items)
    big_peer = await fill(peer, f"big-{uuid.uuid4().hex[:8]}", args.items)
    a = await tail_reads(big_ours, args.tail_calls)
    b = await tail_reads(big_peer, args.tail_calls)
    rows.append((f"{label}: get_items(20) of {args.items}", "ms", a, b, False))
    a = await full_reads(big_ours, args.full_calls, args.items)
    b = await full_reads(big_peer, args.full_calls, args.items)
    rows.append((f"{label}: get_items() of {args.items}", "ms", a, b, False))
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="size of the big session")
    parser.add_argument("--sequential", type=int, default=500)
    parser.add_argument("--concurrent-each", type=int, default=20)
    parser.add_argument("--tail-calls", type=int, default=200)
    parser.add_argument("--full-calls", type=int, default=3)
    parser.add_argument("--only", choices=["postgres", "redis", "scale-out"])
    args = parser.parse_args()

    tag = uuid.uuid4().hex[:8]
    rows: list[tuple[str, str, float, float, bool]] = []

    if args.only in (None, "postgres"):
        engine: AsyncEngine = create_async_engine(POSTGRES_URL, pool_size=20, max_overflow=40)
        tables = {
            "ours": (f"bench{tag}_ours_s", f"bench{tag}_ours_m"),
            "sdk": (f"bench{tag}_sdk_s", f"bench{tag}_sdk_m"),
        }
        try:

            def ours_pg(sid: str) -> Any:
                return SQLAlchemySession(
                    sid,
                    engine=engine,
                    create_tables=True,
                    sessions_table=tables["ours"][0],
                    messages_table=tables["ours"][1],
                )

            def sdk_pg(sid: str) -> Any:
                return SDKSQLAlchemySession(
                    sid,
                    engine=engine,
                    create_tables=True,
                    sessions_table=tables["sdk"][0],
                    messages_table=tables["sdk"][1],
                )

            rows += await run_backend("PostgreSQL", ours_pg, sdk_pg, args)
        finally:
            async with engine.begin() as conn:
                for sessions_table, messages_table in tables.values():
                    await conn.execute(text(f'DROP TABLE IF EXISTS "{messages_table}"'))
                    await conn.execute(text(f'DROP TABLE IF EXISTS "{sessions_table}"'))
            await engine.dispose()

    if args.only in (None, "redis"):
        client = Redis.from_url(REDIS_URL, max_connections=60)
        prefixes = {"ours": f"bench{tag}:ours", "sdk": f"bench{tag}:sdk"}
        try:

            def ours_redis(sid: str) -> Any:
                return RedisSession(sid, redis_client=client, key_prefix=prefixes["ours"])

            def sdk_redis(sid: str) -> Any:
                return SDKRedisSession(sid, redis_client=client, key_prefix=prefixes["sdk"])

            rows += await run_backend("Redis", ours_redis, sdk_redis, args)
        finally:
            for prefix in prefixes.values():
                keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
                for start in range(0, len(keys), 1000):
                    await client.delete(*keys[start : start + 1000])
            await client.aclose()

    scaled: list[tuple[str, str, float, float, bool]] = []
    if args.only in (None, "scale-out"):
        scaled += await scale_out_postgres(args, tag)
        scaled += await scale_out_redis(args, tag)

    if rows:
        print()
        report(rows, "ours", "SDK")
    if scaled:
        print()
        report(scaled, "scaled out", "one server")


def pg_factory(engine: AsyncEngine, tables: tuple[str, str]) -> Factory:
    def make(sid: str) -> Any:
        return SQLAlchemySession(
            sid,
            engine=engine,
            create_tables=True,
            sessions_table=tables[0],
            messages_table=tables[1],
        )

    return make


async def scale_out_postgres(
    args: argparse.Namespace, tag: str
) -> list[tuple[str, str, float, float, bool]]:
    """Ours through PgBouncer (transaction mode) against ours on PostgreSQL directly."""
    bouncer = create_engine_for_url(PGBOUNCER_URL, pool_size=20, max_overflow=40)
    direct = create_engine_for_url(POSTGRES_URL, pool_size=20, max_overflow=40)
    tables = {"pgb": (f"bench{tag}_pgb_s", f"bench{tag}_pgb_m")}
    tables["direct"] = (f"bench{tag}_dir_s", f"bench{tag}_dir_m")
    try:
        return await run_backend(
            "PgBouncer / PostgreSQL",
            pg_factory(bouncer, tables["pgb"]),
            pg_factory(direct, tables["direct"]),
            args,
        )
    finally:
        await bouncer.dispose()
        async with direct.begin() as conn:
            for sessions_table, messages_table in tables.values():
                await conn.execute(text(f'DROP TABLE IF EXISTS "{messages_table}"'))
                await conn.execute(text(f'DROP TABLE IF EXISTS "{sessions_table}"'))
        await direct.dispose()


async def scale_out_redis(
    args: argparse.Namespace, tag: str
) -> list[tuple[str, str, float, float, bool]]:
    """Ours on a Redis Cluster against ours on one Redis."""
    cluster = create_client_for_url(REDIS_CLUSTER_URL, max_connections=60)
    single = create_client_for_url(REDIS_URL, max_connections=60)
    prefix = f"bench{tag}:scaled"
    try:
        return await run_backend(
            "Redis Cluster / Redis",
            lambda sid: RedisSession(sid, redis_client=cluster, key_prefix=prefix),
            lambda sid: RedisSession(sid, redis_client=single, key_prefix=prefix),
            args,
        )
    finally:
        for client in (cluster, single):
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
            for key in keys:  # one by one: on the cluster they live in different slots
                await client.delete(key)
            await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
