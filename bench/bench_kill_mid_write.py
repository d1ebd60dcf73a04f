"""Kill to error: how long a `SQLAlchemySession` call takes to end after PostgreSQL kills its
connection mid-call (`pg_terminate_backend` 0-15 ms after the call starts, as a failover or an
operator would), directly and through PgBouncer in transaction mode.

    .venv/bin/python bench/bench_kill_mid_write.py [--tries N] [--postgres URL] [--pgbouncer URL]

Cases: `add_items` of batches of 2 KB and 20 KB items from 1 MB to 10 MB (large enough to fill
the socket's buffer, so the driver is still sending when the kill arrives), and `get_items` of a
10 MB history. Sessions use the default settings (`command_timeout` 60 s). The killed backend
is found by its query in `pg_stat_activity` (through PgBouncer the server connection is not
ours to name) and killed from a second, direct connection. After each kill the bench checks
that the batch was stored whole or not at all and that the next call works.

Prints per case how the calls ended (stored/read, error, hung) and the time from the kill to
the end of the call, median and max over N kills (12 by default). Target: max under 2 s;
a FAIL line (and exit status 1) otherwise. A call still running 90 s after the kill is hung.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from turnstore import SessionStorageError
from turnstore.extensions.memory import SQLAlchemySession

POSTGRES = os.environ.get(
    "TURNSTORE_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
PGBOUNCER = os.environ.get(
    "TURNSTORE_PGBOUNCER_URL", "postgresql+asyncpg://postgres@127.0.0.1:6432/test?pgbouncer=true"
)
TARGET = 2.0  # seconds from the kill to the end of the call, at most
HUNG = 90.0
MB = 1_000_000


@dataclass
class Case:
    operation: str  # "add_items" or "get_items"
    item_bytes: int
    batch_bytes: int

    @property
    def count(self) -> int:
        return self.batch_bytes // self.item_bytes

    def label(self) -> str:
        return (
            f"{self.operation} {self.count} x {self.item_bytes // 1000} KB "
            f"({self.batch_bytes / MB:g} MB)"
        )

    def items(self, tag: str) -> list[dict[str, str]]:
        pad = "x" * (self.item_bytes - 40)
        return [{"role": "user", "content": f"{tag} {i} {pad}"} for i in range(self.count)]


CASES = [
    Case("add_items", 2_000, 1 * MB),
    Case("add_items", 2_000, 6 * MB),  # the reported batch: 3,000 items of 2 KB
    Case("add_items", 2_000, 10 * MB),
    Case("add_items", 20_000, 1 * MB),
    Case("add_items", 20_000, 10 * MB),
    Case("get_items", 2_000, 10 * MB),
    Case("get_items", 20_000, 10 * MB),
]


@dataclass
class Result:
    ended: dict[str, int] = field(default_factory=lambda: {"done": 0, "error": 0, "hung": 0})
    after_kill: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def kill_backends(killer: AsyncEngine, tag: str) -> int:
    """Terminate every backend whose current or last query names the case's tables."""
    async with killer.connect() as conn:
        result = await conn.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND query LIKE :tables"
            ),
            {"tables": f"%{tag}%"},
        )
        return int(result.scalar() or 0)


async def measure(url: str, killer: AsyncEngine, case: Case, tries: int) -> Result:
    tag = f"bk{uuid.uuid4().hex[:8]}"
    tables = (f"{tag}_s", f"{tag}_m")
    session = SQLAlchemySession.from_url(
        "s", url, create_tables=True, sessions_table=tables[0], messages_table=tables[1]
    )
    result = Result()
    try:
        await session.add_items([{"warm": True}])
        stored = 1
        if case.operation == "get_items":
            await session.add_items(case.items(tag))
            stored += case.count
        for attempt in range(tries):
            call = (
                session.add_items(case.items(f"{tag}-{attempt}"))
                if case.operation == "add_items"
                else session.get_items()
            )
            task = asyncio.ensure_future(call)
            await asyncio.sleep(random.uniform(0, 0.015))
            await kill_backends(killer, tag)
            killed = time.perf_counter()
            done, _ = await asyncio.wait({task}, timeout=HUNG)
            if not done:
                result.ended["hung"] += 1
                task.cancel()
                result.problems.append("a call hung")
                break
            result.after_kill.append(time.perf_counter() - killed)
            error = task.exception()
            if error is None:
                result.ended["done"] += 1
            elif isinstance(error, SessionStorageError):
                result.ended["error"] += 1
            else:
                result.problems.append(f"unexpected error {error!r}")
                continue
            # The next call works (the killed connection is replaced), and a batch is stored
            # whole or not at all.
            try:
                count = len(await session.get_items())
            except SessionStorageError as exc:
                result.problems.append(f"the next call failed: {exc}")
                continue
            added = count - stored
            if case.operation == "add_items" and added != (case.count if error is None else 0):
                result.problems.append(f"{added} of {case.count} items stored (error: {error})")
            elif case.operation == "get_items" and added != 0:
                result.problems.append(f"the history changed by {added} items")
            stored = count
    finally:
        await session.close()
        async with killer.begin() as conn:
            for table in reversed(tables):
                await conn.execute(text(f'DROP TABLE IF EXISTS "{table}"'))
    return result


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=12, help="kills per case (12)")
    parser.add_argument("--postgres", default=POSTGRES, help="PostgreSQL URL (also kills)")
    parser.add_argument("--pgbouncer", default=PGBOUNCER, help="PgBouncer URL, or '' to skip")
    args = parser.parse_args()
    killer = create_async_engine(args.postgres, poolclass=NullPool)
    routes = [("direct", args.postgres)] + (
        [("pgbouncer", args.pgbouncer)] if args.pgbouncer else []
    )
    failed = False
    print(f"kill -> call ends, {args.tries} kills per case, default settings; max < {TARGET} s")
    try:
        for route, url in routes:
            for case in CASES:
                try:
                    result = await measure(url, killer, case, args.tries)
                except OSError as exc:  # no server: `make bench` goes on with the others
                    print(f"SKIP: {route}: the database is not reachable at {url}: {exc}")
                    break
                times = result.after_kill
                spread = (
                    f"median {statistics.median(times):.3f} s, max {max(times):.3f} s"
                    if times
                    else "-"
                )
                print(f"{route:9} {case.label():38} {result.ended}  {spread}")
                if result.problems or not times or max(times) >= TARGET:
                    failed = True
                    why = "; ".join(result.problems) or f"max {max(times or [HUNG]):.3f} s"
                    print(f"FAIL: {route} {case.label()}: {why}")
    finally:
        await killer.dispose()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
