"""`close()` that works from synchronous and asynchronous code, and `async with` on top of it.

The OpenAI Agents SDK's `SQLiteSession.close()` is a plain method; ours used to be a coroutine.
Code written for either works here: `close()` closes the object at once (later calls raise
`SessionClosedError` or do nothing) and returns a [`Closing`][turnstore.memory.Closing], which the
caller may await to wait until the released resources (threads, pooled connections) are gone,
or drop. Dropping it never warns.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from abc import ABC
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Self

__all__ = ["AsyncCloseable", "Closing", "Release"]

Release = Callable[[], Awaitable[None]]
"""The asynchronous part of a close: called at most once, from `Closing`."""

# Releases started from synchronous calls inside a running loop: kept until they finish, so the
# loop does not drop a task nobody awaits.
_pending: set[asyncio.Future[None]] = set()


class Closing(Coroutine[Any, Any, None]):
    """What `close()` returns: the object is already closed; awaiting this waits for the rest.

    It is a coroutine object, so `await obj.close()`, `asyncio.run(obj.close())` and
    `loop.run_until_complete(obj.close())` all work, and unlike a coroutine function's result,
    dropping it without awaiting never warns. What remains to release (pooled connections, an
    HTTP client) runs on the event loop that called `close()`; called with no loop running, it
    runs on the loop that awaits the result, or, when the result is dropped, at once on a loop
    of its own. Awaiting it more than once returns at once.

    Example:
        ```python
        session.close()        # from synchronous code: closed now
        await session.close()  # from async code: closed, and its threads or connections released
        ```
    """

    __slots__ = ("_coroutine", "_release", "_task")

    def __init__(
        self, task: asyncio.Future[None] | None = None, release: Release | None = None
    ) -> None:
        self._task = task
        self._release = release
        self._coroutine: Coroutine[Any, Any, None] | None = None

    @classmethod
    def start(cls, release: Release | None) -> Closing:
        """Start `release` as a task of the running loop, or keep it for whoever awaits.

        Args:
            release: The asynchronous part of the close, or `None` when there is none.

        Returns:
            A `Closing` that waits for `release` when awaited.
        """
        if release is None:
            return cls()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return cls(release=release)
        task = loop.create_task(_run(release))
        _pending.add(task)
        task.add_done_callback(_pending.discard)
        return cls(task)

    async def _wait(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            await release()
        elif self._task is not None:
            await asyncio.shield(self._task)

    def _inner(self) -> Coroutine[Any, Any, None]:
        if self._coroutine is None or inspect.getcoroutinestate(self._coroutine) == "CORO_CLOSED":
            self._coroutine = self._wait()
        return self._coroutine

    def send(self, value: Any) -> Any:
        """Advance the wait (the coroutine protocol)."""
        return self._inner().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        """Raise inside the wait (the coroutine protocol)."""
        if val is None and tb is None:
            return self._inner().throw(typ)
        return self._inner().throw(val if val is not None else typ)

    def close(self) -> None:
        """Stop the wait (the coroutine protocol); the object stays closed."""
        if self._coroutine is not None:
            self._coroutine.close()

    def __await__(self) -> Generator[Any, None, None]:
        return self._wait().__await__()

    def __del__(self) -> None:
        # Dropped without being awaited, after a close() with no loop running: finish now.
        release, self._release = self._release, None
        if release is None:
            return
        with contextlib.suppress(Exception):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(_run(release))
            else:  # dropped inside a loop that started after close(): release there
                task = loop.create_task(_run(release))
                _pending.add(task)
                task.add_done_callback(_pending.discard)


async def _run(release: Release) -> None:
    await release()


class AsyncCloseable(ABC):  # noqa: B024 - subclasses add abstract methods (SessionStore)
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
