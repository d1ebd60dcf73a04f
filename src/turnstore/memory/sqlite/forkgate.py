"""The one fork hook of the SQLite engine: `os.fork()` waits for the SQLite transactions under way.

SQLite keeps the locks of every connection to a file in one table per process. A child forked
while a connection of the parent is inside a transaction inherits that table with the lock still
recorded, and no connection of the child will ever release it: the child's own connections would
find the file busy forever. So, once the process has created a SQLite session (`install`, never at
import), a fork waits (at most `FORK_WAIT_SECONDS`) for the transactions under way, and no new one
starts until the fork is done. The same hook holds the registry lock across the fork, so that a
child never inherits it locked. A child never closes a connection it inherited either
(`keep_inherited`): closing any descriptor of a file drops every lock the process holds on it.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from types import TracebackType

__all__ = ["FORK_WAIT_SECONDS", "install", "keep_inherited", "registry_lock", "transaction"]

FORK_WAIT_SECONDS = 10.0
"""How long a fork waits for the transactions under way; past that it forks anyway."""

registry_lock = threading.Lock()
"""Guards the registry of file databases (`database.acquire_database`)."""


class _Gate:
    """Counts the transactions under way; a fork waits for none and holds new ones off."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.active = 0
        self.forking = False

    def __enter__(self) -> None:
        with self.cond:
            if self.forking:
                self.cond.wait_for(lambda: not self.forking)
            self.active += 1

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        with self.cond:
            self.active -= 1
            if self.forking and not self.active:
                self.cond.notify_all()

    def before_fork(self) -> None:
        self.cond.acquire()
        self.forking = True
        self.cond.wait_for(lambda: self.active == 0, timeout=FORK_WAIT_SECONDS)
        registry_lock.acquire()

    def after_fork_in_parent(self) -> None:
        registry_lock.release()
        self.forking = False
        self.cond.notify_all()
        self.cond.release()

    def after_fork_in_child(self) -> None:
        registry_lock.release()
        self.active = 0  # the parent's threads do not exist here
        self.forking = False
        self.cond.release()


_gate = _Gate()
_inherited: list[sqlite3.Connection] = []
"""In a forked child: the parent's connections, referenced forever so that none is closed here."""


def transaction() -> _Gate:
    """Return the gate that holds off `os.fork()` while a `with` block runs SQLite statements."""
    return _gate


@functools.cache
def install() -> None:
    """Register the fork hook, once per process (on the first SQLite session, not at import)."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(
            before=_gate.before_fork,
            after_in_parent=_gate.after_fork_in_parent,
            after_in_child=_gate.after_fork_in_child,
        )


def keep_inherited(conn: sqlite3.Connection | None) -> None:
    """In a forked child: never close `conn`, the parent's connection."""
    if conn is not None:
        _inherited.append(conn)
