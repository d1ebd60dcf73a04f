"""`aclose()` and `async with` for every session and store, and the warning for a forgotten close.

Each session's `close()` has the shape of the OpenAI Agents SDK class it stands in for: a plain
method on `SQLiteSession` and `AdvancedSQLiteSession`, a coroutine elsewhere. Every session and
store also has `async def aclose()`, which releases everything and waits for it; `async with`
calls it. An object garbage-collected without being closed warns with a `ResourceWarning`
(shown with `python -X dev` or `-W default`), as an unclosed file does; its finalizer does no
I/O and runs no release of its own.
"""

from __future__ import annotations

import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Self

__all__ = ["AsyncCloseable", "Release", "warn_if_unclosed"]

Release = Callable[[], Awaitable[None]]
"""The asynchronous part of a release (what `aclose()` awaits)."""


class AsyncCloseable(ABC):
    """A base class for objects released by `await obj.aclose()` or `async with`.

    Example:
        ```python
        async with SQLiteSession("user_42", "chats.db") as session:
            await session.add_items([{"role": "user", "content": "Hi"}])
        # the session is closed here, even if the block raised
        ```
    """

    @abstractmethod
    async def aclose(self) -> None:
        """Close the object and wait until its threads or connections are released.

        Closing twice is harmless; any other operation after it raises
        [`SessionClosedError`][turnstore.SessionClosedError].
        """

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def warn_if_unclosed(owner: object, what: str) -> weakref.finalize[..., object]:
    """Warn with a `ResourceWarning` if `owner` is garbage-collected before it is closed.

    Closing `owner` must call `.detach()` on the returned finalizer. The finalizer may run on
    any thread, inside any allocation: it only warns (no I/O, no lock, no release). It must
    hold no reference to what `owner` holds (a thread's database, a client), or that would
    outlive `owner`.

    Args:
        owner: The object to watch.
        what: How the warning names it, for example `"SQLiteSession 'u1' on 'chats.db'"`.

    Returns:
        The finalizer (not run at interpreter exit).
    """
    finalizer = weakref.finalize(owner, _forgotten, what)
    finalizer.atexit = False
    return finalizer


def _forgotten(what: str) -> None:
    warnings.warn(
        f"{what} was never closed: call `await aclose()` (or `close()`) when done with it, "
        "or use `async with`",
        ResourceWarning,
        stacklevel=2,
    )
