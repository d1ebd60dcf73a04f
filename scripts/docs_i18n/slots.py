"""The run's bound on the requests in flight, follow-ups first.

A job's first draft opens the job; its review and its repairs follow it up. When every slot is
taken, a waiting follow-up gets the next free slot before a waiting first draft (first come,
first served within each kind): a page whose draft is done is reviewed, repaired and written
without waiting for the drafts of pages not started yet, so the pages are finished one after
the other instead of all at the end. While a slot is free, nothing waits.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from types import TracebackType

__all__ = ["Slots"]

FOLLOW_UP = 0
"""The priority of a job's review or repair request."""
OPENING = 1
"""The priority of a job's first draft request."""


class Slots:
    """At most `size` holders at once; the waiting ones are served by priority, then in order.

    Use `slot(priority)` as an async context manager (a follow-up's slot without one).
    """

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"the number of slots must be at least 1, not {size}")
        self.size = size
        self._free = size
        self._order = itertools.count()
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []

    def slot(self, priority: int = FOLLOW_UP) -> _Slot:
        """A context manager that holds one slot, taken with `priority` (lower goes first);
        reusable, as a request's retries each hold it anew."""
        return _Slot(self, priority)

    async def acquire(self, priority: int) -> None:
        """Take a slot, waiting behind the holders' releases if none is free."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (priority, next(self._order), waiter)
        heapq.heappush(self._waiting, entry)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over as the waiter was cancelled
            elif entry in self._waiting:
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter by priority, else to the free ones."""
        while self._waiting:
            _, _, waiter = heapq.heappop(self._waiting)
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


class _Slot:
    def __init__(self, slots: Slots, priority: int) -> None:
        self.slots = slots
        self.priority = priority

    async def __aenter__(self) -> None:
        await self.slots.acquire(self.priority)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.slots.release()
