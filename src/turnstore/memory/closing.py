"""`close()` that works from synchronous and asynchronous code, and `async with` on top of it.

The OpenAI Agents SDK's `SQLiteSession.close()` is a plain method; ours used to be a coroutine.
Code written for either works here: `close()` closes the object at once (later calls raise
`SessionClosedError` or do nothing) and returns a [`Closing`][turnstore.Closing], which the
caller may await to wait until the released resources (threads, pooled connections) are gone,
or drop. Dropping it never warns and never leaves the release half done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Self

__all__ = ["AsyncCloseable", "Closing", "Release"]

Release = Callable[[], Awaitable[None]]
"""The asynchronous part of a close: called at most once, from `Closing`."""

# Releases started from synchronous calls inside a running loop: kept until they finish, so the
# loop does not drop a task nobody awaits.
_pending: set[asyncio.Future[None]] = set()


class Closing:
    """What `close()` returns: the object is already closed; awaiting this waits for the rest.

    Awaiting it more than once, or after the release finished, returns at once.

    Example:
        ```python
        session.close()        # from synchronous code: closed now
        await session.close()  # from async code: closed, and its threads or connections released
        ```
    """

    __slots__ = ("_task",)

    def __init__(self, task: asyncio.Future[None] | None) -> None:
        self._task = task

    @classmethod
    def start(cls, release: Release | None) -> Closing:
        """Run `release` now: as a task of the running loop, or to its end when none runs.

        Args:
            release: The asynchronous part of the close, or `None` when there is none.

        Returns:
            A `Closing` that waits for `release` when awaited.
        """
        if release is None:
            return cls(None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # Synchronous code with no loop: finish the release here, on a loop of its own.
            asyncio.run(_run(release))
            return cls(None)
        task = loop.create_task(_run(release))
        _pending.add(task)
        task.add_done_callback(_pending.discard)
        return cls(task)

    def __await__(self) -> Generator[Any, None, None]:
        task = self._task
        if task is None:
            return
        yield from asyncio.shield(task).__await__()


async def _run(release: Release) -> None:
    await release()


class AsyncCloseable:
    """A base class for objects released by `close()`, from sync code, async code or `async with`.

    Subclasses implement `_close_now()`: it marks the object closed (synchronously) and returns
    the asynchronous rest of the release, or `None`.

    Example:
        ```python
        async with SQLiteSession("user_42", "chats.db") as session:
            await session.add_items([{"role": "user", "content": "Hi"}])
        # the session is closed here, even if the block raised
        ```
    """

    def _close_now(self) -> Release | None:
        """Mark the object closed and return what remains to release asynchronously.

        Returns:
            A coroutine function finishing the release, or `None` when nothing remains.
        """
        return None

    def close(self) -> Closing:
        """Close the object now; closing twice is harmless.

        Callable from synchronous code (the object is closed when the call returns) and
        awaitable (`await obj.close()` also waits until its threads or connections are released).

        Returns:
            An awaitable; awaiting it is optional.
        """
        return Closing.start(self._close_now())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
