"""A cancelled `add_items` on a database another process keeps locked gives up promptly.

The database thread retries a busy database for up to `BUSY_RETRY_SECONDS` (60 s). A caller
cancelled meanwhile must get its `CancelledError` without waiting for that: its write is
dropped, whole, and nothing of it is ever stored. The lock is held by a real second process.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.sqlite_rows import trace_sqlite_calls, writer_meets_the_lock
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


async def _start_holder(db: Path) -> subprocess.Popen[str]:
    holder = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert await asyncio.to_thread(holder.stdout.readline) == "locked\n"
    return holder


async def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    assert holder.stdout is not None
    holder.stdin.close()
    await asyncio.to_thread(holder.wait, 30)
    holder.stdout.close()


async def test_a_cancelled_add_queued_behind_a_busy_write_returns_promptly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "chats.db"
    seen = trace_sqlite_calls(monkeypatch)
    async with SQLiteSession("s", db) as session:
        await session.add_items([{"role": "user", "content": "before"}])
        holder = await _start_holder(db)
        try:
            # The first write occupies the writer (it retries the busy database); the second
            # is queued behind it, so the writer has not taken it when its caller is cancelled.
            met = asyncio.create_task(writer_meets_the_lock(seen))
            waiting = asyncio.create_task(session.add_items([{"role": "user", "content": "kept"}]))
            await met  # the writer has taken the first write and retries it
            queued = asyncio.create_task(session.add_items([{"role": "user", "content": "lost"}]))
            await asyncio.sleep(0)
            queued.cancel()
            done, _ = await asyncio.wait({queued}, timeout=20)  # a safety bound
            assert queued in done, "the cancelled add_items waited for the write before it"
            assert queued.cancelled()
            assert not waiting.done()  # the first caller, not cancelled, still waits its turn
            assert holder.poll() is None
        finally:
            await _release(holder)
        await waiting  # committed once the lock is gone
        contents = [item["content"] for item in await session.get_items()]
    assert contents == ["before", "kept"]


async def test_cancelled_add_on_a_locked_database_returns_promptly_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "chats.db"
    seen = trace_sqlite_calls(monkeypatch)
    async with SQLiteSession("s", db) as session:
        await session.add_items([{"role": "user", "content": "before"}])  # schema ready
        holder = await _start_holder(db)
        try:
            met = asyncio.create_task(writer_meets_the_lock(seen))
            task = asyncio.create_task(session.add_items([{"role": "user", "content": "lost"}]))
            await met
            assert not task.done()
            task.cancel()
            # A safety bound far below the 60 s retry window, not a measurement.
            done, _ = await asyncio.wait({task}, timeout=20)
            assert task in done, "the cancelled add_items waited for the busy database"
            assert task.cancelled()
            assert holder.poll() is None  # the lock was held the whole time
        finally:
            await _release(holder)
        # Dropped whole: never written, even once the lock is gone.
        await session.add_items([{"role": "user", "content": "after"}])
        contents = [item["content"] for item in await session.get_items()]
    assert contents == ["before", "after"]
    assert sqlite_database.BUSY_TIMEOUT_MS < 1000 * sqlite_database.BUSY_RETRY_SECONDS
