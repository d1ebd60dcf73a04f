"""The threads behind `SQLiteSession`: one writer per database file, a few readers.

Every SQLite call runs on a thread owned by a `SQLiteDatabase`; the event loop only queues jobs
and awaits asyncio futures, which the threads resolve with `loop.call_soon_threadsafe` (checking
`future.done()` first, so a cancelled caller cannot break a thread).

- One `SQLiteDatabase` per file in the process, shared by every session object on that file
  (`registry.py`: keyed by the absolute path; `:memory:` gets one database per session object).
- The writer thread owns the only write connection. It drains its queue and runs every pending
  write job in ONE `BEGIN IMMEDIATE` transaction (group commit): with many concurrent callers one
  commit serves them all; each caller's future is resolved only after the commit. When one job
  fails, the group is rolled back and its jobs are redone one transaction each, so the failure
  stays with its caller and every other job still commits.
- Reader threads (file databases only) each own a read connection; WAL lets them read beside the
  writer. For `:memory:` the writer's connection serves reads too.
- Cross-process safety comes from SQLite's own locking: WAL, a busy timeout, `BEGIN IMMEDIATE`,
  and a retry of the whole group when the database stays busy.
- Durability: WAL with `synchronous=NORMAL`. A commit has reached the operating system's file
  cache when `COMMIT` returns, so a committed write survives a crash or SIGKILL of the process;
  only a power loss or an operating-system crash can lose the latest commits (never corrupt the
  file).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from ...exceptions import SessionClosedError, SessionStorageError
from . import forkgate
from .jobs import Job, JobFailed, Schema, Stop, Wake, Work, claim, dropped, post, post_all
from .schema import forget_touched, stamp_touched

__all__ = ["Job", "SQLiteDatabase", "Work"]

logger = logging.getLogger(__name__)

_thread_ids = itertools.count()

BUSY_TIMEOUT_MS = 5_000
"""How long one statement waits for another connection's lock before SQLite reports busy."""

BUSY_RETRY_SECONDS = 60.0
"""How long the writer keeps retrying a group that finds the database busy."""

WRITER_BUSY_SLICE_MS = 100
"""How long one attempt of the writer waits for another connection's lock before it retries.

Between attempts the writer drops the jobs whose callers were cancelled, so a cancelled write
that waits for a busy database gives up within about one slice (nothing of it is written), not
after `BUSY_RETRY_SECONDS`."""

MAX_GROUP = 512
"""The most write jobs one transaction serves."""

READER_THREADS = 2
"""Read connections (and threads) per file database."""


def is_busy(exc: BaseException) -> bool:
    """Tell whether `exc` is SQLite's "database is busy/locked" (worth a retry)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _map_error(exc: BaseException, path: str) -> BaseException:
    if isinstance(exc, sqlite3.Error):
        mapped = SessionStorageError(f"SQLite failed on {path!r}: {exc}")
        mapped.__cause__ = exc
        return mapped
    return exc


_inherited_connections: list[sqlite3.Connection] = []
"""In a forked child: the parent's connections, kept alive so that they are never closed here."""


class SQLiteDatabase:
    """The threads and connections for one SQLite database (a file, or one `:memory:`)."""

    def __init__(self, path: str, *, on_wake: Callable[[], None]) -> None:
        """Set up the queues; the threads start with the first job.

        Args:
            path: The database file (or `:memory:`).
            on_wake: Run on the writer thread when `wake` is called (the registry's pending
                releases).
        """
        self.path = path
        self.memory = path == ":memory:"
        self.refs = 0
        self.commits = 0
        """Write transactions committed (one per group): fewer than write calls under load."""
        self.prepared: set[Hashable] = set()
        """Table pairs whose schema the writer has created or checked."""
        self._stopped = False
        self._connections: list[sqlite3.Connection] = []
        self.busy = False
        """True while the writer waits for another connection's lock (set on its thread)."""
        self._on_wake = on_wake
        self._left_in_parent: str | None = None
        """Set in a forked child for a `:memory:` database the parent had used."""
        self.reset_threads()

    def after_fork_in_child(self) -> None:
        """Start afresh in a forked child: new threads and connections on the next job.

        A file database is opened again by the child. A `:memory:` database the parent used
        lives only in the parent's connection, which the child must not touch: the child's
        calls raise `SessionStorageError` rather than read an empty history.
        """
        if self.memory and self._threads:
            self._left_in_parent = (
                f"the in-memory SQLite database of this session belongs to the process that "
                f"created it (pid {os.getppid()}); after fork() a child cannot use it: open a "
                "new SQLiteSession in the child, or use a database file"
            )
        self.reset_threads()

    def reset_threads(self) -> None:
        """Forget the threads and connections (in a forked child, where they do not exist)."""
        # Also run in a forked child, where the parent's threads do not exist: the next job
        # starts new ones, which open new connections. The parent's connections are kept
        # referenced forever and never used or closed here: closing an inherited connection
        # would drop locks that only the parent holds, and could let the child checkpoint and
        # delete the parent's WAL file.
        _inherited_connections.extend(getattr(self, "_connections", ()))
        self._connections = []
        self._writes: queue.SimpleQueue[Job | Stop | Wake] = queue.SimpleQueue()
        self._reads: queue.SimpleQueue[Job | Stop] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._writer_thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    # --- called from the event loop thread: no SQLite here -------------------------------------

    def enqueue(self, work: Work, *, write: bool, schema: Schema | None = None) -> Job:
        """Queue `work` for the writer (`write`) or a reader; its result resolves `job.future`.

        Args:
            work: Runs on a database thread with its connection, inside one transaction.
            write: Run on the writer, grouped with other pending writes (else on a reader).
            schema: The table pair the work needs: the writer creates or checks it first, once.

        Returns:
            The queued job (await `job.future`, created on the running event loop).

        Raises:
            SessionClosedError: The database was stopped; the job was not queued.
        """
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        prepare = None if schema is None else schema.create
        job = Job(work, future.get_loop(), future, write, schema, prepare)
        if write:
            self.submit_write(job)
        else:
            self.submit_read(job)
        return job

    def submit_write(self, job: Job) -> None:
        """Queue a job for the writer (grouped with other pending writes).

        Raises:
            SessionClosedError: The database was stopped; the job was not queued.
        """
        self._submit(self._writes, job)

    def submit_read(self, job: Job) -> None:
        """Queue a job for a reader thread (the writer, for `:memory:`).

        Raises:
            SessionClosedError: The database was stopped; the job was not queued.
        """
        self._submit(self._writes if self.memory else self._reads, job)

    def _submit(self, into: queue.SimpleQueue[Any], job: Job) -> None:
        # The open check and the put happen under the lock that `stop` takes: a job is either
        # queued before the stop markers (and run) or refused here, never left behind them.
        with self._start_lock:
            if self._stopped:
                raise SessionClosedError(f"the SQLite database {self.path!r} was closed")
            if self._left_in_parent is not None:
                raise SessionStorageError(self._left_in_parent)
            if not self._threads:
                self._start_threads()
            job.database = self
            into.put(job)

    def wake(self) -> None:
        """Ask the writer to carry out pending releases; lock-free, safe in a finalizer."""
        if self._writer_thread is not None:
            self._writes.put(Wake())  # SimpleQueue.put is reentrant: no lock is taken

    def stop(self) -> list[threading.Thread]:
        """Ask every thread to finish its queued jobs, close its connection and exit.

        Returns:
            The threads; each exits once it has run its queued jobs and closed its connection.
        """
        with self._start_lock:
            self._stopped = True
            for thread in self._threads:
                stop = Stop()
                if thread is self._writer_thread:
                    self._writes.put(stop)
                else:
                    self._reads.put(stop)
            return list(self._threads)

    def _start_threads(self) -> None:
        # Called with `_start_lock` held.
        n = next(_thread_ids)
        self._writer_thread = threading.Thread(
            target=self._writer, name=f"turnstore-sqlite-writer-{n}", daemon=True
        )
        self._threads.append(self._writer_thread)
        if not self.memory:
            for i in range(READER_THREADS):
                self._threads.append(
                    threading.Thread(
                        target=self._reader,
                        name=f"turnstore-sqlite-reader-{n}.{i}",
                        daemon=True,
                    )
                )
        for thread in self._threads:
            thread.start()

    # --- database threads ------------------------------------------------------------------------

    def _connect(self, *, writer: bool) -> sqlite3.Connection:
        # The writer waits in short slices and retries itself (see `_retrying`).
        busy_ms = WRITER_BUSY_SLICE_MS if writer and not self.memory else BUSY_TIMEOUT_MS
        with forkgate.transaction():  # opening takes locks too (the WAL switch)
            return self._open(busy_ms, writer=writer)

    def _open(self, busy_ms: int, *, writer: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=busy_ms / 1000,
            isolation_level=None,  # we issue BEGIN/COMMIT ourselves
            check_same_thread=True,  # a connection lives and dies on its own thread
        )
        self._connections.append(conn)
        try:
            conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            if self.memory:
                return conn
            if writer:
                self._enable_wal(conn)
                conn.execute("PRAGMA synchronous = NORMAL")
            else:
                conn.execute("PRAGMA query_only = ON")
        except BaseException:
            self._close(conn)
            raise
        return conn

    @staticmethod
    def _enable_wal(conn: sqlite3.Connection) -> None:
        # Idempotent and outside any transaction; another process switching the file at the same
        # moment can make this report "locked" briefly, so retry until the busy deadline.
        deadline = time.monotonic() + BUSY_RETRY_SECONDS
        while True:
            try:
                (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
                if str(mode).lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _writer(self) -> None:
        conn: sqlite3.Connection | None = None
        stop: Stop | None = None
        try:
            while stop is None:
                first = self._writes.get()
                if isinstance(first, Stop):
                    stop = first
                    break
                if isinstance(first, Wake):
                    self._on_wake()
                    continue
                writes: list[Job] = []
                reads: list[Job] = []
                item: Job = first
                while True:
                    if not item.write:
                        reads.append(item)
                    elif claim(item):
                        writes.append(item)
                    if len(writes) >= MAX_GROUP:
                        break
                    try:
                        nxt = self._writes.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(nxt, Stop):
                        stop = nxt
                        break
                    if isinstance(nxt, Wake):
                        self._on_wake()
                        break
                    item = nxt
                if conn is None:
                    try:
                        conn = self._connect(writer=True)
                    except Exception as exc:
                        for job in writes + reads:
                            post(job, False, _map_error(exc, self.path))
                        continue
                if writes:
                    self._run_group(conn, writes)
                for job in reads:
                    self._run_read(conn, job)
        finally:
            self._close(conn)
            _fail_left_behind(self._writes, self.path)
            if stop is not None:
                stop.done.set()

    def _close(self, conn: sqlite3.Connection | None) -> None:
        if conn is not None:
            with contextlib.suppress(ValueError):
                self._connections.remove(conn)
            close_connection(conn)

    def _reader(self) -> None:
        conn: sqlite3.Connection | None = None
        stop: Stop | None = None
        try:
            while True:
                job = self._reads.get()
                if isinstance(job, Stop):
                    stop = job
                    break
                if job.future.done():
                    continue  # the caller gave up before we started
                if conn is None:
                    try:
                        conn = self._connect(writer=False)
                    except Exception as exc:
                        post(job, False, _map_error(exc, self.path))
                        continue
                self._run_read(conn, job)
        finally:
            self._close(conn)
            if stop is not None:
                stop.done.set()

    def _run_read(self, conn: sqlite3.Connection, job: Job) -> None:
        deadline = time.monotonic() + BUSY_RETRY_SECONDS
        while True:
            try:
                # One read transaction: every statement of the job sees the same snapshot.
                with forkgate.transaction():
                    try:
                        conn.execute("BEGIN")
                        try:
                            result = job.work(conn)
                        finally:
                            conn.execute("COMMIT")
                    except BaseException:
                        _rollback(conn)  # before a fork may copy the connection's locks
                        raise
            except Exception as exc:
                _rollback(conn)
                if is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(0.005)
                    continue
                post(job, False, _map_error(exc, self.path))
                return
            post(job, True, result)
            return

    def _run_group(self, conn: sqlite3.Connection, jobs: list[Job]) -> None:
        outcomes: list[tuple[bool, Any]]
        try:
            outcomes = self._retrying(conn, jobs)
        except JobFailed as failed:
            if len(jobs) == 1:
                outcomes = [(False, failed.error)]
            else:
                # The group was rolled back: run each job in its own transaction, so that the
                # failure stays with its own caller and every other job still commits.
                outcomes = []
                for job in jobs:
                    try:
                        outcomes += self._retrying(conn, [job])
                    except JobFailed as alone:
                        outcomes.append((False, alone.error))
                    except Exception as exc:
                        outcomes.append((False, _map_error(exc, self.path)))
        except Exception as exc:
            error = _map_error(exc, self.path)
            outcomes = [(False, error)] * len(jobs)
        post_all(jobs, outcomes)

    def _retrying(self, conn: sqlite3.Connection, jobs: list[Job]) -> list[tuple[bool, Any]]:
        deadline = time.monotonic() + BUSY_RETRY_SECONDS
        delay = 0.001
        pending = jobs
        try:
            while True:
                try:
                    done = self._attempt(conn, pending) if pending else []
                    break
                except Exception as exc:
                    _rollback(conn)
                    if is_busy(exc) and time.monotonic() < deadline:
                        # Another process holds the write lock: wait, redo. A job whose caller
                        # was cancelled meanwhile is dropped (rolled back: nothing is written).
                        self.busy = True
                        time.sleep(delay)
                        delay = min(delay * 2, 0.05)
                        pending = [job for job in pending if not job.abandoned]
                        continue
                    raise
        finally:
            self.busy = False
        if len(pending) == len(jobs):
            return done
        outcomes = dict(zip(pending, done, strict=True))
        gave_up = dropped(f"{self.path!r} was busy")
        return [outcomes.get(job, (False, gave_up)) for job in jobs]

    def _attempt(self, conn: sqlite3.Connection, jobs: list[Job]) -> list[tuple[bool, Any]]:
        # One try of a group; the process does not fork until it is committed or rolled back.
        with forkgate.transaction():
            try:
                return self._transaction(conn, jobs)
            except BaseException:
                _rollback(conn)
                raise

    def _transaction(self, conn: sqlite3.Connection, jobs: list[Job]) -> list[tuple[bool, Any]]:
        conn.execute("BEGIN IMMEDIATE")
        forget_touched()  # what a rolled-back attempt touched
        prepared: set[Hashable] = set()
        outcomes: list[tuple[bool, Any]] = []
        index = 0
        while index < len(jobs):
            job = jobs[index]
            # Consecutive jobs with the same `batch_key` run as one (e.g. one INSERT for many
            # add_items calls): fewer statements, and fewer GIL hand-offs with the event loop.
            key = getattr(job.work, "batch_key", None)
            end = index + 1
            if key is not None:
                while end < len(jobs) and getattr(jobs[end].work, "batch_key", None) == key:
                    end += 1
            try:
                schema_key = job.schema_key
                if (
                    schema_key is not None
                    and job.prepare is not None
                    and schema_key not in self.prepared
                    and schema_key not in prepared
                ):
                    job.prepare(conn)
                    prepared.add(schema_key)
                if end - index > 1:
                    job.work.run_batch(conn, [j.work for j in jobs[index:end]])  # type: ignore[attr-defined]
                    outcomes += [(True, None)] * (end - index)
                else:
                    outcomes.append((True, job.work(conn)))
            except Exception as exc:
                if is_busy(exc):
                    raise
                raise JobFailed(_map_error(exc, self.path)) from exc
            index = end
        # The last statement: the written sessions' activity time is now, at the commit.
        stamp_touched(conn)
        conn.execute("COMMIT")
        self.commits += 1
        self.prepared.update(prepared)
        return outcomes


_close_lock = threading.Lock()
"""Held while a connection closes: the process closes its SQLite connections one at a time.

In WAL mode the connection that closes last checkpoints the WAL and deletes the `-wal` and
`-shm` files, but only if it can lock the database file exclusively. Two connections closing
at the same moment (the reader threads of a database, which stop together) can each still see
the other open and both skip it, leaving the files behind once neither is open; closed one
after the other, the second sees itself last."""


def close_connection(conn: sqlite3.Connection) -> None:
    """Close `conn`, never at the same time as another connection of the process.

    Outside a fork too: the last connection's close takes the file's locks to checkpoint.
    """
    with forkgate.transaction(), _close_lock:
        conn.close()


def _after_fork_in_child() -> None:
    global _close_lock
    # A thread of the parent may have held it at the fork; that thread does not exist here.
    _close_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            logger.exception("SQLite rollback failed")


def _fail_left_behind(jobs: queue.SimpleQueue[Any], path: str) -> None:
    # `_submit` queues nothing after the stop marker; should a job still be there, its caller
    # gets an error rather than waiting forever.
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        if isinstance(job, Job):
            post(job, False, SessionClosedError(f"the SQLite database {path!r} was closed"))
