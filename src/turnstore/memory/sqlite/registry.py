"""One `SQLiteDatabase` per file in the process, shared by every session on that file.

The registry is keyed by the absolute path; `:memory:` gets one database per session object. A
database's threads stop when its last session releases it. A session garbage-collected without
`close()` releases its database from a finalizer, which may take no lock: it only queues the
release (see `release_later`). After `fork()` the child starts its own threads and connections.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import weakref

from ..closing import Release
from .database import SQLiteDatabase

__all__ = ["acquire_database", "release_database", "release_later", "release_now"]

_registry: dict[str, SQLiteDatabase] = {}
_registry_lock = threading.Lock()
_all_databases: weakref.WeakSet[SQLiteDatabase] = weakref.WeakSet()

_orphans: queue.SimpleQueue[SQLiteDatabase] = queue.SimpleQueue()
"""Databases whose session was garbage-collected without `close()`, waiting for their release."""


def _after_fork_in_child() -> None:
    global _registry_lock
    _registry_lock = threading.Lock()
    for db in list(_all_databases):
        db.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _new_database(path: str) -> SQLiteDatabase:
    db = SQLiteDatabase(path, on_wake=_release_orphans)
    _all_databases.add(db)
    return db


def acquire_database(path: str) -> SQLiteDatabase:
    """Return the database for `path`, shared with other sessions on the same file.

    Pure bookkeeping: nothing touches the file system here. `:memory:` always gets a new one.
    """
    _release_orphans()
    if path == ":memory:":
        db = _new_database(path)
        db.refs = 1
        return db
    key = os.path.normpath(os.path.abspath(path))
    with _registry_lock:
        shared = _registry.get(key)
        if shared is None:
            shared = _registry[key] = _new_database(key)
        shared.refs += 1
        return shared


def release_later(db: SQLiteDatabase) -> None:
    """Release `db` from a finalizer: take no lock, only queue the release.

    A finalizer can run inside any allocation of any thread, including one that already holds
    the registry lock or a database's start lock: taking a lock here could deadlock the process.
    The release is carried out by the database's writer thread (woken with a lock-free put), or
    by the next `acquire_database` / `release_database` call, whichever comes first.
    """
    _orphans.put(db)
    db.wake()


def _release_orphans() -> None:
    while True:
        try:
            db = _orphans.get_nowait()
        except queue.Empty:
            return
        release_database(db)


def release_database(db: SQLiteDatabase) -> list[threading.Thread]:
    """Drop one reference; the last one stops the threads.

    Returns:
        The threads, which exit once they have finished their queued jobs and closed their
        connections (empty while other sessions still use the database).
    """
    with _registry_lock:
        db.refs -= 1
        if db.refs > 0:
            return []
        if _registry.get(db.path) is db:
            del _registry[db.path]
    return db.stop()


def release_now(db: SQLiteDatabase) -> Release | None:
    """Drop one reference, as `close()` does; the last one stops the threads.

    Returns:
        `None` when nothing is left to wait for (other users remain, or no event loop runs and
        the threads were joined here); otherwise what joins the threads off the event loop.
    """
    threads = release_database(db)
    if not threads:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _join_all(threads)
        return None
    return lambda: asyncio.to_thread(_join_all, threads)


def _join_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join()
