"""The `AsyncOpenAI` client an OpenAI-backed session uses: passed in, or built and owned."""

from __future__ import annotations

import asyncio

from openai import AsyncOpenAI

from ...exceptions import SessionClosedError
from ..closing import AsyncCloseable, Release
from ..loop_binding import LoopBinding

__all__ = ["OpenAIClientSession", "OwnedOpenAIClient", "default_openai_client"]


async def default_openai_client() -> AsyncOpenAI:
    """Build an `AsyncOpenAI` client from the environment, off the event-loop thread.

    The client's constructor loads certificates from disk, so it runs in a worker thread.

    Returns:
        A new client; the caller closes it.
    """
    return await asyncio.to_thread(AsyncOpenAI)


class OwnedOpenAIClient:
    """A client given by the user (never closed here) or built on first use (closed by `close`).

    Args:
        client: The user's client, or `None` to build one from the environment when needed.
        what: How errors name the session.
    """

    def __init__(self, client: AsyncOpenAI | None, *, what: str) -> None:
        self._client = client
        self._owned = False
        self._loop_binding = LoopBinding(what)

    async def get(self) -> AsyncOpenAI:
        """Return the client, building it from the environment on first use.

        Returns:
            The client.

        Raises:
            UserError: The client was first used on another event loop.
        """
        self._loop_binding.check()
        if self._client is None:
            client = await default_openai_client()
            if self._client is None:
                self._client, self._owned = client, True
            else:  # a concurrent first call built one first
                await client.close()
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the client was first used on (its connections belong to it)."""
        return self._loop_binding.loop

    def release(self) -> Release | None:
        """Forget the client if it was built here, returning what closes it.

        A client passed in is left open (and kept).

        Returns:
            A coroutine function that closes the built client, or `None`.
        """
        client, owned, binding = self._client, self._owned, self._loop_binding
        if client is None or owned:
            self._loop_binding = LoopBinding(binding.what)
        if not owned or client is None:
            return None
        self._client, self._owned = None, False
        built = client

        async def close_client() -> None:
            # Connections opened on another loop cannot be closed from this one.
            if not binding.is_foreign():
                await built.close()

        return close_client

    async def close(self) -> None:
        """Close the client if it was built here; a client passed in is left open."""
        release = self.release()
        if release is not None:
            await release()


class OpenAIClientSession(AsyncCloseable):
    """What the sessions that call the OpenAI API share: their client, its loop, the open check.

    A subclass sets `_client` and names itself in `_kind` (for the closed-session error); its
    `_close_now` calls `_close_client`.
    """

    _kind: str
    session_id: str
    _client: OwnedOpenAIClient
    _closed = False

    async def _get_client(self) -> AsyncOpenAI:
        return await self._client.get()

    def _release_loop(self) -> asyncio.AbstractEventLoop | None:
        return self._client.loop

    def _close_client(self) -> Release | None:
        """Mark the session closed; release the client if it was built from the environment."""
        self._closed = True
        return self._client.release()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"{self._kind} {self.session_id!r} is closed; create a new session object"
            )
