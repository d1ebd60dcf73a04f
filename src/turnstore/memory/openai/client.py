"""The `AsyncOpenAI` client an OpenAI-backed session uses: passed in, or built and owned."""

from __future__ import annotations

import asyncio

from openai import AsyncOpenAI

from ..loop_binding import LoopBinding

__all__ = ["OwnedOpenAIClient", "default_openai_client"]


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

    async def close(self) -> None:
        """Close the client if it was built here; a client passed in is left open."""
        client, owned = self._client, self._owned
        if owned and client is not None:
            self._client, self._owned = None, False
            # Connections opened on another loop cannot be closed from this one.
            if not self._loop_binding.is_foreign():
                await client.close()
        if client is None or owned:
            self._loop_binding = LoopBinding(self._loop_binding.what)
