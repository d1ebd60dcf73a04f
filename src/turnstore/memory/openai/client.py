"""The `AsyncOpenAI` client an OpenAI-backed session uses: passed in, or built and owned."""

from __future__ import annotations

import asyncio
import weakref

from openai import AsyncOpenAI

from ...exceptions import SessionClosedError
from ..closing import AsyncCloseable, warn_if_unclosed
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
        self._unclosed: weakref.finalize[..., object] | None = None

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
                what = f"{self._loop_binding.what} (its OpenAI client built from the environment)"
                self._unclosed = warn_if_unclosed(self, what)
            else:  # a concurrent first call built one first
                await client.close()
        return self._client

    def check_loop(self) -> None:
        """Raise when the client was already used on another event loop (before any use: nothing).

        Raises:
            UserError: The client was first used on another event loop.
        """
        if self._loop_binding.bound:
            self._loop_binding.check()

    async def close(self) -> None:
        """Close the client if it was built here; a client passed in is left open (and kept)."""
        client, owned, binding = self._client, self._owned, self._loop_binding
        if client is None or owned:
            self._loop_binding = LoopBinding(binding.what)
        if not owned or client is None:
            return
        self._client, self._owned = None, False
        if self._unclosed is not None:
            self._unclosed.detach()
        # Connections opened on another loop cannot be closed from this one.
        if not binding.is_foreign():
            await client.close()


class OpenAIClientSession(AsyncCloseable):
    """What the sessions that call the OpenAI API share: their client, the open check, closing.

    A subclass sets `_client` and names itself in `_kind` (for the closed-session error).
    """

    _kind: str
    session_id: str
    _client: OwnedOpenAIClient
    _closed = False

    async def _get_client(self) -> AsyncOpenAI:
        return await self._client.get()

    async def close(self) -> None:
        """Close the session and the client it built from the environment (same as `aclose()`).

        A coroutine (the OpenAI Agents SDK's class has no `close()`; closing the client is
        asynchronous). A client passed in is left open, and so is the session an
        `OpenAIResponsesCompactionSession` wraps (close it yourself). Further operations raise
        [`SessionClosedError`][turnstore.SessionClosedError] (make a new session object to go
        on); closing twice is harmless.
        """
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session and the client it built from the environment (see `close`)."""
        self._closed = True
        await self._client.close()

    def _check_open(self) -> None:
        """Raise when the session is closed, or its client was already used on another loop.

        Every public method calls this first, so a run on another event loop fails at its
        start, before the wrapped session of an `OpenAIResponsesCompactionSession` stores
        anything (its client is otherwise needed only when a compaction is due).
        """
        if self._closed:
            raise SessionClosedError(
                f"{self._kind} {self.session_id!r} is closed; create a new session object"
            )
        self._client.check_loop()
