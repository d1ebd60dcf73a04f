"""Jobs for the database threads: one caller's work, and how its result reaches the caller.

A job is queued by the event loop and run by a thread of `SQLiteDatabase` (`database.py`); the
thread resolves the job's asyncio future through `loop.call_soon_threadsafe`, checking
`future.done()` first, so a cancelled caller cannot break a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...exceptions import SessionStorageError

__all__ = [
    "Job",
    "JobFailed",
    "Prepare",
    "Schema",
    "Stop",
    "Wake",
    "Work",
    "claim",
    "dropped",
    "post",
    "post_all",
]

Work = Callable[[sqlite3.Connection], Any]
"""A unit of work: runs on a database thread with that thread's connection.

A work object may also have a `batch_key` attribute and a `run_batch(conn, works)` method: the
writer then runs consecutive jobs with equal keys as one batch (their results are all `None`);
if the batch fails, each job is redone alone by calling it.
"""

Prepare = Callable[[sqlite3.Connection], None]
"""Creates or checks the schema of one table pair, inside the writer's transaction."""


class Schema(Hashable, Protocol):
    """A table pair a job needs (`SQLiteSchema`): hashable, and created by `create`."""

    def create(self, conn: sqlite3.Connection) -> None:
        """Create or check the tables, inside the writer's transaction."""


class Retrying(Protocol):
    """What a job knows of its database (`SQLiteDatabase`): whether the writer is retrying."""

    busy: bool
    """True while the writer retries a group that found the database busy."""


@dataclass(eq=False, slots=True)
class Job:
    """One caller's work and where its result goes."""

    work: Work
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    write: bool
    schema_key: Hashable | None = None
    prepare: Prepare | None = None
    abandoned: bool = False
    taken: bool = False
    dropped: bool = False
    database: Retrying | None = None

    def abandon(self) -> None:
        """The caller was cancelled: drop the job if it cannot take effect soon.

        Runs on the caller's event loop. While the writer retries a busy database, a job it has
        not taken yet is dropped here and now, so its caller does not wait for that earlier
        group; a job inside the busy group is dropped by the writer at its next retry. Otherwise
        the job runs as usual (a started write finishes).
        """
        with _claim_lock:
            self.abandoned = True
            database = self.database
            if self.taken or database is None or not database.busy:
                return
            self.dropped = True
        if not self.future.done():
            self.future.set_exception(dropped("the database was busy"))


@dataclass(eq=False, slots=True)
class Stop:
    """Tells a thread to close its connection and exit."""

    done: threading.Event = field(default_factory=threading.Event)


class Wake:
    """Tells the writer to carry out the releases that finalizers left (see `release_later`)."""


def _resolve(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    # Runs on the event loop thread.
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


_claim_lock = threading.Lock()
"""Makes "the writer takes a job" and "its caller abandons it" exclusive (held for a flag flip)."""


def claim(job: Job) -> bool:
    """On the writer thread: take `job` unless its cancelled caller already dropped it."""
    with _claim_lock:
        if job.dropped:
            return False
        job.taken = True
        return True


def dropped(why: str) -> SessionStorageError:
    """The error of a write dropped before it ran, because its caller was cancelled."""
    return SessionStorageError(
        f"a write to the SQLite database was dropped, not written: its caller was cancelled "
        f"and {why}"
    )


def post(job: Job, ok: bool, value: Any) -> None:
    """Resolve `job` on its caller's event loop (called on a database thread)."""
    # A RuntimeError means the caller's event loop is closed: nobody is waiting any more.
    with contextlib.suppress(RuntimeError):
        job.loop.call_soon_threadsafe(_resolve, job.future, ok, value)


class JobFailed(Exception):
    """One job of a group raised: the group is rolled back and its jobs run one by one."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def post_all(jobs: list[Job], outcomes: list[tuple[bool, Any]]) -> None:
    """Resolve a group's jobs: one wake-up per event loop for the whole group."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
    for job, (ok, value) in zip(jobs, outcomes, strict=True):
        by_loop.setdefault(job.loop, []).append((job.future, ok, value))
    for loop, results in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that event loop is closed: nobody waits
            loop.call_soon_threadsafe(_resolve_all, results)


def _resolve_all(results: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in results:
        _resolve(future, ok, value)
