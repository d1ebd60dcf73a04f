"""SQLiteSession under pressure from its surroundings: gc finalizers, close races, fork, the
collector, huge rows, table pairs that share a file, and another process holding the lock."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from support.sqlite_rows import trace_sqlite_calls, writer_meets_the_lock
from turnstore import SessionClosedError, SessionSchemaError, SQLiteSession


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "sessions.db")


# --- finalizers take no lock ---------------------------------------------------------------------

_GC_DEADLOCK = """
import asyncio, gc, sys
from turnstore import SQLiteSession
from turnstore.memory.sqlite import forkgate

class Holder:
    pass

async def forget(path):
    # A session in a reference cycle, used (its threads run) and never closed.
    holder = Holder()
    holder.me = holder
    holder.session = SQLiteSession("cycle", path)
    await holder.session.add_items([{"role": "user", "content": "x"}])

gc.disable()
asyncio.run(forget(sys.argv[1]))
asyncio.run(forget(":memory:"))
# What construction holds while it builds a database: the registry lock (acquire_database)
# and a database's lock (its thread starting). A collection can run inside either.
with forkgate.registry_lock:
    gc.collect()
other = SQLiteSession("other", sys.argv[1])
with other._db._lock:
    gc.collect()
asyncio.run(other.add_items([{"role": "user", "content": "after"}]))
asyncio.run(other.aclose())
print("ok")
"""


def test_a_gc_cycle_collected_while_a_lock_is_held_does_not_deadlock(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", _GC_DEADLOCK, str(tmp_path / "f.db")],
        capture_output=True,
        text=True,
        timeout=60,  # a deadlock hangs the process; this bound only ends the test
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


async def test_a_forgotten_session_still_releases_its_database() -> None:
    session = SQLiteSession("s")
    await session.add_items([user("a")])
    threads = [session._db._thread]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del session  # the last reference to its database: the idle thread notices and exits
        gc.collect()
    assert [w.category for w in caught] == [ResourceWarning]
    for thread in threads:
        await asyncio.to_thread(thread.join, 30)
    assert not any(thread.is_alive() for thread in threads)


# --- a call racing close() raises SessionClosedError, never waits forever ------------------------


@pytest.mark.parametrize("write", [True, False])
def test_a_call_that_passed_the_open_check_when_close_ran_raises_closed(
    db_path: str, write: bool
) -> None:
    # Force the interleaving: the caller's thread is held right after `_check_open` returned
    # (a trace hook, no change to the code under test) while another thread closes the session.
    session = SQLiteSession("s", db_path)
    asyncio.run(session.add_items([user("warm")]))  # the database threads are running
    reached, proceed = threading.Event(), threading.Event()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code is SQLiteSession._check_open.__code__:
            return local
        return None

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "return" and not reached.is_set():
            reached.set()
            proceed.wait(30)
        return local

    outcome: list[str] = []

    async def use() -> None:
        try:
            # The job queue of add_items / pop_item (write) or of get_items (read).
            await asyncio.wait_for(session._enqueue(lambda conn: None, write=write).future, 10)
            outcome.append("ran")
        except SessionClosedError:
            outcome.append("closed")
        except TimeoutError:
            outcome.append("hung")

    def worker() -> None:
        sys.settrace(tracer)
        try:
            asyncio.run(use())
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=worker)
    thread.start()
    assert reached.wait(30)
    asyncio.run(session.aclose())
    proceed.set()
    thread.join(60)
    assert outcome == ["closed"]


def test_calls_racing_close_from_another_thread_complete_or_raise(db_path: str) -> None:
    outcomes: list[str] = []
    for _ in range(20):
        session = SQLiteSession("s", db_path)
        started = threading.Event()

        async def hammer(session: SQLiteSession = session, started: Any = started) -> str:
            while True:
                started.set()
                try:
                    await asyncio.wait_for(session.add_items([user("x")]), 20)
                    await asyncio.wait_for(session.get_items(1), 20)
                except SessionClosedError:
                    return "closed"
                except TimeoutError:
                    return "hung"

        results: list[str] = []

        def work(results: list[str] = results, hammer: Any = hammer) -> None:
            results.append(asyncio.run(hammer()))

        worker = threading.Thread(target=work)
        worker.start()
        started.wait(10)
        asyncio.run(session.aclose())
        worker.join(60)
        assert not worker.is_alive()
        outcomes += results
    assert outcomes == ["closed"] * 20


# --- no library thread touches the garbage collector ---------------------------------------------


async def test_reads_never_touch_the_garbage_collector(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    for name in ("disable", "enable", "freeze", "unfreeze", "collect", "set_threshold"):
        real = getattr(gc, name)

        def spy(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            calls.append((_name, threading.current_thread().name))
            return _real(*args, **kwargs)

        monkeypatch.setattr(gc, name, spy)
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user(str(i)) for i in range(5000)])
        assert len(await session.get_items()) == 5000
        assert len(await session.get_items(3000)) == 3000
    assert calls == []


async def test_an_application_that_disabled_the_collector_keeps_it_disabled(db_path: str) -> None:
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user(str(i)) for i in range(3000)])
        gc.disable()
        try:
            reads = [asyncio.ensure_future(session.get_items()) for _ in range(10)]
            await asyncio.gather(*reads)
            assert not gc.isenabled()
        finally:
            gc.enable()


# --- a forked child opens its own connections and never closes the parent's ----------------------

_FORK = """
import asyncio, os, sys
from turnstore import SQLiteSession
from turnstore.memory.sqlite import forkgate

path = sys.argv[1]
session = SQLiteSession("s", path)
asyncio.run(session.add_items([{"role": "user", "content": "parent"}]))
parent_connections = [session._db._shared.conn]
assert parent_connections[0] is not None, "the parent's thread holds a connection"
pid = os.fork()
if pid == 0:
    # The child: uses the inherited session, then exits through normal interpreter shutdown.
    async def child():
        await session.add_items([{"role": "user", "content": "child"}])
        return [item["content"] for item in await session.get_items()]
    seen = asyncio.run(child())
    assert seen == ["parent", "child"], seen
    assert session._db._shared.conn not in parent_connections
    assert all(c in forkgate._inherited for c in parent_connections)
    sys.exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
async def parent():
    await session.add_items([{"role": "user", "content": "parent again"}])
    return [item["content"] for item in await session.get_items()]
seen = asyncio.run(parent())
assert seen == ["parent", "child", "parent again"], seen
asyncio.run(session.aclose())
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork does not exist on this platform")
def test_os_fork_child_uses_fresh_connections_and_the_parent_goes_on(tmp_path: Path) -> None:
    path = str(tmp_path / "fork.db")
    result = subprocess.run(
        [sys.executable, "-c", _FORK, path], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM agent_messages").fetchone() == (3,)
    finally:
        conn.close()


# --- a history larger than SQLite's string limit reads back --------------------------------------


@pytest.mark.slow
async def test_26_items_of_40_mb_read_back(tmp_path: Path) -> None:
    # 26 screenshots as data URLs: about 1 GB in all, more than SQLite's largest string. The rows
    # are written by SQLite itself (writing is not what is tested here: a payload made in Python
    # and bound would cost three times the CPU), into the tables the session created.
    # A real file, in memory-backed /dev/shm where there is one: 2 GB of disk writes otherwise.
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path
    path = str(folder / "big.db")
    try:
        await _read_back_huge(path, size=40 * 1024 * 1024)
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder)


async def _read_back_huge(path: str, size: int) -> None:
    async with SQLiteSession("s", path) as session:
        await session.add_items([user("first")])
        conn = sqlite3.connect(path)
        with conn:
            # Item i is {"role": "user", "content": "i:000..."}, `size` zeros after the colon.
            conn.execute(
                "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 25) "
                "INSERT INTO agent_messages (session_id, message_data) "
                'SELECT \'s\', \'{"role": "user", "content": "\' || i || \':\' '
                "|| hex(zeroblob(?)) || '\"}' FROM n",
                (size // 2,),
            )
        conn.close()
        items = await session.get_items()
        assert len(items) == 27
        assert [item["content"].split(":", 1)[0] for item in items[1:]] == [
            str(i) for i in range(26)
        ]
        sizes = [len(item["content"]) for item in items[1:]]
        assert sizes == [size + len(f"{i}:") for i in range(26)]
        del items
        assert len(await session.get_items(26)) == 26


# --- table pairs on one file never reach each other's rows ---------------------------------------


@pytest.mark.parametrize("first", ["chat", "chat_archive"])
async def test_an_archive_table_that_is_another_pairs_messages_table_is_refused(
    db_path: str, first: str
) -> None:
    second = "chat_archive" if first == "chat" else "chat"
    async with SQLiteSession(
        "a", db_path, sessions_table=f"s_{first}", messages_table=first
    ) as owner:
        await owner.add_items([user("owner's")])
        async with SQLiteSession(
            "a", db_path, sessions_table=f"s_{second}", messages_table=second
        ) as intruder:
            with pytest.raises(SessionSchemaError, match="chat_archive"):
                await intruder.add_items([user("intruder's")])
            with pytest.raises(SessionSchemaError):
                await intruder.clear_session()
        assert [item["content"] for item in await owner.get_items()] == ["owner's"]


async def test_pairs_with_distinct_names_share_a_file(db_path: str) -> None:
    async with (
        SQLiteSession("a", db_path, sessions_table="s1", messages_table="chat") as one,
        SQLiteSession("a", db_path, sessions_table="s2", messages_table="talk") as two,
    ):
        await one.add_items([user("one")])
        await two.add_items([user("two")])
        await one.clear_session()
        assert [item["content"] for item in await two.get_items()] == ["two"]
        assert await one.get_archived_items() == []


async def test_a_file_written_by_the_previous_release_still_opens(db_path: str) -> None:
    # The previous release's layout: archive table `<messages>_archive` with `archived_at`.
    conn = sqlite3.connect(db_path)
    with conn:
        conn.executescript(
            """
            CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
            CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL, message_data TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
            CREATE TABLE agent_messages_archive (id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TIMESTAMP,
                archived_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
            INSERT INTO agent_sessions (session_id) VALUES ('a');
            INSERT INTO agent_messages (session_id, message_data)
                VALUES ('a', '{"role":"user","content":"kept"}');
            INSERT INTO agent_messages_archive (session_id, message_data)
                VALUES ('a', '{"role":"user","content":"archived"}');
            PRAGMA user_version = 1;
            """
        )
    conn.close()
    async with SQLiteSession("a", db_path) as session:
        assert [item["content"] for item in await session.get_items()] == ["kept"]
        assert [item["content"] for item in await session.get_archived_items()] == ["archived"]


# --- a cancelled write waiting for another process's lock gives up, nothing written --------------


@pytest.mark.parametrize("through", ["direct", "runner-style shield"])
async def test_a_cancelled_add_waiting_for_a_lock_gives_up_without_writing(
    db_path: str, through: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnstore.memory import await_session_mutation

    seen = trace_sqlite_calls(monkeypatch)
    async with SQLiteSession("s", db_path) as session:
        await session.add_items([user("before")])
        other = sqlite3.connect(db_path, isolation_level=None)  # another writer, as a process
        other.execute("BEGIN IMMEDIATE")
        try:
            call = session.add_items([user("cancelled")])
            if through != "direct":  # the runner shields its own add_items the same way
                call = await_session_mutation(call)
            met = asyncio.ensure_future(writer_meets_the_lock(seen))
            task = asyncio.ensure_future(call)
            await met  # the writer is now retrying against the lock
            task.cancel()
            # While the other writer still holds its lock, the cancellation completes (it
            # would otherwise wait for the lock for up to 60 s of retries).
            done, _ = await asyncio.wait({task}, timeout=30)
            assert done
            assert task.cancelled()
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert [item["content"] for item in await session.get_items()] == ["before"]
        await session.add_items([user("after")])
        assert [item["content"] for item in await session.get_items()] == ["before", "after"]
