"""`async with` support for the classes that own a resource and release it in `close()`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["AsyncCloseable"]


class AsyncCloseable(ABC):
    """A base class whose `async with` block ends by awaiting `close()`.

    Example:
        ```python
        async with SQLiteSession("user_42", "chats.db") as session:
            await session.add_items([{"role": "user", "content": "Hi"}])
        # the session is closed here, even if the block raised
        ```
    """

    @abstractmethod
    async def close(self) -> None:
        """Release what the object holds; closing twice is harmless."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
