"""A cancelled `add_items` on a database another process keeps locked gives up promptly.

The writer retries a busy database for up to `BUSY_RETRY_SECONDS` (60 s). A caller cancelled
meanwhile must get its `CancelledError` without waiting for that: its write is dropped, whole,
and nothing of it is ever stored. The lock is held by a real second process.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

from turnstore import SQLiteSession
from turnstore.memory.sqlite import database as sqlite_database

HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")  # the write lock, until stdin closes
    print("locked", flush=True)
    sys.stdin.read()
    conn.execute("ROLLBACK")
    """
)


async def test_cancelled_add_on_a_locked_database_returns_promptly_and_writes_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "chats.db"
    async with SQLiteSession("s", db) as session:
        await session.add_items([{"role": "user", "content": "before"}])  # schema ready
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None
            assert await asyncio.to_thread(holder.stdout.readline) == "locked\n"
            task = asyncio.create_task(session.add_items([{"role": "user", "content": "lost"}]))
            await asyncio.sleep(0.3)  # let the writer meet the lock (not an assertion)
            assert not task.done()
            task.cancel()
            # A safety bound far below the 60 s retry window, not a measurement.
            done, _ = await asyncio.wait({task}, timeout=20)
            assert task in done, "the cancelled add_items waited for the busy database"
            assert task.cancelled()
            assert holder.poll() is None  # the lock was held the whole time
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            await asyncio.to_thread(holder.wait, 30)
            assert holder.stdout is not None
            holder.stdout.close()
        # Dropped whole: never written, even once the lock is gone.
        await session.add_items([{"role": "user", "content": "after"}])
        contents = [item["content"] for item in await session.get_items()]
    assert contents == ["before", "after"]
    assert sqlite_database.WRITER_BUSY_SLICE_MS < sqlite_database.BUSY_TIMEOUT_MS
