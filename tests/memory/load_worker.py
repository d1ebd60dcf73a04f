"""A writer process for test_backends_load.py (run as a script, not collected by pytest), and
the sessions it writes to, which the test reads back.

Usage: load_worker.py BACKEND URL NAMESPACE WORKER MODE COUNT

- BACKEND: postgres, pgbouncer (PostgreSQL through PgBouncer), redis or redis-cluster;
  NAMESPACE: the table-name stem (SQL) or key prefix (Redis).
- MODE load: COUNT sequential add_items of a two-item batch, spread over four shared sessions,
  started together: the worker connects, prints "ready", and writes once a line comes on stdin.
- MODE kill: endless add_items of COUNT-item batches to the session "victim", printing each
  committed batch number, until the parent kills the process.
"""

from __future__ import annotations

import asyncio
import os
import sys

from turnstore import Session
from turnstore.extensions.memory import RedisSession, SQLAlchemySession


def sql_tables(namespace: str) -> tuple[str, str]:
    """The (sessions, messages) table names of a namespace on the SQL backends."""
    return f"{namespace}_s", f"{namespace}_m"


def open_session(backend: str, url: str, namespace: str, session_id: str) -> Session:
    """A session of the namespace (one connection at most: each writer opens a few)."""
    if backend in ("postgres", "pgbouncer"):
        sessions_table, messages_table = sql_tables(namespace)
        return SQLAlchemySession.from_url(
            session_id,
            url,
            create_tables=True,
            sessions_table=sessions_table,
            messages_table=messages_table,
            pool_size=1,
        )
    return RedisSession.from_url(session_id, url, key_prefix=namespace)


async def load(backend: str, url: str, namespace: str, worker: int, count: int) -> None:
    sessions = [open_session(backend, url, namespace, f"shared-{n}") for n in range(4)]
    try:
        for session in sessions:  # connected before the start, so that every worker races
            await session.get_items(1)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for i in range(count):
            batch = [{"w": worker, "i": i, "k": k} for k in range(2)]
            await sessions[i % 4].add_items(batch)  # type: ignore[arg-type]
    finally:
        for session in sessions:
            await session.aclose()  # type: ignore[attr-defined]
    print("done", flush=True)


async def spawn(*args: str) -> asyncio.subprocess.Process:
    """This script in a child process with `args`, its stdin, stdout and stderr piped, importing
    what this process imports."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


async def run_writers(backend: str, url: str, namespace: str, processes: int, count: int) -> None:
    """Run `processes` load writers of `count` batches each, started together once every one of
    them is connected; fail with a writer's error output if one fails."""
    workers = [
        await spawn(backend, url, namespace, str(w), "load", str(count)) for w in range(processes)
    ]
    for worker in workers:  # every worker connected, then all start at once
        assert worker.stdout is not None
        ready = await asyncio.wait_for(worker.stdout.readline(), timeout=120)
        assert ready == b"ready\n", (ready, (await worker.communicate())[1].decode())
    results = await asyncio.gather(*(w.communicate(b"go\n") for w in workers))
    for worker, (out, err) in zip(workers, results, strict=True):
        assert worker.returncode == 0, err.decode()
        assert out.decode().strip() == "done"


async def kill_target(backend: str, url: str, namespace: str, size: int) -> None:
    session = open_session(backend, url, namespace, "victim")
    padding = "x" * 2000
    batch_no = 0
    while True:
        batch = [{"b": batch_no, "k": k, "size": size, "pad": padding} for k in range(size)]
        await session.add_items(batch)  # type: ignore[arg-type]
        print(batch_no, flush=True)
        batch_no += 1


def main() -> None:
    backend, url, namespace, worker, mode, count = sys.argv[1:7]
    if mode == "load":
        asyncio.run(load(backend, url, namespace, int(worker), int(count)))
    else:
        asyncio.run(kill_target(backend, url, namespace, int(count)))


if __name__ == "__main__":
    main()
