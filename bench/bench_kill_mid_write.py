"""Hang bound: how long `SQLAlchemySession.add_items` takes to end after PostgreSQL kills its
connection mid-batch (`pg_terminate_backend` 5-15 ms into a 3,000-item write).

    .venv/bin/python bench/bench_kill_mid_write.py [URL] [TRIES]

URL defaults to the test database on 127.0.0.1:5432. For the default `command_timeout` (60 s)
and for 5 s and 1 s, prints how each write ended (stored, error) and the time from the kill to
the end: median and max. A write still running 120 s after the kill counts as hung.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from turnstore import SessionStorageError, SQLAlchemySession

URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
DEFAULT: Any = object()


async def measure(url: str, command_timeout: Any, tries: int) -> tuple[dict[str, int], list[float]]:
    app = f"turnstore-bench-kill-{uuid.uuid4().hex[:8]}"
    engine = create_async_engine(url, connect_args={"server_settings": {"application_name": app}})
    killer = create_async_engine(url, poolclass=NullPool)
    tag = uuid.uuid4().hex[:8]
    options: dict[str, Any] = (
        {} if command_timeout is DEFAULT else {"command_timeout": command_timeout}
    )
    session = SQLAlchemySession(
        "s",
        engine=engine,
        create_tables=True,
        sessions_table=f"bk{tag}_s",
        messages_table=f"bk{tag}_m",
        **options,
    )
    outcomes: dict[str, int] = {"stored": 0, "error": 0, "hung": 0}
    after_kill: list[float] = []
    batch = [{"role": "user", "content": f"item {i} " + "x" * 200} for i in range(3000)]
    try:
        await session.add_items([{"warm": True}])
        for _ in range(tries):
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
            killed = time.perf_counter()
            done, _ = await asyncio.wait({add}, timeout=120)
            if not done:
                outcomes["hung"] += 1
                add.cancel()
                continue
            after_kill.append(time.perf_counter() - killed)
            error = add.exception()
            if error is None:
                outcomes["stored"] += 1
            else:
                assert isinstance(error, SessionStorageError), repr(error)
                outcomes["error"] += 1
    finally:
        async with engine.begin() as conn:
            for table in (f"bk{tag}_m", f"bk{tag}_s"):
                await conn.execute(text(f'DROP TABLE IF EXISTS "{table}"'))
        await session.close()
        await killer.dispose()
        await engine.dispose()
    return outcomes, after_kill


async def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else URL
    tries = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    for label, value in (("default (60 s)", DEFAULT), ("5 s", 5.0), ("1 s", 1.0)):
        try:
            outcomes, times = await measure(url, value, tries)
        except OSError as exc:  # no server: `make bench` goes on with the others
            print(f"SKIP: PostgreSQL is not reachable at {url}: {exc}")
            return
        spread = (
            f"median {statistics.median(times):.3f} s, max {max(times):.3f} s" if times else "-"
        )
        print(f"command_timeout {label}: {outcomes}; kill -> add_items ends: {spread}")


if __name__ == "__main__":
    asyncio.run(main())
