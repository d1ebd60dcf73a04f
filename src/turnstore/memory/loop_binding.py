"""The event loop a session's connections belong to, so a second loop gets a clear error."""

from __future__ import annotations

import asyncio
import weakref

from ..exceptions import UserError

__all__ = ["LoopBinding"]


class LoopBinding:
    """Remembers the event loop a session first used, and refuses any other loop.

    Pooled connections (asyncpg, redis-py, httpx) belong to the loop that opened them; used from
    another loop they fail with "Event loop is closed" or "attached to a different loop". Each
    `Runner.run_sync()` or `asyncio.run()` call starts a new loop, so this is easy to hit.

    Args:
        what: How the error names the session, for example `"RedisSession 'user_42'"`.
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def check(self) -> None:
        """Bind to the running loop on first use; afterwards, raise on any other loop.

        Raises:
            UserError: The running loop is not the one the session first used.
        """
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = weakref.ref(loop)
        elif self._loop() is not loop:
            raise UserError(
                f"{self.what} was first used on another event loop, and its connections belong "
                "to that loop (each Runner.run_sync() or asyncio.run() call starts a new one): "
                "create the session inside the loop that uses it, or run every turn in one "
                "asyncio.run()"
            )

    @property
    def bound(self) -> bool:
        """Whether the session was used at all (and so may hold connections of a loop)."""
        return self._loop is not None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the session is bound to, or `None` before its first use (or once collected)."""
        return None if self._loop is None else self._loop()

    def is_foreign(self) -> bool:
        """Whether the session was first used on a loop other than the running one."""
        return self._loop is not None and self._loop() is not asyncio.get_running_loop()
