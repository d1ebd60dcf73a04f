"""The thread behind `SQLiteSession`: one per database file, one queue, one connection.

The design is aiosqlite's: the connection is opened on its own thread and only ever used there;
the event loop puts (work, future) jobs on the thread's queue and awaits the future, which the
thread resolves with `loop.call_soon_threadsafe`, checking `future.done()` first so that a
cancelled caller cannot break the thread. Each read is one transaction; the writes waiting in
the queue share one `BEGIN IMMEDIATE` transaction (group commit: `bench/bench_sqlite.py`'s
concurrent adds measured 7.0x the SDK's with it, 3.0x without), each caller's future resolved
after the commit; when one of them fails, each is run again alone, so the failure stays with its
caller.

- One `SQLiteDatabase` per file in the process, shared by every session and store on that file
  (`acquire_database`: keyed by the absolute path; `:memory:` gets one per session object).
- Several processes share a file through SQLite's own locking: WAL, and a busy timeout. A job
  that still finds the file busy is rolled back and run again, up to `BUSY_RETRY_SECONDS`; a
  write whose caller was cancelled meanwhile is dropped whole (nothing of it is written).
- Durability: WAL with `synchronous=NORMAL`. A commit has reached the operating system's file
  cache when `COMMIT` returns, so a committed write survives a crash or SIGKILL of the process.
- The thread is a daemon and holds only a weak reference to its database: a database whose
  sessions were all garbage-collected without `close()` is noticed by its idle thread (within
  `IDLE_CHECK_SECONDS`), which closes the connection and exits. No finalizer does any work.
- After `os.fork()` the child starts its own thread and connection for a file on its first job
  (the parent's connection is never used or closed there); a `:memory:` database the parent used
  raises `SessionStorageError` in the child. See `forkgate.py` for the one fork hook.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...exceptions import SessionClosedError, SessionStorageError
from ..closing import Release
from . import forkgate
from .schema import forget_touched, stamp_touched

__all__ = ["Job", "SQLiteDatabase", "Work", "acquire_database", "release_now"]

Work = Callable[[sqlite3.Connection], Any]
"""A unit of work: runs on the database thread with its connection, inside one transaction."""

BUSY_TIMEOUT_MS = 100
"""How long one statement waits for another connection's lock (SQLite's `busy_timeout`).

Short, so that between two waits the thread can drop a write whose caller was cancelled; the job
is retried until `BUSY_RETRY_SECONDS`."""

BUSY_RETRY_SECONDS = 60.0
"""How long a job keeps being retried while the database is busy."""

MAX_GROUP = 512
"""The most write jobs one transaction serves (group commit)."""

IDLE_CHECK_SECONDS = 1.0
"""How often an idle thread checks that some session still holds its database."""


class Schema(Hashable, Protocol):
    """A table pair a job needs (`SQLiteSchema`): hashable, and created by `create`."""

    def create(self, conn: sqlite3.Connection) -> None:
        """Create or check the tables, inside the job's write transaction."""


class _Shared:
    """What the thread and its jobs share; never the database, which the thread holds weakly.

    The busy flag, the lock that makes taking and dropping a job exclusive, the connection (so
    that a forked child never closes it), and the prepared schemas.
    """

    def __init__(self) -> None:
        self.busy = False
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.prepared: set[Hashable] = set()


@dataclass(eq=False, slots=True)
class Job:
    """One caller's work and where its result goes."""

    work: Work
    write: bool
    schema: Schema | None
    future: asyncio.Future[Any]
    shared: _Shared = field(repr=False)
    taken: bool = False
    abandoned: bool = False

    def abandon(self) -> None:
        """The caller was cancelled: drop the write if it waits for a busy database.

        A job the thread has not taken is dropped here and now while the database is busy; the
        job under way is dropped by the thread at its next retry. Otherwise the job runs as
        usual (a started write finishes).
        """
        with self.shared.lock:
            self.abandoned = True
            if self.taken or not self.shared.busy:
                return
            self.taken = True  # the thread skips it
        if not self.future.done():
            self.future.set_exception(_dropped())


class _Stop:
    """Tells the thread to close its connection and exit."""


class SQLiteDatabase:
    """The thread and connection of one SQLite database (a file, or one `:memory:`)."""

    def __init__(self, path: str) -> None:
        """Nothing starts here: the thread starts with the first job.

        Args:
            path: The database file (absolute), or `:memory:`.
        """
        self.path = path
        self.memory = path == ":memory:"
        self.refs = 0
        self._lock = threading.Lock()
        self._stopped = False
        self._start(None)

    def _start(self, pid: int | None) -> None:
        # `pid`: the process the thread runs in (None: not started).
        self._pid = pid
        self._queue: queue.SimpleQueue[Job | _Stop] = queue.SimpleQueue()
        self._shared = _Shared()
        self._thread: threading.Thread | None = None

    @property
    def prepared(self) -> set[Hashable]:
        """The table pairs whose schema the thread has created or checked."""
        return self._shared.prepared

    def enqueue(self, work: Work, *, write: bool, schema: Schema | None = None) -> Job:
        """Queue `work`; its result (or exception) resolves `job.future`.

        Args:
            work: Runs on the database thread, inside one transaction.
            write: Run in a write transaction (`BEGIN IMMEDIATE`).
            schema: The table pair the work needs: created or checked first, once.

        Returns:
            The queued job (await `job.future`, created on the running event loop).

        Raises:
            SessionClosedError: The database was closed; nothing was queued.
            SessionStorageError: This is a forked child and the database is the parent's
                `:memory:` one.
        """
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._stopped:
                raise SessionClosedError(f"the SQLite database {self.path!r} was closed")
            pid = os.getpid()
            if self._pid != pid:
                self._forked_or_new(pid)
            job = Job(work, write, schema, future, self._shared)
            self._queue.put(job)
        return job

    def _forked_or_new(self, pid: int) -> None:
        # Called with `_lock` held: start the thread, or start afresh in a forked child.
        if self._pid is not None:
            if self.memory:
                raise SessionStorageError(
                    f"the in-memory SQLite database of this session belongs to the process "
                    f"that created it (pid {self._pid}); after fork() a child cannot use it: "
                    "open a new SQLiteSession in the child, or use a database file"
                )
            forkgate.keep_inherited(self._shared.conn)
            self._start(None)
        self._pid = pid
        self._thread = threading.Thread(
            target=_serve,
            args=(weakref.ref(self), self.path, self._queue, self._shared),
            name=f"turnstore-sqlite-{self.path}",
            daemon=True,  # a forgotten close() never holds up the interpreter's exit
        )
        self._thread.start()

    def stop(self) -> threading.Thread | None:
        """Refuse new jobs; the thread runs those queued, closes its connection and exits.

        Returns:
            The thread to join (`None` if it never started in this process).
        """
        with self._lock:
            self._stopped = True
            if self._thread is None or self._pid != os.getpid():
                return None
            self._queue.put(_Stop())
            return self._thread


# --- the database thread -------------------------------------------------------------------


def _serve(
    owner: weakref.ref[SQLiteDatabase],
    path: str,
    jobs: queue.SimpleQueue[Job | _Stop],
    shared: _Shared,
) -> None:
    item: Job | _Stop | None = None
    try:
        while True:
            if item is None:
                try:
                    item = jobs.get(timeout=IDLE_CHECK_SECONDS)
                except queue.Empty:
                    if owner() is None:
                        return  # every session of this database was garbage-collected
                    continue
            if isinstance(item, _Stop):
                return
            group, item = [item], None
            # Group commit: the writes waiting behind this one share its transaction.
            while group[0].write and len(group) < MAX_GROUP:
                try:
                    item = jobs.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, _Stop) or not item.write:
                    break
                group.append(item)
                item = None
            group = [job for job in group if _take(shared, job)]
            if group:
                _post(_outcomes(path, shared, group))
            del group  # a job waiting in the queue must not keep the database alive
    finally:
        if shared.conn is not None:
            with forkgate.transaction():  # the last close checkpoints: it takes locks
                shared.conn.close()
            shared.conn = None
        error = SessionClosedError(f"the SQLite database {path!r} was closed")
        while True:  # nothing is queued after the stop; should a job be, it is told
            try:
                left = jobs.get_nowait()
            except queue.Empty:
                break
            if isinstance(left, Job):
                _post([(left, False, error)])


def _take(shared: _Shared, job: Job) -> bool:
    with shared.lock:
        if job.taken:
            return False  # dropped by its cancelled caller
        job.taken = True
    return not job.future.done()  # done: a read whose caller gave up


Outcome = tuple[Job, bool, Any]
"""A job, whether it succeeded, and its result or exception."""


def _outcomes(path: str, shared: _Shared, group: list[Job]) -> list[Outcome]:
    """Run a group as one transaction; if one of its jobs fails, run each job alone."""
    try:
        if shared.conn is None:
            shared.conn = _connect(path)
        return _run(shared, group)
    except _Failed as failed:
        if len(group) == 1:
            return [(group[0], False, _storage_error(path, failed.error))]
    except Exception as exc:
        return [(job, False, _storage_error(path, exc)) for job in group]
    return [outcome for job in group for outcome in _outcomes(path, shared, [job])]


def _storage_error(path: str, exc: BaseException) -> BaseException:
    if isinstance(exc, sqlite3.Error):
        error = SessionStorageError(f"SQLite failed on {path!r}: {exc}")
        error.__cause__ = exc
        return error
    return exc


def _post(outcomes: list[Outcome]) -> None:
    for job, ok, value in outcomes:
        # A RuntimeError: the caller's event loop is closed, nobody waits any more.
        with contextlib.suppress(RuntimeError):
            job.future.get_loop().call_soon_threadsafe(_resolve, job.future, ok, value)


class _Failed(Exception):
    """A job of a group raised (not a busy database): the group was rolled back."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if path != ":memory:":
            deadline = time.monotonic() + BUSY_RETRY_SECONDS
            while True:  # another process switching a new file to WAL at once reports busy
                try:
                    with forkgate.transaction():
                        conn.execute("PRAGMA journal_mode = WAL")
                    break
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or time.monotonic() > deadline:
                        raise
            conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _run(shared: _Shared, group: list[Job]) -> list[Outcome]:
    """Run `group` as one transaction; retry it while the database is busy.

    A write whose caller was cancelled while the database is busy is dropped from the group.
    """
    conn = shared.conn
    assert conn is not None
    deadline = time.monotonic() + BUSY_RETRY_SECONDS
    dropped: list[Outcome] = []
    try:
        while group:
            try:
                results = _transaction(conn, shared.prepared, group)
                return dropped + [(job, True, r) for job, r in zip(group, results, strict=True)]
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
            shared.busy = True  # another process holds the lock: wait, then run it again
            dropped += [(job, False, _dropped()) for job in group if job.abandoned]
            group = [job for job in group if not job.abandoned]
            time.sleep(0.005)
        return dropped
    finally:
        shared.busy = False


def _transaction(conn: sqlite3.Connection, prepared: set[Hashable], group: list[Job]) -> list[Any]:
    new = {job.schema for job in group if job.schema is not None} - prepared
    results: list[Any] = []
    with forkgate.transaction():  # the process does not fork inside it
        try:
            conn.execute("BEGIN IMMEDIATE" if group[0].write or new else "BEGIN")
            forget_touched()
            try:
                for schema in new:
                    schema.create(conn)
                for job in group:
                    results.append(job.work(conn))
            except Exception as exc:
                if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                    raise
                raise _Failed(exc) from exc
            stamp_touched(conn)  # the written sessions' activity: now, at the commit
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    prepared.update(new)
    return results


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _dropped() -> SessionStorageError:
    return SessionStorageError(
        "a write to the SQLite database was dropped, not written: its caller was cancelled "
        "while the database was busy"
    )


def _resolve(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    # On the caller's event loop.
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


# --- one database per file --------------------------------------------------------------------

_registry: weakref.WeakValueDictionary[str, SQLiteDatabase] = weakref.WeakValueDictionary()
"""The file databases of the process, by absolute path (gone with their last session)."""


def acquire_database(path: str) -> SQLiteDatabase:
    """Return the database for `path`, shared with the other sessions on the same file.

    Pure bookkeeping: nothing touches the file system here. `:memory:` always gets a new one.
    """
    forkgate.install()
    if path == ":memory:":
        db = SQLiteDatabase(path)
        db.refs = 1
        return db
    key = os.path.normpath(os.path.abspath(path))
    with forkgate.registry_lock:
        db = _registry.get(key) or SQLiteDatabase(key)
        _registry[key] = db
        db.refs += 1
    return db


def release_now(db: SQLiteDatabase) -> Release | None:
    """Drop one reference, as `close()` does; the last one stops the thread.

    Returns:
        `None` when nothing is left to wait for (other users remain, or no event loop runs and
        the thread was joined here); otherwise what joins the thread off the event loop.
    """
    with forkgate.registry_lock:
        db.refs -= 1
        if db.refs > 0:
            return None
        if _registry.get(db.path) is db:
            del _registry[db.path]
    thread = db.stop()
    if thread is None:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        thread.join()
        return None
    return lambda: asyncio.to_thread(thread.join)
