"""`close()` that works from synchronous and asynchronous code, and `async with` on top of it.

The OpenAI Agents SDK's `SQLiteSession.close()` is a plain method; ours used to be a coroutine.
Code written for either works here: `close()` closes the object at once (later calls raise
`SessionClosedError` or do nothing) and returns a [`Closing`][turnstore.memory.Closing], which
the caller may await to wait until the released resources (threads, pooled connections) are
gone, or drop.

No finalizer here runs an event loop: the garbage collector may run one on any thread, even
inside a running loop. A `Closing` dropped before its release ran hands the release to the
event loop that owns the resources when that loop is running, and otherwise warns with a
`ResourceWarning` (shown with `python -X dev` or `-W default`), as asyncio's own transports do.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import warnings
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
    dropping it without awaiting it never warns when nothing remains to release. What remains
    (pooled connections, an HTTP client) runs on the event loop that called `close()`; called
    with no loop running, it runs on the loop that awaits the result. Dropped without being
    awaited, the release is handed to the event loop that owns the resources if that loop is
    running (on any thread); otherwise it cannot run, and a `ResourceWarning` says so. Awaiting
    it more than once returns at once.

    Example:
        ```python
        session.close()        # from synchronous code: closed now
        await session.close()  # from async code: closed, and its threads or connections released
        ```
    """

    __slots__ = ("_coroutine", "_loop", "_release", "_task", "_what")

    def __init__(
        self,
        task: asyncio.Future[None] | None = None,
        release: Release | None = None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        what: str = "an object",
    ) -> None:
        self._task = task
        self._release = release
        self._loop = loop
        self._what = what
        self._coroutine: Coroutine[Any, Any, None] | None = None

    @classmethod
    def start(
        cls,
        release: Release | Closing | None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        what: str = "an object",
    ) -> Closing:
        """Start `release` as a task of the running loop, or keep it for whoever awaits.

        Args:
            release: The asynchronous part of the close, `None` when there is none, or the
                `Closing` of another object whose close this one is (returned as it is).
            loop: The event loop the released resources belong to, if they belong to one: a
                release dropped unawaited is handed to it while it runs.
            what: How a `ResourceWarning` names the closed object.

        Returns:
            A `Closing` that waits for `release` when awaited.
        """
        if isinstance(release, Closing):
            return release
        if release is None:
            return cls()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return cls(release=release, loop=loop, what=what)
        return cls(_spawn(running, release))

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
        # Dropped without being awaited, after a close() made with no loop running. This runs
        # wherever the collector does (any thread, maybe inside a running loop): it starts no
        # event loop and runs nothing itself; the release goes to a running loop or is reported.
        release, self._release = self._release, None
        if release is None:
            return
        loop = self._loop
        if loop is None:  # resources of no particular loop: the running loop of this thread
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
        if loop is not None and loop.is_running():
            try:
                loop.call_soon_threadsafe(_spawn, loop, release)
            except RuntimeError:  # the loop closed meanwhile
                pass
            else:
                return
        warnings.warn(
            f"{self._what} was closed by close() outside an event loop and the result was "
            "never awaited, so its connections could not be released: await close() (or use "
            "`async with`) inside the event loop that used it",
            ResourceWarning,
            stacklevel=2,
        )


def _spawn(loop: asyncio.AbstractEventLoop, release: Release) -> asyncio.Future[None]:
    """Run `release` as a task of `loop` (the running one), kept until it finishes."""
    task = loop.create_task(_run(release))
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    return task


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

    def _close_now(self) -> Release | Closing | None:
        """Mark the object closed and return what remains to release asynchronously.

        Returns:
            A coroutine function finishing the release, the `Closing` of an object whose close
            finishes it, or `None` when nothing remains.
        """
        return None

    def _release_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the resources to release belong to, if any (read before the close).

        Returns:
            The loop, or `None` when the release can run on any loop.
        """
        return None

    def close(self) -> Closing:
        """Close the object now; closing twice is harmless.

        Callable from synchronous code (the object is closed when the call returns) and
        awaitable (`await obj.close()` also waits until its threads or connections are released).

        Returns:
            An awaitable; awaiting it is optional.
        """
        loop = self._release_loop()
        return Closing.start(self._close_now(), loop=loop, what=type(self).__name__)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
