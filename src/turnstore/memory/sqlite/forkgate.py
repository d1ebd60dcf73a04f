"""Keep `os.fork()` out of SQLite transactions.

SQLite keeps the locks of every connection to a file in one table per process. A child forked
while a connection of the parent was inside a transaction inherits that table with the lock
still recorded, and no connection in the child will ever release it: the child's own new
connections then find the file busy forever. So the process forks only between transactions:
before a fork, new transactions wait and the fork waits (a bounded time) for those under way.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

__all__ = ["FORK_WAIT_SECONDS", "transaction"]

FORK_WAIT_SECONDS = 10.0
"""How long a fork waits for the transactions under way; past that it forks anyway."""

_cond = threading.Condition(threading.Lock())
_active = 0
_forking = False


@contextlib.contextmanager
def transaction() -> Iterator[None]:
    """Hold off `os.fork()` while the caller's SQLite statements run (one transaction)."""
    global _active
    cond = _cond
    with cond:
        cond.wait_for(lambda: not _forking)
        _active += 1
    try:
        yield
    finally:
        with cond:
            _active -= 1
            if not _active:
                cond.notify_all()


def _before_fork() -> None:
    global _forking
    _cond.acquire()
    _forking = True
    _cond.wait_for(lambda: _active == 0, timeout=FORK_WAIT_SECONDS)
    # The lock stays held through the fork: no transaction starts until it is released.


def _after_fork_in_parent() -> None:
    global _forking
    _forking = False
    _cond.notify_all()
    _cond.release()


def _after_fork_in_child() -> None:
    global _cond, _active, _forking
    # The parent's threads do not exist here: nothing of theirs is under way.
    _cond = threading.Condition(threading.Lock())
    _active = 0
    _forking = False


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
