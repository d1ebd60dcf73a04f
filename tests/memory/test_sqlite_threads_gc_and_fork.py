"""SQLiteSession's threads inside one busy process: garbage collection during construction in
other threads, close() racing many threads, an application's collector settings, and os.fork()
with writes in flight."""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from support.items import user
from turnstore import SessionClosedError, SQLiteSession

# --- a finalizer run by a collection inside another thread's construction ------------------------

GC_DURING_CONSTRUCTION = r"""
import asyncio, gc, sys, threading
from turnstore import SQLiteSession

folder = sys.argv[1]
gc.set_threshold(1, 1, 1)  # collect at almost every allocation, in every thread
stop = threading.Event()

class Cycle:
    pass

def forget(i):
    # A used session in a reference cycle, never closed: its finalizer runs in a collection.
    holder = Cycle()
    holder.me = holder
    holder.session = SQLiteSession(f"c{i}", f"{folder}/{i % 3}.db" if i % 2 else ":memory:")
    asyncio.run(holder.session.add_items([{"n": i}]))

def construct(t):
    i = 0
    while not stop.is_set():
        session = SQLiteSession(f"t{t}-{i}", f"{folder}/{i % 3}.db")
        if i % 5 == 0:
            asyncio.run(session.add_items([{"n": i}]))
        asyncio.run(session.aclose())
        i += 1

threads = [threading.Thread(target=construct, args=(t,)) for t in range(3)]
for thread in threads:
    thread.start()
pause = threading.Event()
for i in range(150):
    # The garbage is made with the collector off; once it is on again, the main thread waits
    # and the constructing threads' allocations run the collection (and the finalizers).
    gc.disable()
    forget(i)
    gc.enable()
    pause.wait(0.02)
stop.set()
for thread in threads:
    thread.join()
print("ok")
"""


def test_finalizers_run_during_construction_in_other_threads_never_deadlock(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", GC_DURING_CONSTRUCTION, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,  # a deadlock hangs the process; this bound only ends the test
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


# --- close() racing calls from many threads and event loops --------------------------------------


@pytest.mark.parametrize("round_", range(3))
def test_close_racing_eight_threads_ends_every_call(tmp_path: Path, round_: int) -> None:
    path = str(tmp_path / "race.db")
    session = SQLiteSession("s", path)
    bystander = SQLiteSession("s", path)  # shares the database: must survive the close
    asyncio.run(bystander.add_items([user("before")]))
    started = threading.Barrier(9)
    outcomes: list[tuple[str, int, int]] = []
    lock = threading.Lock()

    async def hammer(n: int) -> tuple[str, int, int]:
        added = popped = 0
        started.wait(30)
        while True:
            try:
                if n % 3 == 0:
                    await asyncio.wait_for(session.add_items([user(f"{n}")]), 30)
                    added += 1
                elif n % 3 == 1:
                    await asyncio.wait_for(session.get_items(5), 30)
                else:
                    await asyncio.wait_for(session.add_items([user(f"{n}"), user("x")]), 30)
                    added += 2
                    if await asyncio.wait_for(session.pop_item(), 30) is not None:
                        popped += 1
            except SessionClosedError:
                return "closed", added, popped
            except TimeoutError:
                return "hung", added, popped

    def work(n: int) -> None:
        result = asyncio.run(hammer(n))
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    started.wait(30)
    threading.Event().wait(0.05 * (round_ + 1))
    asyncio.run(session.aclose())
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert [status for status, _, _ in outcomes] == ["closed"] * 8
    # Every call that returned took effect, and no refused call wrote anything.
    added = sum(a for _, a, _ in outcomes)
    popped = sum(p for _, _, p in outcomes)
    items = asyncio.run(bystander.get_items())
    assert len(items) == 1 + added - popped
    asyncio.run(bystander.aclose())


# --- the application's collector settings survive the library's threads --------------------------


async def test_disabled_frozen_and_tuned_collector_stays_as_set(tmp_path: Path) -> None:
    path = str(tmp_path / "gc.db")
    thresholds = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.freeze()
    gc.set_threshold(12345, 6, 7)
    frozen = gc.get_freeze_count()
    try:
        sessions = [SQLiteSession(f"s{i}", path) for i in range(3)]
        await asyncio.gather(*(s.add_items([user(str(n)) for n in range(2000)]) for s in sessions))
        for _ in range(3):
            reads = await asyncio.gather(*(s.get_items() for s in sessions))
            assert [len(r) for r in reads] == [2000] * 3
            assert not gc.isenabled()
        for session in sessions:
            await session.aclose()
        assert not gc.isenabled()
        assert gc.get_threshold() == (12345, 6, 7)
        # Frozen objects freed by reference counting leave the count; gc.unfreeze() empties it.
        assert gc.get_freeze_count() > frozen // 2 > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if was_enabled:
            gc.enable()


# --- os.fork() -----------------------------------------------------------------------------------

FORK_MEMORY = r"""
import asyncio, os
from turnstore import SessionStorageError, SQLiteSession

used = SQLiteSession("m")
asyncio.run(used.add_items([{"n": "parent"}]))
unused = SQLiteSession("u")  # never used before the fork: the child may start it afresh
pid = os.fork()
if pid == 0:
    code = 0
    try:
        asyncio.run(used.get_items())
        code = 3  # read the parent's history as empty (or anything): never
    except SessionStorageError as exc:
        if "fork" not in str(exc):
            code = 4
    async def fresh():
        await unused.add_items([{"n": "child"}])
        return await unused.get_items()
    if asyncio.run(fresh()) != [{"n": "child"}]:
        code = 5
    os._exit(code)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
assert asyncio.run(used.get_items()) == [{"n": "parent"}]
print("ok")
"""

FORK_DURING_WRITES = r"""
import asyncio, os, sys, threading
from turnstore import SQLiteSession

path = sys.argv[1]
session = SQLiteSession("s", path)
asyncio.run(session.add_items([{"n": -1}]))
stop = threading.Event()
count = [0]

def writer():  # a thread of the parent keeps writing while the process forks
    async def go():
        while not stop.is_set():
            await session.add_items([{"n": count[0]}] * 400)
            count[0] += 400
    asyncio.run(go())

thread = threading.Thread(target=writer)
thread.start()
codes = []
for _ in range(3):
    children = []
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            # A child forked while the parent's writer was inside a transaction inherited
            # SQLite's record of that lock: its own connection then found the file busy for
            # the whole retry deadline.
            async def child():
                await session.add_items([{"n": "child"}] * 5)
                return await session.get_items()
            try:
                items = asyncio.run(asyncio.wait_for(child(), 20))
            except BaseException:
                os._exit(7)
            os._exit(0 if items.count({"n": "child"}) >= 5 else 6)
        children.append(pid)
    codes += [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
stop.set()
thread.join()
assert codes == [0] * 24, codes
items = asyncio.run(session.get_items())
assert items.count({"n": "child"}) == 120, items.count({"n": "child"})
assert len(items) == 1 + count[0] + 120
asyncio.run(session.aclose())
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork does not exist on this platform")
def test_a_forked_child_cannot_read_the_parents_memory_database_as_empty() -> None:
    result = subprocess.run(
        [sys.executable, "-c", FORK_MEMORY], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork does not exist on this platform")
def test_children_forked_while_a_thread_writes_use_their_own_connections(tmp_path: Path) -> None:
    path = str(tmp_path / "fork.db")
    result = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", FORK_DURING_WRITES, path],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
